"""Every clause accounted for: the tests that cite it, or why it has none.

The manifest is computed from the shipped suite, never written by hand, so it cannot
drift: a clause with neither a citing test nor an entry in :data:`UNTESTED` is a gap,
and an entry for a clause that is tested (or unknown) is stale.
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
from conformance._clauses import load_clauses

__all__ = [
    "MANIFEST_PATH",
    "PENDING",
    "UNTESTED",
    "ManifestEntry",
    "citations",
    "manifest",
    "manifest_document",
    "render_manifest",
]

#: The generated, committed manifest: ``mcp-conformance manifest --write`` rewrites it.
MANIFEST_PATH: Final = Path(__file__).with_name("manifest.json")

#: Clauses no test can check through the adapter interface, each with the reason.
UNTESTED: Final[Mapping[str, str]] = {
    "CAT-6": "a permission (MAY): seeing or not seeing tools added mid-run are both conformant",
    "ISO-3": "a permission (MAY): the selection trace is not part of the wire contract",
}


#: Testable clauses the suite does not check yet. A certificate counts them as gaps: it
#: gives no verdict while any remains.
PENDING: Final[frozenset[str]] = frozenset()


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    clause: str
    level: str
    profile: str
    tests: tuple[str, ...]
    untested_reason: str | None


def _suite_modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(suite.__path__, prefix=f"{suite.__name__}."):
        if info.name.rsplit(".", 1)[-1].startswith("test_"):
            yield importlib.import_module(info.name)


def _marks(obj: object) -> list[pytest.Mark]:
    marks = getattr(obj, "pytestmark", [])
    return list(marks) if isinstance(marks, list) else [marks]


def citations() -> dict[str, list[str]]:
    """Clause id -> the suite tests (``module::function``) that cite it."""
    cited: dict[str, list[str]] = {}
    for module in _suite_modules():
        module_ids = [i for mark in _marks(module) if mark.name == "clause" for i in mark.args]
        for name, obj in vars(module).items():
            if not name.startswith("test_") or not callable(obj):
                continue
            ids = module_ids + [i for mark in _marks(obj) if mark.name == "clause" for i in mark.args]
            for clause_id in ids:
                cited.setdefault(clause_id, []).append(f"{module.__name__.rsplit('.', 1)[-1]}::{name}")
    return cited


def manifest() -> list[ManifestEntry]:
    """One entry per clause of the specification, in specification order."""
    cited = citations()
    return [
        ManifestEntry(
            clause=clause.id,
            level=clause.level,
            profile=clause.profile,
            tests=tuple(cited.get(clause.id, ())),
            untested_reason=UNTESTED.get(clause.id),
        )
        for clause in load_clauses().values()
    ]


def manifest_document() -> dict[str, Any]:
    """The manifest as JSON: clause -> level, profile, and its tests, or why it has none."""
    clauses: dict[str, Any] = {}
    for entry in manifest():
        row: dict[str, Any] = {"level": entry.level, "profile": entry.profile}
        if entry.tests:
            row["tests"] = list(entry.tests)
        elif entry.untested_reason is not None:
            row["untested"] = entry.untested_reason
        elif entry.clause in PENDING:
            row["pending"] = "testable; the suite has no test for it yet"
        else:
            row["gap"] = "no test, no reason in UNTESTED and not PENDING"
        clauses[entry.clause] = row
    return {
        "about": "Generated from conformance/SPEC.md and the suite by `mcp-conformance manifest --write`; do not edit.",
        "clauses": clauses,
    }


def render_manifest() -> str:
    """The text of ``manifest.json`` as generated now (stable: same inputs, same bytes)."""
    return json.dumps(manifest_document(), indent=2, ensure_ascii=False) + "\n"
