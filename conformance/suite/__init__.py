"""The conformance suite itself: test modules collected by ``pytest --sut …``."""
