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

__all__ = ["REGISTRY", "Defect", "defect"]

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
