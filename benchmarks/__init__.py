"""Benchmarks of the reference implementation and the mock fleet: ``python -m benchmarks``."""
