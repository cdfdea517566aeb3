"""Lexical ranking: tokenizer, scorer, aliases and read intent, over a per-run index.

The catalog's words are indexed once when the run opens. A query then touches only the
tools that share a word, an alias target or a server id with it; every other tool keeps
the score it has from the system prompt and its annotations alone, and those tools are
pre-sorted once per run. So neither the first round nor a discovery call rescans the text
of every tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from heapq import heapify, heappop, merge
from typing import Protocol

__all__ = [
    "ALIASES",
    "READ_SIGNALS",
    "READ_VERBS",
    "WRITE_VERBS",
    "LexicalIndex",
    "LexicalRanker",
    "Ranker",
    "RankingIndex",
    "ScoreBreakdown",
    "ToolDoc",
    "words",
]

_WORD = re.compile(r"[^\W_]+")

ALIASES: tuple[tuple[str, str], ...] = (
    ("pr", "pull_request"),
    ("合并请求", "pull_request"),
    ("工单", "issue"),
    ("评审", "review"),
    ("日志", "log"),
)
READ_SIGNALS: tuple[str, ...] = (
    "查询", "列出", "最近", "查看", "summary", "review", "list", "show", "find", "search", "recent",
)  # fmt: skip
READ_VERBS = frozenset({"list", "search", "get", "read", "find", "view", "download"})
WRITE_VERBS = frozenset({"create", "update", "delete", "push", "send", "write", "remove", "edit", "merge"})

USER_WORD, SYSTEM_WORD, USER_SERVER, SYSTEM_SERVER, READ_ONLY = 12, 2, 16, 3, 3
ALIAS, READ_BONUS, WRITE_PENALTY = 12, 8, -32


def words(text: str) -> list[str]:
    """Casefolded runs of Unicode letters and digits, in order (with repeats)."""
    return _WORD.findall(text.casefold())


def _is_ascii_word(trigger: str) -> bool:
    return trigger.isascii() and trigger.isalpha()


def fires(trigger: str, text: str, text_words: frozenset[str]) -> bool:
    """Whether a trigger occurs in a casefolded text: whole word if ASCII letters, else substring."""
    if _is_ascii_word(trigger):
        return trigger in text_words
    return trigger in text


def names_server(server_id: str, text: str) -> bool:
    """Whether a casefolded text names a server: the id with no letter or digit beside it."""
    pattern = rf"(?<![^\W_]){re.escape(server_id.casefold())}(?![^\W_])"
    return re.search(pattern, text) is not None


@dataclass(frozen=True, slots=True)
class ToolDoc:
    """What the ranker may know about a tool."""

    qualified_name: str
    server_id: str
    name: str
    description: str
    read_only: bool


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """A tool's score by component, with the words and triggers that produced it."""

    user_words: tuple[str, ...] = ()
    system_words: tuple[str, ...] = ()
    user_server: bool = False
    system_server: bool = False
    read_only: bool = False
    aliases: tuple[str, ...] = ()
    read_bonus: bool = False
    write_penalty: bool = False

    @property
    def components(self) -> dict[str, int]:
        return {
            "user_words": USER_WORD * len(self.user_words),
            "system_words": SYSTEM_WORD * len(self.system_words),
            "user_server": USER_SERVER * self.user_server,
            "system_server": SYSTEM_SERVER * self.system_server,
            "read_only": READ_ONLY * self.read_only,
            "alias": ALIAS * len(self.aliases),
            "intent": READ_BONUS * self.read_bonus + WRITE_PENALTY * self.write_penalty,
        }

    @property
    def total(self) -> int:
        return sum(self.components.values())

    @property
    def relevant(self) -> bool:
        """At least one signal from the query itself: a word hit, an alias or the server id."""
        return bool(self.user_words or self.aliases or self.user_server)

    def __str__(self) -> str:
        parts = [f"{name}={value:+d}" for name, value in self.components.items() if value]
        return f"{self.total} ({', '.join(parts) or 'no signal'})"


class RankingIndex(Protocol):
    """A catalog indexed for one run, with its system prompt already taken into account."""

    def order(self, query: str) -> Iterator[int]:
        """Every tool, best first for this query, ties broken by qualified name."""
        ...

    def matches(self, query: str) -> Iterator[int]:
        """Tools with at least one relevance signal from the query, best first."""
        ...

    def breakdown(self, tool: int, query: str) -> ScoreBreakdown:
        """Why a tool scores what it scores for this query."""
        ...


class Ranker(Protocol):
    """Builds a ranking index for a run. Replaceable: the core boundaries never depend on it."""

    name: str

    def index(self, tools: Sequence[ToolDoc], system_prompt: str) -> RankingIndex: ...


@dataclass(slots=True)
class _Query:
    """What a query does to the tools it touches."""

    source: str
    text: str
    hits: dict[int, list[str]] = field(default_factory=dict)
    servers: frozenset[str] = frozenset()
    aliases: dict[int, list[str]] = field(default_factory=dict)
    read_intent: bool = False


class LexicalIndex:
    """The specification's lexical scorer over an inverted index of one run's catalog."""

    def __init__(self, tools: Sequence[ToolDoc], system_prompt: str) -> None:
        self.tools = tuple(tools)
        self._last: _Query | None = None
        self._postings: dict[str, list[int]] = {}
        self._by_server: dict[str, list[int]] = {}
        self._name_lower = [tool.name.casefold() for tool in self.tools]
        self._read_shaped: set[int] = set()
        self._write_shaped: set[int] = set()
        for i, tool in enumerate(self.tools):
            for word in set(words(tool.name)) | set(words(tool.description)):
                self._postings.setdefault(word, []).append(i)
            self._by_server.setdefault(tool.server_id, []).append(i)
            name_words = set(words(tool.name))
            if name_words & READ_VERBS:
                self._read_shaped.add(i)
            if name_words & WRITE_VERBS:
                self._write_shaped.add(i)
        self._alias_targets: dict[str, list[int]] = {
            target: [i for i, name in enumerate(self._name_lower) if target in name] for _, target in ALIASES
        }
        system = system_prompt.casefold()
        self._system_words: dict[int, list[str]] = {}
        for word in sorted(set(words(system))):
            for i in self._postings.get(word, ()):
                self._system_words.setdefault(i, []).append(word)
        self._system_servers = frozenset(s for s in self._by_server if names_server(s, system))
        self._static = [self._static_score(i) for i in range(len(self.tools))]
        # A tool the query's words, aliases and server ids do not touch scores its static
        # score plus a read-intent adjustment that depends only on the shape of its name.
        # Pre-sorting each shape once per run makes a query's ranking a lazy merge.
        self._shape_orders: dict[int, list[tuple[int, str, int]]] = {}
        for i in sorted(range(len(self.tools)), key=lambda i: (-self._static[i], self.tools[i].qualified_name)):
            entry = (-self._static[i], self.tools[i].qualified_name, i)
            self._shape_orders.setdefault(self._intent(i), []).append(entry)

    def _static_score(self, i: int) -> int:
        tool = self.tools[i]
        return (
            SYSTEM_WORD * len(self._system_words.get(i, ()))
            + SYSTEM_SERVER * (tool.server_id in self._system_servers)
            + READ_ONLY * tool.read_only
        )

    def _parse(self, query: str) -> _Query:
        # Traces ask for many breakdowns of one query in a row.
        if self._last is not None and self._last.source == query:
            return self._last
        text = query.casefold()
        query_words = frozenset(words(text))
        parsed = _Query(source=query, text=text)
        for word in sorted(query_words):
            for i in self._postings.get(word, ()):
                parsed.hits.setdefault(i, []).append(word)
        parsed.servers = frozenset(s for s in self._by_server if names_server(s, text))
        for trigger, target in ALIASES:
            if fires(trigger, text, query_words):
                for i in self._alias_targets[target]:
                    parsed.aliases.setdefault(i, []).append(trigger)
        parsed.read_intent = any(fires(signal, text, query_words) for signal in READ_SIGNALS)
        self._last = parsed
        return parsed

    def _intent(self, i: int) -> int:
        return READ_BONUS * (i in self._read_shaped) + WRITE_PENALTY * (i in self._write_shaped)

    def _dynamic(self, i: int, q: _Query) -> int:
        score = USER_WORD * len(q.hits.get(i, ())) + ALIAS * len(q.aliases.get(i, ()))
        if self.tools[i].server_id in q.servers:
            score += USER_SERVER
        if q.read_intent:
            score += self._intent(i)
        return score

    def _relevant(self, q: _Query) -> set[int]:
        relevant = set(q.hits) | set(q.aliases)
        for server in q.servers:
            relevant.update(self._by_server[server])
        return relevant

    def _keyed(self, tools: set[int], q: _Query) -> list[tuple[int, str, int]]:
        return [(-(self._static[i] + self._dynamic(i, q)), self.tools[i].qualified_name, i) for i in tools]

    def order(self, query: str) -> Iterator[int]:
        q = self._parse(query)
        touched = self._relevant(q)
        streams: list[Iterator[tuple[int, str, int]]] = [_drain(self._keyed(touched, q))]
        for shape, entries in self._shape_orders.items():
            streams.append(_shifted(entries, shape if q.read_intent else 0, touched))
        return (i for _, _, i in merge(*streams))

    def matches(self, query: str) -> Iterator[int]:
        q = self._parse(query)
        return (i for _, _, i in _drain(self._keyed(self._relevant(q), q)))

    def breakdown(self, tool: int, query: str) -> ScoreBreakdown:
        q = self._parse(query)
        i = tool
        return ScoreBreakdown(
            user_words=tuple(q.hits.get(i, ())),
            system_words=tuple(self._system_words.get(i, ())),
            user_server=self.tools[i].server_id in q.servers,
            system_server=self.tools[i].server_id in self._system_servers,
            read_only=self.tools[i].read_only,
            aliases=tuple(q.aliases.get(i, ())),
            read_bonus=q.read_intent and i in self._read_shaped,
            write_penalty=q.read_intent and i in self._write_shaped,
        )

    def scores(self, query: str) -> Mapping[int, int]:
        """Total score of every tool for a query (for tests and traces, not the hot path)."""
        q = self._parse(query)
        return {i: self._static[i] + self._dynamic(i, q) for i in range(len(self.tools))}


def _shifted(entries: list[tuple[int, str, int]], shift: int, skip: set[int]) -> Iterator[tuple[int, str, int]]:
    for score, name, i in entries:
        if i not in skip:
            yield score - shift, name, i


def _drain(heap: list[tuple[int, str, int]]) -> Iterator[tuple[int, str, int]]:
    """Yield a list's items in order, paying only for those actually taken."""
    heapify(heap)
    while heap:
        yield heappop(heap)


class LexicalRanker:
    """The ranker the ``lexical`` profile specifies."""

    name = "lexical"

    def index(self, tools: Sequence[ToolDoc], system_prompt: str) -> LexicalIndex:
        return LexicalIndex(tools, system_prompt)
