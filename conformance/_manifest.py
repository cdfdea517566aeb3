"""Every normative sentence accounted for: the checks that enforce it, or why it has none.

The manifest is computed from the shipped suite, never written by hand, so it cannot
drift. A check enforces a sentence when it cites the sentence's own id
(``@clause("DSC-5.2")``); citing a whole clause enforces none of its sentences. A MUST or
SHOULD sentence with neither a check nor an entry in :data:`UNTESTED` is a gap, and an
entry for a sentence that is checked (or unknown) is stale.

Each sentence also leads to the lines of the reference implementation that implement it:
``reference_impl`` cites sentence ids in its comments and docstrings (``# DSC-5.2: ...``),
and :func:`implementations` collects them. The suite imports none of the reference's code
for that: it reads the package's source files as text, from beside this package.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest

from conformance import suite
from conformance._clauses import clause_id_of, load_clauses
from conformance._errors import ConformanceError

__all__ = [
    "MANIFEST_PATH",
    "PENDING",
    "REFERENCE_PACKAGE",
    "UNIMPLEMENTED",
    "UNTESTED",
    "ReferenceCitation",
    "SentenceEntry",
    "citations",
    "implementations",
    "manifest",
    "manifest_document",
    "reference_citations",
    "reference_sources",
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
    "EVC-1.4": _PERMISSION + "; the eviction checks accept a call that evicts more than it must, as long as what it "
    "evicts is the least recently used (EVC-3)",
    "CAT-2.4": _PERMISSION + "; CAT-2.1 checks that a bound, where there is one, lies past 1,000 pages",
}

#: Testable sentences the suite does not check yet. A certificate counts their clauses as
#: gaps: it gives no verdict while any remains.
PENDING: Final[frozenset[str]] = frozenset()


#: The package whose sources cite the sentences they implement.
REFERENCE_PACKAGE: Final = "reference_impl"

#: MUST sentences no line of the reference implements, each with the reason. Only a sentence
#: about the suite itself could belong here; every sentence a host must follow has a line.
UNIMPLEMENTED: Final[Mapping[str, str]] = {}

# A sentence id (``DSC-5.2``) anywhere in a source line, or a clause id (``DSC-5``) whose
# prefix is a clause family of SPEC.md (``UTF-8`` and ``SHA-256`` are not citations).
_CITED: Final = re.compile(r"\b(?P<id>[A-Z]{2,5}-[0-9]+(?:\.[0-9]+)?)\b(?!\.[0-9])")


@dataclass(frozen=True, slots=True)
class SentenceEntry:
    sentence: str
    clause: str
    level: str
    profile: str
    checks: tuple[str, ...]
    untested_reason: str | None


@dataclass(frozen=True, slots=True)
class ReferenceCitation:
    """A sentence or clause id cited on one line of the reference implementation."""

    ref: str
    #: ``reference_impl/_discovery.py``: relative to the folder that holds the package.
    path: str
    line: int

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"


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


def reference_sources() -> Path:
    """The folder of the reference implementation's source files, read as data.

    It ships in the same distribution as this package, so it sits beside it (in a source
    tree and in site-packages alike); failing that, the import system is asked where it is
    without running any of its code.

    Raises:
        ConformanceError: no source files of the reference are installed here.
    """
    beside = Path(__file__).resolve().parent.parent / REFERENCE_PACKAGE
    if (beside / "__init__.py").is_file():
        return beside
    spec = importlib.util.find_spec(REFERENCE_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        if (Path(location) / "__init__.py").is_file():
            return Path(location).resolve()
    raise ConformanceError(
        f"the source files of {REFERENCE_PACKAGE!r} are not installed beside {Path(__file__).parent} "
        f"(looked for {beside}/__init__.py); the manifest's implemented_by cannot be collected: "
        "run this from a source checkout or an installation that includes them"
    )


def reference_citations(root: Path | None = None) -> list[ReferenceCitation]:
    """Every sentence or clause id the reference's sources cite, in file and line order.

    A dotted id (``DSC-5.2``) is always a citation; an id without a sentence number counts
    only when its prefix is a clause family of SPEC.md, so that ``UTF-8`` is not one.
    """
    root = reference_sources() if root is None else root
    families = {clause_id.rsplit("-", 1)[0] for clause_id in load_clauses()}
    found: list[ReferenceCitation] = []
    for path in sorted(root.rglob("*.py")):
        where = f"{root.name}/{path.relative_to(root).as_posix()}"
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in _CITED.finditer(text):
                ref = match["id"]
                if "." in ref or ref.rsplit("-", 1)[0] in families:
                    found.append(ReferenceCitation(ref=ref, path=where, line=number))
    return found


def implementations(root: Path | None = None) -> dict[str, list[str]]:
    """Sentence id -> the ``path:line`` places of the reference that implement it."""
    implemented: dict[str, list[str]] = {}
    for citation in reference_citations(root):
        if "." in citation.ref:
            places = implemented.setdefault(citation.ref, [])
            if citation.location not in places:
                places.append(citation.location)
    return implemented


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
    """The manifest as JSON: clause -> level, profile, and each sentence's checks (or why it has
    none) and the lines of the reference that implement it."""
    implemented = implementations()
    clauses: dict[str, Any] = {}
    spec = load_clauses()
    for clause_id, clause in spec.items():
        clauses[clause_id] = {"level": clause.level, "profile": clause.profile, "sentences": {}}
        if clause.withdrawn:
            clauses[clause_id]["withdrawn"] = dict(clause.withdrawn)
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
        if entry.sentence in implemented:
            row["implemented_by"] = implemented[entry.sentence]
        elif entry.sentence in UNIMPLEMENTED:
            row["unimplemented"] = UNIMPLEMENTED[entry.sentence]
        clauses[entry.clause]["sentences"][entry.sentence] = row
    return {
        "about": "Generated from conformance/SPEC.md, the suite and the reference's citations by "
        "`mcp-conformance manifest --write`; do not edit.",
        "clauses": clauses,
    }


def render_manifest() -> str:
    """The text of ``manifest.json`` as generated now (stable: same inputs, same bytes)."""
    return json.dumps(manifest_document(), indent=2, ensure_ascii=False) + "\n"
