"""A permitted variant is no finding: the core checks of selection, budgets and discovery
pass a reference driver whose discovery activates only what DSC-5.8 demands (DSC-5.6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("SEL", "BUD", "DSC")
VARIANT = (
    "from tests.conformance.defects.discovery import activates_only_what_it_must as variant; variant(); "
    "from reference_impl.driver.__main__ import main; main([])"
)


@pytest.mark.slow
def test_a_discovery_that_activates_only_what_it_must_passes_the_core_checks(tmp_path: Path) -> None:
    clauses = [f"{section}-{n}" for section in SECTIONS for n in range(1, 11) if f"### {section}-{n} ·" in _spec()]
    argv = [sys.executable, "-m", "conformance._cli", "certify", "--profile", "core", "--out", str(tmp_path)]
    argv += ["--sut-cmd", subprocess.list2cmdline([sys.executable, "-c", VARIANT])]
    for clause in clauses:
        argv += ["--clause", clause]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    cert = json.loads((tmp_path / "certificate.json").read_text())

    assert not cert["failures"] and not cert["errors"], proc.stdout[-4000:] + proc.stderr[-4000:]
    ran = {r["clause"]: r["status"] for r in cert["clauses"] if r["clause"] in clauses}
    assert "fail" not in ran.values() and "pass" in ran.values()


def _spec() -> str:
    return (ROOT / "conformance" / "SPEC.md").read_text(encoding="utf-8")
