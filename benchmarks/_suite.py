"""Suite cost: wall time of the shipped conformance suite against the reference implementation."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ._report import Table, fmt_seconds

ROOT = Path(__file__).resolve().parent.parent

VARIANTS = (
    ("in-process (`--sut reference`)", ["--sut", "reference"]),
    (
        "through the driver (`--sut-cmd 'python -m reference_impl.driver'`)",
        ["--sut-cmd", "python -m reference_impl.driver"],
    ),
)


def run_suite_cost(repeats: int = 1) -> list[Table]:
    table = Table(
        "Suite cost: the shipped conformance suite against the reference", ["target", "workers", "wall time", "result"]
    )
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for label, args in VARIANTS:
        for workers in ("serial", "-n 2"):
            extra = [] if workers == "serial" else ["-n", "2"]
            times: list[float] = []
            tail = ""
            for _ in range(repeats):
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "pytest", *args, *extra, "-q", "-p", "no:randomly"],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                times.append(time.perf_counter() - start)
                tail = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
            table.rows.append([label, workers, fmt_seconds(sorted(times)[len(times) // 2]), tail])
    table.notes.append("Wall time of one `python -m pytest … -q` process each, including collection and start-up.")
    return [table]
