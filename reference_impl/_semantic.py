"""Rankers from general resources: stemmed bilingual BM25F, static embeddings, and their fusion.

Three rankers share one index class, :class:`SemanticIndex`, and differ in the signals
they combine:

- ``bm25-stem``: BM25F over Snowball stems, the tool's name and server id weighing more than
  its description; Chinese words reach the English catalog through their CC-CEDICT glosses
  (see :mod:`reference_impl._analysis`).
- ``dense``: cosine similarity between static embeddings (WordLlama, whose 16 MB of weights
  ship inside its wheel) of the query and of each tool's name, server and description.
  Chinese words are glossed into English before they are embedded.
- ``hybrid``: both, fused by reciprocal rank: a tool scores ``1 / (k + rank)`` in each
  ranking it appears in, so neither scale has to be calibrated against the other.

The first round ranks tools for the user's message. A discovery call (``matches``) ranks
them for the agent's query, which is not a user's message but a model's description of the
tool it wants ("list open pull requests in a GitHub repository"): its words are the
catalog's words, so there BM25 looks for them in the tool's name first, and the embedding
compares one description with another. A tool matches a query when it shares a stem with
it or is among the nearest tools in embedding space.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ._analysis import Analyzer, require
from ._bm25 import Bm25Breakdown
from ._ranking import ToolDoc

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "DenseRanker",
    "Encoder",
    "HybridRanker",
    "SemanticBreakdown",
    "SemanticIndex",
    "SemanticParams",
    "StemmedBm25Ranker",
    "WordLlamaEncoder",
]


class Encoder(Protocol):
    """Texts to unit vectors, one row per text."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


class WordLlamaEncoder:
    """WordLlama's packaged static embeddings, loaded from the installed wheel, never downloaded."""

    def __init__(self, model: Any) -> None:
        self._model = model

    @classmethod
    @cache
    def load(cls) -> WordLlamaEncoder:
        wordllama = require("wordllama")
        # The wheel carries the weights where the loader looks first, and the tokenizer under
        # ``tokenizers/``, which the loader finds when the package directory is its cache.
        package = Path(wordllama.__file__).parent
        return cls(wordllama.WordLlama.load(config="l2_supercat", dim=256, cache_dir=package, disable_download=True))

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        np = require("numpy")
        if not texts:
            return np.zeros((0, 256), dtype=np.float32)  # type: ignore[no-any-return]
        vectors = np.asarray(self._model.embed(list(texts), norm=False), dtype=np.float32)
        # Normalised here: a text without a single token (an empty message) embeds to zeros,
        # which the library's own normalisation would turn into NaNs.
        lengths = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, lengths, out=np.zeros_like(vectors), where=lengths > 0)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class SemanticParams:
    """The knobs, set on the first task set and on general principles."""

    lexical: bool = True
    dense: bool = False
    k1: float = 1.2
    b: float = 0.5
    name_weight: float = 3.0
    server_weight: float = 2.0
    description_weight: float = 1.0
    # Discovery: a model names the tool it wants, so its words count most in the name, and
    # a tool whose name the query spells out entirely is the one it describes: the lexical
    # score is multiplied by 1 + the share of the name's stems found in the query.
    discovery_name_weight: float = 5.0
    name_coverage: bool = True
    system_weight: float = 0.1
    read_only_prior: float = 0.05
    fusion_k: float = 60.0
    dense_depth: int = 24  # the nearest tools in embedding space (cosine above 0) count as matches


@dataclass(frozen=True, slots=True)
class SemanticBreakdown(Bm25Breakdown):
    """A tool's lexical score, cosine similarity and fused score for one query."""

    signal: bool = False

    @property
    def relevant(self) -> bool:
        return self.signal

    def __str__(self) -> str:
        shown = [f"{name}={value:+.3f}" for name, value in self.parts if value]
        return f"{self.score:.4f} ({', '.join(shown) or 'no signal'})"


class _Bm25f:
    """BM25F impacts of each stem on each tool, for two weightings of the fields."""

    def __init__(self, docs: Sequence[Sequence[tuple[list[str], float]]], params: SemanticParams) -> None:
        n = len(docs)
        df: dict[str, int] = {}
        fields: list[list[tuple[list[str], float]]] = [list(doc) for doc in docs]
        for doc in fields:
            for term in {t for terms, _ in doc for t in terms}:
                df[term] = df.get(term, 0) + 1
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        lengths = [sum(w * len(terms) for terms, w in doc) for doc in fields]
        average = (sum(lengths) / n) if n else 1.0
        for i, doc in enumerate(fields):
            tf: dict[str, float] = {}
            for terms, weight in doc:
                for term in terms:
                    tf[term] = tf.get(term, 0.0) + weight
            norm = params.k1 * (1 - params.b + params.b * lengths[i] / (average or 1.0))
            for term, freq in tf.items():
                impact = self.idf[term] * freq * (params.k1 + 1) / (freq + norm)
                self.postings.setdefault(term, []).append((i, impact))

    def score(self, weights: Mapping[str, float]) -> tuple[dict[int, float], dict[int, list[str]]]:
        scores: dict[int, float] = {}
        hits: dict[int, list[str]] = {}
        for term in sorted(weights):
            for i, impact in self.postings.get(term, ()):
                scores[i] = scores.get(i, 0.0) + weights[term] * impact
                hits.setdefault(i, []).append(term)
        return scores, hits


@dataclass(slots=True)
class _Ranked:
    """One query's scores, and every tool in order, best first."""

    query: str
    lexical: dict[int, float]
    hits: dict[int, list[str]]
    cosine: list[float]
    fused: list[float]
    ranking: list[int]
    signal: set[int]


class SemanticIndex:
    """One run's catalog under the lexical signal, the dense signal, or both fused."""

    def __init__(
        self,
        tools: Sequence[ToolDoc],
        system_prompt: str,
        params: SemanticParams,
        analyzer: Analyzer,
        encoder: Encoder | None,
    ) -> None:
        self.tools = tuple(tools)
        self.params = params
        self._analyzer = analyzer
        self._encoder = encoder if params.dense else None
        self._qname = [t.qualified_name for t in self.tools]
        p = params
        names = [analyzer.terms(t.name) for t in self.tools]
        servers = [analyzer.terms(t.server_id) for t in self.tools]
        descriptions = [analyzer.terms(t.description) for t in self.tools]
        self._names = [frozenset(n) for n in names]
        self._message = _Bm25f(
            [
                [(n, p.name_weight), (s, p.server_weight), (d, p.description_weight)]
                for n, s, d in zip(names, servers, descriptions, strict=True)
            ],
            p,
        )
        self._query = _Bm25f(
            [
                [(n, p.discovery_name_weight), (s, p.server_weight), (d, p.description_weight)]
                for n, s, d in zip(names, servers, descriptions, strict=True)
            ],
            p,
        )
        system, _ = self._message.score(dict.fromkeys(analyzer.query(system_prompt), p.system_weight))
        self._static = [system.get(i, 0.0) + p.read_only_prior * t.read_only for i, t in enumerate(self.tools)]
        self._vectors: NDArray[np.float32] | None = None
        if self._encoder is not None:
            self._vectors = self._encoder.embed([_describe(t) for t in self.tools])
        self._cache: dict[tuple[str, bool], _Ranked] = {}
        self._last_mode: dict[str, bool] = {}

    def _rank(self, query: str, discovery: bool) -> _Ranked:
        key = (query, discovery)
        cached = self._cache.get(key)
        if cached is not None:
            self._last_mode[query] = discovery
            return cached
        p = self.params
        n = len(self.tools)
        lexical: dict[int, float] = {}
        hits: dict[int, list[str]] = {}
        if p.lexical:
            bm25 = self._query if discovery else self._message
            weights = self._analyzer.query(query)
            lexical, hits = bm25.score(weights)
            if discovery and p.name_coverage:
                for i in lexical:
                    name = self._names[i]
                    if name:
                        lexical[i] *= 1 + len(name.intersection(weights)) / len(name)
        cosine = [0.0] * n
        nearest: list[int] = []
        if self._encoder is not None and self._vectors is not None and n:
            vector = self._encoder.embed([self._analyzer.english(query)])[0]
            cosine = [float(c) for c in self._vectors @ vector]
            by_cosine = sorted(range(n), key=lambda i: (-cosine[i], self._qname[i]))
            nearest = [i for i in by_cosine[: p.dense_depth] if cosine[i] > 0]
        signal = set(lexical) | set(nearest)
        if p.lexical and self._encoder is not None:
            fused = [0.0] * n
            by_lexical = sorted(lexical, key=lambda i: (-lexical[i] - self._static[i], self._qname[i]))
            for rank, i in enumerate(by_lexical, 1):
                fused[i] += 1 / (p.fusion_k + rank)
            # Only tools the embedding finds similar at all are ranked by it: with no similar
            # tool (an empty message) the order must not fall back on names.
            by_cosine = sorted((i for i in range(n) if cosine[i] > 0), key=lambda i: (-cosine[i], self._qname[i]))
            for rank, i in enumerate(by_cosine, 1):
                fused[i] += 1 / (p.fusion_k + rank)
            fused = [f + self._static[i] * 1e-3 for i, f in enumerate(fused)]
        elif self._encoder is not None:
            fused = [c + self._static[i] for i, c in enumerate(cosine)]
        else:
            fused = [lexical.get(i, 0.0) + self._static[i] for i in range(n)]
        ranking = sorted(range(n), key=lambda i: (-fused[i], self._qname[i]))
        ranked = _Ranked(query, lexical, hits, cosine, fused, ranking, signal)
        if len(self._cache) > 64:
            self._cache.clear()
            self._last_mode.clear()
        self._cache[key] = ranked
        self._last_mode[query] = discovery
        return ranked

    def order(self, query: str) -> Iterator[int]:
        return iter(self._rank(query, discovery=False).ranking)

    def matches(self, query: str) -> Iterator[int]:
        ranked = self._rank(query, discovery=True)
        return (i for i in ranked.ranking if i in ranked.signal)

    def breakdown(self, tool: int, query: str) -> SemanticBreakdown:
        # The first round and discovery rank differently: explain the ranking this query was
        # last given (a trace asks right after ranking), the first round's by default.
        ranked = self._rank(query, discovery=self._last_mode.get(query, False))
        i = tool
        parts = (
            ("terms", ranked.lexical.get(i, 0.0)),
            ("cosine", ranked.cosine[i]),
            ("static", self._static[i]),
        )
        return SemanticBreakdown(
            user_words=tuple(ranked.hits.get(i, ())),
            read_only=self.tools[i].read_only,
            score=ranked.fused[i],
            parts=parts,
            signal=i in ranked.signal,
        )

    def scores(self, query: str) -> Mapping[int, float]:
        """The first round's score of every tool for a query (for tests and benchmarks)."""
        ranked = self._rank(query, discovery=False)
        return dict(enumerate(ranked.fused))


def _describe(tool: ToolDoc) -> str:
    return f"{tool.server_id} {tool.name.replace('_', ' ')}: {tool.description}"


class _SemanticRanker:
    name: str
    params: SemanticParams

    def __init__(self, params: SemanticParams | None = None) -> None:
        self.params = params or type(self).default
        self.analyzer = Analyzer.load()
        self.encoder: Encoder | None = WordLlamaEncoder.load() if self.params.dense else None

    default = SemanticParams()

    def index(self, tools: Sequence[ToolDoc], system_prompt: str) -> SemanticIndex:
        return SemanticIndex(tools, system_prompt, self.params, self.analyzer, self.encoder)


class StemmedBm25Ranker(_SemanticRanker):
    """BM25F over Snowball stems, Chinese glossed through CC-CEDICT (``core`` only)."""

    name = "bm25-stem"
    default = SemanticParams(lexical=True, dense=False)


class DenseRanker(_SemanticRanker):
    """Cosine similarity of WordLlama static embeddings (``core`` only)."""

    name = "dense"
    default = SemanticParams(lexical=False, dense=True)


class HybridRanker(_SemanticRanker):
    """Stemmed BM25F and static embeddings, fused by reciprocal rank (``core`` only)."""

    name = "hybrid"
    default = SemanticParams(lexical=True, dense=True)
