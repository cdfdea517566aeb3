"""Where the CPU of a process tree goes: its processes sampled from ``/proc``, by kind.

`resource.getrusage` gives one figure for a whole tree. To tell the host under test from the
suite and the fleet, a thread reads ``/proc`` a few times a second while the tree runs and
keeps, for every process below the root, its latest user + system time and its command
line. A process that lives between two samples is not seen; what the tree used in all minus
what was seen is reported as such, so the split never claims more than it saw.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Sampled", "sample_tree"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PROC = Path("/proc")


@dataclass
class Sampled:
    """What the sampler saw: per process id, its latest CPU seconds and its command line."""

    cpu: dict[int, float] = field(default_factory=dict)
    argv: dict[int, str] = field(default_factory=dict)

    def by_kind(self, kind_of: Callable[[str], str]) -> dict[str, float]:
        """CPU seconds seen, summed by ``kind_of(command line)``."""
        kinds: dict[str, float] = {}
        for pid, seconds in self.cpu.items():
            kind = kind_of(self.argv.get(pid, ""))
            kinds[kind] = kinds.get(kind, 0.0) + seconds
        return kinds


def _stat(pid: int) -> tuple[int, float] | None:
    """Parent id and user + system seconds of ``pid``; None once it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces or parentheses itself.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def _argv(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def _look(root: int, sampled: Sampled) -> None:
    stats = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                stats[int(entry.name)] = stat
    below = {root}
    # Parents before children is not guaranteed by pid order: grow the set until it is still.
    grown = True
    while grown:
        grown = False
        for pid, (parent, _) in stats.items():
            if parent in below and pid not in below:
                below.add(pid)
                grown = True
    for pid in below - {root}:
        seconds = stats[pid][1]
        if seconds >= sampled.cpu.get(pid, 0.0):
            sampled.cpu[pid] = seconds
        if pid not in sampled.argv:
            sampled.argv[pid] = _argv(pid)


@contextmanager
def sample_tree(root: int, every: float = 0.2) -> Iterator[Sampled]:
    """Sample the processes below ``root`` (not ``root`` itself) while inside; on Linux only
    (elsewhere nothing is seen)."""
    sampled = Sampled()
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            _look(root, sampled)

    thread = threading.Thread(target=loop, daemon=True) if PROC.is_dir() else None
    if thread is not None:
        thread.start()
    try:
        yield sampled
    finally:
        stop.set()
        if thread is not None:
            thread.join()
