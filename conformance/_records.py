"""What a suite run leaves behind: one JSON object per line, written by the plugin and
read by the certificate and by ``mcp-conformance certify``'s progress display.

Three kinds of record, told apart by their ``record`` field:

- ``session``: one per pytest process, once the SUT answered (or failed) ``initialize``;
- ``test``: one per test, with every finding it raised;
- ``event``: progress while tests run (what was collected, a test starts, a property
  starts shrinking, the SUT is declared broken).

Values from the run (cases, observed answers) are stored as JSON: data classes as
objects, sets as sorted lists, and anything else as a short description of its type,
never a ``repr`` with a memory address, so the same run gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, TypedDict

__all__ = [
    "EventRecord",
    "FindingRecord",
    "ImplementationRecord",
    "Json",
    "Kind",
    "PropertyStats",
    "Record",
    "Records",
    "SessionRecord",
    "ResultRecord",
    "append_record",
    "jsonable",
    "read_records",
]

Json: TypeAlias = Any
#: How a test ended, as the certificate counts it.
Kind = Literal["pass", "finding", "error", "skip", "not-run", "inconclusive"]
EventName = Literal["collected", "start", "shrinking", "broken"]
KINDS: Final[frozenset[str]] = frozenset({"pass", "finding", "error", "skip", "not-run", "inconclusive"})


class ImplementationRecord(TypedDict):
    name: str
    version: str
    profiles: list[str]


class SessionRecord(TypedDict):
    record: Literal["session"]
    sut: str
    implementation: ImplementationRecord | None
    #: Why the SUT could not be used, when ``implementation`` is None.
    problem: str
    profiles_under_test: list[str]
    profile_options: list[str]
    timeout: float
    seed: str | None
    thoroughness: str
    shrink_time: float


class FindingRecord(TypedDict):
    #: The sentences (``DSC-5.2``) or clauses the finding breaks; empty only for a
    #: ``protocol`` finding of the harness (a crash, a hang, garbage).
    clauses: list[str]
    #: The SUT broke the driver protocol or the adapter contract (crashed, hung, garbage).
    protocol: bool
    message: str
    expected: Json
    observed: Json
    case: Json
    #: Hypothesis' falsifying example, when a property found the finding.
    example: str
    stderr_tail: str


class PropertyStats(TypedDict):
    max_examples: int
    #: Examples run before the first failure, or in all when none failed.
    examples: int
    #: The session's time budget ran out before the examples did.
    cut_short: bool
    shrink_steps: int
    shrink_seconds: float
    #: Why shrinking stopped early: "" (it finished), "time", "misbehaviour", "broken", "deadline".
    shrink_stopped: str


class ResultRecord(TypedDict):
    record: Literal["test"]
    nodeid: str
    module: str
    name: str
    #: The clauses the test cites (directly or through their sentences).
    clauses: list[str]
    #: The ids the test cites, sentences and whole clauses, as written.
    cites: list[str]
    kind: Kind
    #: The phase that decided the kind: "setup", "call" or "teardown".
    when: str
    duration: float
    #: Why it was skipped, not run or inconclusive, or what broke when ``kind`` is "error".
    message: str
    findings: list[FindingRecord]
    property: PropertyStats | None
    #: For an "inconclusive" test: the sentence or clause that broke first, or "" when the
    #: SUT's legitimate choices left nothing to check.
    inconclusive_because: str


class EventRecord(TypedDict):
    record: Literal["event"]
    event: EventName
    nodeid: str
    message: str


#: Any line of a run's record files.
Record: TypeAlias = SessionRecord | ResultRecord | EventRecord


@dataclasses.dataclass(slots=True)
class Records:
    """Everything read back from the record files of one run."""

    session: SessionRecord | None = None
    tests: list[ResultRecord] = dataclasses.field(default_factory=list)
    events: list[EventRecord] = dataclasses.field(default_factory=list)
    #: Lines that were not records (a torn last line of a killed process, say).
    unreadable: int = 0


def jsonable(value: object, _depth: int = 0) -> Json:
    """``value`` as plain JSON values, deterministically and without memory addresses."""
    if _depth > 50:
        return "…"
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value, _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        items = [jsonable(v, _depth + 1) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, ensure_ascii=False))
    if isinstance(value, list | tuple):
        return [jsonable(v, _depth + 1) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if isinstance(value, Path):
        return str(value)
    return f"<{type(value).__name__}>"


def append_record(path: Path, record: Record) -> None:
    """Append one record as a line; a line is written in one call so readers never see half."""
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    # A lone surrogate (a driver may echo one back) can only be inside a JSON string here:
    # written as its escape, it reads back as itself.
    with path.open("a", encoding="utf-8", errors="backslashreplace") as out:
        out.write(line)


def read_records(paths: Iterable[Path]) -> Records:
    """Read the records of a run; the session record kept is the first that names an implementation."""
    records = Records()
    for path in sorted(paths):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                records.unreadable += 1
                continue
            if not isinstance(record, dict):
                records.unreadable += 1
                continue
            kind = record.get("record")
            if kind == "session":
                current = records.session
                if current is None or (current["implementation"] is None and record.get("implementation")):
                    records.session = _session(record)
            elif kind == "test" and record.get("kind") in KINDS:
                records.tests.append(_test(record))
            elif kind == "event":
                records.events.append(
                    EventRecord(
                        record="event",
                        event=record.get("event", "start"),
                        nodeid=str(record.get("nodeid", "")),
                        message=str(record.get("message", "")),
                    )
                )
            else:
                records.unreadable += 1
    return records


def _session(record: dict[str, Any]) -> SessionRecord:
    impl = record.get("implementation")
    return SessionRecord(
        record="session",
        sut=str(record.get("sut", "")),
        implementation=None
        if not isinstance(impl, dict)
        else ImplementationRecord(
            name=str(impl.get("name", "")),
            version=str(impl.get("version", "")),
            profiles=[str(p) for p in impl.get("profiles", [])],
        ),
        problem=str(record.get("problem", "")),
        profiles_under_test=[str(p) for p in record.get("profiles_under_test", [])],
        profile_options=[str(p) for p in record.get("profile_options", [])],
        timeout=float(record.get("timeout", 0.0)),
        seed=record.get("seed"),
        thoroughness=str(record.get("thoroughness", "default")),
        shrink_time=float(record.get("shrink_time", 0.0)),
    )


def _test(record: dict[str, Any]) -> ResultRecord:
    return ResultRecord(
        record="test",
        nodeid=str(record.get("nodeid", "")),
        module=str(record.get("module", "")),
        name=str(record.get("name", "")),
        clauses=[str(c) for c in record.get("clauses", [])],
        cites=[str(c) for c in record.get("cites", record.get("clauses", []))],
        kind=record["kind"],
        when=str(record.get("when", "call")),
        duration=float(record.get("duration", 0.0)),
        message=str(record.get("message", "")),
        findings=[_finding(f) for f in record.get("findings", []) if isinstance(f, dict)],
        property=record.get("property"),
        inconclusive_because=str(record.get("inconclusive_because", "")),
    )


def _finding(record: dict[str, Any]) -> FindingRecord:
    return FindingRecord(
        clauses=[str(c) for c in record.get("clauses", [])],
        protocol=bool(record.get("protocol", False)),
        message=str(record.get("message", "")),
        expected=record.get("expected"),
        observed=record.get("observed"),
        case=record.get("case"),
        example=str(record.get("example", "")),
        stderr_tail=str(record.get("stderr_tail", "")),
    )
