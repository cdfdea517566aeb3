"""Tables, timing statistics and the machine line of BENCHMARKS.md."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |"]
        lines.append("|" + "|".join("---" for _ in self.columns) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        lines += [""] + [f"{note}" for note in self.notes] + ([""] if self.notes else [])
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Sample:
    """Repeated measurements of one thing, in seconds."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> float:
        """Half the distance between the lowest and highest repeat, relative to the median."""
        if len(self.values) < 2 or self.median == 0:
            return 0.0
        return (max(self.values) - min(self.values)) / 2 / self.median

    def show(self) -> str:
        return f"{fmt_seconds(self.median)} ±{100 * self.spread:.0f}%"


def measure(action: Callable[[], object], repeats: int, inner: int = 1) -> Sample:
    """Time ``action`` ``inner`` times per repeat; each value is the mean of one repeat."""
    values = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            action()
        values.append((time.perf_counter() - start) / inner)
    return Sample(tuple(values))


def fmt_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def ratio(slow: float, fast: float) -> str:
    return f"{slow / fast:.1f}×" if fast > 0 else "–"


def children_cpu() -> float:
    """User and system seconds of every child process waited for so far: read it before and
    after a command to get the CPU time of the command's whole tree."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def commit(checkout: Path) -> str:
    """The short commit of ``checkout`` (its folder's name when git cannot tell)."""
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    return found.stdout.strip() or checkout.name


def machine() -> str:
    return (
        f"{os.cpu_count()} cores ({len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'} usable), "
        f"{platform.machine()}, Python {sys.version.split()[0]}, {platform.system()} {platform.release()}"
    )
