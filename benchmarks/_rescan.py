"""The lexical formula computed the straightforward way: rescan every tool's text for every query."""

from __future__ import annotations

from collections.abc import Sequence

from reference_impl._ranking import (
    ALIAS,
    ALIASES,
    READ_ONLY,
    READ_SIGNALS,
    READ_VERBS,
    SYSTEM_SERVER,
    SYSTEM_WORD,
    USER_SERVER,
    USER_WORD,
    WRITE_PENALTY,
    WRITE_VERBS,
    ToolDoc,
    fires,
    names_server,
    words,
)
from reference_impl._ranking import READ_BONUS as BONUS


class RescanRanking:
    """Scores every tool from its text for each query, then sorts the whole catalog."""

    def __init__(self, tools: Sequence[ToolDoc], system_prompt: str) -> None:
        self.tools = tuple(tools)
        self.system = system_prompt.casefold()
        self.system_words = frozenset(words(self.system))

    def _each(self, query: str) -> list[tuple[int, bool]]:
        text = query.casefold()
        query_words = frozenset(words(text))
        read = any(fires(signal, text, query_words) for signal in READ_SIGNALS)
        return [self.score(tool, text, query_words, read) for tool in self.tools]

    def score(self, tool: ToolDoc, text: str, query_words: frozenset[str], read: bool) -> tuple[int, bool]:
        system_words = self.system_words
        tool_words = set(words(tool.name)) | set(words(tool.description))
        name = tool.name.casefold()
        name_words = set(words(tool.name))
        hits = len(tool_words & query_words)
        aliases = sum(1 for trigger, target in ALIASES if fires(trigger, text, query_words) and target in name)
        server = names_server(tool.server_id, text)
        score = USER_WORD * hits + SYSTEM_WORD * len(tool_words & system_words) + ALIAS * aliases
        score += USER_SERVER * server + SYSTEM_SERVER * names_server(tool.server_id, self.system)
        score += READ_ONLY * tool.read_only
        if read:
            score += BONUS * bool(name_words & READ_VERBS) + WRITE_PENALTY * bool(name_words & WRITE_VERBS)
        return score, bool(hits or aliases or server)

    def order(self, query: str) -> list[int]:
        keyed = [
            (-score, tool.qualified_name, i)
            for i, (tool, (score, _)) in enumerate(zip(self.tools, self._each(query), strict=True))
        ]
        keyed.sort()
        return [i for _, _, i in keyed]

    def matches(self, query: str) -> list[int]:
        keyed = [
            (-score, tool.qualified_name, i)
            for i, (tool, (score, relevant)) in enumerate(zip(self.tools, self._each(query), strict=True))
            if relevant
        ]
        keyed.sort()
        return [i for _, _, i in keyed]
