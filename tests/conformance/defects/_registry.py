"""The registry of defects: ``@defect("POL-5.4", "…")`` above a patch function registers it.

A defect is one deliberate break of one normative sentence of SPEC.md, made by patching
the reference implementation in the driver process that applies it. The suite must catch
it on that sentence's clause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from conformance._clauses import SENTENCES, clause_id_of

__all__ = ["REGISTRY", "VARIANT_REGISTRY", "Defect", "Variant", "defect", "variant"]

_F = TypeVar("_F", bound=Callable[[], None])


@dataclass(frozen=True, slots=True)
class Defect:
    """One defect: the sentence it breaks, what it does, and the patch that makes it."""

    name: str
    sentence: str
    summary: str
    patch: Callable[[], None]
    #: For a wrong lexical ranker: the model of it in ``tests.conformance.vectors._defective``,
    #: whose predictions restrict the run to the vector probes it fails.
    twin: str | None = None

    @property
    def clause(self) -> str:
        return clause_id_of(self.sentence)


#: Every registered defect by name.
REGISTRY: dict[str, Defect] = {}


def defect(sentence: str, summary: str, *, twin: str | None = None) -> Callable[[_F], _F]:
    """Register the decorated patch as the defect named after it, breaking ``sentence``.

    Raises:
        ValueError: an unknown sentence id, or a name registered twice.
    """
    if sentence not in SENTENCES:
        raise ValueError(f"defect for {sentence!r}: not a sentence of SPEC.md")

    def register(patch: _F) -> _F:
        name = patch.__name__
        if name in REGISTRY:
            raise ValueError(f"defect {name!r} is registered twice")
        REGISTRY[name] = Defect(name, sentence, summary, patch, twin)
        return patch

    return register


@dataclass(frozen=True, slots=True)
class Variant:
    """A correct implementation that makes another allowed choice: an implementation-defined
    point (``ID-3``) or a permission (a MAY sentence). The suite must pass it on ``clauses``
    (the ones its reading touches; of them, only the tests in ``tests``, modules or test
    ids, when given), and on the whole suite, with no finding but on the SHOULD sentences of
    ``warns``, whose advice its reading does not take."""

    name: str
    choice: str
    summary: str
    clauses: tuple[str, ...]
    patch: Callable[[], None]
    warns: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()


#: Every registered variant by name.
VARIANT_REGISTRY: dict[str, Variant] = {}


def variant(
    choice: str,
    summary: str,
    *,
    clauses: tuple[str, ...],
    warns: tuple[str, ...] = (),
    tests: tuple[str, ...] = (),
) -> Callable[[_F], _F]:
    """Register the decorated patch as a variant that makes ``choice`` otherwise than the
    reference, and must still pass the tests citing ``clauses`` (of ``tests``, if given),
    breaking at most the SHOULD sentences ``warns``.

    Raises:
        ValueError: an unknown clause, a sentence of ``warns`` that is not a SHOULD sentence,
            or a name registered twice (as a defect or a variant).
    """
    from conformance._clauses import CLAUSES

    unknown = [c for c in clauses if c not in CLAUSES]
    if unknown or not clauses:
        raise ValueError(f"variant for {choice!r}: clauses {unknown or clauses} are not clauses of SPEC.md")
    binding = [s for s in warns if s not in SENTENCES or SENTENCES[s].level != "SHOULD"]
    if binding:
        raise ValueError(f"variant for {choice!r}: {binding} are not SHOULD sentences; a variant breaks no other")

    def register(patch: _F) -> _F:
        name = patch.__name__
        if name in VARIANT_REGISTRY or name in REGISTRY:
            raise ValueError(f"variant {name!r} is registered twice")
        VARIANT_REGISTRY[name] = Variant(name, choice, summary, clauses, patch, warns, tests)
        return patch

    return register
