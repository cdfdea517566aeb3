"""Wrong lexical rankers (RNK-*, DSC-10.1), each caught by the lexical vectors.

Each names its ``twin``: the wrong ranker of ``tests.conformance.vectors._defective`` that
models it, so that its run is restricted to the vector probes the model predicts to fail;
that shows both that the vectors catch the defect and that the model predicts the real
implementation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from reference_impl import _ranking, _toolset
from reference_impl._catalog import Catalog
from reference_impl._ranking import LexicalIndex, RankingIndex, ToolDoc, _Query
from reference_impl._toolset import AdaptiveToolset
from tests.conformance.defects._hooks import during_search, per_toolset
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect

__all__: list[str] = []


def _edit_docs(edit: Callable[[ToolDoc], ToolDoc]) -> None:
    """Pass every tool through ``edit`` on its way to the ranker, which knows it by its ``ToolDoc`` alone."""
    original = _ranking.ToolDoc

    def tool_doc(qualified: str, server_id: str, name: str, description: str, read_only: bool) -> ToolDoc:
        return edit(original(qualified, server_id, name, description, read_only))

    _swap(_toolset, "ToolDoc", tool_doc)


def _rank_ties_by(key: Callable[[str], str]) -> None:
    """Break equal scores by ``key(qualified name)`` instead of the qualified name itself.

    The ranker uses a document's ``qualified_name`` for ties and nothing else, so the
    documents get ``key(name)`` in its place, made unique by the name itself.
    """
    _edit_docs(lambda doc: replace(doc, qualified_name=f"{key(doc.qualified_name)}\0{doc.qualified_name}"))


def _edit_queries(edit: Callable[[LexicalIndex, _Query], _Query]) -> None:
    """Every query the lexical index parses goes through ``edit`` (the parse is cached per index)."""
    original = LexicalIndex._parse

    def _parse(self: LexicalIndex, query: str) -> _Query:
        parsed = original(self, query)
        edited = edit(self, parsed)
        if edited != parsed:
            self._last = edited
        return edited

    _swap(LexicalIndex, "_parse", _parse)


@defect("RNK-8.1", "equal scores ordered by casefolded qualified name", twin="ties_casefolded")
def ties_casefolded() -> None:
    """Equal scores are ordered by casefolded qualified name (``Linear`` after ``github``)."""
    _rank_ties_by(str.casefold)


@defect("RNK-6.3", "under read intent a write tool loses 31 instead of 32", twin="write_penalty+1")
def write_penalty_31() -> None:
    """Under read intent a write-shaped tool loses 31 instead of 32."""
    _swap(_ranking, "WRITE_PENALTY", -31)


@defect("RNK-1.1", "words are runs of \\w: the underscore no longer separates them", twin="underscore_in_words")
def underscore_in_words() -> None:
    """Words are runs of ``\\w``: the underscore no longer separates them."""
    _swap(_ranking, "_WORD", re.compile(r"\w+"))


@defect("RNK-7.2", "pr fires inside project, list inside listing", twin="ascii_triggers_as_substrings")
def ascii_triggers_as_substrings() -> None:
    """Aliases and read signals fire anywhere in the message: ``pr`` inside ``project``."""
    _swap(_ranking, "fires", lambda trigger, text, text_words: trigger in text)


@defect("RNK-7.1", "a read signal in the system prompt turns read intent on", twin="read_signal_from_the_prompt")
def read_signal_from_the_prompt() -> None:
    """A read signal in the system prompt turns read intent on."""
    original_init = LexicalIndex.__init__
    prompt_reads: dict[int, bool] = {}

    def __init__(self: LexicalIndex, tools: Sequence[Any], system_prompt: str) -> None:
        original_init(self, tools, system_prompt)
        prompt = system_prompt.casefold()
        words = frozenset(_ranking.words(prompt))
        prompt_reads[id(self)] = any(_ranking.fires(s, prompt, words) for s in _ranking.READ_SIGNALS)

    def edit(index: LexicalIndex, parsed: _Query) -> _Query:
        return replace(parsed, read_intent=True) if prompt_reads.get(id(index)) else parsed

    _swap(LexicalIndex, "__init__", __init__)
    _edit_queries(edit)


def _name_servers_by(names_server: Callable[[str, str], bool]) -> None:
    """Find the servers a text names with ``names_server(server id, casefolded text)``.

    The index looks for an id only where its first word is a word of the query, which
    holds for the specification's rule alone; a wrong rule is tried on every id.
    """

    def _named_servers(self: LexicalIndex, text: str, _query_words: frozenset[str]) -> frozenset[str]:
        return frozenset(s for s in self._by_server if names_server(s, text))

    _swap(_ranking, "names_server", names_server)
    _swap(LexicalIndex, "_named_servers", _named_servers)


@defect("RNK-3.3", "a server id is named inside a word too (s1 in xs1)", twin="server_id_anywhere")
def server_id_anywhere() -> None:
    """A server id names its server wherever it occurs, inside a word included."""
    _name_servers_by(lambda server_id, text: server_id.casefold() in text)


# Words (RNK-1) -----------------------------------------------------------------------------


@defect("RNK-1.2", "every Chinese character is a word of its own", twin="chinese_characters_split")
def chinese_characters_split() -> None:
    """A run of Chinese characters is cut into single characters, and apart from the letters next to it."""
    _swap(_ranking, "_WORD", re.compile(r"[\u4e00-\u9fff]|[^\W_\u4e00-\u9fff]+"))


@defect("RNK-1.3", "a tool's words are those of its name only", twin="description_ignored")
def description_ignored() -> None:
    """The ranker never sees a tool's description, so a tool's words are its name's alone."""
    _edit_docs(lambda doc: replace(doc, description=""))


# Weights (RNK-2 to RNK-6) ------------------------------------------------------------------


@defect("RNK-2.1", "a word of the user message scores 11 instead of 12", twin="message_hit-1")
def message_word_11() -> None:
    _swap(_ranking, "USER_WORD", 11)


@defect("RNK-2.2", "a word of the system prompt scores 3 instead of 2", twin="prompt_hit+1")
def prompt_word_3() -> None:
    _swap(_ranking, "SYSTEM_WORD", 3)


@defect("RNK-2.3", "a word of the user message counts once per occurrence", twin="repeated_message_words")
def repeated_message_words() -> None:
    """A message word a tool has scores 12 each time the message says it."""
    original = LexicalIndex._touched

    def _touched(self: LexicalIndex, q: _Query) -> dict[int, int]:
        gains = original(self, q)
        for word, count in Counter(_ranking.words(q.text)).items():
            for g in self._postings.get(word, ()):
                gains[g] += _ranking.USER_WORD * (count - 1)
        return gains

    _swap(LexicalIndex, "_touched", _touched)


@defect("RNK-3.1", "the user message naming a server scores 15 instead of 16", twin="server_in_message-1")
def server_in_message_15() -> None:
    _swap(_ranking, "USER_SERVER", 15)


@defect("RNK-3.2", "the system prompt naming a server scores 4 instead of 3", twin="server_in_prompt+1")
def server_in_prompt_4() -> None:
    _swap(_ranking, "SYSTEM_SERVER", 4)


@defect("RNK-4.1", 'any truthy readOnlyHint scores 3 (the string "true", 1)', twin="read_only_truthy")
def truthy_read_only_hint() -> None:
    """The ranker gives 3 for a truthy ``readOnlyHint``; the policy's notion of read-only is untouched."""
    hints: dict[str, Any] = {}
    original_from_listings = Catalog.from_listings.__func__  # type: ignore[attr-defined]

    def from_listings(cls: type[Catalog], listings: Mapping[str, Sequence[Any]]) -> Catalog:
        catalog: Catalog = original_from_listings(cls, listings)
        hints.clear()
        hints.update((e.qualified_name, (e.annotations or {}).get("readOnlyHint")) for e in catalog.entries)
        return catalog

    _swap(Catalog, "from_listings", classmethod(from_listings))
    # The documents are built right after from_listings, with no await in between.
    _edit_docs(lambda doc: replace(doc, read_only=bool(hints.get(doc.qualified_name))))


@defect("RNK-5.1", "工单 fires issues instead of issue", twin="work_order_fires_issues")
def work_order_fires_issues() -> None:
    """The alias 工单 targets ``issues``, so ``get_issue`` and ``create_issue`` no longer gain from it."""
    _swap(_ranking, "ALIASES", tuple((t, "issues" if t == "工单" else g) for t, g in _ranking.ALIASES))


@defect("RNK-5.2", "an alias that fires adds 11 instead of 12", twin="alias-1")
def alias_11() -> None:
    _swap(_ranking, "ALIAS", 11)


@defect("RNK-5.3", "two aliases with the same target count once", twin="one_alias_per_target")
def one_alias_per_target() -> None:
    """``pr`` and ``合并请求`` both fire ``pull_request``, which gains 12 once."""

    def edit(_index: LexicalIndex, parsed: _Query) -> _Query:
        targets = [target for _, target in parsed.aliases]
        kept = tuple(alias for i, alias in enumerate(parsed.aliases) if alias[1] not in targets[:i])
        return replace(parsed, aliases=kept)

    _edit_queries(edit)


@defect("RNK-6.1", "recent is not a read signal", twin="recent_is_no_read_signal")
def recent_is_no_read_signal() -> None:
    _swap(_ranking, "READ_SIGNALS", tuple(s for s in _ranking.READ_SIGNALS if s != "recent"))


@defect("RNK-6.2", "under read intent a read tool gains 9 instead of 8", twin="read_bonus+1")
def read_bonus_9() -> None:
    _swap(_ranking, "READ_BONUS", 9)


@defect("RNK-6.2", "view is not a read verb of names", twin="view_is_no_read_verb")
def view_is_no_read_verb() -> None:
    _swap(_ranking, "READ_VERBS", _ranking.READ_VERBS - {"view"})


@defect("RNK-6.4", "a name with read and write words loses 32 without gaining 8", twin="write_word_cancels_read_word")
def write_word_cancels_read_word() -> None:
    """Under read intent ``get_or_create_label`` only loses 32: its write word cancels its read word."""

    def _intent(self: LexicalIndex, i: int) -> int:
        write = i in self._write_shaped
        return _ranking.READ_BONUS * (i in self._read_shaped and not write) + _ranking.WRITE_PENALTY * write

    _swap(LexicalIndex, "_intent", _intent)


@defect("RNK-6.5", "a write tool loses 32 with or without a read signal", twin="write_penalty_without_read_signal")
def write_penalty_without_read_signal() -> None:
    """The write penalty is part of a tool's standing score; only the read bonus waits for a read signal."""
    original_static = LexicalIndex._static_score

    def _static_score(self: LexicalIndex, i: int) -> int:
        return original_static(self, i) + _ranking.WRITE_PENALTY * (i in self._write_shaped)

    def _intent(self: LexicalIndex, i: int) -> int:
        return _ranking.READ_BONUS * (i in self._read_shaped)

    _swap(LexicalIndex, "_static_score", _static_score)
    _swap(LexicalIndex, "_intent", _intent)


@defect(
    "RNK-6.6",
    "under read intent discovery never activates a write tool",
    twin="read_intent_hides_write_tools",
)
def read_intent_hides_write_tools() -> None:
    """Read intent takes the write-shaped tools out of discovery's candidates, as if it made
    them ineligible: a write tool the query hits is never activated. The first round still
    takes them; a first round that dropped them too would break SEL-2.2 as well, which takes
    tools whatever they score."""
    original = LexicalIndex._walk

    def _walk(self: LexicalIndex, query: str, everything: bool) -> Iterator[int]:
        hide = self._write_shaped if not everything and self._parse(query).read_intent else set()
        return (i for i in original(self, query, everything) if i not in hide)

    _swap(LexicalIndex, "_walk", _walk)


# Triggers (RNK-7) --------------------------------------------------------------------------


@defect("RNK-7.3", "a Chinese alias or read signal fires only as a whole word", twin="other_triggers_as_whole_words")
def other_triggers_as_whole_words() -> None:
    """Every trigger must be a whole word of the message: 日志 no longer fires inside 查询日志."""
    _swap(_ranking, "fires", lambda trigger, text, text_words: trigger in text_words)


@defect(
    "RNK-7.4",
    "a server id with a digit or punctuation is found as a substring (s1 in xs1)",
    twin="server_ids_matched_like_triggers",
)
def server_ids_matched_like_triggers() -> None:
    """Server ids are matched like aliases (RNK-7.2, RNK-7.3): an id of ASCII letters as a
    whole word, any other id anywhere, so ``logs-eu`` is named in ``logs-eu2`` and ``s1`` in ``xs1``."""

    _name_servers_by(
        lambda server_id, text: _ranking.fires(server_id.casefold(), text, frozenset(_ranking.words(text)))
    )


# Discovery's ranking (DSC-10.1) ------------------------------------------------------------


@defect("DSC-10.1", "discovery ranks without the system prompt", twin="discovery_ignores_the_prompt")
def discovery_ignores_the_prompt() -> None:
    """Discovery ranks its candidates as if the run had no system prompt; the first round keeps it."""

    def promptless(toolset: AdaptiveToolset) -> RankingIndex:
        index = toolset._index
        if not isinstance(index, LexicalIndex):
            raise TypeError(f"this defect patches the lexical ranker, not {type(index).__name__}")
        return LexicalIndex(index.tools, "")

    index_of = per_toolset(promptless)
    during_search(index=lambda toolset, _base: index_of(toolset))


@defect(
    "DEF-1.1",
    "the ranking meets the tools a message scores twice: by their score, and again where the static order has them",
)
def scored_tools_ranked_twice() -> None:
    """A merge of the tools the message reaches with the static ranking of every tool that
    does not drop those already yielded: the first round takes them twice."""
    original = LexicalIndex.order

    def order(self: LexicalIndex, query: str) -> Iterator[int]:
        # Each scored tool comes up again where the static ranking has it: late, so only a
        # walk that still has room when it gets there takes it twice.
        mode = 1 if self._parse(query).read_intent else 0
        static = {tool: place for place, tool in enumerate(self._ranked[mode])}
        scored = set(self.matches(query))
        again = sorted(scored, key=static.__getitem__)
        for i in original(self, query):
            if i not in scored:
                while again and static[again[0]] < static[i]:
                    yield again.pop(0)
            yield i
        yield from again

    _swap(LexicalIndex, "order", order)
