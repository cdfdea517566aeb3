"""Building the TypeScript examples as their README says (``npm ci``, ``npm run build``), and ``npm test``."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# What npm prints when the registry cannot be reached (and nothing is in its cache).
OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH")


def build(example: str) -> Path:
    """Install and compile ``examples/<example>``; returns its ``dist/driver.js``.

    Skips when Node or npm is missing, or when npm cannot reach the registry.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"examples/{example} needs node and npm on PATH to build; not found")
    folder = EXAMPLES / example
    # `npm ci` starts from an empty node_modules every time; it is skipped while package.json
    # and the lockfile are the ones the folder was installed from (a fresh clone has no node_modules).
    stamp = folder / "node_modules" / ".installed-from"
    manifests = b"".join((folder / name).read_bytes() for name in ("package.json", "package-lock.json"))
    installed = hashlib.sha256(manifests).hexdigest()
    if not stamp.exists() or stamp.read_text() != installed:
        install = npm_run(npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", cwd=folder)
        if install.returncode != 0 and any(code in install.stderr for code in OFFLINE):
            pytest.skip(
                f"npm could not reach the registry to install examples/{example}: {install.stderr.strip()[-300:]}"
            )
        assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
        stamp.write_text(installed)
    compiled = npm_run(npm, "run", "build", cwd=folder)
    assert compiled.returncode == 0, compiled.stdout[-3000:] + compiled.stderr[-3000:]
    return folder / "dist" / "driver.js"


def npm_test(example: str) -> subprocess.CompletedProcess[str]:
    """``npm test`` in ``examples/<example>`` (installed by `build`): the protocol shell's unit tests and the linter."""
    npm = shutil.which("npm")
    assert npm is not None, "build() skips without npm; call it first"
    return npm_run(npm, "test", cwd=EXAMPLES / example)


def npm_run(npm: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [npm, *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False, stdin=subprocess.DEVNULL
    )


def certify(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``mcp-conformance certify`` from the repository root, as a team runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "conformance._cli", "certify", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def clause_statuses(certificate: dict[str, Any]) -> dict[str, str]:
    return {row["clause"]: row["status"] for row in certificate["clauses"]}
