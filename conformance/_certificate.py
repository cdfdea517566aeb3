"""Turning the results of a suite run into a certificate: JSON, Markdown and HTML.

The pytest plugin writes one JSON line per test result (``--conformance-report``): the
clauses the test cites, its outcome, and the fields of every
:class:`~conformance.Nonconformance` it raised. This module reads those lines, accounts
for every clause of the specification (pass, fail, expected failure, not applicable, not
run, untested with its reason), applies the expectations file, and decides the verdict
and the exit code:

=====================================  ====
verdict                                exit
=====================================  ====
conformant (SHOULD failures: warnings)  0
partial (a subset ran, all passed)      0
no regressions (expected failures)      0
non-conformant                          1
stale expectations                      1
incomplete (a testable clause has no    2
test yet)
error (the suite broke, nothing ran)    2
=====================================  ====
"""

from __future__ import annotations

import hashlib
import html
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Final

from conformance._clauses import Clause, load_clauses
from conformance._expectations import Expectation
from conformance._manifest import PENDING, UNTESTED

__all__ = [
    "FORMAT",
    "RunInfo",
    "build_certificate",
    "read_results",
    "render_html",
    "render_markdown",
    "write_certificate",
]

FORMAT: Final = "mcp-conformance-certificate/1"
DISTRIBUTION: Final = "mcp-adaptive-conformance"

PASS, FAIL, EXPECTED, NOT_APPLICABLE, NOT_RUN, UNTESTED_STATUS, ERROR, INCONCLUSIVE = (
    "pass",
    "fail",
    "expected-fail",
    "not-applicable",
    "not-run",
    "untested",
    "error",
    "inconclusive",
)

EXIT_OK, EXIT_NONCONFORMANT, EXIT_BROKEN = 0, 1, 2


@dataclass(frozen=True, slots=True)
class RunInfo:
    """How the suite was run, for the certificate and for replay commands."""

    command: str
    pytest_argv: Sequence[str]
    pytest_exit: int
    sut_option: str
    sut_value: str
    profile: str | None
    timeout: str | None
    mode: str
    expectations_file: str | None
    examples_dir: Path
    cwd: Path
    timestamp: str
    python: str
    extra_env: Mapping[str, str] = field(default_factory=dict)


def read_results(paths: Iterable[Path]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The session record (the first that names an implementation) and every test record."""
    session: dict[str, Any] | None = None
    tests: list[dict[str, Any]] = []
    for path in sorted(paths):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("record") == "session":
                if session is None or (session.get("implementation") is None and record.get("implementation")):
                    session = record
            elif record.get("record") == "test":
                tests.append(record)
    return session, tests


def suite_version() -> dict[str, str]:
    """The installed suite's version and a digest of the specification it certifies against."""
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "unknown"
    spec = resources.files("conformance").joinpath("SPEC.md").read_bytes()
    return {"package": DISTRIBUTION, "version": version, "spec_sha256": hashlib.sha256(spec).hexdigest()}


def _title(clause: Clause) -> str:
    first = clause.text.split("\n\n", 1)[0]
    sentence = first.split(". ", 1)[0].rstrip(".")
    return sentence if len(sentence) <= 160 else sentence[:157] + "..."


def _display_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return str(path.resolve())


def replay_command(run: RunInfo, record: Mapping[str, Any]) -> str:
    """One command that runs exactly this test again, its saved failing example first."""
    nodeid = str(record["nodeid"])
    name = nodeid.split("::", 1)[1] if "::" in nodeid else str(record.get("name", ""))
    target = f"{_display_path(Path(str(record['path'])), run.cwd)}::{name}"
    argv = [run.python, "-m", "pytest", f"{run.sut_option}={run.sut_value}"]
    if run.profile:
        argv.append(f"--profile={run.profile}")
    if run.timeout:
        argv.append(f"--sut-timeout={run.timeout}")
    argv += [f"--conformance-examples={_display_path(run.examples_dir, run.cwd)}", target]
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(run.extra_env.items())]
    return " ".join([*env, shlex.join(argv)])


def _blamed(record: Mapping[str, Any]) -> list[str]:
    """The clauses a failing test record breaks: those its findings name, else those it cites."""
    named = [c for finding in record.get("findings", []) for c in finding.get("clauses", [])]
    if named:
        return list(dict.fromkeys(named))
    return list(record.get("clauses", []))


def _failure_entry(run: RunInfo, record: Mapping[str, Any], clauses: Mapping[str, Clause]) -> dict[str, Any]:
    blamed = _blamed(record)
    levels = [clauses[c].level for c in blamed if c in clauses]
    findings = list(record.get("findings", []))
    first = findings[0] if findings else {}
    message = first.get("message") or _first_line(str(record.get("message", "")))
    return {
        "test": record["nodeid"],
        "clauses": blamed,
        "level": "MUST" if not levels or "MUST" in levels else ("SHOULD" if "SHOULD" in levels else "MAY"),
        "message": message,
        "expected": first.get("expected"),
        "observed": first.get("observed"),
        "case": first.get("case"),
        "falsifying_example": "\n".join(first.get("notes", [])),
        "stderr_tail": first.get("stderr_tail", ""),
        "findings": findings,
        "detail": "" if findings else str(record.get("message", "")),
        "replay": replay_command(run, record),
        "expected_failure": None,
    }


def _first_line(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("E "):
            return stripped[2:].strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def build_certificate(
    run: RunInfo,
    session: Mapping[str, Any] | None,
    tests: Sequence[Mapping[str, Any]],
    expectations: Sequence[Expectation] = (),
    *,
    clauses: Mapping[str, Clause] | None = None,
    untested: Mapping[str, str] | None = None,
    pending: frozenset[str] | None = None,
) -> dict[str, Any]:
    """The certificate of one run, as a JSON-ready dict with ``verdict`` and ``exit_code``."""
    spec = load_clauses() if clauses is None else clauses
    reasons = UNTESTED if untested is None else untested
    gaps = PENDING if pending is None else pending
    under_test = set((session or {}).get("profiles_under_test", []))
    impl = (session or {}).get("implementation") or {}

    by_clause: dict[str, list[Mapping[str, Any]]] = {c: [] for c in spec}
    failing: list[Mapping[str, Any]] = []
    errors: list[Mapping[str, Any]] = []
    for record in tests:
        for cid in record.get("clauses", []):
            by_clause.setdefault(cid, []).append(record)
        if record.get("kind") == "finding":
            failing.append(record)
        elif record.get("kind") == "error":
            errors.append(record)

    failures = [_failure_entry(run, r, spec) for r in failing]
    # Which failures each clause has, and whether an expectation covers them.
    clause_failures: dict[str, list[dict[str, Any]]] = {}
    for entry in failures:
        for cid in entry["clauses"]:
            clause_failures.setdefault(cid, []).append(entry)
    used: dict[int, str] = {}
    for entry in failures:
        cover = [e for e in expectations if e.clause in entry["clauses"] and e.covers(entry["test"])]
        if cover and all(any(e.clause == c for e in cover) for c in entry["clauses"]):
            entry["expected_failure"] = [e.as_dict() for e in cover]
            for e in cover:
                used[e.index] = "seen"

    rows: list[dict[str, Any]] = []
    for cid, clause in spec.items():
        records = by_clause.get(cid, [])
        row: dict[str, Any] = {
            "clause": cid,
            "level": clause.level,
            "profile": clause.profile,
            "section": clause.section,
            "title": _title(clause),
            "tests": [{"test": r["nodeid"], "outcome": _outcome(r)} for r in records],
            "reason": None,
        }
        own = clause_failures.get(cid, [])
        if cid in reasons:
            row["status"], row["reason"] = UNTESTED_STATUS, reasons[cid]
        elif not records:
            if under_test and clause.profile not in under_test:
                row["status"], row["reason"] = NOT_APPLICABLE, f"profile {clause.profile!r} is not under test"
            elif cid in gaps:
                row["status"] = UNTESTED_STATUS
                row["reason"] = "pending: a testable clause the suite has no test for yet"
            else:
                row["status"], row["reason"] = NOT_RUN, "no test citing it was selected in this run"
        elif own:
            expected = all(f["expected_failure"] for f in own)
            row["status"] = EXPECTED if expected else FAIL
            if expected:
                row["reason"] = "; ".join(
                    dict.fromkeys(e["reason"] for f in own for e in f["expected_failure"] if e["clause"] == cid)
                )
        elif any(r.get("kind") == "error" for r in records):
            row["status"], row["reason"] = ERROR, "a test citing it could not run to the end"
        elif any(r.get("kind") == "pass" for r in records):
            row["status"] = PASS
        elif all(r.get("kind") == "skip" for r in records):
            row["status"], row["reason"] = NOT_APPLICABLE, str(records[0].get("message", ""))
        else:
            row["status"] = INCONCLUSIVE
            row["reason"] = "every test citing it failed on another clause first"
        rows.append(row)

    status = {row["clause"]: row["status"] for row in rows}
    expectation_rows = []
    for e in expectations:
        level = spec[e.clause].level
        if e.index in used:
            state = "failure seen, as expected"
        elif _expectation_stale(e, tests):
            state = "stale: the listed failure no longer happens"
        else:
            state = "not checked in this run"
        expectation_rows.append({**e.as_dict(), "level": level, "status": state})

    verdict, code, why = _verdict(run, session, rows, failures, errors, expectation_rows, status)
    return {
        "format": FORMAT,
        "verdict": verdict,
        "exit_code": code,
        "why": why,
        "implementation": {
            "name": impl.get("name"),
            "version": impl.get("version"),
            "profiles_claimed": impl.get("profiles", []),
        },
        "sut": f"{run.sut_option} {shlex.quote(run.sut_value)}",
        "profiles_under_test": sorted(under_test),
        "profile_source": f"--profile {run.profile}" if run.profile else "as claimed by the implementation",
        "mode": run.mode,
        "suite": suite_version(),
        "timestamp": run.timestamp,
        "command": run.command,
        "pytest_command": shlex.join(run.pytest_argv),
        "pytest_exit": run.pytest_exit,
        "working_directory": str(run.cwd),
        "summary": {s: sum(1 for row in rows if row["status"] == s) for s in _STATUS_ORDER},
        "expectations": {"file": run.expectations_file, "entries": expectation_rows},
        "clauses": rows,
        "failures": failures,
        "errors": [
            {"test": r["nodeid"], "when": r.get("when"), "message": str(r.get("message", ""))[-4000:]} for r in errors
        ],
    }


_STATUS_ORDER: Final = (PASS, FAIL, EXPECTED, ERROR, INCONCLUSIVE, NOT_APPLICABLE, NOT_RUN, UNTESTED_STATUS)


def _outcome(record: Mapping[str, Any]) -> str:
    kind = str(record.get("kind", ""))
    return {"pass": "passed", "skip": "skipped", "finding": "failed", "error": "error"}.get(kind, kind)


def _expectation_stale(e: Expectation, tests: Sequence[Mapping[str, Any]]) -> bool:
    """The clause was checked by a covered test that ran to the end and raised no finding on it."""
    relevant = [r for r in tests if e.clause in r.get("clauses", []) and e.covers(str(r["nodeid"]))]
    if not relevant or any(r.get("kind") in ("error", "skip") for r in relevant):
        return False
    return not any(r.get("kind") == "finding" and e.clause in _blamed(r) for r in relevant)


def _verdict(
    run: RunInfo,
    session: Mapping[str, Any] | None,
    rows: Sequence[Mapping[str, Any]],
    failures: Sequence[Mapping[str, Any]],
    errors: Sequence[Mapping[str, Any]],
    expectations: Sequence[Mapping[str, Any]],
    status: Mapping[str, str],
) -> tuple[str, int, list[str]]:
    if session is None or session.get("implementation") is None:
        return "error", EXIT_BROKEN, ["the implementation never completed initialize; no test ran"]
    blocking = [f for f in failures if not f["expected_failure"] and f["level"] == "MUST"]
    if blocking:
        broken = sorted({c for f in blocking for c in f["clauses"]}) or ["(the driver protocol)"]
        return "non-conformant", EXIT_NONCONFORMANT, [f"MUST clauses broken: {', '.join(broken)}"]
    if errors:
        return "error", EXIT_BROKEN, [f"{len(errors)} test(s) could not run to the end (see errors); no verdict"]
    stale = [e for e in expectations if e["status"].startswith("stale")]
    if stale:
        listed = ", ".join(e["clause"] for e in stale)
        return (
            "stale expectations",
            EXIT_NONCONFORMANT,
            [f"expected failures that now pass: {listed}; remove them from {run.expectations_file}"],
        )
    ran = [r for r in rows if r["status"] in (PASS, FAIL, EXPECTED, INCONCLUSIVE)]
    if not ran:
        return "error", EXIT_BROKEN, ["no clause was tested in this run"]
    why: list[str] = []
    warnings = sorted({c for f in failures if not f["expected_failure"] for c in f["clauses"]})
    if warnings:
        why.append(f"SHOULD/MAY clauses failing (warnings, not blocking): {', '.join(warnings)}")
    inconclusive = [r["clause"] for r in rows if r["status"] == INCONCLUSIVE and r["level"] == "MUST"]
    not_run = [r["clause"] for r in rows if r["status"] == NOT_RUN]
    if not_run:
        why.append(f"partial run: {len(not_run)} testable clause(s) of the profiles under test were not run")
        return "partial", EXIT_OK, why
    if inconclusive:
        return "incomplete", EXIT_BROKEN, [*why, f"MUST clauses not established: {', '.join(inconclusive)}"]
    pending = [r["clause"] for r in rows if r["status"] == UNTESTED_STATUS and str(r["reason"]).startswith("pending")]
    if pending:
        return (
            "incomplete",
            EXIT_BROKEN,
            [
                *why,
                f"the suite has no test yet for the testable clause(s) {', '.join(pending)}; no certificate verdict",
            ],
        )
    if any(r["status"] == EXPECTED for r in rows):
        return "no regressions", EXIT_OK, [*why, "every failure is listed in the expectations file"]
    return ("conformant with warnings" if warnings else "conformant"), EXIT_OK, why


# --- Rendering


def _json_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(cert: Mapping[str, Any]) -> str:
    impl = cert["implementation"]
    name = f"{impl['name'] or 'unknown'} {impl['version'] or ''}".strip()
    lines = [
        f"# Conformance certificate: {name}",
        "",
        f"**Verdict: {cert['verdict']}** (exit code {cert['exit_code']})",
        "",
    ]
    lines += [f"- {line}" for line in cert["why"]]
    lines += [
        "",
        "| | |",
        "|---|---|",
        f"| implementation | {_cell(name)} |",
        f"| profiles claimed | {_cell(', '.join(impl['profiles_claimed']) or '-')} |",
        f"| profiles under test | {_cell(', '.join(cert['profiles_under_test']) or '-')} ({_cell(cert['profile_source'])}) |",
        f"| system under test | `{_cell(cert['sut'])}` |",
        f"| mode | {cert['mode']} |",
        f"| suite | {cert['suite']['package']} {cert['suite']['version']}, SPEC.md sha256 {cert['suite']['spec_sha256'][:16]} |",
        f"| date | {cert['timestamp']} |",
        f"| command | `{_cell(cert['command'])}` |",
        "",
        "Summary: " + ", ".join(f"{count} {status}" for status, count in cert["summary"].items() if count),
        "",
        "## Clauses",
        "",
        "| clause | level | profile | status | note |",
        "|---|---|---|---|---|",
    ]
    for row in cert["clauses"]:
        lines.append(
            f"| {row['clause']} | {row['level']} | {row['profile']} | {row['status']} | {_cell(row['reason'] or row['title'])} |"
        )
    exp = cert["expectations"]
    lines += ["", "## Expectations file", ""]
    if exp["file"]:
        lines.append(f"`{exp['file']}`, {len(exp['entries'])} entr{'y' if len(exp['entries']) == 1 else 'ies'}:")
        lines.append("")
        for e in exp["entries"]:
            test = f" (test `{e['test']}`)" if e["test"] else ""
            lines.append(f"- {e['clause']} ({e['level']}){test}: {e['reason']} — {e['status']}")
    else:
        lines.append("None: every failure counts.")
    if cert["failures"]:
        lines += ["", "## Failures", ""]
        for f in cert["failures"]:
            label = ", ".join(f["clauses"]) or "driver protocol"
            tag = " (expected, see the expectations file)" if f["expected_failure"] else ""
            lines += [f"### {label} ({f['level']}){tag}", "", f"Test: `{f['test']}`", "", f["message"], ""]
            if f["expected"] is not None:
                lines += ["Expected:", "", _fence(_json_text(f["expected"])), ""]
            if f["observed"] is not None:
                lines += ["Observed:", "", _fence(_json_text(f["observed"])), ""]
            if f["case"]:
                lines += ["Case (the inputs that replay it):", "", _fence(_json_text(f["case"])), ""]
            if f["falsifying_example"]:
                lines += ["Falsifying example:", "", _fence(f["falsifying_example"]), ""]
            if f["stderr_tail"]:
                lines += ["Driver stderr (last lines):", "", _fence(f["stderr_tail"]), ""]
            if f["detail"]:
                lines += ["Detail:", "", _fence(f["detail"][-3000:]), ""]
            lines += ["Replay:", "", _fence(f["replay"]), ""]
    if cert["errors"]:
        lines += ["", "## Errors (the suite could not finish these tests)", ""]
        for e in cert["errors"]:
            lines += [f"- `{e['test']}` ({e['when']})", "", _fence(e["message"][-2000:]), ""]
    return "\n".join(lines).rstrip() + "\n"


_CSS: Final = """
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
.pass{color:#186a1f}.fail,.error{color:#a4161a;font-weight:bold}.expected-fail,.inconclusive{color:#8a5a00}
.verdict{font-size:1.3rem}
"""


def render_html(cert: Mapping[str, Any]) -> str:
    """A self-contained page; every value from the run is escaped."""
    e = html.escape
    impl = cert["implementation"]
    name = f"{impl['name'] or 'unknown'} {impl['version'] or ''}".strip()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Conformance certificate: {e(name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Conformance certificate: {e(name)}</h1>",
        f'<p class="verdict">Verdict: <strong>{e(cert["verdict"])}</strong> (exit code {cert["exit_code"]})</p>',
    ]
    if cert["why"]:
        parts.append("<ul>" + "".join(f"<li>{e(w)}</li>" for w in cert["why"]) + "</ul>")
    facts = [
        ("implementation", name),
        ("profiles claimed", ", ".join(impl["profiles_claimed"]) or "-"),
        ("profiles under test", f"{', '.join(cert['profiles_under_test']) or '-'} ({cert['profile_source']})"),
        ("system under test", cert["sut"]),
        ("mode", cert["mode"]),
        (
            "suite",
            f"{cert['suite']['package']} {cert['suite']['version']}, SPEC.md sha256 {cert['suite']['spec_sha256']}",
        ),
        ("date", cert["timestamp"]),
        ("command", cert["command"]),
    ]
    parts.append("<table>" + "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in facts) + "</table>")
    parts.append(
        "<h2>Clauses</h2><table><tr><th>clause</th><th>level</th><th>profile</th><th>status</th><th>note</th></tr>"
    )
    for row in cert["clauses"]:
        parts.append(
            f"<tr><td>{e(row['clause'])}</td><td>{e(row['level'])}</td><td>{e(row['profile'])}</td>"
            f'<td class="{e(row["status"])}">{e(row["status"])}</td><td>{e(str(row["reason"] or row["title"]))}</td></tr>'
        )
    parts.append("</table><h2>Expectations file</h2>")
    exp = cert["expectations"]
    if exp["file"]:
        parts.append(f"<p><code>{e(exp['file'])}</code></p><ul>")
        for x in exp["entries"]:
            test = f" (test <code>{e(x['test'])}</code>)" if x["test"] else ""
            parts.append(f"<li>{e(x['clause'])} ({e(x['level'])}){test}: {e(x['reason'])} — {e(x['status'])}</li>")
        parts.append("</ul>")
    else:
        parts.append("<p>None: every failure counts.</p>")
    if cert["failures"]:
        parts.append("<h2>Failures</h2>")
        for f in cert["failures"]:
            label = ", ".join(f["clauses"]) or "driver protocol"
            tag = " (expected)" if f["expected_failure"] else ""
            parts.append(f"<h3>{e(label)} ({e(f['level'])}){e(tag)}</h3>")
            parts.append(f"<p>Test: <code>{e(f['test'])}</code></p><p>{e(f['message'])}</p>")
            for title, key in (("Expected", "expected"), ("Observed", "observed"), ("Case", "case")):
                if f[key] not in (None, {}, ""):
                    parts.append(f"<p>{title}:</p><pre>{e(_json_text(f[key]))}</pre>")
            for title, key in (
                ("Falsifying example", "falsifying_example"),
                ("Driver stderr", "stderr_tail"),
                ("Detail", "detail"),
            ):
                if f[key]:
                    parts.append(f"<p>{title}:</p><pre>{e(f[key][-3000:])}</pre>")
            parts.append(f"<p>Replay:</p><pre>{e(f['replay'])}</pre>")
    if cert["errors"]:
        parts.append("<h2>Errors</h2>")
        for x in cert["errors"]:
            parts.append(
                f"<p><code>{e(x['test'])}</code> ({e(str(x['when']))})</p><pre>{e(x['message'][-2000:])}</pre>"
            )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_certificate(cert: Mapping[str, Any], out: Path) -> list[Path]:
    """Write ``certificate.json``, ``certificate.md`` and ``certificate.html`` into ``out``."""
    paths = [out / "certificate.json", out / "certificate.md", out / "certificate.html"]
    paths[0].write_text(json.dumps(cert, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    paths[1].write_text(render_markdown(cert), encoding="utf-8")
    paths[2].write_text(render_html(cert), encoding="utf-8")
    return paths


def clause_statuses(cert: Mapping[str, Any]) -> dict[str, str]:
    return {row["clause"]: row["status"] for row in cert["clauses"]}
