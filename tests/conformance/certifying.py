"""Certifying a driver command in a ``certify`` process of its own, and reading the certificate it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "WHOLE_SUITE", "WHOLE_SUITE_TIMEOUT", "certify"]

ROOT = Path(__file__).resolve().parents[2]
# Generous: a run that hangs is a bug of the suite, reported as such rather than waited for.
RUN_TIMEOUT = 600
#: A certification of the whole suite: its own time budget, and a process time-out above it.
WHOLE_SUITE = ("--max-time", "1800")
WHOLE_SUITE_TIMEOUT = 2400.0


def certify(
    sut_cmd: list[str],
    clauses: list[str],
    out: Path,
    tests: Sequence[str] = (),
    extra: Sequence[str] = (),
    timeout: float = RUN_TIMEOUT,
) -> tuple[int, dict[str, Any], str]:
    """Certify ``sut_cmd`` on the tests citing ``clauses`` (of ``tests``, if given; every
    test when neither is), with ``extra`` options; (exit code, certificate, output)."""
    argv = [
        sys.executable,
        "-m",
        "conformance._cli",
        "certify",
        "-n",
        "1",
        "--sut-cmd",
        subprocess.list2cmdline(sut_cmd),
    ]
    for clause_id in clauses:
        argv += ["--clause", clause_id]
    # Only whether (and on which clause) a property fails matters here, not its shrunk example.
    argv += ["--no-shrink", "--out", str(out)]
    for test in tests:
        argv += ["--test", test]
    argv += extra
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    output = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (out / "certificate.json").exists(), f"no certificate (exit {proc.returncode}):\n{output}"
    return proc.returncode, json.loads((out / "certificate.json").read_text()), output
