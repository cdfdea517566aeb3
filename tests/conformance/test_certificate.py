"""The certificate: every clause accounted for, the verdict and exit code, and safe rendering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance._certificate import RunInfo, build_certificate, render_html, render_markdown, write_certificate
from conformance._clauses import parse_spec
from conformance._expectations import Expectation

SPEC = """
## Things

### A-1 · MUST · core
Hosts keep things.
Sources: F1.

### A-2 · SHOULD · core
Hosts tidy things.
Sources: F2.

### A-3 · MAY · core
Hosts may paint things.
Sources: F3.

### L-1 · MUST · lexical
Scores are exact.
Sources: R1.
"""
CLAUSES = parse_spec(SPEC)
UNTESTED = {"A-3": "a permission"}
SESSION = {
    "record": "session",
    "implementation": {"name": "acme", "version": "1.2", "profiles": ["core"]},
    "profiles_under_test": ["core"],
}


def run_info(tmp_path: Path, **changes: Any) -> RunInfo:
    values: dict[str, Any] = {
        "command": "mcp-conformance certify --sut-cmd 'node d.js'",
        "pytest_argv": ["python", "-m", "pytest"],
        "pytest_exit": 0,
        "sut_option": "--sut-cmd",
        "sut_value": "node d.js",
        "profile": None,
        "timeout": None,
        "mode": "certify",
        "expectations_file": None,
        "examples_dir": tmp_path / "out" / "examples",
        "cwd": tmp_path,
        "timestamp": "2026-01-01T00:00:00+00:00",
        "python": "python",
    }
    values.update(changes)
    return RunInfo(**values)


def record(test: str, clauses: list[str], kind: str = "pass", **extra: Any) -> dict[str, Any]:
    return {
        "record": "test",
        "nodeid": f"suite/test_x.py::{test}",
        "path": "/somewhere/suite/test_x.py",
        "name": test,
        "clauses": clauses,
        "kind": kind,
        "message": extra.pop("message", ""),
        "findings": extra.pop("findings", []),
        **extra,
    }


def finding(clauses: list[str], message: str = "broke it") -> dict[str, Any]:
    return {
        "clauses": clauses,
        "message": message,
        "expected": ["a"],
        "observed": ["<script>alert(1)</script>"],
        "case": {"fleet": {"seed": 3}, "policies": {"s0": {"mode": "auto"}}},
        "stderr_tail": "",
        "misbehaved": False,
        "notes": ["Falsifying example: test_one(seed=3)"],
        "text": message,
    }


def certificate(
    tmp_path: Path, tests: list[dict[str, Any]], expectations: tuple[Expectation, ...] = (), **changes: Any
) -> dict[str, Any]:
    session = changes.pop("session", SESSION)
    pending = changes.pop("pending", frozenset())
    return build_certificate(
        run_info(tmp_path, **changes), session, tests, expectations, clauses=CLAUSES, untested=UNTESTED, pending=pending
    )


def statuses(cert: dict[str, Any]) -> dict[str, str]:
    return {row["clause"]: row["status"] for row in cert["clauses"]}


def test_every_clause_passing_is_conformant_and_every_clause_is_listed(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"]), record("test_two", ["A-2"])])

    assert (cert["verdict"], cert["exit_code"]) == ("conformant", 0)
    assert statuses(cert) == {"A-1": "pass", "A-2": "pass", "A-3": "untested", "L-1": "not-applicable"}
    assert cert["clauses"][2]["reason"] == "a permission"
    assert cert["implementation"] == {"name": "acme", "version": "1.2", "profiles_claimed": ["core"]}


def test_a_must_failure_is_non_conformant_with_the_case_and_a_replay_command(tmp_path: Path) -> None:
    failing = record("test_one[http]", ["A-1", "A-2"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [failing, record("test_two", ["A-2"])])

    assert (cert["verdict"], cert["exit_code"]) == ("non-conformant", 1)
    assert statuses(cert)["A-1"] == "fail" and statuses(cert)["A-2"] == "pass"
    [entry] = cert["failures"]
    assert entry["clauses"] == ["A-1"] and entry["level"] == "MUST"
    assert entry["case"] == {"fleet": {"seed": 3}, "policies": {"s0": {"mode": "auto"}}}
    assert entry["observed"] == ["<script>alert(1)</script>"]
    assert entry["falsifying_example"] == "Falsifying example: test_one(seed=3)"
    assert entry["replay"] == (
        "python -m pytest '--sut-cmd=node d.js' --conformance-examples=out/examples "
        "'/somewhere/suite/test_x.py::test_one[http]'"
    )


def test_a_should_failure_is_a_warning_and_exits_0(tmp_path: Path) -> None:
    cert = certificate(
        tmp_path,
        [record("test_one", ["A-1"]), record("test_two", ["A-2"], "finding", findings=[finding(["A-2"])])],
    )

    assert (cert["verdict"], cert["exit_code"]) == ("conformant with warnings", 0)
    assert any("A-2" in line for line in cert["why"])


def test_a_failure_without_clauses_blames_the_clauses_the_test_cites(tmp_path: Path) -> None:
    crashed = record("test_one", ["A-1"], "finding", findings=[finding([], "driver exited with code 3")])

    cert = certificate(tmp_path, [crashed, record("test_two", ["A-2"])])

    assert statuses(cert)["A-1"] == "fail" and cert["exit_code"] == 1


def test_a_test_that_breaks_in_setup_gives_no_verdict(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"], "error", message="fixture broke"), record("t2", ["A-2"])])

    assert (cert["verdict"], cert["exit_code"]) == ("error", 2)
    assert statuses(cert)["A-1"] == "error"
    assert cert["errors"][0]["message"] == "fixture broke"


def test_a_pending_clause_makes_the_run_incomplete(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"])], pending=frozenset({"A-2"}))

    assert (cert["verdict"], cert["exit_code"]) == ("incomplete", 2)
    assert statuses(cert)["A-2"] == "untested"


def test_a_subset_that_passes_is_a_partial_run(tmp_path: Path) -> None:
    cert = certificate(tmp_path, [record("test_one", ["A-1"])])

    assert (cert["verdict"], cert["exit_code"]) == ("partial", 0)
    assert statuses(cert)["A-2"] == "not-run"


def test_nothing_tested_or_no_initialize_is_an_error(tmp_path: Path) -> None:
    only_skips = certificate(tmp_path, [record("test_one", ["A-1"], "skip", message="not applicable")])
    no_session = certificate(tmp_path, [], session=None)

    assert (only_skips["verdict"], only_skips["exit_code"]) == ("error", 2)
    assert statuses(only_skips)["A-1"] == "not-applicable"
    assert no_session["exit_code"] == 2


def test_regression_mode_accepts_a_listed_failure(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "lands in 2.0"),)
    failing = record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [failing, record("t2", ["A-2"])], listed, mode="regression", expectations_file="x")

    assert (cert["verdict"], cert["exit_code"]) == ("no regressions", 0)
    assert statuses(cert)["A-1"] == "expected-fail"
    assert cert["expectations"]["entries"][0]["status"] == "failure seen, as expected"
    assert cert["failures"][0]["expected_failure"] == [{"clause": "A-1", "reason": "lands in 2.0", "test": None}]


def test_a_listed_failure_that_passes_is_stale(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "lands in 2.0"),)

    cert = certificate(
        tmp_path, [record("test_one", ["A-1"]), record("t2", ["A-2"])], listed, expectations_file="known.toml"
    )

    assert (cert["verdict"], cert["exit_code"]) == ("stale expectations", 1)
    assert "known.toml" in cert["why"][0]


def test_an_expectation_for_one_test_does_not_cover_another(tmp_path: Path) -> None:
    listed = (Expectation("A-1", "known", test="test_x.py::test_one"),)
    one = record("test_one", ["A-1"], "finding", findings=[finding(["A-1"])])
    other = record("test_other", ["A-1"], "finding", findings=[finding(["A-1"])])

    cert = certificate(tmp_path, [one, other, record("t2", ["A-2"])], listed, mode="regression")

    assert cert["exit_code"] == 1
    assert [bool(f["expected_failure"]) for f in cert["failures"]] == [True, False]


def test_the_three_files_are_written_and_the_html_escapes_everything(tmp_path: Path) -> None:
    failing = record("test_one", ["A-1"], "finding", findings=[finding(["A-1"], "a <b>bold</b> claim")])
    cert = certificate(tmp_path, [failing])

    paths = write_certificate(cert, tmp_path)

    assert [p.name for p in paths] == ["certificate.json", "certificate.md", "certificate.html"]
    assert json.loads(paths[0].read_text())["verdict"] == "non-conformant"
    page = render_html(cert)
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;bold" in page
    assert "<link" not in page and "src=" not in page  # self-contained
    text = render_markdown(cert)
    assert "### A-1 (MUST)" in text and "Replay:" in text and '"seed": 3' in text


@pytest.mark.parametrize("name", ["certificate.md", "certificate.html"])
def test_the_readable_certificates_name_the_implementation(tmp_path: Path, name: str) -> None:
    write_certificate(certificate(tmp_path, [record("test_one", ["A-1"])]), tmp_path)

    assert "acme 1.2" in (tmp_path / name).read_text()
