"""``mcp-conformance``: certify, the certificate's verdict and exit code, replay, bad input."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance._manifest import render_manifest
from tests.conformance.conftest import FAKE_DRIVER

ROOT = Path(__file__).resolve().parents[2]
TS_DRIVER = ROOT / "examples" / "typescript-driver"
SMOKE = "test_initialize_claims_the_core_profile"
READ_ONLY_TEST = "test_read_only_needs_the_json_boolean_true"
PY = shlex.quote(sys.executable)
DEFECT = f"{PY} -m tests.conformance.defects missing_annotation_is_read_only"


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``mcp-conformance`` from the repository root (the defective drivers live in tests/)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    return subprocess.run(
        [sys.executable, "-m", "conformance._cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def certificate(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "certificate.json").read_text())
    return data


def statuses(cert: dict[str, Any]) -> dict[str, str]:
    return {row["clause"]: row["status"] for row in cert["clauses"]}


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "usage: mcp-conformance COMMAND"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["certify"], "one of the arguments --sut --sut-cmd is required"),
        (["certify", "--sut", "reference", "--bogus"], "unrecognized arguments: --bogus"),
        (["certify", "--sut", "reference", "--sut-cmd", "reference"], "not allowed with argument"),
        (["certify", "--sut", "reference", "--profile", "fast"], "invalid choice: 'fast'"),
        (["certify", "--sut", "reference", "--mode", "lenient"], "invalid choice: 'lenient'"),
        (["certify", "--sut-cmd", "'unclosed"], "No closing quotation"),
        (["certify", "--sut-cmd", "  "], "--sut-cmd is empty"),
        (["certify", "--sut", "reference", "--sut-timeout", "soon"], "--sut-timeout must be a positive number"),
        (["certify", "--sut", "reference", "-n", "many"], "-n expects a number of processes"),
        (["manifest", "--frob"], "unrecognized arguments: --frob"),
    ],
)
def test_bad_options_are_a_clear_message_and_exit_2(args: list[str], message: str) -> None:
    result = cli(*args, timeout=60)

    assert result.returncode == 2
    assert message in result.stderr
    no_traceback(result)


def test_a_sut_command_that_does_not_start_exits_2(tmp_path: Path) -> None:
    result = cli("certify", "--sut-cmd", "/nonexistent/driver", "--out", str(tmp_path), timeout=60)

    assert result.returncode == 2
    assert "cannot start driver '/nonexistent/driver'" in result.stderr
    assert "the suite did not run" in result.stderr
    assert not (tmp_path / "certificate.json").exists()
    no_traceback(result)


def test_a_driver_that_never_answers_initialize_exits_2_without_hanging(tmp_path: Path) -> None:
    command = shlex.join([sys.executable, str(FAKE_DRIVER), "silent"])

    result = cli("certify", "--sut-cmd", command, "--sut-timeout", "0.5", "--out", str(tmp_path), timeout=60)

    assert result.returncode == 2
    assert "did not answer initialize within 0.5 s" in result.stderr
    no_traceback(result)


def test_a_run_that_tests_no_clause_exits_2(tmp_path: Path) -> None:
    command = shlex.join([sys.executable, str(FAKE_DRIVER)])

    result = cli("certify", "--sut-cmd", command, "--out", str(tmp_path), "--", "-k", SMOKE, timeout=120)

    assert result.returncode == 2
    assert certificate(tmp_path)["verdict"] == "error"
    assert "no clause was tested" in result.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[[expected_failure]]\nclause = 'POL-55'\nreason = 'x'\n",
            "expected_failure[0].clause: 'POL-55' is not a clause",
        ),
        ("[[expected_failure]]\nclause = 'GATE-2'\n", "expected_failure[0].reason: missing"),
        ("[[expected_failure]]\nclause = 'GATE-2'\nreason = 'x'\nowner = 'me'\n", "unknown key 'owner'"),
        ("not toml at all", "not a TOML file"),
        ("[[expected_failure]]\nclause = 'POL-5'\nreason = 'x'\n", "not accepted in certification (--mode certify)"),
    ],
)
def test_a_bad_expectations_file_exits_2_naming_the_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "known.toml"
    path.write_text(text)

    result = cli("certify", "--sut", "reference", "--expectations", str(path), "--out", str(tmp_path / "o"), timeout=60)

    assert result.returncode == 2
    assert f"mcp-conformance: {path}: " in result.stderr and message in result.stderr
    assert "running the suite" not in result.stdout  # refused before anything ran
    no_traceback(result)


def test_the_manifest_command_prints_and_checks_the_generated_manifest() -> None:
    printed = cli("manifest", timeout=60)
    checked = cli("manifest", "--check", timeout=60)

    assert printed.returncode == 0 and printed.stdout == render_manifest()
    assert checked.returncode == 0, checked.stderr


def test_certifying_the_reference_in_process_is_conformant_and_writes_three_files(tmp_path: Path) -> None:
    result = cli("certify", "--sut", "reference", "--out", str(tmp_path), timeout=900)

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cert = certificate(tmp_path)
    assert cert["verdict"] == "conformant"
    assert cert["implementation"]["name"] == "reference_impl"
    assert cert["profiles_under_test"] == ["core", "lexical"]
    assert set(statuses(cert).values()) <= {"pass", "untested", "not-applicable"}
    assert all(row["reason"] for row in cert["clauses"] if row["status"] == "untested")
    # In process there is no driver protocol to check.
    assert {c for c, status in statuses(cert).items() if status == "not-applicable"} == {
        f"PRO-{n}" for n in range(1, 7)
    }
    for name in ("certificate.md", "certificate.html"):
        assert "reference_impl" in (tmp_path / name).read_text()
    assert "passed" in result.stdout  # pytest's own progress


def test_certifying_the_reference_driver_on_some_clauses_is_a_partial_pass(tmp_path: Path) -> None:
    result = cli("certify", "--sut-cmd", "reference", "--clause", "BUD-3", "--clause", "GATE-1", "--out", str(tmp_path))

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cert = certificate(tmp_path)
    assert cert["verdict"] == "partial"
    assert statuses(cert)["BUD-3"] == statuses(cert)["GATE-1"] == "pass"
    assert {p.name for p in tmp_path.iterdir()} >= {"certificate.json", "certificate.md", "certificate.html"}


def test_a_defective_implementation_exits_1_naming_the_clause_and_its_replay_reproduces_it(tmp_path: Path) -> None:
    result = cli("certify", "--sut-cmd", DEFECT, "--clause", "POL-5", "--no-shrink", "--out", str(tmp_path))

    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    cert = certificate(tmp_path)
    assert cert["verdict"] == "non-conformant"
    assert statuses(cert)["POL-5"] == "fail"
    failures = [f for f in cert["failures"] if "POL-5" in f["clauses"]]
    assert failures and all(f["case"] and f["replay"] for f in failures)
    assert "POL-5" in (tmp_path / "certificate.md").read_text()
    # The generated property's failure: its saved example replays on its own.
    property_failure = next(f for f in failures if READ_ONLY_TEST not in f["test"])
    replay = subprocess.run(
        property_failure["replay"], shell=True, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert replay.returncode == 1, replay.stdout[-3000:]
    assert "1 failed" in replay.stdout and "POL-5" in replay.stdout


def test_regression_mode_accepts_a_listed_failure_and_refuses_a_stale_one(tmp_path: Path) -> None:
    known = tmp_path / "known.toml"
    known.write_text(
        f'[[expected_failure]]\nclause = "POL-5"\nreason = "read-only lands in 2.3"\ntest = "{READ_ONLY_TEST}"\n'
    )
    common = ["--clause", "POL-5", "--mode", "regression", "--expectations", str(known), "--", "-k", READ_ONLY_TEST]

    defective = cli("certify", "--sut-cmd", DEFECT, "--out", str(tmp_path / "defective"), *common)
    fixed = cli("certify", "--sut-cmd", "reference", "--out", str(tmp_path / "fixed"), *common)

    assert defective.returncode == 0, defective.stdout[-3000:]
    assert certificate(tmp_path / "defective")["verdict"] == "partial"  # one test of one clause ran
    assert statuses(certificate(tmp_path / "defective"))["POL-5"] == "expected-fail"
    assert fixed.returncode == 1, fixed.stdout[-3000:]
    stale = certificate(tmp_path / "fixed")
    assert stale["verdict"] == "stale expectations"
    assert stale["expectations"]["entries"][0]["status"].startswith("stale")
    assert "read-only lands in 2.3" in (tmp_path / "fixed" / "certificate.md").read_text()


def test_the_typescript_driver_skeleton_speaks_the_protocol(tmp_path: Path) -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: the TypeScript driver skeleton needs them")
    if not (TS_DRIVER / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=TS_DRIVER, check=True, timeout=300, capture_output=True
        )
    tests = f"{SMOKE} or test_definitions_are_base_discovery_and_active_tools_with_listed_schemas"

    result = cli(
        "certify",
        "--sut-cmd",
        "node examples/typescript-driver/driver.mjs",
        "--no-shrink",
        "--out",
        str(tmp_path),
        "--",
        "-k",
        tests,
    )

    assert result.returncode in (0, 1), result.stdout[-3000:] + result.stderr[-3000:]
    cert = certificate(tmp_path)
    assert cert["implementation"] == {"name": "example-ts-host", "version": "0.1.0", "profiles_claimed": ["core"]}
    assert "pass" in statuses(cert).values()  # run.open, run.definitions and run.close went through
    assert not [f for f in cert["failures"] if any(x["misbehaved"] for x in f["findings"])]
