"""The lexical scorer, written again from the text of SPEC.md (RNK-1..RNK-8, SEL-5, DSC-10).

It shares no code with ``reference_impl`` (only the suite's record of a tool): words are cut character by character by Unicode
general category instead of by a regular expression, server ids are found by scanning for
every occurrence, and the orders are plain sorts. Its knobs (:class:`Rules`) make the
deliberately wrong rankers that show each check of the vectors can fail.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from conformance.suite._vectors import VectorTool

__all__ = ["SPEC_RULES", "Ranking", "Rules", "Scored", "rank", "read_intent", "spec_words"]

# RNK-5: trigger -> target.
ALIASES = (("pr", "pull_request"), ("合并请求", "pull_request"), ("工单", "issue"), ("评审", "review"), ("日志", "log"))
# RNK-6.
READ_SIGNALS = ("查询", "列出", "最近", "查看", "summary", "review", "list", "show", "find", "search", "recent")
READ_VERBS = frozenset({"list", "search", "get", "read", "find", "view", "download"})
WRITE_VERBS = frozenset({"create", "update", "delete", "push", "send", "write", "remove", "edit", "merge"})


def is_word_character(char: str) -> bool:
    """RNK-1: a letter or digit is a character of general category L* or N*."""
    return unicodedata.category(char)[0] in "LN"


@cache
def spec_words(text: str) -> tuple[str, ...]:
    """RNK-1: casefold, then cut into maximal runs of letters and digits (in order, with repeats)."""
    found: list[str] = []
    run: list[str] = []
    for char in text.casefold():
        if is_word_character(char):
            run.append(char)
        elif run:
            found.append("".join(run))
            run = []
    if run:
        found.append("".join(run))
    return tuple(found)


def names(server_id: str, text: str, boundary: bool = True) -> bool:
    """RNK-3: the casefolded id occurs in the casefolded text with no letter or digit beside it."""
    folded, needle = text.casefold(), server_id.casefold()
    start = folded.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = folded[start - 1] if start else ""
        after = folded[end] if end < len(folded) else ""
        if not boundary or (not (before and is_word_character(before)) and not (after and is_word_character(after))):
            return True
        start = folded.find(needle, start + 1)
    return False


def fires(
    trigger: str,
    text: str,
    words: Callable[[str], Sequence[str]] = spec_words,
    whole_words: bool = True,
    other_whole_words: bool = False,
) -> bool:
    """RNK-7: an ASCII-letter trigger matches a whole word; any other trigger a substring."""
    ascii_word = trigger.isascii() and trigger.isalpha()
    if (whole_words and ascii_word) or (other_whole_words and not ascii_word):
        return trigger in words(text)
    return trigger in text.casefold()


def names_as_trigger(server_id: str, text: str, words: Callable[[str], Sequence[str]]) -> bool:
    """A wrong RNK-7.4: a server id matched like an alias, as a word when made of ASCII letters,
    else as a substring."""
    return fires(server_id.casefold(), text, words)


@dataclass(frozen=True, slots=True)
class Rules:
    """How to score. :data:`SPEC_RULES` is the specification; any change is a defect."""

    message_hit: int = 12
    prompt_hit: int = 2
    server_in_message: int = 16
    server_in_prompt: int = 3
    read_only: int = 3
    alias: int = 12
    read_bonus: int = 8
    write_penalty: int = -32
    words: Callable[[str], Sequence[str]] = spec_words
    # RNK-1.3: a tool's words come from its name and its description.
    description_words: bool = True
    # RNK-2.3: a message word counts once, not once per occurrence.
    repeated_message_words: bool = False
    # RNK-5: the aliases (trigger, target), and whether two with one target count once.
    aliases: tuple[tuple[str, str], ...] = ALIASES
    one_alias_per_target: bool = False
    # RNK-6: the read signals; a name with a write word losing its read bonus; the write
    # penalty without a read signal; read intent dropping write-shaped tools from discovery.
    read_signals: tuple[str, ...] = READ_SIGNALS
    read_verbs: frozenset[str] = READ_VERBS
    write_verbs: frozenset[str] = WRITE_VERBS
    write_cancels_read: bool = False
    penalty_without_signal: bool = False
    read_intent_hides_writes: bool = False
    # RNK-7: ASCII triggers as whole words, other triggers as substrings; server ids with a
    # letter-or-digit boundary, or (wrongly) matched like the other triggers.
    whole_word_triggers: bool = True
    other_triggers_whole_words: bool = False
    server_boundary: bool = True
    server_ids_as_triggers: bool = False
    # RNK-7: aliases and read signals from the user message only.
    aliases_from_prompt: bool = False
    read_signals_from_prompt: bool = False
    # RNK-4: +3 only for the JSON value true.
    read_only_truthy: bool = False
    # RNK-8: the tie-break key of a qualified name, or the catalog's listing order.
    tie_key: Callable[[str], Any] = field(default=lambda name: name)
    ties_by_listing: bool = False
    # DSC-10: what makes a candidate relevant.
    prompt_word_relevance: bool = False
    intent_relevance: bool = False
    positive_relevance: bool = False

    def changed(self, **changes: Any) -> Rules:
        return replace(self, **changes)


SPEC_RULES = Rules()


@dataclass(frozen=True, slots=True)
class Scored:
    """One tool's score for one message, by component."""

    message_hits: tuple[str, ...]
    prompt_hits: tuple[str, ...]
    server_in_message: bool
    server_in_prompt: bool
    read_only: bool
    aliases: tuple[str, ...]
    intent: int
    score: int
    relevant: bool


def _read_only(annotations: Mapping[str, Any] | None, truthy: bool) -> bool:
    value = (annotations or {}).get("readOnlyHint")
    return bool(value) if truthy else value is True


def _names(server_id: str, text: str, rules: Rules) -> bool:
    if rules.server_ids_as_triggers:
        return names_as_trigger(server_id, text, rules.words)
    return names(server_id, text, rules.server_boundary)


def _intent(name_words: frozenset[str], read_intent: bool, rules: Rules) -> int:
    read, write = bool(name_words & rules.read_verbs), bool(name_words & rules.write_verbs)
    if rules.write_cancels_read and write:
        read = False
    bonus = rules.read_bonus * read if read_intent else 0
    penalty = rules.write_penalty * write if read_intent or rules.penalty_without_signal else 0
    return bonus + penalty


def read_intent(message: str, prompt: str, rules: Rules = SPEC_RULES) -> bool:
    """RNK-6: whether a read signal fires (from the message only, RNK-7)."""
    text = f"{message} {prompt}" if rules.read_signals_from_prompt else message
    return any(
        fires(signal, text, rules.words, rules.whole_word_triggers, rules.other_triggers_whole_words)
        for signal in rules.read_signals
    )


@dataclass(frozen=True, slots=True)
class _Query:
    """What a score takes from the message and the prompt alone, the same for every tool."""

    message_words: Sequence[str]
    message_set: set[str]
    prompt_words: set[str]
    fired: list[tuple[str, str]]
    read_intent: bool


def _query(message: str, prompt: str, rules: Rules) -> _Query:
    words = rules.words
    alias_text = f"{message} {prompt}" if rules.aliases_from_prompt else message
    fired = [
        (trigger, target)
        for trigger, target in rules.aliases
        if fires(trigger, alias_text, words, rules.whole_word_triggers, rules.other_triggers_whole_words)
    ]
    if rules.one_alias_per_target:
        targets = [target for _, target in fired]
        fired = [(trigger, target) for i, (trigger, target) in enumerate(fired) if target not in targets[:i]]
    message_words = words(message)
    return _Query(message_words, set(message_words), set(words(prompt)), fired, read_intent(message, prompt, rules))


def score(tool: VectorTool, message: str, prompt: str, rules: Rules = SPEC_RULES) -> Scored:
    return _score(tool, message, prompt, _query(message, prompt, rules), rules)


@cache
def _word_set(words: Callable[[str], Sequence[str]], text: str) -> frozenset[str]:
    # Every message is scored against the same tools, by a few tokenizers: split each once.
    return frozenset(words(text))


def _score(tool: VectorTool, message: str, prompt: str, query: _Query, rules: Rules) -> Scored:
    name_words = _word_set(rules.words, tool.name)
    tool_words = name_words | _word_set(rules.words, tool.description) if rules.description_words else name_words
    name = tool.name.casefold()
    message_hits = tuple(sorted(tool_words & query.message_set))
    prompt_hits = tuple(sorted(tool_words & query.prompt_words))
    in_message = _names(tool.server, message, rules)
    in_prompt = _names(tool.server, prompt, rules)
    read_only = _read_only(tool.annotations, rules.read_only_truthy)
    aliases = tuple(trigger for trigger, target in query.fired if target in name)
    intent = _intent(name_words, query.read_intent, rules)
    repeats = 0
    if rules.repeated_message_words:
        repeats = sum(query.message_words.count(word) - 1 for word in message_hits)
    total = (
        rules.message_hit * (len(message_hits) + repeats)
        + rules.prompt_hit * len(prompt_hits)
        + rules.server_in_message * in_message
        + rules.server_in_prompt * in_prompt
        + rules.read_only * read_only
        + rules.alias * len(aliases)
        + intent
    )
    relevant = bool(message_hits or aliases or in_message)
    if rules.prompt_word_relevance:
        relevant = relevant or bool(prompt_hits)
    if rules.intent_relevance:
        relevant = relevant or intent > 0
    if rules.positive_relevance:
        relevant = total > 0
    return Scored(message_hits, prompt_hits, in_message, in_prompt, read_only, aliases, intent, total, relevant)


@dataclass(frozen=True, slots=True)
class Ranking:
    scores: dict[str, Scored]
    first_round: list[str]
    discovery: list[str]


def rank(tools: Sequence[VectorTool], message: str, prompt: str, rules: Rules = SPEC_RULES) -> Ranking:
    """SEL-5 / RNK-8: score descending, then qualified name; DSC-10: the relevant ones, in that order."""
    query = _query(message, prompt, rules)
    hidden: set[str] = set()
    if rules.read_intent_hides_writes and query.read_intent:
        hidden = {tool.qualified for tool in tools if _word_set(rules.words, tool.name) & rules.write_verbs}
    scores = {tool.qualified: _score(tool, message, prompt, query, rules) for tool in tools}
    listed = {tool.qualified: i for i, tool in enumerate(tools)}
    tie_key = listed.__getitem__ if rules.ties_by_listing else rules.tie_key
    order = sorted(scores, key=lambda name: (-scores[name].score, tie_key(name)))
    return Ranking(scores, order, [name for name in order if scores[name].relevant and name not in hidden])
