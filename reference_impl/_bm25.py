"""BM25F, a ranker beside the specification's lexical one.

A replaced ranker claims only the ``core`` profile (RNK-9): the budgets, fairness caps,
policy and the gate hold whatever it does, so it only has to satisfy the
:class:`~reference_impl.RankingIndex` protocol — every tool in ``order``, ties by qualified
name, and ``matches`` limited to tools with at least one signal from the query.

:class:`Bm25Ranker` scores with BM25F over an inverted index of the catalog: a tool's name
and its server id weigh more than its description, stop words are dropped, plurals are
folded, and the design's aliases (``pr`` and ``合并请求`` → pull request, ``工单`` → issue,
``评审`` → review, ``日志`` → log) add their targets' words; it needs nothing beyond the
standard library. Each query word's contribution to each tool is computed once, when the
run opens, so a query costs one pass over the postings of its own words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from heapq import heapify, heappop, merge

from ._ranking import ALIASES, ScoreBreakdown, ToolDoc

__all__ = ["STOP_WORDS", "Bm25Breakdown", "Bm25Index", "Bm25Params", "Bm25Ranker", "fold", "terms"]

# The design's aliases, as triggers of the words their targets are made of; the only mapping
# from a word to others, so that nothing here is tuned to a task set.
LEXICON: tuple[tuple[str, str], ...] = tuple((trigger, target.replace("_", " ")) for trigger, target in ALIASES)

_TOKEN = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP_WORDS = _set(
    """a an the of to in on for and or with by from at as is are was were be been being this that these those
    it its it's my our your their me i we you us them he she they please can could would should will shall do does
    did have has had want need needs some all any into up out about how what which who whom when where there here
    then than so just also very too only own same such via per each every one ones let lets s t don isn i'm we're
    tell give me make sure like way thing things something yet still now ok okay"""
)

# Query words that say the user wants to read or to change something.
READ_INTENT = _set(
    "list show get find search view read what which who when where whats is are see look check display fetch "
    "recent latest browse lookup"
)
WRITE_INTENT = _set(
    "create add new make delete remove drop update change edit rename set send post upload archive cancel start "
    "restart reboot terminate kill close reopen assign approve publish resolve invite store import load file "
    "spin bump push"
)
READ_NAME = _set("list get search find read view describe query preview download export count")
WRITE_NAME = _set(
    "create update delete remove reopen assign approve publish rerun cancel start restart rename invite upload "
    "set archive resolve load click type hover press select fill evaluate close clear scroll navigate"
)


def fold(word: str) -> str:
    """A light plural folding of an ASCII word: ``issues`` → ``issue``, ``queries`` → ``query``."""
    if not word.isascii() or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "uses")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Casefolded, plural-folded words of a text, stop words left out; camelCase splits."""
    return [fold(w) for w in _TOKEN.findall(_CAMEL.sub(" ", text).casefold()) if w not in STOP_WORDS]


@dataclass(frozen=True, slots=True)
class _Trigger:
    phrase: tuple[str, ...]  # ASCII words to match in order, or () for a substring trigger
    substring: str
    adds: tuple[str, ...]


def _compile(lexicon: Sequence[tuple[str, str]]) -> tuple[_Trigger, ...]:
    out: list[_Trigger] = []
    for trigger, adds in lexicon:
        added = tuple(terms(adds))
        if trigger.isascii():
            out.append(_Trigger(tuple(_TOKEN.findall(trigger.casefold())), "", added))
        else:
            out.append(_Trigger((), trigger.casefold(), added))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Bm25Breakdown(ScoreBreakdown):
    """A BM25 score: the query words that hit, what they contributed, and the adjustments."""

    score: float = 0.0
    parts: tuple[tuple[str, float], ...] = ()

    @property
    def components(self) -> dict[str, int]:
        # In thousandths, so that the integer view of the protocol keeps the ordering.
        return {name: round(value * 1000) for name, value in self.parts}

    @property
    def total(self) -> int:
        return round(self.score * 1000)

    def __str__(self) -> str:
        shown = [f"{name}={value:+.3f}" for name, value in self.parts if value]
        return f"{self.score:.3f} ({', '.join(shown) or 'no signal'})"


@dataclass(slots=True)
class _Parsed:
    source: str
    weights: dict[str, float]  # query term -> weight (1 for the user's words, alias_weight for alias targets)
    read: bool
    write: bool
    scores: dict[int, float] = field(default_factory=dict)
    hits: dict[int, list[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """The scorer's knobs. The defaults were set before the task set was scored, and left as they were."""

    k1: float = 1.2
    b: float = 0.5
    name_weight: float = 3.0
    server_weight: float = 2.0
    description_weight: float = 1.0
    alias_weight: float = 1.0
    system_weight: float = 0.1
    read_only_prior: float = 0.05
    read_bonus: float = 0.4
    write_penalty: float = 1.5
    write_read_penalty: float = 0.6
    aliases: bool = True


class Bm25Index:
    """BM25F over one run's catalog, with the system prompt folded into each tool's prior."""

    def __init__(self, tools: Sequence[ToolDoc], system_prompt: str, params: Bm25Params) -> None:
        self.tools = tuple(tools)
        self.params = params
        self._triggers = _compile(LEXICON) if params.aliases else ()
        self._last: _Parsed | None = None
        p = params
        weighted: list[dict[str, float]] = []
        lengths: list[float] = []
        for tool in self.tools:
            tf: dict[str, float] = {}
            length = 0.0
            for text, weight in (
                (tool.name, p.name_weight),
                (tool.server_id, p.server_weight),
                (tool.description, p.description_weight),
            ):
                for term in terms(text):
                    tf[term] = tf.get(term, 0.0) + weight
                    length += weight
            weighted.append(tf)
            lengths.append(length)
        n = len(self.tools)
        average = (sum(lengths) / n) if n else 1.0
        df: dict[str, int] = {}
        for tf in weighted:
            for term in tf:
                df[term] = df.get(term, 0) + 1
        # Impact of each term on each tool: the BM25F summand, computed once per run.
        self._postings: dict[str, list[tuple[int, float]]] = {}
        for i, tf in enumerate(weighted):
            norm = p.k1 * (1 - p.b + p.b * lengths[i] / (average or 1.0))
            for term, freq in sorted(tf.items()):
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                self._postings.setdefault(term, []).append((i, idf * freq * (p.k1 + 1) / (freq + norm)))
        self._read_shaped = [bool(set(terms(t.name)) & READ_NAME) for t in self.tools]
        self._write_shaped = [bool(set(terms(t.name)) & WRITE_NAME) for t in self.tools]
        self._system: dict[int, float] = {}
        for term in sorted(set(terms(system_prompt))):
            for i, impact in self._postings.get(term, ()):
                self._system[i] = self._system.get(i, 0.0) + p.system_weight * impact
        self._static = [self._system.get(i, 0.0) + p.read_only_prior * t.read_only for i, t in enumerate(self.tools)]
        self._shape_orders: dict[tuple[bool, bool], list[tuple[float, str, int]]] = {}
        for i in sorted(range(n), key=lambda i: (-self._static[i], self.tools[i].qualified_name)):
            shape = (self._read_shaped[i], self._write_shaped[i])
            self._shape_orders.setdefault(shape, []).append((-self._static[i], self.tools[i].qualified_name, i))

    def _intent(self, read_shaped: bool, write_shaped: bool, q: _Parsed) -> float:
        p = self.params
        adjust = 0.0
        if q.read and not q.write:
            adjust += p.read_bonus * read_shaped - p.write_penalty * write_shaped
        elif q.write and not q.read:
            adjust -= p.write_read_penalty * (read_shaped and not write_shaped)
        return adjust

    def _parse(self, query: str) -> _Parsed:
        if self._last is not None and self._last.source == query:
            return self._last
        folded = query.casefold()
        raw = _TOKEN.findall(folded)
        own = terms(query)
        weights: dict[str, float] = dict.fromkeys(own, 1.0)
        for trigger in self._triggers:
            if trigger.phrase:
                k = len(trigger.phrase)
                fired = any(tuple(raw[j : j + k]) == trigger.phrase for j in range(len(raw) - k + 1))
            else:
                fired = trigger.substring in folded
            if fired:
                for term in trigger.adds:
                    weights[term] = max(weights.get(term, 0.0), self.params.alias_weight)
        words = set(raw) | set(own)
        parsed = _Parsed(
            source=query,
            weights=weights,
            read=bool(words & READ_INTENT) or any(s in folded for s in ("查看", "列出", "查询", "搜索", "获取")),
            write=bool(words & WRITE_INTENT)
            or any(s in folded for s in ("创建", "新建", "删除", "更新", "修改", "重启", "取消", "上传", "启动")),
        )
        for term in sorted(weights):
            weight = weights[term]
            for i, impact in self._postings.get(term, ()):
                parsed.scores[i] = parsed.scores.get(i, 0.0) + weight * impact
                parsed.hits.setdefault(i, []).append(term)
        self._last = parsed
        return parsed

    def _score(self, i: int, q: _Parsed) -> float:
        return self._static[i] + q.scores.get(i, 0.0) + self._intent(self._read_shaped[i], self._write_shaped[i], q)

    def _keyed(self, q: _Parsed) -> list[tuple[float, str, int]]:
        return [(-self._score(i, q), self.tools[i].qualified_name, i) for i in q.scores]

    def order(self, query: str) -> Iterator[int]:
        q = self._parse(query)
        touched = q.scores
        streams: list[Iterator[tuple[float, str, int]]] = [_drain(self._keyed(q))]
        for (read_shaped, write_shaped), entries in self._shape_orders.items():
            shift = self._intent(read_shaped, write_shaped, q)
            streams.append(_shifted(entries, shift, touched))
        return (i for _, _, i in merge(*streams))

    def matches(self, query: str) -> Iterator[int]:
        q = self._parse(query)
        return (i for _, _, i in _drain(self._keyed(q)))

    def breakdown(self, tool: int, query: str) -> Bm25Breakdown:
        q = self._parse(query)
        i = tool
        shape = self._intent(self._read_shaped[i], self._write_shaped[i], q)
        parts = (
            ("terms", q.scores.get(i, 0.0)),
            ("system", self._system.get(i, 0.0)),
            ("read_only", self.params.read_only_prior * self.tools[i].read_only),
            ("intent", shape),
        )
        return Bm25Breakdown(
            user_words=tuple(q.hits.get(i, ())),
            read_only=self.tools[i].read_only,
            score=self._score(i, q),
            parts=parts,
        )

    def scores(self, query: str) -> Mapping[int, float]:
        """Score of every tool for a query (for tests and benchmarks, not the hot path)."""
        q = self._parse(query)
        return {i: self._score(i, q) for i in range(len(self.tools))}


def _drain(heap: list[tuple[float, str, int]]) -> Iterator[tuple[float, str, int]]:
    """Yield a list's items in order, paying only for those actually taken."""
    heapify(heap)
    while heap:
        yield heappop(heap)


def _shifted(
    entries: list[tuple[float, str, int]], shift: float, skip: Mapping[int, float]
) -> Iterator[tuple[float, str, int]]:
    for score, name, i in entries:
        if i not in skip:
            yield score - shift, name, i


class Bm25Ranker:
    """BM25F with field weights, stop words, plural folding and the design's aliases (``core`` only)."""

    def __init__(self, params: Bm25Params | None = None, *, name: str = "bm25") -> None:
        self.params = params or Bm25Params()
        self.name = name

    def index(self, tools: Sequence[ToolDoc], system_prompt: str) -> Bm25Index:
        return Bm25Index(tools, system_prompt, self.params)
