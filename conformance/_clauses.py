"""The clauses of ``SPEC.md`` and their sentences, parsed once from the copy shipped inside the package.

A clause is written as a level-3 heading ``### ID · LEVEL · PROFILE``, a numbered list of
normative sentences, and a line ``Sources: F1, R2.``. Sentence ``n`` of clause ``DSC-5``
is ``DSC-5.n``; a sentence has its clause's level unless it opens with ``(MUST)``,
``(SHOULD)`` or ``(MAY)``. A sentence that opens with ``(Withdrawn)`` keeps its number, since
ids are never reused, and binds nothing: its text names the sentence that says the same. Tests
cite sentences (or whole clauses) with :func:`clause`, which refuses an unknown or withdrawn
id when the test module is imported, so a typo never turns into a silently untested sentence.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Final, Literal, cast

import pytest

from conformance._errors import SpecError, UnknownClause, UsageError

__all__ = [
    "CLAUSES",
    "PROFILES",
    "SENTENCES",
    "WITHDRAWN",
    "Clause",
    "Level",
    "Profile",
    "Sentence",
    "clause",
    "clause_id_of",
    "clauses_of",
    "load_clauses",
    "parse_spec",
    "profile_of",
    "sentences_of",
]

Level = Literal["MUST", "SHOULD", "MAY"]
Profile = Literal["core", "lexical", "eviction", "refresh"]
#: Every profile, ``core`` first: the others are optional, claimed by an implementation.
PROFILES: Final[tuple[Profile, ...]] = ("core", "lexical", "eviction", "refresh")

_HEADING: Final = re.compile(
    r"^### (?P<id>[A-Z]+-[1-9][0-9]*) · (?P<level>MUST|SHOULD|MAY) · (?P<profile>core|lexical|eviction|refresh)$"
)
_SOURCES: Final = re.compile(r"^Sources: (?P<items>[FRP][1-9][0-9]*(?:, [FRP][1-9][0-9]*)*)\.$")
_ITEM: Final = re.compile(r"^(?P<number>[1-9][0-9]*)\. (?:\((?P<level>MUST|SHOULD|MAY|Withdrawn)\) )?(?P<text>\S.*)$")
_WITHDRAWN: Final = "Withdrawn"
_SENTENCE_ID: Final = re.compile(r"^(?P<clause>[A-Z]+-[1-9][0-9]*)\.(?P<number>[1-9][0-9]*)$")


@dataclass(frozen=True, slots=True)
class Sentence:
    """One normative sentence of a clause."""

    id: str
    level: Level
    text: str


@dataclass(frozen=True, slots=True)
class Clause:
    """One numbered requirement of the specification: a list of sentences."""

    id: str
    level: Level
    profile: Profile
    # The `## ` section the clause sits in, for instance "Budgets".
    section: str
    sentences: tuple[Sentence, ...]
    # Facts (F1–F31), rulings (R1–R14) and protocol requirements (P1, …) it comes from.
    sources: tuple[str, ...]
    #: Sentences withdrawn (their ids are never reused): id -> the text that says why.
    withdrawn: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def text(self) -> str:
        """The clause's sentences, one after the other."""
        return " ".join(s.text for s in self.sentences)


def parse_spec(markdown: str) -> dict[str, Clause]:
    """Parse the clauses of a specification text, in document order.

    Raises:
        SpecError: a malformed clause heading, a clause without sentences or without its
            ``Sources:`` line, text that is not a numbered sentence, sentences numbered out
            of order, text after the sources, or an id defined twice; the message names the line.
    """
    clauses: dict[str, Clause] = {}
    section = ""
    current: re.Match[str] | None = None
    start = 0
    sentences: list[tuple[int, str | None, list[str]]] = []
    closed = False

    def finish(lineno: int) -> None:
        if current is not None and not closed:
            raise SpecError(f"SPEC.md line {start}: clause {current['id']} has no 'Sources:' line before line {lineno}")

    for lineno, line in enumerate(markdown.splitlines(), start=1):
        stripped = line.rstrip()
        if stripped.startswith("## "):
            finish(lineno)
            section, current = stripped[3:].strip(), None
        elif stripped.startswith("### "):
            finish(lineno)
            current = _HEADING.match(stripped)
            if current is None:
                raise SpecError(
                    f"SPEC.md line {lineno}: expected '### ID · MUST|SHOULD|MAY · {'|'.join(PROFILES)}', "
                    f"got {stripped!r}"
                )
            if current["id"] in clauses:
                raise SpecError(f"SPEC.md line {lineno}: clause {current['id']} is defined twice")
            start, sentences, closed = lineno, [], False
        elif current is None:
            continue
        elif closed:
            if stripped:
                raise SpecError(f"SPEC.md line {lineno}: text after the 'Sources:' line of clause {current['id']}")
        elif (sources := _SOURCES.match(stripped)) is not None:
            clauses[current["id"]] = _clause(current, section, sentences, sources["items"].split(", "), start)
            closed = True
        elif stripped.startswith("Sources:"):
            raise SpecError(f"SPEC.md line {lineno}: expected 'Sources: F1, R2.', got {stripped!r}")
        elif (item := _ITEM.match(stripped)) is not None:
            expected = len(sentences) + 1
            if int(item["number"]) != expected:
                raise SpecError(
                    f"SPEC.md line {lineno}: clause {current['id']}: sentence {item['number']} where {expected} is due"
                )
            sentences.append((lineno, item["level"], [item["text"]]))
        elif stripped.startswith("   ") and sentences:
            sentences[-1][2].append(stripped.strip())
        elif stripped:
            raise SpecError(
                f"SPEC.md line {lineno}: clause {current['id']}: expected a numbered sentence ('1. …'), "
                f"got {stripped!r}"
            )
    finish(len(markdown.splitlines()) + 1)
    return clauses


def _clause(
    heading: re.Match[str], section: str, items: list[tuple[int, str | None, list[str]]], sources: list[str], start: int
) -> Clause:
    if not items:
        raise SpecError(f"SPEC.md line {start}: clause {heading['id']} has no sentence")
    level = cast(Level, heading["level"])
    numbered = [
        (f"{heading['id']}.{n}", own, " ".join(lines)) for n, (_lineno, own, lines) in enumerate(items, start=1)
    ]
    sentences = tuple(
        Sentence(id=i, level=cast(Level, own or level), text=t) for i, own, t in numbered if own != _WITHDRAWN
    )
    if not sentences:
        raise SpecError(f"SPEC.md line {start}: clause {heading['id']} has no sentence that is not withdrawn")
    return Clause(
        id=heading["id"],
        level=level,
        profile=cast(Profile, heading["profile"]),
        section=section,
        sentences=sentences,
        sources=tuple(sources),
        withdrawn=MappingProxyType({i: t for i, own, t in numbered if own == _WITHDRAWN}),
    )


def load_clauses() -> Mapping[str, Clause]:
    """Read and parse the ``SPEC.md`` shipped inside the ``conformance`` package."""
    try:
        text = resources.files("conformance").joinpath("SPEC.md").read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read the SPEC.md shipped with the conformance package: {exc}") from exc
    clauses = parse_spec(text)
    if not clauses:
        raise SpecError("the SPEC.md shipped with the conformance package defines no clause")
    return MappingProxyType(clauses)


#: Every clause of the shipped specification, by id, in document order.
CLAUSES: Final[Mapping[str, Clause]] = load_clauses()
#: Every sentence of the shipped specification, by id, in document order.
SENTENCES: Final[Mapping[str, Sentence]] = MappingProxyType({s.id: s for c in CLAUSES.values() for s in c.sentences})
#: Every withdrawn sentence id, with the text that says which sentence holds its rule.
WITHDRAWN: Final[Mapping[str, str]] = MappingProxyType({i: t for c in CLAUSES.values() for i, t in c.withdrawn.items()})


def clause_id_of(ref: str) -> str:
    """The clause an id names: ``DSC-5.2`` -> ``DSC-5``; a clause id is returned as is."""
    match = _SENTENCE_ID.match(ref)
    return match["clause"] if match else ref


def _known(ref: str) -> Clause:
    """The clause of a clause or sentence id of the shipped specification."""
    if ref in SENTENCES or ref in CLAUSES:
        return CLAUSES[clause_id_of(ref)]
    if ref in WITHDRAWN:
        raise UnknownClause(ref, f"; {ref} is withdrawn: {WITHDRAWN[ref]}")
    candidates = [*CLAUSES, *SENTENCES]
    close = difflib.get_close_matches(ref, candidates, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; SPEC.md defines {', '.join(CLAUSES)}"
    raise UnknownClause(ref, hint)


def clause(*ids: str) -> pytest.MarkDecorator:
    """Mark a test as checking sentences (``"DSC-5.2"``) or whole clauses (``"BUD-1"``).

    Raises:
        UnknownClause: an id is not defined in SPEC.md (raised when the module is imported).
        UsageError: no id was given.
    """
    if not ids:
        raise UsageError("clause() needs at least one clause or sentence id, for instance clause('BUD-1.1')")
    for ref in ids:
        _known(ref)
    return pytest.mark.clause(*ids)


def profile_of(ids: Iterable[str]) -> Profile:
    """The profile of a test citing ``ids``: the optional profile of a cited clause, else core.

    Raises:
        UnknownClause: an id is not defined in SPEC.md.
        UsageError: the ids cite clauses of two optional profiles (a test checks one of them).
    """
    optional = {_known(ref).profile for ref in ids} - {"core"}
    if len(optional) > 1:
        raise UsageError(f"a test cites clauses of the profiles {sorted(optional)}; cite those of one of them")
    return optional.pop() if optional else "core"


def _cited(item: pytest.Item) -> list[str]:
    return [str(arg) for mark in item.iter_markers("clause") for arg in mark.args]


def clauses_of(item: pytest.Item) -> tuple[str, ...]:
    """The clauses an item cites (directly or through their sentences), in order, without repeats."""
    return tuple(dict.fromkeys(clause_id_of(ref) for ref in _cited(item)))


def sentences_of(item: pytest.Item) -> tuple[str, ...]:
    """The sentences an item cites, in order, without repeats; a whole clause stands for all of them."""
    out: dict[str, None] = {}
    for ref in _cited(item):
        if ref in CLAUSES:
            out.update(dict.fromkeys(s.id for s in CLAUSES[ref].sentences))
        else:
            out[ref] = None
    return tuple(out)
