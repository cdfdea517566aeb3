"""Every normative sentence accounted for: the checks that enforce it, or why it has none.

The manifest is computed from the shipped suite, never written by hand, so it cannot
drift. A check enforces a sentence when it cites the sentence's own id
(``@clause("DSC-5.2")``); citing a whole clause enforces none of its sentences. A MUST or
SHOULD sentence with neither a check nor an entry in :data:`UNTESTED` is a gap, and an
entry for a sentence that is checked (or unknown) is stale.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest

from conformance import suite
from conformance._clauses import clause_id_of, load_clauses

__all__ = [
    "MANIFEST_PATH",
    "PENDING",
    "UNTESTED",
    "SentenceEntry",
    "citations",
    "manifest",
    "manifest_document",
    "render_manifest",
    "suite_tests",
]

#: The generated, committed manifest: ``mcp-conformance manifest --write`` rewrites it.
MANIFEST_PATH: Final = Path(__file__).with_name("manifest.json")

_PERMISSION: Final = "a permission (MAY): an implementation that uses it and one that does not are both conformant"
#: Sentences no check can enforce through the adapter interface, each with the reason.
UNTESTED: Final[Mapping[str, str]] = {
    "CAT-6.1": _PERMISSION,
    "RNK-9.2": _PERMISSION,
    "DSC-5.6": _PERMISSION + "; no check asks a call for more than DSC-5.8 demands, and a discovery that activates "
    "only that passes every core check of selection, budgets and discovery",
    "ISO-3.1": "a permission (MAY): the selection trace is not part of the wire contract",
    "DSC-7.5": _PERMISSION + "; ERR-9.1 judges the message of a refusal, when there is one",
    "CAT-2.4": _PERMISSION + "; CAT-2.1 checks that a bound, where there is one, lies past 1,000 pages",
}

#: Testable sentences the suite does not check yet. A certificate counts their clauses as
#: gaps: it gives no verdict while any remains.
PENDING: Final[frozenset[str]] = frozenset()


@dataclass(frozen=True, slots=True)
class SentenceEntry:
    sentence: str
    clause: str
    level: str
    profile: str
    checks: tuple[str, ...]
    untested_reason: str | None


def _suite_modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(suite.__path__, prefix=f"{suite.__name__}."):
        if info.name.rsplit(".", 1)[-1].startswith("test_"):
            yield importlib.import_module(info.name)


def _marks(obj: object) -> list[pytest.Mark]:
    marks = getattr(obj, "pytestmark", [])
    return list(marks) if isinstance(marks, list) else [marks]


def _row_marks(obj: object) -> list[pytest.Mark]:
    """The marks of a test's parametrized rows (``pytest.param(..., marks=clause(...))``)."""
    rows = [row for mark in _marks(obj) if mark.name == "parametrize" and len(mark.args) > 1 for row in mark.args[1]]
    # A row's marks are the decorators it was given (a MarkDecorator wraps its Mark).
    return [getattr(m, "mark", m) for row in rows for m in getattr(row, "marks", ())]


def _suite_citations() -> Iterator[tuple[str, list[str]]]:
    """Each suite test (``module::function``) and the ids it cites, itself or in its rows."""
    for module in _suite_modules():
        module_ids = [str(i) for mark in _marks(module) if mark.name == "clause" for i in mark.args]
        for name, obj in vars(module).items():
            if not name.startswith("test_") or not callable(obj):
                continue
            marks = [*_marks(obj), *_row_marks(obj)]
            ids = module_ids + [str(i) for mark in marks if mark.name == "clause" for i in mark.args]
            yield f"{module.__name__.rsplit('.', 1)[-1]}::{name}", ids


def suite_tests() -> list[str]:
    """Every test function of the shipped suite, as ``module::function``."""
    return [test for test, _ids in _suite_citations()]


def citations() -> dict[str, list[str]]:
    """Clause or sentence id -> the suite tests that cite it (a sentence also counts for its clause)."""
    cited: dict[str, list[str]] = {}
    for test, ids in _suite_citations():
        for ref in dict.fromkeys([*ids, *(clause_id_of(i) for i in ids)]):
            cited.setdefault(ref, []).append(test)
    return cited


def manifest() -> list[SentenceEntry]:
    """One entry per sentence of the specification, in specification order."""
    cited = citations()
    return [
        SentenceEntry(
            sentence=sentence.id,
            clause=clause.id,
            level=sentence.level,
            profile=clause.profile,
            checks=tuple(cited.get(sentence.id, ())),
            untested_reason=UNTESTED.get(sentence.id),
        )
        for clause in load_clauses().values()
        for sentence in clause.sentences
    ]


def manifest_document() -> dict[str, Any]:
    """The manifest as JSON: clause -> level, profile, and each sentence's checks, or why it has none."""
    clauses: dict[str, Any] = {}
    spec = load_clauses()
    for clause_id, clause in spec.items():
        clauses[clause_id] = {"level": clause.level, "profile": clause.profile, "sentences": {}}
    for entry in manifest():
        row: dict[str, Any] = {"level": entry.level}
        if entry.checks:
            row["checks"] = list(entry.checks)
        elif entry.untested_reason is not None:
            row["untested"] = entry.untested_reason
        elif entry.sentence in PENDING:
            row["pending"] = "testable; the suite has no check for it yet"
        else:
            row["gap"] = "no check, no reason in UNTESTED and not PENDING"
        clauses[entry.clause]["sentences"][entry.sentence] = row
    return {
        "about": "Generated from conformance/SPEC.md and the suite by `mcp-conformance manifest --write`; do not edit.",
        "clauses": clauses,
    }


def render_manifest() -> str:
    """The text of ``manifest.json`` as generated now (stable: same inputs, same bytes)."""
    return json.dumps(manifest_document(), indent=2, ensure_ascii=False) + "\n"
