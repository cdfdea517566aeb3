"""Lexical ranking: tokenizer, scorer, aliases and read intent, over a per-run index.

The catalog's words are indexed once when the run opens. A query then touches only the
tools that share a word, an alias target or a server id with it; every other tool keeps
the score it has from the system prompt and its annotations alone, and those tools are
pre-sorted once per run. Rankings are produced lazily, best first, so neither the first
round nor a discovery call rescans the text of every tool or sorts what it does not take.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush, heapreplace
from itertools import chain
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

# RNK-1.1: a word is a maximal run of letters and digits (Unicode L and N; not marks, not _), and
# RNK-1.2: a run of Chinese characters is one word like any other, joined to letters beside it.
_WORD = re.compile(r"[^\W_]+")

# RNK-5.1: each alias and the substring of tool names it fires; no synonyms beyond them (RNK-9.2).
ALIASES: tuple[tuple[str, str], ...] = (
    ("pr", "pull_request"),
    ("合并请求", "pull_request"),
    ("工单", "issue"),
    ("评审", "review"),
    ("日志", "log"),
)
# RNK-6.1: the signals of read intent in a user message.
READ_SIGNALS: tuple[str, ...] = (
    "查询", "列出", "最近", "查看", "summary", "review", "list", "show", "find", "search", "recent",
)  # fmt: skip
# RNK-6.2, RNK-6.3: the words of a tool's name that read intent rewards or punishes.
READ_VERBS = frozenset({"list", "search", "get", "read", "find", "view", "download"})
WRITE_VERBS = frozenset({"create", "update", "delete", "push", "send", "write", "remove", "edit", "merge"})

# The weights: RNK-2.1, RNK-2.2, RNK-3.1, RNK-3.2, RNK-4.1; then RNK-5.2, RNK-6.2, RNK-6.3.
USER_WORD, SYSTEM_WORD, USER_SERVER, SYSTEM_SERVER, READ_ONLY = 12, 2, 16, 3, 3
ALIAS, READ_BONUS, WRITE_PENALTY = 12, 8, -32


def words(text: str) -> list[str]:
    """Casefolded runs of Unicode letters and digits, in order (with repeats)."""
    # RNK-1.1: full Unicode case folding (ß to ss, Σ and ς to σ), no normalization.
    return _WORD.findall(text.casefold())


def _is_ascii_word(trigger: str) -> bool:
    return trigger.isascii() and trigger.isalpha()


def fires(trigger: str, text: str, text_words: frozenset[str]) -> bool:
    """Whether a trigger occurs in a casefolded text: whole word if ASCII letters, else substring."""
    # RNK-7.2: a trigger of ASCII letters is a whole word; RNK-7.3: any other matches as a substring.
    if _is_ascii_word(trigger):
        return trigger in text_words
    return trigger in text


def names_server(server_id: str, text: str) -> bool:
    """Whether a casefolded text names a server: the id with no letter or digit beside it."""
    # RNK-3.3, RNK-7.4: the casefolded id with no letter or digit on either side, whatever its characters.
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
        """At least one signal from the query itself: a word hit, an alias or the server id (DSC-10.2)."""
        return bool(self.user_words or self.aliases or self.user_server)

    def __str__(self) -> str:
        parts = [f"{name}={value:+d}" for name, value in self.components.items() if value]
        return f"{self.total} ({', '.join(parts) or 'no signal'})"


class RankingIndex(Protocol):
    """A catalog indexed for one run, with its system prompt already taken into account."""

    def order(self, query: str) -> Iterator[int]:
        """Every tool, best first for this query, ties broken by qualified name (RNK-8.1)."""
        ...

    def matches(self, query: str) -> Iterator[int]:
        """Tools with at least one relevance signal from the query, best first."""
        ...

    def breakdown(self, tool: int, query: str) -> ScoreBreakdown:
        """Why a tool scores what it scores for this query."""
        ...


class Ranker(Protocol):
    """Builds a ranking index for a run. Replaceable (RNK-9.1): the core boundaries never depend on it."""

    name: str

    def index(self, tools: Sequence[ToolDoc], system_prompt: str) -> RankingIndex: ...


@dataclass(frozen=True, slots=True)
class _Query:
    """What a query is made of: its words and the triggers it fires."""

    source: str
    text: str
    words: frozenset[str]
    servers: frozenset[str]
    aliases: tuple[tuple[str, str], ...]  # (trigger, target) of each alias that fires, in ALIASES order
    read_intent: bool


class LexicalIndex:
    """The specification's lexical scorer over an inverted index of one run's catalog.

    Tools are grouped by what the words of a query can see of them: the set of their words
    and the alias targets their name contains. Every tool of a group gains the same from a
    query's words and aliases, so a query scores groups, not tools, and only the groups
    its words or aliases touch. Within a group, tools are pre-sorted once per run by their
    static score (system prompt words, system server, readOnly), with and without the
    read-intent adjustment of their name's shape. A ranking is then a lazy k-way merge of
    the touched groups, the tools of the servers the query names (scored one by one) and,
    for ``order``, the pre-sorted stream of every tool: each step costs a heap operation,
    so a consumer that stops early pays for what it takes, plus one pass over the touched
    groups. Catalogs that repeat tools across servers have far fewer groups than tools.
    """

    def __init__(self, tools: Sequence[ToolDoc], system_prompt: str) -> None:
        self.tools = tuple(tools)
        self._last: _Query | None = None
        self._qname = [tool.qualified_name for tool in self.tools]
        self._server = [tool.server_id for tool in self.tools]
        self._name_lower = [tool.name.casefold() for tool in self.tools]
        self._by_server: dict[str, list[int]] = {}
        self._read_shaped: set[int] = set()
        self._write_shaped: set[int] = set()
        targets = tuple(dict.fromkeys(target for _, target in ALIASES))
        # Groups: tools with the same words and the same alias targets in their name.
        self._group_of: list[int] = []
        self._group_words: list[frozenset[str]] = []
        self._group_targets: list[tuple[str, ...]] = []
        self._postings: dict[str, list[int]] = {}  # word -> groups whose tools have it
        self._target_groups: dict[str, list[int]] = {target: [] for target in targets}
        groups: dict[tuple[frozenset[str], tuple[str, ...]], int] = {}
        for i, tool in enumerate(self.tools):
            name_words = set(words(tool.name))
            key = (
                # RNK-1.3: a tool's words are the distinct words of its original name and its description.
                frozenset(name_words.union(words(tool.description))),
                tuple(t for t in targets if t in self._name_lower[i]),
            )
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(self._group_words)
                self._group_words.append(key[0])
                self._group_targets.append(key[1])
                for word in key[0]:
                    self._postings.setdefault(word, []).append(g)
                for target in key[1]:
                    self._target_groups[target].append(g)
            self._group_of.append(g)
            self._by_server.setdefault(tool.server_id, []).append(i)
            # RNK-6.4: a name with both kinds of word gets both.
            if name_words & READ_VERBS:
                self._read_shaped.add(i)
            if name_words & WRITE_VERBS:
                self._write_shaped.add(i)
        # Server ids are found in a query through their first word (see _named_servers).
        self._server_keys: dict[str, list[str]] = {}
        self._server_others: list[str] = []
        for server_id in self._by_server:
            first = _WORD.match(server_id.casefold())
            if first is None:
                self._server_others.append(server_id)
            else:
                self._server_keys.setdefault(first.group(), []).append(server_id)
        system = system_prompt.casefold()
        system_words = frozenset(words(system))
        # RNK-2.2, RNK-2.3: each distinct word shared with the system prompt, once.
        self._group_system = [tuple(sorted(group & system_words)) for group in self._group_words]
        # RNK-3.2: the system prompt names a server; RNK-7.1: the only trigger looked up outside the user message.
        self._system_servers = frozenset(
            s for s in self._by_server if s.casefold() in system and names_server(s, system)
        )
        self._static = [self._static_score(i) for i in range(len(self.tools))]
        # Sort keys (lower is better) without and with read intent, the order of every
        # tool under each, and each group's tools in that order.
        plain = [-score for score in self._static]
        read = [key - self._intent(i) for i, key in enumerate(plain)]
        self._keys = (plain, read)
        self._best = (min(plain, default=0), min(read, default=0))
        self._ranked: tuple[list[int], list[int]] = (
            # RNK-8.1: equal scores in ascending code-point order of qualified names (str comparison).
            sorted(range(len(self.tools)), key=lambda i: (plain[i], self._qname[i])),
            sorted(range(len(self.tools)), key=lambda i: (read[i], self._qname[i])),
        )
        self._members: tuple[list[list[int]], list[list[int]]] = (
            [[] for _ in self._group_words],
            [[] for _ in self._group_words],
        )
        for ranked, members in zip(self._ranked, self._members, strict=True):
            for i in ranked:
                members[self._group_of[i]].append(i)

    def _static_score(self, i: int) -> int:
        tool = self.tools[i]
        return (
            SYSTEM_WORD * len(self._group_system[self._group_of[i]])
            + SYSTEM_SERVER * (tool.server_id in self._system_servers)
            # RNK-4.1: 3 for readOnlyHint exactly true, nothing otherwise.
            + READ_ONLY * tool.read_only
        )

    def _named_servers(self, text: str, query_words: frozenset[str]) -> frozenset[str]:
        # An id that starts with a letter or digit can only be named where its first run of
        # letters and digits is a whole word of the text (no letter or digit on either side
        # of the id, and the run ends where the id does or at a separator), so only the
        # servers keyed by the query's words need the exact check.
        candidates = [s for word in query_words for s in self._server_keys.get(word, ())]
        candidates += self._server_others
        return frozenset(s for s in candidates if s.casefold() in text and names_server(s, text))

    def _parse(self, query: str) -> _Query:
        # Traces ask for many breakdowns of one query in a row.
        if self._last is not None and self._last.source == query:
            return self._last
        text = query.casefold()
        query_words = frozenset(words(text))
        parsed = _Query(
            source=query,
            text=text,
            words=query_words,
            servers=self._named_servers(text, query_words),
            # RNK-7.1: aliases and read signals are looked up in the user message (or query) only.
            aliases=tuple((trigger, target) for trigger, target in ALIASES if fires(trigger, text, query_words)),
            # RNK-6.5: without a read signal, neither the bonus nor the penalty applies.
            read_intent=any(fires(signal, text, query_words) for signal in READ_SIGNALS),
        )
        self._last = parsed
        return parsed

    def _intent(self, i: int) -> int:
        return READ_BONUS * (i in self._read_shaped) + WRITE_PENALTY * (i in self._write_shaped)

    def _touched(self, q: _Query) -> dict[int, int]:
        """The groups a query's words or aliases touch, with what each of their tools gains."""
        postings = self._postings
        # RNK-2.1, RNK-2.3: 12 for each distinct word shared with the message: q.words is a set.
        hits = Counter(chain.from_iterable(postings[word] for word in q.words if word in postings))
        gains = {g: USER_WORD * count for g, count in hits.items()}
        # RNK-5.2: 12 per alias that fires, to every tool whose casefolded name contains its target;
        # RNK-5.3: two aliases both count, an alias that occurs twice counts once.
        for _, target in q.aliases:
            for g in self._target_groups[target]:
                gains[g] = gains.get(g, 0) + ALIAS
        return gains

    def _walk(self, query: str, everything: bool) -> Iterator[int]:
        """Tools best first: touched ones and those of named servers, then (if asked) every other."""
        q = self._parse(query)
        mode = 1 if q.read_intent else 0
        keys = self._keys[mode]
        best = self._best[mode]
        qname = self._qname
        server = self._server
        group_of = self._group_of
        named = q.servers
        members = self._members[mode]
        gains = self._touched(q)
        # Touched groups by gain, highest first. A group's tools have keys no better than
        # ``best - gain``, so a level of groups joins the merge only once the best entry
        # waiting is no better than that bound: most groups never do.
        levels: dict[int, list[int]] = {}
        for g, gain in gains.items():
            levels.setdefault(gain, []).append(g)
        order = sorted(levels, reverse=True)
        # A heap entry is (key, qualified name, stream, position); each stream is a list of
        # tools in key order, shifted by one gain. Keys and names tie only within a stream.
        streams: list[list[int]] = []
        shifts: list[int] = []
        heap: list[tuple[int, str, int, int]] = []
        # Tools of the servers the query names, scored one by one (stream -1).
        # RNK-3.1: 16 when the user message names the server; so a query that is a qualified name reaches
        # every tool of its server (DSC-5.8).
        for server_id in named:
            for i in self._by_server[server_id]:
                heap.append((keys[i] - gains.get(group_of[i], 0) - USER_SERVER, qname[i], -1, i))
        # Every tool in static order (stream 0). Entries for tools scored otherwise are
        # dropped when they surface: their key here is never better than their true key,
        # so the merge stays ordered and this stream is only read as far as it is needed.
        if everything and self.tools:
            ranked = self._ranked[mode]
            heap.append((keys[ranked[0]], qname[ranked[0]], 0, 0))
        else:
            ranked = []
        streams.append(ranked)
        shifts.append(0)
        heapify(heap)
        level = 0
        while True:
            while level < len(order) and (not heap or heap[0][0] >= best - order[level]):
                gain = order[level]
                level += 1
                for g in levels[gain]:
                    stream = members[g]
                    pos = 0
                    if named:
                        while pos < len(stream) and server[stream[pos]] in named:
                            pos += 1
                        if pos == len(stream):
                            continue
                    i = stream[pos]
                    heappush(heap, (keys[i] - gain, qname[i], len(streams), pos))
                    streams.append(stream)
                    shifts.append(gain)
            if not heap:
                return
            _, _, sid, pos = heap[0]
            if sid < 0:
                heappop(heap)
                yield pos
                continue
            stream = streams[sid]
            i = stream[pos]
            pos += 1
            if sid == 0:
                emit = group_of[i] not in gains and server[i] not in named
            else:
                emit = True
                if named:
                    while pos < len(stream) and server[stream[pos]] in named:
                        pos += 1
            if pos < len(stream):
                j = stream[pos]
                heapreplace(heap, (keys[j] - shifts[sid], qname[j], sid, pos))
            else:
                heappop(heap)
            if emit:
                yield i

    def order(self, query: str) -> Iterator[int]:
        return self._walk(query, everything=True)

    def matches(self, query: str) -> Iterator[int]:
        # DSC-10.1: the first-round scorer, the query in place of the user message and the system
        # prompt unchanged; DSC-10.2: only tools a word, an alias or a server id of the query
        # touches (read intent and the system prompt reach every tool only through ``order``).
        return self._walk(query, everything=False)

    def breakdown(self, tool: int, query: str) -> ScoreBreakdown:
        q = self._parse(query)
        i = tool
        g = self._group_of[i]
        return ScoreBreakdown(
            user_words=tuple(sorted(q.words & self._group_words[g])),
            system_words=self._group_system[g],
            user_server=self.tools[i].server_id in q.servers,
            system_server=self.tools[i].server_id in self._system_servers,
            read_only=self.tools[i].read_only,
            aliases=tuple(trigger for trigger, target in q.aliases if target in self._group_targets[g]),
            read_bonus=q.read_intent and i in self._read_shaped,
            write_penalty=q.read_intent and i in self._write_shaped,
        )

    def scores(self, query: str) -> Mapping[int, int]:
        """Total score of every tool for a query (for tests and traces, not the hot path)."""
        q = self._parse(query)
        gains = self._touched(q)
        return {
            i: self._static[i]
            + gains.get(self._group_of[i], 0)
            + USER_SERVER * (self._server[i] in q.servers)
            + (self._intent(i) if q.read_intent else 0)
            for i in range(len(self.tools))
        }


class LexicalRanker:
    """The ranker the ``lexical`` profile specifies (RNK-1 to RNK-8)."""

    name = "lexical"

    def index(self, tools: Sequence[ToolDoc], system_prompt: str) -> LexicalIndex:
        return LexicalIndex(tools, system_prompt)
