"""The certificate written out: pinned Markdown, HTML and badge, escaping, atomic files."""

from __future__ import annotations

import json
from pathlib import Path

from syrupy.assertion import SnapshotAssertion

from conformance._certificate import Certificate
from conformance._expectations import Expectation
from conformance._records import PropertyStats, append_record, read_records
from conformance._render import FILES, render_badge, render_html, render_markdown, write_certificate
from tests.conformance.certificates import certificate, finding, record


def sample(tmp_path: Path) -> Certificate:
    """A certificate with every part: a MUST failure, a protocol failure, an expected one, an error,
    an inconclusive test."""
    stats = PropertyStats(
        max_examples=12, examples=4, cut_short=False, shrink_steps=31, shrink_seconds=2.5, shrink_stopped="time"
    )
    tests = [
        record("test_one", ["A-1"], "finding", findings=[finding(["A-1"], "a <b>bold</b> claim")], property=stats),
        record(
            "test_two",
            ["A-2"],
            "finding",
            findings=[finding([], "run.open: driver exited with code 3 without answering", protocol=True)],
        ),
        record("test_three", ["A-2"], "finding", findings=[finding(["A-2"], "known gap")]),
        record("test_four", ["A-2"], "error", message="fixture 'fleets' broke: OSError: no ports", when="setup"),
        record(
            "test_five", ["A-1"], "inconclusive", message="the first round broke A-1.1", inconclusive_because="A-1.1"
        ),
    ]
    cert = certificate(
        tmp_path,
        tests,
        (Expectation("A-2", "tidying lands in 2.0", test="test_x.py::test_three"),),
        mode="regression",
        expectations_file="known.toml",
        seconds=12.5,
        examples_dir=Path("/work/certificate/examples"),
    )
    cert["suite"] = {"package": "mcp-adaptive-conformance", "version": "9.9.9", "spec_sha256": "0" * 64}
    cert["working_directory"] = "/work"
    return cert


def test_the_markdown_certificate_is_pinned(tmp_path: Path, text_snapshot: SnapshotAssertion) -> None:
    assert render_markdown(sample(tmp_path)) == text_snapshot


def test_the_json_certificate_is_pinned(tmp_path: Path, text_snapshot: SnapshotAssertion) -> None:
    out = tmp_path / "written"

    write_certificate(sample(tmp_path), out)

    assert (out / "certificate.json").read_text() == text_snapshot


def test_the_html_certificate_is_pinned(tmp_path: Path, text_snapshot: SnapshotAssertion) -> None:
    assert render_html(sample(tmp_path)) == text_snapshot


def test_the_badge_is_pinned(tmp_path: Path, text_snapshot: SnapshotAssertion) -> None:
    assert render_badge(sample(tmp_path)) == text_snapshot


def test_both_documents_open_with_the_verdict_and_the_summary(tmp_path: Path) -> None:
    cert = sample(tmp_path)

    markdown, page = render_markdown(cert), render_html(cert)

    assert markdown.splitlines()[2] == "> **Verdict: non-conformant** (exit code 1)"
    assert markdown.index("| clauses |") < markdown.index("## Contents") < markdown.index("## Run")
    assert page.index('class="banner bad"') < page.index("<th>clauses</th>") < page.index("<h2>Contents</h2>")


def test_failures_are_grouped_by_clause_with_anchors_the_contents_link_to(tmp_path: Path) -> None:
    markdown = render_markdown(sample(tmp_path))

    assert "[A-1](#clause-a-1)" in markdown and '<a name="clause-a-1"></a>' in markdown
    assert "[driver protocol](#clause-driver-protocol)" in markdown


def test_the_html_escapes_every_value_and_loads_nothing(tmp_path: Path) -> None:
    page = render_html(sample(tmp_path))

    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;bold" in page
    assert "<link" not in page and "src=" not in page


def test_a_test_that_found_nothing_to_check_is_named_with_its_reason_beside_a_passing_clause(tmp_path: Path) -> None:
    empty = "nothing to check: the implementation evicted no tool"
    said = f"inconclusive: {empty}"
    tests = [record("test_one", ["A-1"]), record("test_two", ["A-1"], "inconclusive", message=said)]

    cert = certificate(tmp_path, tests)
    markdown, page = render_markdown(cert), render_html(cert)

    assert cert["clauses"][0]["status"] == "pass"
    assert f"- `test_x.py::test_two` (A-1): {empty}" in markdown
    assert "[Inconclusive tests](#inconclusive-tests)" in markdown
    assert f"<li><code>test_x.py::test_two</code> (A-1): {empty}</li>" in page


def test_a_long_note_is_never_cut(tmp_path: Path) -> None:
    long_message = "the server " + "r" * 400 + ": [" + "x" * 200 + "]"
    cert = certificate(tmp_path, [record("test_one", ["A-1"], "finding", findings=[finding(["A-1"], long_message)])])

    assert long_message in render_html(cert) and long_message in render_markdown(cert)


def test_the_files_are_written_and_replace_the_old_ones_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "certificate.json").write_text("old")

    paths = write_certificate(sample(tmp_path), out)

    assert [p.name for p in paths] == list(FILES)
    assert json.loads((out / "certificate.json").read_text())["verdict"] == "non-conformant"
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)


def test_a_lone_surrogate_a_driver_echoed_is_written_as_its_escape(tmp_path: Path) -> None:
    findings = [finding(["A-1"], "the driver said \ud800")]
    append_record(tmp_path / "records.jsonl", record("test_one", ["A-1"], "finding", findings=findings))
    [read] = read_records([tmp_path / "records.jsonl"]).tests
    cert = certificate(tmp_path, [read])

    write_certificate(cert, tmp_path / "out")

    written = json.loads((tmp_path / "out" / "certificate.json").read_text(encoding="utf-8"))
    assert written["failures"][0]["message"] == "the driver said \ud800"
