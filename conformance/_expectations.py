"""The expectations file: known failures, by clause, each with the reason it is accepted.

A team adopting the suite step by step lists what its implementation does not meet yet::

    [[expected_failure]]
    clause = "POL-5"
    reason = "read-only filtering lands in 2.3 (issue #412)"
    test = "test_selection.py::test_read_only_needs_the_json_boolean_true"   # optional

Regression runs (``--mode regression``) honour the file: a listed clause that fails is
reported as expected, and one that now passes fails the run as a *stale* expectation, so
the file cannot rot. Certification (``--mode certify``) refuses any entry on a MUST clause.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypedDict

from conformance._clauses import Clause, clause_id_of, load_clauses
from conformance._errors import UsageError
from conformance._records import FindingRecord

__all__ = [
    "Expectation",
    "ExpectationEntry",
    "ExpectationsError",
    "expected_failure_of",
    "load_expectations",
    "refuse_must_entries",
    "refuse_unknown_tests",
]

_TABLE: Final = "expected_failure"
_KEYS: Final = ("clause", "reason", "test")


class ExpectationsError(UsageError):
    """The expectations file cannot be used as written; the message names file and field."""


class ExpectationEntry(TypedDict):
    """An entry as the file writes it and the certificate repeats it."""

    clause: str
    reason: str
    test: str | None


@dataclass(frozen=True, slots=True)
class Expectation:
    """One known failure: a clause, why it is accepted, and optionally the one test it covers."""

    clause: str
    reason: str
    test: str | None = None
    index: int = 0

    @property
    def where(self) -> str:
        return f"{_TABLE}[{self.index}]"

    def covers(self, nodeid: str) -> bool:
        """Whether this entry covers a failure of the test ``nodeid`` (any test when unset)."""
        if self.test is None:
            return True
        return names_test(self.test, nodeid)

    def as_dict(self) -> ExpectationEntry:
        return ExpectationEntry(clause=self.clause, reason=self.reason, test=self.test)


def names_test(pattern: str, nodeid: str) -> bool:
    """``pattern`` names the test ``nodeid``: the node id, its tail, ``module::function`` or the function."""
    bare = nodeid.split("[", 1)[0]
    path, _, name = bare.partition("::")
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    candidates = {nodeid, bare, name, nodeid.partition("::")[2], f"{module}::{name}", f"{module}.py::{name}"}
    return pattern in candidates or nodeid.endswith("/" + pattern) or bare.endswith("/" + pattern)


def load_expectations(path: Path, clauses: Mapping[str, Clause] | None = None) -> tuple[Expectation, ...]:
    """Read and check an expectations file.

    Raises:
        ExpectationsError: the file cannot be read, is not TOML, has an unknown key, an
            entry without a clause or a reason, an unknown clause id, or a repeated entry.
    """
    known = load_clauses() if clauses is None else clauses
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpectationsError(f"{path}: cannot read the expectations file: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationsError(f"{path}: not a TOML file: {exc}") from None
    unknown = sorted(set(data) - {_TABLE})
    if unknown:
        raise ExpectationsError(
            f"{path}: unknown key {unknown[0]!r}; the file holds only [[{_TABLE}]] entries "
            "with clause, reason and optionally test"
        )
    entries = data.get(_TABLE, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ExpectationsError(f"{path}: {_TABLE} must be an array of tables, written [[{_TABLE}]]")
    result: list[Expectation] = []
    seen: set[tuple[str, str | None]] = set()
    for index, entry in enumerate(entries):
        where = f"{path}: {_TABLE}[{index}]"
        extra = sorted(set(entry) - set(_KEYS))
        if extra:
            raise ExpectationsError(f"{where}: unknown key {extra[0]!r}; an entry has {', '.join(_KEYS)}")
        clause_id = entry.get("clause")
        if not isinstance(clause_id, str) or not clause_id.strip():
            raise ExpectationsError(f'{where}.clause: missing; give the clause id, for instance clause = "POL-5"')
        clause_id = clause_id.strip()
        if clause_id not in known:
            close = difflib.get_close_matches(clause_id, list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ExpectationsError(f"{where}.clause: {clause_id!r} is not a clause of SPEC.md{hint}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ExpectationsError(f"{where}.reason: missing; every expected failure says why it is accepted")
        test = entry.get("test")
        if test is not None and (not isinstance(test, str) or not test.strip()):
            raise ExpectationsError(f'{where}.test: must be a test id such as "test_selection.py::test_name"')
        key = (clause_id, test)
        if key in seen:
            raise ExpectationsError(f"{where}: clause {clause_id!r} is listed twice")
        seen.add(key)
        result.append(Expectation(clause_id, reason.strip(), test.strip() if test else None, index))
    return tuple(result)


def refuse_must_entries(
    path: Path, entries: tuple[Expectation, ...], clauses: Mapping[str, Clause] | None = None
) -> None:
    """Certification accepts no expected failure on a MUST clause.

    Raises:
        ExpectationsError: an entry names a MUST clause.
    """
    known = load_clauses() if clauses is None else clauses
    musts = [e for e in entries if known[e.clause].level == "MUST"]
    if musts:
        listed = ", ".join(f"{e.where} ({e.clause})" for e in musts)
        raise ExpectationsError(
            f"{path}: {listed}: expected failures on MUST clauses are not accepted in certification "
            "(--mode certify); a MUST failure makes the implementation non-conformant. "
            "Track known failures with --mode regression instead."
        )


def refuse_unknown_tests(path: Path, entries: Sequence[Expectation], tests: Collection[str]) -> None:
    """An entry's ``test`` must name a test of the suite (``module::function`` ids in ``tests``).

    Raises:
        ExpectationsError: an entry names no test of the suite; the message lists close ones.
    """
    for entry in entries:
        # The suite's ids carry no parameters: judge an entry for one case by its function.
        if entry.test is None or any(names_test(entry.test.split("[", 1)[0], test) for test in tests):
            continue
        close = difflib.get_close_matches(entry.test, sorted(tests), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ExpectationsError(f"{path}: {entry.where}.test: {entry.test!r} is not a test of the suite{hint}")


def expected_failure_of(
    entries: Sequence[Expectation], nodeid: str, findings: Sequence[FindingRecord]
) -> list[Expectation]:
    """The entries that make a failing test expected: every clause its findings name is covered.

    Empty when any finding is a protocol finding (no clause) or names an uncovered clause.
    """
    named = [clause_id_of(ref) for finding in findings for ref in finding["clauses"]]
    if not findings or any(not finding["clauses"] for finding in findings):
        return []
    cover = [e for e in entries if e.clause in named and e.covers(nodeid)]
    if all(any(e.clause == c for e in cover) for c in named):
        return cover
    return []
