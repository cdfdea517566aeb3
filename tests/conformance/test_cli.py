"""``mcp-conformance``: certify, the certificate's verdict and exit code, replay, bad input."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

import conformance._manifest as manifest_module
from conformance._cli import certify_parser, main, replay_parser
from conformance._manifest import render_manifest
from conformance._options import OPTIONS
from tests.conformance._procs import is_running
from tests.conformance.cli_runs import (
    DEFECT,
    READ_ONLY_TEST,
    ROOT,
    SMOKE,
    certificate,
    cli,
    environment,
    fake,
    no_traceback,
    refused,
    statuses,
    without_times,
)
from tests.conformance.shared_runs import Run, shared


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "usage: mcp-conformance COMMAND"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["certify"], "one of the arguments --sut --sut-cmd is required"),
        (["certify", "--sut", "reference", "--bogus"], "unrecognized arguments: --bogus"),
        (["certify", "--sut", "reference", "--sut-cmd", "reference"], "not allowed with argument"),
        (
            ["certify", "--sut", "reference", "--profile", "fast"],
            "--profile must be one of core, lexical, eviction, refresh, all, got 'fast'",
        ),
        (
            ["certify", "--sut", "reference", "--mode", "lenient"],
            "--mode must be one of certify, regression, got 'lenient'",
        ),
        (["certify", "--sut", "reference", "--mode", "regression"], "--mode regression needs --expectations"),
        (["certify", "--sut-cmd", "'unclosed"], "No closing quotation"),
        (["certify", "--sut-cmd", "  "], "--sut-cmd is empty"),
        (["certify", "--sut", "reference", "--sut-timeout", "soon"], "--sut-timeout must be a positive number"),
        (
            ["certify", "--sut", "reference", "--sut-timeout", "1e308"],
            "--sut-timeout must be a positive number of seconds, at most 86400, got '1e308'",
        ),
        (["certify", "--sut", "reference", "--max-time", "0"], "--max-time must be a positive number"),
        (["certify", "--sut", "reference", "--shrink-time", "-1"], "--shrink-time must be a number of seconds"),
        (["certify", "--sut", "reference", "--seed", "x1"], "--seed must be a whole number"),
        (
            ["certify", "--sut", "reference", "--thoroughness", "max"],
            "--thoroughness must be one of quick, default, deep",
        ),
        (["certify", "--sut", "reference", "--broken-after", "0"], "--broken-after must be a whole number"),
        (["certify", "--sut", "reference", "-n", "many"], "-n expects a number of processes from 1 to"),
        (["certify", "--sut", "reference", "-n", "10000"], "per core on this machine) or 'auto', got '10000'"),
        (["certify", "--sut", "reference", "-n", "0"], "-n expects a number of processes from 1 to"),
        (["replay", "--sut", "reference"], "the following arguments are required: TEST"),
        (
            ["replay", "--sut", "reference", "--examples", "/nonexistent", SMOKE],
            "--examples /nonexistent: no such folder",
        ),
        (["baseline", "/nonexistent"], "/nonexistent: cannot read the certificate"),
        (["baseline", str(ROOT / "pyproject.toml")], "pyproject.toml: not a JSON file"),
        (["manifest", "--frob"], "unrecognized arguments: --frob"),
    ],
)
def test_bad_options_are_a_clear_message_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _out, err = refused(capsys, *args)

    assert code == 2
    assert message in err


@pytest.mark.e2e
def test_a_sut_command_that_does_not_start_exits_2_and_keeps_the_previous_certificate(tmp_path: Path) -> None:
    (tmp_path / "certificate.json").write_text('{"verdict": "conformant"}')

    result = cli("certify", "--sut-cmd", "/nonexistent/driver", "--out", str(tmp_path), timeout=60)

    assert result.returncode == 2
    assert "the implementation did not start" in result.stderr
    assert "cannot start driver '/nonexistent/driver'" in result.stderr
    assert (tmp_path / "certificate.json").read_text() == '{"verdict": "conformant"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["certificate.json"]
    no_traceback(result)


@pytest.mark.e2e
def test_a_driver_that_never_answers_initialize_exits_2_without_hanging(tmp_path: Path) -> None:
    result = cli("certify", "--sut-cmd", fake("silent"), "--sut-timeout", "0.5", "--out", str(tmp_path), timeout=60)

    assert result.returncode == 2
    assert "did not answer initialize within 0.5 s" in result.stderr
    no_traceback(result)


@pytest.mark.e2e
def test_a_run_that_selects_no_test_exits_2_without_a_certificate(tmp_path: Path) -> None:
    result = cli("certify", "--sut-cmd", fake(), "--out", str(tmp_path), "--", "-k", "no_test_is_named_so", timeout=120)

    assert result.returncode == 2
    assert "the suite did not run" in result.stderr
    assert not (tmp_path / "certificate.json").exists()


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
        (
            "[[expected_failure]]\nclause = 'GATE-2'\nreason = 'x'\ntest = 'test_gate.py::test_nope'\n",
            "expected_failure[0].test: 'test_gate.py::test_nope' is not a test of the suite",
        ),
    ],
)
def test_a_bad_expectations_file_exits_2_naming_the_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "known.toml"
    path.write_text(text)

    code, out, err = refused(
        capsys, "certify", "--sut", "reference", "--expectations", str(path), "--out", str(tmp_path / "o")
    )

    assert code == 2
    assert f"mcp-conformance: {path}: " in err and message in err
    assert "certifying" not in out  # refused before anything ran
    assert not (tmp_path / "o").exists()


def test_the_manifest_command_prints_and_checks_the_generated_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    printed = refused(capsys, "manifest")
    checked = refused(capsys, "manifest", "--check")

    assert printed[0] == 0 and printed[1] == render_manifest()
    assert checked[0] == 0, checked[2]


def test_the_manifest_command_writes_the_manifest_and_check_refuses_a_stale_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "MANIFEST.json"
    monkeypatch.setattr(manifest_module, "MANIFEST_PATH", path)

    missing = refused(capsys, "manifest", "--check")
    written = refused(capsys, "manifest", "--write")
    checked = refused(capsys, "manifest", "--check")
    path.write_text(path.read_text() + " ", encoding="utf-8")
    stale = refused(capsys, "manifest", "--check")

    assert missing[0] == 1 and path.read_text().rstrip() == render_manifest().rstrip()
    assert written == (0, f"mcp-conformance: wrote {path}\n", "")
    assert checked[0] == 0
    assert stale == (1, "", f"mcp-conformance: {path} is out of date; run: mcp-conformance manifest --write\n")


def test_the_commands_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = refused(capsys, "--help")

    assert code == 0
    assert all(command in out for command in ("certify", "replay", "baseline", "manifest"))


@pytest.mark.e2e
@pytest.mark.slow
def test_certifying_the_reference_in_process_is_conformant_and_writes_every_file(tmp_path: Path) -> None:
    result = cli("certify", "--sut", "reference", "-n", "2", "--out", str(tmp_path), timeout=900)

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


# Certifications that several tests read, each made once per session (see shared_runs).
# What the partial run shows does not depend on how many examples its properties draw.
PARTIAL = ("certify", "--sut-cmd", "reference", "--clause", "BUD-3", "--clause", "GATE-1", "--thoroughness", "quick")
SEEDED_DEFECT = ("certify", "--sut-cmd", DEFECT, "--clause", "POL-5", "--seed", "12", "--shrink-time", "300")


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The reference driver certified on two clauses."""
    return shared(tmp_path_factory, "partial", lambda out: cli(*PARTIAL, "--out", str(out)))


@pytest.fixture(scope="module")
def seeded_defect(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A defective driver certified on the clause it breaks, with a fixed seed and shrinking bounded by nothing else."""
    return shared(tmp_path_factory, "seeded-defect", lambda out: cli(*SEEDED_DEFECT, "--out", str(out)))


@pytest.mark.e2e
def test_certifying_the_reference_driver_on_some_clauses_is_a_partial_pass_with_progress(partial: Run) -> None:
    result, out = partial

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cert = certificate(out)
    assert cert["verdict"] == "partial"
    assert statuses(cert)["BUD-3"] == statuses(cert)["GATE-1"] == "pass"
    assert {p.name for p in out.iterdir()} >= {
        "certificate.json",
        "certificate.md",
        "certificate.html",
        "badge.svg",
    }
    assert "reference_impl 0.1.0 claims core, lexical" in result.stdout
    assert "tests: " in result.stdout and "verdict: partial" in result.stdout


@pytest.mark.e2e
def test_a_defective_implementation_exits_1_naming_the_clause_and_its_replay_reproduces_it(seeded_defect: Run) -> None:
    result, out = seeded_defect

    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    cert = certificate(out)
    assert cert["verdict"] == "non-conformant"
    assert statuses(cert)["POL-5"] == "fail"
    failures = [f for f in cert["failures"] if "POL-5" in f["clauses"]]
    assert failures and all(f["case"] and f["replay"] for f in failures)
    assert " at 0x" not in json.dumps(cert)
    # The generated property's failure: its saved example replays on its own.
    property_failure = next(f for f in failures if READ_ONLY_TEST not in f["test"])
    replay = subprocess.run(
        property_failure["replay"],
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=environment(),
    )
    assert replay.returncode == 1, replay.stdout[-3000:] + replay.stderr[-3000:]
    assert "POL-5" in replay.stdout


@pytest.mark.slow
@pytest.mark.e2e
def test_the_same_seed_gives_the_same_certificate(seeded_defect: Run, tmp_path: Path) -> None:
    first, first_out = seeded_defect

    second = cli(*SEEDED_DEFECT, "--out", str(tmp_path))

    assert first.returncode == second.returncode == 1, first.stdout[-2000:] + second.stdout[-2000:]
    a, b = certificate(first_out), certificate(tmp_path)
    assert a["seed"] == 12 and all("--seed=12" in f["replay"] for f in a["failures"])
    # They differ only in --out, which the command and the replay commands name.
    assert without_times(a) == json.loads(json.dumps(without_times(b)).replace(str(tmp_path), str(first_out)))


@pytest.mark.slow
@pytest.mark.e2e
def test_the_callers_pytest_setup_changes_nothing_and_only_the_output_folder_is_written(
    partial: Run, tmp_path: Path
) -> None:
    hostile = tmp_path / "project"
    hostile.mkdir()
    (hostile / "pytest.ini").write_text(
        "[pytest]\nfilterwarnings = error\ntestpaths = no_such_folder\naddopts = --no-such-option\n"
    )
    (hostile / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-x --no-such-option"\n')
    (hostile / "conftest.py").write_text("raise RuntimeError('the caller conftest.py was loaded')\n")
    before = sorted(p.name for p in hostile.iterdir())
    elsewhere, plain = partial

    inside = cli(*PARTIAL, "--out", "out", cwd=hostile, PYTEST_ADDOPTS="--no-such-option")

    assert inside.returncode == elsewhere.returncode == 0, inside.stdout[-3000:] + inside.stderr[-3000:]
    assert statuses(certificate(hostile / "out")) == statuses(certificate(plain))
    assert sorted(p.name for p in hostile.iterdir()) == sorted([*before, "out"])
    assert not list((hostile / "out").glob(".run-*"))


@pytest.mark.slow
@pytest.mark.e2e
def test_regression_mode_accepts_a_listed_failure_reports_it_as_xfail_and_refuses_a_stale_one(tmp_path: Path) -> None:
    known = tmp_path / "known.toml"
    known.write_text(
        f'[[expected_failure]]\nclause = "POL-5"\nreason = "read-only lands in 2.3"\ntest = "{READ_ONLY_TEST}"\n'
    )
    junit = tmp_path / "report.xml"
    # Only which tests fail matters here, not their shrunk examples.
    common = ["--clause", "POL-5", "--no-shrink", "--mode", "regression", "--expectations", str(known)]
    common += ["--", "-k", READ_ONLY_TEST]

    defective = cli(
        "certify", "--sut-cmd", DEFECT, "--out", str(tmp_path / "defective"), *common, f"--junitxml={junit}"
    )
    fixed = cli(
        "certify",
        "--sut-cmd",
        "reference",
        "--out",
        str(tmp_path / "fixed"),
        *common,
        f"--junitxml={tmp_path / 'f.xml'}",
    )

    assert defective.returncode == 0, defective.stdout[-3000:]
    assert certificate(tmp_path / "defective")["verdict"] == "partial"  # one test of one clause ran
    assert statuses(certificate(tmp_path / "defective"))["POL-5"] == "expected-fail"
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    assert cases and not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    assert all(c.find("skipped") is not None for c in cases)
    assert fixed.returncode == 1, fixed.stdout[-3000:]
    stale = certificate(tmp_path / "fixed")
    assert stale["verdict"] == "stale expectations"
    assert stale["expectations"]["entries"][0]["status"].startswith("stale")
    assert "read-only lands in 2.3" in (tmp_path / "fixed" / "certificate.md").read_text()
    # The console and the JUnit report say it as the exit code does.
    assert f"stale: POL-5 ({READ_ONLY_TEST}): the listed failure no longer happens" in fixed.stdout
    report = ET.parse(tmp_path / "f.xml").getroot()
    suite = report if report.tag == "testsuite" else report.find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    [stale_case] = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert stale_case.get("name") == f"stale expectation POL-5 ({READ_ONLY_TEST})"


@pytest.mark.slow
@pytest.mark.e2e
def test_a_written_baseline_holds_the_same_run_in_regression_mode(tmp_path: Path) -> None:
    known = tmp_path / "known.toml"
    common = ["--sut-cmd", DEFECT, "--clause", "POL-5", "--no-shrink"]
    # One failing test of the clause is enough to hold in place.
    only = ["--", "-k", READ_ONLY_TEST]

    first = cli("certify", *common, "--out", str(tmp_path / "first"), "--write-expectations", str(known), *only)
    again = cli(
        "certify",
        *common,
        "--out",
        str(tmp_path / "again"),
        "--mode",
        "regression",
        "--expectations",
        str(known),
        *only,
    )

    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    assert f"known failure(s) written to {known}" in first.stdout
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    cert = certificate(tmp_path / "again")
    assert cert["verdict"] == "partial" and statuses(cert)["POL-5"] == "expected-fail"
    entries = cert["expectations"]["entries"]
    assert entries and {e["status"] for e in entries} == {"failure seen, as expected"}
    assert ", 0 stale; 0 unexpected failure(s)" in again.stdout


@pytest.mark.slow
@pytest.mark.e2e
def test_a_driver_that_crashes_on_every_run_is_declared_broken_after_three(tmp_path: Path) -> None:
    result = cli("certify", "--sut-cmd", fake("crash-on-open"), "--out", str(tmp_path), timeout=300)

    assert result.returncode == 1, result.stdout[-3000:]
    cert = certificate(tmp_path)
    [failure] = cert["failures"]
    assert failure["label"] == "driver protocol"
    assert "exited with code 3" in failure["message"]
    assert cert["tests"]["finding"] <= 3 and cert["tests"]["not-run"] > 90
    assert "the remaining tests are not run" in result.stdout


@pytest.mark.slow
@pytest.mark.e2e
def test_a_run_past_its_time_budget_is_incomplete(tmp_path: Path) -> None:
    result = cli("certify", "--sut", "reference", "--max-time", "3", "--out", str(tmp_path), timeout=300)

    assert result.returncode == 2, result.stdout[-3000:]
    cert = certificate(tmp_path)
    assert cert["verdict"] == "incomplete"
    assert cert["tests"]["not-run"] > 0 and "not-run" in statuses(cert).values()


@pytest.mark.slow
@pytest.mark.e2e
def test_processes_the_sut_leaves_behind_are_killed_and_reported(tmp_path: Path) -> None:
    pids = tmp_path / "pids"

    result = cli(
        "certify",
        "--sut-cmd",
        fake("escape"),
        "--out",
        str(tmp_path / "out"),
        "--",
        "-k",
        SMOKE,
        FAKE_DRIVER_PIDS=str(pids),
    )

    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    driver, sleeper = (int(pid) for pid in pids.read_text().split())
    assert not is_running(driver) and not is_running(sleeper)
    [failure] = certificate(tmp_path / "out")["failures"]
    assert "still running after the suite ended" in failure["message"]
    assert any(line.startswith(f"{sleeper}: ") for line in failure["observed"])


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_a_signal_ends_the_whole_tree_and_still_writes_a_certificate(tmp_path: Path, signum: signal.Signals) -> None:
    pids = tmp_path / "pids"
    command = [
        sys.executable,
        "-m",
        "conformance._cli",
        "certify",
        "-n",
        "1",
        "--sut-cmd",
        fake("hang-on-open"),
        "--out",
        str(tmp_path / "out"),
    ]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(FAKE_DRIVER_PIDS=str(pids)),
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "tests in" in line:  # collected: the driver runs and the first run.open hangs
            break
    process.send_signal(signum)
    out, err = process.communicate(timeout=120)

    assert process.returncode == 2, out + err
    cert = certificate(tmp_path / "out")
    assert cert["verdict"] == "incomplete" and signum.name in cert["why"][0]
    assert not [pid for pid in map(int, pids.read_text().split()) if is_running(pid)]


@pytest.mark.parametrize("command", ["certify", "replay", "baseline"])
def test_the_help_of_each_command_is_pinned(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text_snapshot: SnapshotAssertion
) -> None:
    monkeypatch.setenv("COLUMNS", "100")

    with pytest.raises(SystemExit) as ended:
        main([command, "--help"])

    assert ended.value.code == 0
    assert capsys.readouterr().out == text_snapshot


@pytest.mark.parametrize("command", ["certify", "replay"])
def test_certify_and_replay_offer_the_plugins_options_from_its_table(command: str) -> None:
    parser = certify_parser() if command == "certify" else replay_parser()
    actions = {flag: action for action in parser._actions for flag in action.option_strings}

    offered = [option for option in OPTIONS if command in option.commands]

    assert {option.cli for option in offered} <= set(actions)
    for option in offered:
        action = actions[str(option.cli)]
        assert (action.dest, action.help) == (option.dest, option.cli_help or option.help)
    # Nothing certify runs the suite with is declared twice under another name.
    assert not {option.flag for option in OPTIONS} & (set(actions) - {o.cli for o in offered})
