"""Turning the records of a suite run into a certificate, and deciding its verdict.

The plugin writes one record per test (:mod:`conformance._records`). This module
accounts for every clause of the specification, applies the expectations file, and
decides the verdict and the exit code; :mod:`conformance._render` writes it out.

====================================================  ====
verdict                                               exit
====================================================  ====
conformant (SHOULD failures: warnings)                0
partial (a subset ran, all passed)                    0
no regressions (expected failures)                    0
non-conformant                                        1
stale expectations                                    1
incomplete (time ran out, interrupted, the SUT        2
broke and nothing failed, or a clause untested)
error (the SUT did not start, the suite broke)        2
====================================================  ====

A clause is marked failed only when a finding names it: a test that cites three clauses
and finds one broken fails that one. A finding that breaks the driver protocol names no
clause of the design; it is listed as a protocol failure and blocks like a MUST clause.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Final, TypedDict

from conformance._clauses import Clause, Sentence, clause_id_of, load_clauses
from conformance._expectations import Expectation, expected_failure_of
from conformance._manifest import PENDING, UNTESTED
from conformance._reaper import Leftover
from conformance._records import FindingRecord, PropertyStats, Records, ResultRecord

__all__ = [
    "FORMAT",
    "STATUSES",
    "Certificate",
    "RunInfo",
    "build_certificate",
    "replay_command",
]

FORMAT: Final = "mcp-conformance-certificate/2"
DISTRIBUTION: Final = "mcp-adaptive-conformance"
PROTOCOL_LABEL: Final = "driver protocol"

PASS, FAIL, EXPECTED, ERROR, INCONCLUSIVE = "pass", "fail", "expected-fail", "error", "inconclusive"
NOT_APPLICABLE, NOT_RUN, UNTESTED_STATUS = "not-applicable", "not-run", "untested"
#: Every clause status, in the order the summary lists them.
STATUSES: Final = (PASS, FAIL, EXPECTED, ERROR, INCONCLUSIVE, NOT_RUN, NOT_APPLICABLE, UNTESTED_STATUS)
EXIT_OK, EXIT_NONCONFORMANT, EXIT_BROKEN = 0, 1, 2


@dataclass(frozen=True, slots=True)
class RunInfo:
    """How the suite was run, for the certificate and for replay commands."""

    command: str
    sut_option: str
    sut_value: str
    mode: str
    examples_dir: Path
    cwd: Path
    timestamp: str
    seed: int = 0
    thoroughness: str = "default"
    profile: str | None = None
    timeout: str | None = None
    shrink_time: float | None = None
    max_time: float | None = None
    expectations_file: str | None = None
    pytest_exit: int | None = 0
    #: Why the run was stopped before its end: "", "time", "SIGINT", "SIGTERM".
    stopped: str = ""
    seconds: float = 0.0
    leftovers: Sequence[Leftover] = field(default_factory=tuple)
    tracked: bool = True
    #: What the run could not track on this platform (processes that leave their group), or "".
    untracked: str = ""


class Certificate(TypedDict):
    format: str
    verdict: str
    exit_code: int
    why: list[str]
    implementation: dict[str, Any]
    sut: str
    profiles_under_test: list[str]
    profile_source: str
    mode: str
    seed: int
    thoroughness: str
    suite: dict[str, str]
    timestamp: str
    seconds: float
    command: str
    working_directory: str
    summary: dict[str, int]
    tests: dict[str, int]
    expectations: dict[str, Any]
    clauses: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    properties: list[dict[str, Any]]
    notes: list[str]


def suite_version() -> dict[str, str]:
    """The installed suite's version and a digest of the specification it certifies against."""
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "unknown"
    spec = resources.files("conformance").joinpath("SPEC.md").read_bytes()
    return {"package": DISTRIBUTION, "version": version, "spec_sha256": hashlib.sha256(spec).hexdigest()}


def _title(clause: Clause) -> str:
    """The clause's first sentence, whole."""
    first = clause.text.split("\n\n", 1)[0]
    match = re.match(r"(.+?[.:;])(?:\s|$)", first)
    return (match.group(1) if match else first).rstrip(".:;")


def _display_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return str(path.resolve())


def replay_command(run: RunInfo, nodeid: str) -> str:
    """One command that runs exactly this test again, with the run's seed and its saved examples."""
    argv = ["mcp-conformance", "replay", f"{run.sut_option}={run.sut_value}", f"--seed={run.seed}"]
    if run.thoroughness != "default":
        argv.append(f"--thoroughness={run.thoroughness}")
    if run.profile:
        argv.append(f"--profile={run.profile}")
    if run.timeout:
        argv.append(f"--sut-timeout={run.timeout}")
    argv += [f"--examples={_display_path(run.examples_dir, run.cwd)}", nodeid]
    return shlex.join(argv)


def _sentences(clauses: Mapping[str, Clause]) -> dict[str, Sentence]:
    return {s.id: s for c in clauses.values() for s in c.sentences}


def _level(refs: Sequence[str], clauses: Mapping[str, Clause]) -> str:
    """The highest level among the sentences (or clauses) a finding names."""
    sentences = _sentences(clauses)
    levels = {
        sentences[r].level if r in sentences else clauses[clause_id_of(r)].level
        for r in refs
        if r in sentences or clause_id_of(r) in clauses
    }
    if not refs or "MUST" in levels:
        return "MUST"
    return "SHOULD" if "SHOULD" in levels else "MAY"


def _failure(
    run: RunInfo, record: ResultRecord, finding: FindingRecord, clauses: Mapping[str, Clause]
) -> dict[str, Any]:
    refs = list(finding["clauses"])
    sentences = _sentences(clauses)
    return {
        "id": "",
        "clauses": list(dict.fromkeys(clause_id_of(r) for r in refs)),
        "sentences": [{"id": r, "text": sentences[r].text} for r in refs if r in sentences],
        "label": ", ".join(refs) or PROTOCOL_LABEL,
        "level": _level(refs, clauses),
        "protocol": finding["protocol"],
        "test": record["nodeid"],
        "tests": [record["nodeid"]],
        "message": finding["message"],
        "expected": finding["expected"],
        "observed": finding["observed"],
        "case": finding["case"],
        "falsifying_example": finding["example"],
        "stderr_tail": finding["stderr_tail"],
        "property": record["property"],
        "replay": replay_command(run, record["nodeid"]),
        "expected_failure": None,
    }


def _failures(
    run: RunInfo, tests: Sequence[ResultRecord], clauses: Mapping[str, Clause], expectations: Sequence[Expectation]
) -> list[dict[str, Any]]:
    """One entry per distinct finding; protocol findings with the same message are one entry."""
    order = {cid: i for i, cid in enumerate(clauses)}
    entries: list[dict[str, Any]] = []
    protocol: dict[str, dict[str, Any]] = {}
    for record in sorted((r for r in tests if r["kind"] == "finding"), key=lambda r: r["nodeid"]):
        cover = expected_failure_of(expectations, record["nodeid"], record["findings"])
        for finding in record["findings"]:
            entry = _failure(run, record, finding, clauses)
            if cover:
                entry["expected_failure"] = [e.as_dict() for e in cover if e.clause in entry["clauses"]]
            if finding["protocol"]:
                same = protocol.get(finding["message"])
                if same is not None:
                    same["tests"].append(record["nodeid"])
                    continue
                protocol[finding["message"]] = entry
            entries.append(entry)
    for leftover in _leftover_failure(run, clauses):
        entries.append(leftover)
    entries.sort(key=lambda e: (min((order.get(c, len(order)) for c in e["clauses"]), default=-1), e["test"]))
    for number, entry in enumerate(entries, start=1):
        entry["id"] = f"failure-{number}"
    return entries


def _leftover_failure(run: RunInfo, clauses: Mapping[str, Clause]) -> list[dict[str, Any]]:
    """Processes left running after the suite: PRO-7.1 for a driver, ERR-7.1 in process."""
    if not run.leftovers:
        return []
    listed = [f"{p.pid}: {p.command}" for p in run.leftovers]
    sentence = "PRO-7.1" if run.sut_option == "--sut-cmd" else "ERR-7.1"
    sentences = _sentences(clauses)
    return [
        {
            "id": "",
            "clauses": [clause_id_of(sentence)],
            "sentences": [{"id": sentence, "text": sentences[sentence].text}] if sentence in sentences else [],
            "label": sentence,
            "level": "MUST",
            "protocol": False,
            "test": "(after the suite)",
            "tests": [],
            "message": f"{len(listed)} process(es) started under the SUT were still running after the suite "
            "ended and were killed",
            "expected": "every process the SUT started has ended once the suite shut it down",
            "observed": listed,
            "case": None,
            "falsifying_example": "",
            "stderr_tail": "",
            "property": None,
            "replay": "",
            "expected_failure": None,
        }
    ]


def _row_status(
    cid: str,
    clause: Clause,
    records: Sequence[ResultRecord],
    failing: Sequence[Mapping[str, Any]],
    *,
    under_test: set[str],
    reasons: Mapping[str, str],
    gaps: frozenset[str],
) -> tuple[str, str | None]:
    ids = [s.id for s in clause.sentences]
    if all(i in reasons for i in ids):
        return UNTESTED_STATUS, reasons[ids[0]]
    if under_test and clause.profile not in under_test and not failing:
        return NOT_APPLICABLE, f"profile {clause.profile!r} is not under test"
    if any(i in gaps for i in ids):
        return UNTESTED_STATUS, "pending: a testable sentence the suite has no check for yet"
    if failing:
        if all(f["expected_failure"] for f in failing):
            reasons_given = [e["reason"] for f in failing for e in f["expected_failure"] if e["clause"] == cid]
            return EXPECTED, "; ".join(dict.fromkeys(reasons_given))
        return FAIL, failing[0]["message"]
    if not records:
        return NOT_RUN, "not selected: no test citing it ran in this run"
    kinds = {r["kind"] for r in records}
    if "error" in kinds:
        return ERROR, "a test citing it could not run to the end (see errors)"
    if "not-run" in kinds:
        return NOT_RUN, next(r["message"] for r in records if r["kind"] == "not-run")
    if "pass" in kinds:
        return PASS, None
    if kinds == {"skip"}:
        return NOT_APPLICABLE, records[0]["message"]
    return INCONCLUSIVE, "every test citing it failed on another clause first"


def build_certificate(
    run: RunInfo,
    records: Records,
    expectations: Sequence[Expectation] = (),
    *,
    clauses: Mapping[str, Clause] | None = None,
    untested: Mapping[str, str] | None = None,
    pending: frozenset[str] | None = None,
) -> Certificate:
    """The certificate of one run, with ``verdict`` and ``exit_code``."""
    spec = load_clauses() if clauses is None else clauses
    # Sentence ids: a clause is untested when all its sentences are, pending when one is.
    reasons = UNTESTED if untested is None else untested
    gaps = PENDING if pending is None else pending
    session = records.session
    under_test = set(session["profiles_under_test"]) if session else set()
    tests = sorted(records.tests, key=lambda r: r["nodeid"])

    failures = _failures(run, tests, spec, expectations)
    by_clause: dict[str, list[ResultRecord]] = {c: [] for c in spec}
    for record in tests:
        for cid in record["clauses"]:
            by_clause.setdefault(cid, []).append(record)
    failing_by_clause: dict[str, list[dict[str, Any]]] = {}
    for entry in failures:
        for cid in entry["clauses"]:
            failing_by_clause.setdefault(cid, []).append(entry)

    rows: list[dict[str, Any]] = []
    for cid, clause in spec.items():
        status, reason = _row_status(
            cid,
            clause,
            by_clause.get(cid, []),
            failing_by_clause.get(cid, []),
            under_test=under_test,
            reasons=reasons,
            gaps=gaps,
        )
        rows.append(
            {
                "clause": cid,
                "level": clause.level,
                "profile": clause.profile,
                "section": clause.section,
                "title": _title(clause),
                "status": status,
                "reason": reason,
                "tests": [{"test": r["nodeid"], "kind": r["kind"]} for r in by_clause.get(cid, [])],
                "failures": [f["id"] for f in failing_by_clause.get(cid, [])],
            }
        )

    expectation_rows = [_expectation_row(e, spec, failures, tests) for e in expectations]
    errors = [{"test": r["nodeid"], "when": r["when"], "message": r["message"]} for r in tests if r["kind"] == "error"]
    verdict, code, why = _verdict(run, records, rows, failures, errors, expectation_rows)
    impl: dict[str, Any] = dict(session["implementation"] or {}) if session is not None else {}
    notes = [run.untracked] if run.untracked else []
    if records.unreadable:
        notes.append(f"{records.unreadable} unreadable line(s) in the run's records were skipped")
    kinds = ("pass", "finding", "error", "skip", "not-run")
    return Certificate(
        format=FORMAT,
        verdict=verdict,
        exit_code=code,
        why=why,
        implementation={
            "name": impl.get("name"),
            "version": impl.get("version"),
            "profiles_claimed": impl.get("profiles", []),
        },
        sut=f"{run.sut_option} {shlex.quote(run.sut_value)}",
        profiles_under_test=sorted(under_test),
        profile_source=f"--profile {run.profile}" if run.profile else "as claimed by the implementation",
        mode=run.mode,
        seed=run.seed,
        thoroughness=run.thoroughness,
        suite=suite_version(),
        timestamp=run.timestamp,
        seconds=run.seconds,
        command=run.command,
        working_directory=str(run.cwd),
        summary={s: sum(1 for row in rows if row["status"] == s) for s in STATUSES},
        tests={k: sum(1 for r in tests if r["kind"] == k) for k in kinds},
        expectations={"file": run.expectations_file, "entries": expectation_rows},
        clauses=rows,
        failures=failures,
        errors=errors,
        properties=_properties(tests),
        notes=notes,
    )


def _properties(tests: Sequence[ResultRecord]) -> list[dict[str, Any]]:
    """How many examples each property drew, and how its shrinking went."""
    rows = []
    for record in tests:
        stats: PropertyStats | None = record["property"]
        if stats is not None:
            rows.append({"test": record["nodeid"], **stats})
    return rows


def _expectation_row(
    entry: Expectation, spec: Mapping[str, Clause], failures: Sequence[Mapping[str, Any]], tests: Sequence[ResultRecord]
) -> dict[str, Any]:
    seen = any(
        any(e["clause"] == entry.clause and e["test"] == entry.test for e in f["expected_failure"] or [])
        for f in failures
    )
    if seen:
        state = "failure seen, as expected"
    elif _stale(entry, tests):
        state = "stale: the listed failure no longer happens"
    else:
        state = "not checked in this run"
    return {**entry.as_dict(), "level": spec[entry.clause].level, "status": state}


def _stale(entry: Expectation, tests: Sequence[ResultRecord]) -> bool:
    """The clause was checked by a covered test that ran to the end and found nothing on it."""
    relevant = [r for r in tests if entry.clause in r["clauses"] and entry.covers(r["nodeid"])]
    if not relevant or any(r["kind"] in ("error", "skip", "not-run") for r in relevant):
        return False
    return not any(
        r["kind"] == "finding" and any(entry.clause in map(clause_id_of, f["clauses"]) for f in r["findings"])
        for r in relevant
    )


def _verdict(
    run: RunInfo,
    records: Records,
    rows: Sequence[Mapping[str, Any]],
    failures: Sequence[Mapping[str, Any]],
    errors: Sequence[Mapping[str, Any]],
    expectations: Sequence[Mapping[str, Any]],
) -> tuple[str, int, list[str]]:
    session = records.session
    if session is None or session["implementation"] is None:
        problem = (session["problem"] if session is not None else "") or "it never completed initialize"
        return "error", EXIT_BROKEN, [f"the implementation did not start: {problem}; no test ran"]
    stopped = {
        "time": "the time budget ran out; the run was stopped",
        "SIGINT": "interrupted (SIGINT); the run was stopped",
        "SIGTERM": "terminated (SIGTERM); the run was stopped",
    }.get(run.stopped)
    blocking = [f for f in failures if not f["expected_failure"] and f["level"] == "MUST"]
    if blocking:
        broken = list(dict.fromkeys(c for f in blocking for c in f["clauses"]))
        if any(f["protocol"] for f in blocking):
            broken.append(f"the {PROTOCOL_LABEL}")
        findings = [f"MUST clauses broken: {', '.join(broken)}"]
        not_run = [r["clause"] for r in rows if r["status"] == NOT_RUN and r["tests"]]
        if not_run:
            findings.append(f"{len(not_run)} clause(s) not run: {_first_not_run(rows)}")
        return "non-conformant", EXIT_NONCONFORMANT, [*findings, *([stopped] if stopped else [])]
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
    cut = [r["clause"] for r in rows if r["status"] == NOT_RUN and r["tests"]]
    if stopped or cut:
        reasons = [stopped] if stopped else []
        if cut:
            reasons.append(f"{len(cut)} clause(s) not run to the end: {_first_not_run(rows)}")
        return "incomplete", EXIT_BROKEN, reasons
    why: list[str] = []
    warnings = sorted({c for f in failures if not f["expected_failure"] for c in f["clauses"]})
    if warnings:
        why.append(f"SHOULD/MAY clauses failing (warnings, not blocking): {', '.join(warnings)}")
    ran = [r for r in rows if r["status"] in (PASS, FAIL, EXPECTED, INCONCLUSIVE)]
    if not ran:
        return "error", EXIT_BROKEN, ["no clause was tested in this run"]
    not_selected = [r["clause"] for r in rows if r["status"] == NOT_RUN]
    if not_selected:
        why.append(f"partial run: {len(not_selected)} clause(s) of the profiles under test were not selected")
        return "partial", EXIT_OK, why
    inconclusive = [r["clause"] for r in rows if r["status"] == INCONCLUSIVE and r["level"] == "MUST"]
    baseline = any(r["status"] == EXPECTED for r in rows)
    if inconclusive and baseline and run.mode == "regression" and not warnings:
        # Every failure is a listed one, so they alone hid these clauses: a baseline holds.
        why.append(f"MUST clauses not established behind the listed failures: {', '.join(inconclusive)}")
    elif inconclusive:
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
    if baseline:
        return "no regressions", EXIT_OK, [*why, "every failure is listed in the expectations file"]
    return ("conformant with warnings" if warnings else "conformant"), EXIT_OK, why


def _first_not_run(rows: Sequence[Mapping[str, Any]]) -> str:
    reason = next((str(r["reason"]) for r in rows if r["status"] == NOT_RUN and r["tests"]), "")
    return reason.removeprefix("not run: ")
