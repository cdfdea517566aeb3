"""Running ``mcp-conformance`` in a process of its own, as a user does, and reading what it wrote."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance._cli import main
from tests.conformance.conftest import FAKE_DRIVER_ARGV

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SMOKE = "test_initialize_claims_the_core_profile"
READ_ONLY_TEST = "test_read_only_needs_the_json_boolean_true"
PY = shlex.quote(sys.executable)
DEFECT = f"{PY} -m tests.conformance.defects missing_annotation_is_read_only"


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    # Replay commands name the installed `mcp-conformance`; the defective drivers live in tests/.
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **extra}


def cli(*args: str, timeout: float = 300, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``mcp-conformance`` (from the repository root unless told otherwise).

    A certification runs in one process unless the test says ``-n``: the runs here are small.
    """
    if args[:1] == ("certify",) and "-n" not in args:
        args = ("certify", "-n", "1", *args[1:])
    return subprocess.run(
        [sys.executable, "-m", "conformance._cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=environment(**env),
        stdin=subprocess.DEVNULL,
    )


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``mcp-conformance ARGS`` in this process, for what it answers before starting anything: (exit code, out, err)."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def certificate(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "certificate.json").read_text())
    return data


def statuses(cert: dict[str, Any]) -> dict[str, str]:
    return {row["clause"]: row["status"] for row in cert["clauses"]}


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr


def fake(mode: str = "good") -> str:
    return shlex.join([*FAKE_DRIVER_ARGV, mode])


def without_times(cert: dict[str, Any]) -> dict[str, Any]:
    """The certificate without clock readings (``seconds`` and ``shrink_seconds`` anywhere)."""
    text = json.dumps({k: v for k, v in cert.items() if k not in ("timestamp", "seconds")})
    data: dict[str, Any] = json.loads(re.sub(r'"shrink_seconds": [0-9.e+-]+', '"shrink_seconds": 0', text))
    return data
