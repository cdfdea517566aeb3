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
from typing import Final, Literal, TypedDict, get_args

from conformance._clauses import Clause, Level, Profile, Sentence, clause_id_of, load_clauses
from conformance._expectations import Expectation, ExpectationEntry, expected_failure_of
from conformance._manifest import PENDING, UNTESTED
from conformance._options import Mode, ProfileChoice, Thoroughness
from conformance._reaper import Leftover
from conformance._records import FindingRecord, Json, Kind, PropertyStats, Records, ResultRecord
from conformance._runner import Stopped

__all__ = [
    "AFTER_THE_SUITE",
    "EXIT_CODES",
    "FORMAT",
    "KINDS",
    "PROTOCOL_LABEL",
    "SEEN",
    "STALE",
    "STATUSES",
    "UNCHECKED",
    "Certificate",
    "ClauseRow",
    "ErrorRow",
    "ExitCode",
    "ExpectationRow",
    "ExpectationState",
    "FailureRow",
    "PropertyRow",
    "RunInfo",
    "Status",
    "Verdict",
    "build_certificate",
    "decide_verdict",
    "replay_command",
    "stale",
    "unexpected",
]

FORMAT: Final = "mcp-conformance-certificate/2"
DISTRIBUTION: Final = "mcp-adaptive-conformance"
PROTOCOL_LABEL: Final = "driver protocol"

Verdict = Literal[
    "conformant",
    "conformant with warnings",
    "partial",
    "no regressions",
    "non-conformant",
    "stale expectations",
    "incomplete",
    "error",
]
ExitCode = Literal[0, 1, 2]
#: Each verdict's exit code: 0 nothing blocks, 1 the implementation (or the expectations
#: file) is wrong, 2 no verdict could be reached.
EXIT_CODES: Final[Mapping[Verdict, ExitCode]] = {
    "conformant": 0,
    "conformant with warnings": 0,
    "partial": 0,
    "no regressions": 0,
    "non-conformant": 1,
    "stale expectations": 1,
    "incomplete": 2,
    "error": 2,
}
Status = Literal["pass", "fail", "expected-fail", "error", "inconclusive", "not-run", "not-applicable", "untested"]
#: Every clause status, in the order the summary lists them.
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
#: Every way a test can end, in the order the counts list them.
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)
ExpectationState = Literal[
    "failure seen, as expected", "stale: the listed failure no longer happens", "not checked in this run"
]
SEEN: Final[ExpectationState] = "failure seen, as expected"
STALE: Final[ExpectationState] = "stale: the listed failure no longer happens"
UNCHECKED: Final[ExpectationState] = "not checked in this run"
#: The ``test`` of a failure found once the suite had ended (processes left running).
AFTER_THE_SUITE: Final = "(after the suite)"


@dataclass(frozen=True, slots=True)
class RunInfo:
    """How the suite was run, for the certificate and for replay commands."""

    command: str
    sut_option: str
    sut_value: str
    mode: Mode
    examples_dir: Path
    cwd: Path
    timestamp: str
    seed: int = 0
    thoroughness: Thoroughness = "default"
    profiles: tuple[ProfileChoice, ...] = ()
    timeout: str | None = None
    shrink_time: float | None = None
    max_time: float | None = None
    expectations_file: str | None = None
    #: How the suite's pytest ended (None: it never did): a code other than 0 or 1 with
    #: nothing else wrong means the suite itself broke.
    pytest_exit: int | None = 0
    stopped: Stopped = ""
    seconds: float = 0.0
    leftovers: Sequence[Leftover] = field(default_factory=tuple)
    tracked: bool = True
    #: What the run could not track on this platform (processes that leave their group), or "".
    untracked: str = ""


class ImplementationInfo(TypedDict):
    name: str | None
    version: str | None
    profiles_claimed: list[str]


class SuiteInfo(TypedDict):
    package: str
    version: str
    spec_sha256: str


class SentenceRef(TypedDict):
    id: str
    text: str


class TestRef(TypedDict):
    test: str
    kind: Kind


class ClauseRow(TypedDict):
    clause: str
    level: Level
    profile: Profile
    section: str
    title: str
    status: Status
    #: Why it has its status: the first finding, the reason it is untested, … (None: it passed).
    reason: str | None
    tests: list[TestRef]
    #: The ids of the failures that name it.
    failures: list[str]
    #: For an inconclusive clause: the clauses that broke first and kept it from being established.
    inconclusive_because: list[str]


class FailureRow(TypedDict):
    id: str
    #: The clauses it breaks; empty for a finding about the driver protocol.
    clauses: list[str]
    sentences: list[SentenceRef]
    label: str
    level: Level
    protocol: bool
    test: str
    tests: list[str]
    message: str
    expected: Json
    observed: Json
    case: Json
    falsifying_example: str
    stderr_tail: str
    property: PropertyStats | None
    replay: str
    #: The entries of the expectations file that accept it, or None.
    expected_failure: list[ExpectationEntry] | None


class ErrorRow(TypedDict):
    test: str
    when: str
    message: str


class InconclusiveRow(TypedDict):
    """A test that ran and could not establish what it checks."""

    test: str
    #: The clauses it cites.
    clauses: list[str]
    #: Why: the check's own words.
    message: str
    #: The sentence or clause that broke first, or "" when the SUT's legitimate choices left
    #: nothing to check.
    because: str


class PropertyRow(PropertyStats):
    test: str


class ExpectationRow(ExpectationEntry):
    level: Level
    status: ExpectationState


class ExpectationsInfo(TypedDict):
    file: str | None
    entries: list[ExpectationRow]


class Certificate(TypedDict):
    format: str
    verdict: Verdict
    exit_code: ExitCode
    why: list[str]
    implementation: ImplementationInfo
    sut: str
    profiles_under_test: list[str]
    profile_source: str
    mode: Mode
    seed: int
    thoroughness: Thoroughness
    suite: SuiteInfo
    timestamp: str
    seconds: float
    command: str
    working_directory: str
    summary: dict[Status, int]
    tests: dict[Kind, int]
    expectations: ExpectationsInfo
    clauses: list[ClauseRow]
    failures: list[FailureRow]
    errors: list[ErrorRow]
    inconclusive: list[InconclusiveRow]
    properties: list[PropertyRow]
    notes: list[str]


def suite_version() -> SuiteInfo:
    """The installed suite's version and a digest of the specification it certifies against."""
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "unknown"
    spec = resources.files("conformance").joinpath("SPEC.md").read_bytes()
    return SuiteInfo(package=DISTRIBUTION, version=version, spec_sha256=hashlib.sha256(spec).hexdigest())


#: A first sentence: up to a ``.``, ``:`` or ``;`` before a space or the end, outside code
#: spans (``sideEffects: readOnly`` does not end one).
_FIRST_SENTENCE: Final = re.compile(r"((?:`[^`]*`|[^`.:;]|[.:;](?=\S))+?[.:;])(?:\s|$)")


def _title(clause: Clause) -> str:
    """The clause's first sentence, whole."""
    first = clause.text.split("\n\n", 1)[0]
    match = _FIRST_SENTENCE.match(first)
    return (match.group(1) if match else first).rstrip(".:;")


def replay_command(run: RunInfo, nodeid: str) -> str:
    """One command that runs exactly this test again, with the run's seed and its saved examples.

    The examples folder is named by its absolute path, so that the command finds the saved
    examples from any directory instead of searching afresh.
    """
    argv = ["mcp-conformance", "replay", f"{run.sut_option}={run.sut_value}", f"--seed={run.seed}"]
    if run.thoroughness != "default":
        argv.append(f"--thoroughness={run.thoroughness}")
    argv += [f"--profile={profile}" for profile in run.profiles]
    if run.timeout:
        argv.append(f"--sut-timeout={run.timeout}")
    argv += [f"--examples={(run.cwd / run.examples_dir).resolve()}", nodeid]
    return shlex.join(argv)


def _sentences(clauses: Mapping[str, Clause]) -> dict[str, Sentence]:
    return {s.id: s for c in clauses.values() for s in c.sentences}


def _level(refs: Sequence[str], clauses: Mapping[str, Clause]) -> Level:
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
    run: RunInfo,
    record: ResultRecord,
    finding: FindingRecord,
    clauses: Mapping[str, Clause],
    cover: Sequence[Expectation],
) -> FailureRow:
    refs = list(finding["clauses"])
    named = list(dict.fromkeys(clause_id_of(r) for r in refs))
    sentences = _sentences(clauses)
    return FailureRow(
        id="",
        clauses=named,
        sentences=[SentenceRef(id=r, text=sentences[r].text) for r in refs if r in sentences],
        label=", ".join(refs) or PROTOCOL_LABEL,
        level=_level(refs, clauses),
        protocol=finding["protocol"],
        test=record["nodeid"],
        tests=[record["nodeid"]],
        message=finding["message"],
        expected=finding["expected"],
        observed=finding["observed"],
        case=finding["case"],
        falsifying_example=finding["example"],
        stderr_tail=finding["stderr_tail"],
        property=record["property"],
        replay=replay_command(run, record["nodeid"]),
        expected_failure=[e.as_dict() for e in cover if e.clause in named] if cover else None,
    )


def _failures(
    run: RunInfo, tests: Sequence[ResultRecord], clauses: Mapping[str, Clause], expectations: Sequence[Expectation]
) -> list[FailureRow]:
    """One entry per distinct finding; protocol findings with the same message are one entry."""
    order = {cid: i for i, cid in enumerate(clauses)}
    entries: list[FailureRow] = []
    protocol: dict[str, FailureRow] = {}
    for record in sorted((r for r in tests if r["kind"] == "finding"), key=lambda r: r["nodeid"]):
        cover = expected_failure_of(expectations, record["nodeid"], record["findings"])
        for finding in record["findings"]:
            entry = _failure(run, record, finding, clauses, cover)
            if finding["protocol"]:
                same = protocol.get(finding["message"])
                if same is not None:
                    same["tests"].append(record["nodeid"])
                    continue
                protocol[finding["message"]] = entry
            entries.append(entry)
    entries += _leftover_failure(run, clauses)
    entries.sort(key=lambda e: (min((order.get(c, len(order)) for c in e["clauses"]), default=-1), e["test"]))
    for number, entry in enumerate(entries, start=1):
        entry["id"] = f"failure-{number}"
    return entries


def _leftover_failure(run: RunInfo, clauses: Mapping[str, Clause]) -> list[FailureRow]:
    """Processes left running after the suite: PRO-7.1 for a driver, ERR-7.1 in process."""
    if not run.leftovers:
        return []
    listed = [f"{p.pid}: {p.command}" for p in run.leftovers]
    sentence = "PRO-7.1" if run.sut_option == "--sut-cmd" else "ERR-7.1"
    sentences = _sentences(clauses)
    return [
        FailureRow(
            id="",
            clauses=[clause_id_of(sentence)],
            sentences=[SentenceRef(id=sentence, text=sentences[sentence].text)] if sentence in sentences else [],
            label=sentence,
            level="MUST",
            protocol=False,
            test=AFTER_THE_SUITE,
            tests=[],
            message=f"{len(listed)} process(es) started under the SUT were still running after the suite "
            "ended and were killed",
            expected="every process the SUT started has ended once the suite shut it down",
            observed=listed,
            case=None,
            falsifying_example="",
            stderr_tail="",
            property=None,
            replay="",
            expected_failure=None,
        )
    ]


def _row_status(
    cid: str,
    clause: Clause,
    records: Sequence[ResultRecord],
    failing: Sequence[FailureRow],
    *,
    under_test: set[str],
    reasons: Mapping[str, str],
    gaps: frozenset[str],
    unrun: str,
) -> tuple[Status, str | None]:
    ids = [s.id for s in clause.sentences]
    if all(i in reasons for i in ids):
        return "untested", reasons[ids[0]]
    if under_test and clause.profile not in under_test and not failing:
        return "not-applicable", f"profile {clause.profile!r} is not under test"
    if any(i in gaps for i in ids):
        return "untested", "pending: a testable sentence the suite has no check for yet"
    if failing:
        if all(f["expected_failure"] for f in failing):
            reasons_given = [e["reason"] for f in failing for e in f["expected_failure"] or () if e["clause"] == cid]
            return "expected-fail", "; ".join(dict.fromkeys(reasons_given))
        return "fail", failing[0]["message"]
    if not records:
        return "not-run", unrun
    kinds = {r["kind"] for r in records}
    if "error" in kinds:
        return "error", "a test citing it could not run to the end (see errors)"
    if "not-run" in kinds:
        return "not-run", next(r["message"] for r in records if r["kind"] == "not-run")
    # A test that found nothing to check does not undo one that established the clause; a
    # test that could not judge because another sentence looks broken does: what it would
    # have checked is unknown, whatever the others saw.
    if "pass" in kinds and not any(r["kind"] == "inconclusive" and r["inconclusive_because"] for r in records):
        return "pass", None
    if kinds == {"skip"}:
        return "not-applicable", records[0]["message"]
    said = [f"{r['name']}: {r['message']}" for r in records if r["kind"] == "inconclusive"]
    if said:
        return "inconclusive", "; ".join(dict.fromkeys(said))
    return "inconclusive", f"every test citing it failed on another clause first ({', '.join(_broke_first(records))})"


def _broke_first(records: Sequence[ResultRecord]) -> list[str]:
    """The clauses that kept ``records`` from establishing theirs: the ones inconclusive
    tests name, and the ones their findings name."""
    named = {clause_id_of(r["inconclusive_because"]) for r in records if r["inconclusive_because"]}
    named |= {
        clause_id_of(c) if c else PROTOCOL_LABEL
        for r in records
        if r["kind"] == "finding"
        for f in r["findings"]
        for c in f["clauses"] or [""]
    }
    return sorted(named)


def build_certificate(
    run: RunInfo,
    records: Records,
    expectations: Sequence[Expectation] = (),
    *,
    clauses: Mapping[str, Clause] | None = None,
    untested: Mapping[str, str] | None = None,
    pending: frozenset[str] | None = None,
) -> Certificate:
    """The certificate of one run, with its verdict and exit code."""
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
    failing_by_clause: dict[str, list[FailureRow]] = {}
    for entry in failures:
        for cid in entry["clauses"]:
            failing_by_clause.setdefault(cid, []).append(entry)

    rows: list[ClauseRow] = []
    unrun = _unrun_reason(run)
    for cid, clause in spec.items():
        status, reason = _row_status(
            cid,
            clause,
            by_clause.get(cid, []),
            failing_by_clause.get(cid, []),
            under_test=under_test,
            reasons=reasons,
            gaps=gaps,
            unrun=unrun,
        )
        rows.append(
            ClauseRow(
                clause=cid,
                level=clause.level,
                profile=clause.profile,
                section=clause.section,
                title=_title(clause),
                status=status,
                reason=reason,
                tests=[TestRef(test=r["nodeid"], kind=r["kind"]) for r in by_clause.get(cid, [])],
                failures=[f["id"] for f in failing_by_clause.get(cid, [])],
                # What broke first, for a clause no test could establish.
                inconclusive_because=_broke_first(by_clause.get(cid, [])) if status == "inconclusive" else [],
            )
        )

    expectation_rows = [_expectation_row(e, spec, failures, tests) for e in expectations]
    errors = [ErrorRow(test=r["nodeid"], when=r["when"], message=r["message"]) for r in tests if r["kind"] == "error"]
    verdict, why = decide_verdict(run, records, rows, failures, errors, expectation_rows)
    impl = session["implementation"] if session is not None else None
    notes = [run.untracked] if run.untracked else []
    if records.unreadable:
        notes.append(f"{records.unreadable} unreadable line(s) in the run's records were skipped")
    return Certificate(
        format=FORMAT,
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        why=why,
        implementation=ImplementationInfo(
            name=impl["name"] if impl else None,
            version=impl["version"] if impl else None,
            profiles_claimed=list(impl["profiles"]) if impl else [],
        ),
        sut=f"{run.sut_option} {shlex.quote(run.sut_value)}",
        profiles_under_test=sorted(under_test),
        profile_source=" ".join(f"--profile {p}" for p in run.profiles) or "as claimed by the implementation",
        mode=run.mode,
        seed=run.seed,
        thoroughness=run.thoroughness,
        suite=suite_version(),
        timestamp=run.timestamp,
        seconds=run.seconds,
        command=run.command,
        working_directory=str(run.cwd),
        summary={s: sum(1 for row in rows if row["status"] == s) for s in STATUSES},
        tests={k: sum(1 for r in tests if r["kind"] == k) for k in KINDS},
        expectations=ExpectationsInfo(file=run.expectations_file, entries=expectation_rows),
        clauses=rows,
        failures=failures,
        errors=errors,
        inconclusive=[
            InconclusiveRow(
                test=r["nodeid"],
                clauses=r["clauses"],
                # The record's message opens with its kind, which the row already is.
                message=r["message"].removeprefix("inconclusive: "),
                because=r["inconclusive_because"],
            )
            for r in tests
            if r["kind"] == "inconclusive"
        ],
        properties=[PropertyRow(test=r["nodeid"], **r["property"]) for r in tests if r["property"] is not None],
        notes=notes,
    )


def _expectation_row(
    entry: Expectation, spec: Mapping[str, Clause], failures: Sequence[FailureRow], tests: Sequence[ResultRecord]
) -> ExpectationRow:
    seen = any(
        any(e["clause"] == entry.clause and e["test"] == entry.test for e in f["expected_failure"] or ())
        for f in failures
    )
    state = SEEN if seen else STALE if _stale(entry, tests) else UNCHECKED
    return ExpectationRow(**entry.as_dict(), level=spec[entry.clause].level, status=state)


def _stale(entry: Expectation, tests: Sequence[ResultRecord]) -> bool:
    """The clause was checked by a covered test that ran to the end and found nothing on it."""
    relevant = [r for r in tests if entry.clause in r["clauses"] and entry.covers(r["nodeid"])]
    if not relevant or any(r["kind"] in ("error", "skip", "not-run", "inconclusive") for r in relevant):
        return False
    return not any(
        r["kind"] == "finding" and any(entry.clause in map(clause_id_of, f["clauses"]) for f in r["findings"])
        for r in relevant
    )


def unexpected(failures: Sequence[FailureRow]) -> list[FailureRow]:
    """The failures no entry of the expectations file accepts."""
    return [f for f in failures if not f["expected_failure"]]


def stale(entries: Sequence[ExpectationRow]) -> list[ExpectationRow]:
    """The entries whose listed failure no longer happens."""
    return [e for e in entries if e["status"] == STALE]


_STOPPED: Final[Mapping[Stopped, str]] = {
    "time": "the time budget ran out; the run was stopped",
    "SIGINT": "interrupted (SIGINT); the run was stopped",
    "SIGTERM": "terminated (SIGTERM); the run was stopped",
}


def decide_verdict(
    run: RunInfo,
    records: Records,
    rows: Sequence[ClauseRow],
    failures: Sequence[FailureRow],
    errors: Sequence[ErrorRow],
    expectations: Sequence[ExpectationRow],
) -> tuple[Verdict, list[str]]:
    """The run's verdict and why, from everything the certificate says; the one place it is decided."""
    verdict, why = _judge(run, records, rows, failures, errors, expectations)
    broke = _pytest_broke(run)
    if broke is None:
        return verdict, why
    if EXIT_CODES[verdict] == 0:
        # Nothing the records say is wrong, yet the suite's pytest broke: no verdict.
        return "error", [broke]
    # The findings it recorded stand, but the tests after the break never ran: say so.
    return verdict, [*why, broke]


#: pytest's exit codes past "tests failed", as a reader of the certificate needs them named.
_PYTEST_EXITS: Final[Mapping[int, str]] = {
    2: "interrupted",
    3: "an internal error",
    4: "a usage error",
    5: "no tests collected",
}


def _pytest_broke(run: RunInfo) -> str | None:
    """Why the suite's pytest did not run to its end by itself (a stop certify asked for
    aside), or None when it did."""
    if run.stopped or run.pytest_exit in (0, 1):
        return None
    code = run.pytest_exit
    if code is None:
        return "the suite's pytest ended with no exit code (see pytest.log)"
    named = f", {_PYTEST_EXITS[code]}" if code in _PYTEST_EXITS else ""
    return f"the suite's pytest ended with exit code {code}{named} (see pytest.log)"


def _unrun_reason(run: RunInfo) -> str:
    broke = _pytest_broke(run)
    if broke is None:
        return "not selected: no test citing it ran in this run"
    return f"no test citing it ran: {broke}"


def _judge(
    run: RunInfo,
    records: Records,
    rows: Sequence[ClauseRow],
    failures: Sequence[FailureRow],
    errors: Sequence[ErrorRow],
    expectations: Sequence[ExpectationRow],
) -> tuple[Verdict, list[str]]:
    session = records.session
    if session is None or session["implementation"] is None:
        problem = (session["problem"] if session is not None else "") or "it never completed initialize"
        return "error", [f"the implementation did not start: {problem}; no test ran"]
    blocking = [f for f in unexpected(failures) if f["level"] == "MUST"]
    broken = list(dict.fromkeys(c for f in blocking for c in f["clauses"]))
    if any(f["protocol"] for f in blocking):
        broken.append(f"the {PROTOCOL_LABEL}")
    findings = [f"MUST clauses broken: {', '.join(broken)}"] if broken else []
    if run.stopped:
        # An interrupted run certifies neither way: what it found is listed, not judged.
        return "incomplete", [_STOPPED[run.stopped], *findings]
    if findings:
        not_run = [r["clause"] for r in rows if r["status"] == "not-run" and r["tests"]]
        if not_run:
            findings.append(f"{len(not_run)} clause(s) not run: {_first_not_run(rows)}")
        return "non-conformant", findings
    if errors:
        return "error", [f"{len(errors)} test(s) could not run to the end (see errors); no verdict"]
    stale_entries = stale(expectations)
    if stale_entries:
        listed = ", ".join(e["clause"] for e in stale_entries)
        return "stale expectations", [
            f"expected failures that now pass: {listed}; remove them from {run.expectations_file}"
        ]
    cut = [r["clause"] for r in rows if r["status"] == "not-run" and r["tests"]]
    if cut:
        return "incomplete", [f"{len(cut)} clause(s) not run to the end: {_first_not_run(rows)}"]
    why: list[str] = []
    warnings = sorted({c for f in unexpected(failures) for c in f["clauses"]})
    if warnings:
        why.append(f"SHOULD/MAY clauses failing (warnings, not blocking): {', '.join(warnings)}")
    ran = [r for r in rows if r["status"] in ("pass", "fail", "expected-fail", "inconclusive")]
    if not ran:
        return "error", ["no clause was tested in this run"]
    # A subset is judged like a whole: "partial" says the clauses it ran passed, so a MUST
    # clause it left unestablished makes it incomplete first.
    inconclusive = [r["clause"] for r in rows if r["status"] == "inconclusive" and r["level"] == "MUST"]
    baseline = any(r["status"] == "expected-fail" for r in rows)
    if inconclusive and baseline and run.mode == "regression" and not warnings:
        # Every failure is a listed one, so they alone hid these clauses: a baseline holds.
        why.append(f"MUST clauses not established behind the listed failures: {', '.join(inconclusive)}")
    elif inconclusive:
        return "incomplete", [*why, f"MUST clauses not established: {', '.join(inconclusive)}"]
    not_selected = [r["clause"] for r in rows if r["status"] == "not-run"]
    if not_selected:
        why.append(f"partial run: {len(not_selected)} clause(s) of the profiles under test were not selected")
        return "partial", why
    pending = [r["clause"] for r in rows if r["status"] == "untested" and str(r["reason"]).startswith("pending")]
    if pending:
        return "incomplete", [
            *why,
            f"the suite has no test yet for the testable clause(s) {', '.join(pending)}; no certificate verdict",
        ]
    if baseline:
        return "no regressions", [*why, "every failure is listed in the expectations file"]
    return ("conformant with warnings" if warnings else "conformant"), why


def _first_not_run(rows: Sequence[ClauseRow]) -> str:
    reason = next((str(r["reason"]) for r in rows if r["status"] == "not-run" and r["tests"]), "")
    return reason.removeprefix("not run: ")
