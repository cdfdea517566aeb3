"""Rankers by name: the specification's lexical one and the replaceable ones beside it.

``python -m reference_impl.driver --ranker NAME`` and the benchmarks choose from
:data:`RANKERS`. The rankers built on general resources (stemming, Chinese segmentation, a
bilingual dictionary, static embeddings; :mod:`reference_impl._semantic`) import their
optional dependencies only when one of them is made, and a missing one is a
:class:`~reference_impl.RankerUnavailableError` naming the extra that installs it.
"""

from __future__ import annotations

from collections.abc import Callable

from ._bm25 import Bm25Ranker
from ._ranking import LexicalRanker, Ranker
from ._semantic import DenseRanker, HybridRanker, StemmedBm25Ranker

__all__ = ["RANKERS", "make_ranker"]

#: Rankers by name, as ``python -m reference_impl.driver --ranker NAME`` selects them.
RANKERS: dict[str, Callable[[], Ranker]] = {
    "lexical": LexicalRanker,
    "bm25": Bm25Ranker,
    "bm25-stem": StemmedBm25Ranker,
    "dense": DenseRanker,
    "hybrid": HybridRanker,
}


def make_ranker(name: str) -> Ranker:
    """A new ranker by its registry name; a ``ValueError`` lists the names when it is unknown."""
    try:
        factory = RANKERS[name]
    except KeyError:
        raise ValueError(f"unknown ranker {name!r}; known rankers: {', '.join(sorted(RANKERS))}") from None
    return factory()
