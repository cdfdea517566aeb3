"""A command run once per test session and read by every test that needs it, xdist workers included.

Several tests read one certification (its exit code, output and certificate): the first
test to need it runs it, under a file lock in the folder the workers share; the others wait
for it and read what it left.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["Run", "shared"]

#: A finished command, and the folder it wrote into.
Run = tuple[subprocess.CompletedProcess[str], Path]


def shared(factory: pytest.TempPathFactory, name: str, run: Callable[[Path], subprocess.CompletedProcess[str]]) -> Run:
    """``run(folder)``, made once per session under ``name``; its result and its folder."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker's base folder sits in one the workers share
    folder, record = root / name, root / f"{name}.json"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            folder.mkdir()
            result = run(folder)
            fields = {"args": result.args, "code": result.returncode, "out": result.stdout, "err": result.stderr}
            record.write_text(json.dumps(fields), encoding="utf-8")
    fields = json.loads(record.read_text(encoding="utf-8"))
    return subprocess.CompletedProcess(fields["args"], fields["code"], fields["out"], fields["err"]), folder
