"""Process checks that need no third-party library (Linux ``/proc``)."""

from __future__ import annotations

import re
from pathlib import Path


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process; a zombie waiting to be reaped does not count."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def child_pid_in(text: str) -> int:
    """The pid a fake driver reported for the child it spawned."""
    found = re.search(r"spawned child pid (\d+)", text)
    assert found is not None, text
    return int(found.group(1))
