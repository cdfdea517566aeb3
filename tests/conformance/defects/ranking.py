"""Wrong lexical rankers (RNK-*), each caught by the lexical vectors.

Each names its ``twin``: the wrong ranker of ``tests.conformance.vectors._defective`` that
models it, so that its run is restricted to the vector probes the model predicts to fail;
that shows both that the vectors catch the defect and that the model predicts the real
implementation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from reference_impl import _ranking, _toolset
from reference_impl._ranking import LexicalIndex
from tests.conformance.defects._registry import defect

__all__: list[str] = []


def _swap(owner: object, name: str, value: object) -> None:
    if not hasattr(owner, name):
        raise AttributeError(f"{owner!r} has no attribute {name!r} to patch")
    setattr(owner, name, value)


def _rank_ties_by(key: Callable[[str], str]) -> None:
    """Break equal scores by ``key(qualified name)`` instead of the qualified name itself.

    The ranker uses a document's ``qualified_name`` for ties and nothing else, so the
    documents get ``key(name)`` in its place, made unique by the name itself.
    """
    original_doc = _ranking.ToolDoc

    def tool_doc(qualified: str, server_id: str, name: str, description: str, read_only: bool) -> Any:
        return original_doc(f"{key(qualified)}\0{qualified}", server_id, name, description, read_only)

    _swap(_toolset, "ToolDoc", tool_doc)


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
    original_parse = LexicalIndex._parse
    prompt_reads: dict[int, bool] = {}

    def __init__(self: LexicalIndex, tools: Sequence[Any], system_prompt: str) -> None:
        original_init(self, tools, system_prompt)
        prompt = system_prompt.casefold()
        words = frozenset(_ranking.words(prompt))
        prompt_reads[id(self)] = any(_ranking.fires(s, prompt, words) for s in _ranking.READ_SIGNALS)

    def _parse(self: LexicalIndex, query: str) -> Any:
        parsed = original_parse(self, query)
        if prompt_reads.get(id(self)) and not parsed.read_intent:
            parsed = replace(parsed, read_intent=True)
            self._last = parsed
        return parsed

    _swap(LexicalIndex, "__init__", __init__)
    _swap(LexicalIndex, "_parse", _parse)


@defect("RNK-3.3", "a server id is named inside a word too (s1 in xs1)", twin="server_id_anywhere")
def server_id_anywhere() -> None:
    """A server id names its server wherever it occurs, inside a word included."""
    _swap(_ranking, "names_server", lambda server_id, text: server_id.casefold() in text)
