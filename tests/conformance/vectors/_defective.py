"""Deliberately wrong lexical rankers, and what the suite's probes would observe of each.

:func:`observe` replays a probe of :mod:`conformance.suite._vectors` against a ranker given
as :class:`~tests.conformance.vectors._spec_scorer.Rules`, the way ``test_ranking.py`` drives a
SUT: the first round's active set, then the discovery calls with ``limit`` 1, each taking
the best relevant candidate not yet active while the room lasts. It returns the first
difference from what the probe expects, as ``test_ranking.py`` would report it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from conformance.suite._vectors import ROOM, Probe, walk
from tests.conformance.vectors._spec_scorer import ALIASES, READ_SIGNALS, SPEC_RULES, Rules, rank

__all__ = ["DEFECTIVE", "Difference", "Defective", "observe"]


@dataclass(frozen=True, slots=True)
class Defective:
    """A wrong ranker and the clause it breaks."""

    clause: str
    rules: Rules
    # The first round ranks as if the user message were empty (it ignores the message).
    first_round_ignores_message: bool = False
    # Discovery ranks as if the system prompt were empty.
    discovery_ignores_prompt: bool = False


@dataclass(frozen=True, slots=True)
class Difference:
    """Where an observation differs: the part, the case, the tool expected and the one seen."""

    kind: str  # "SEL-5" (first round) or "DSC-10" (discovery)
    case_id: str
    expected: str | None
    observed: str | None


def observe(probe: Probe, defective: Defective) -> Difference | None:
    """The first difference a probe shows against ``defective``, or None when it sees none."""
    group = probe.group
    served = [tool for tool in group.tools if tool.server in probe.servers]
    server_of = {tool.qualified: tool.server for tool in served}
    rules = defective.rules
    if probe.pinned:
        active = set(probe.pinned)
    else:
        message = "" if defective.first_round_ignores_message else probe.user_message
        order = rank(served, message, probe.system_prompt, rules).first_round
        active = set(walk(order, probe.capacity, server_of))
        first = probe.first_round
        if first is not None and active != first.expected:
            missing = [name for name in first.case.first_round if name in first.expected - active]
            extra = [name for name in order if name in active - first.expected]
            return Difference("SEL-5", first.case.id, missing[0], extra[0])
    room = ROOM
    for check in probe.discoveries:
        prompt = "" if defective.discovery_ignores_prompt else probe.system_prompt
        candidates = rank(served, check.case.user_message, prompt, rules).discovery
        for want in [*check.expected, *((None,) if check.complete else ())]:
            got = next((name for name in candidates if name not in active), None) if room else None
            if got != want:
                return Difference("DSC-10", check.case.id, want, got)
            if got is not None:
                active.add(got)
                room -= 1
    return None


def _words(pattern: str, fold: bool = True, normalize: bool = False) -> Callable[[str], list[str]]:
    compiled = re.compile(pattern)

    def words(text: str) -> list[str]:
        if normalize:
            text = unicodedata.normalize("NFKC", text)
        return compiled.findall(text.casefold() if fold else text)

    return words


def _lower_words(text: str) -> list[str]:
    # str.lower keeps ß and ﬁ as they are, where casefolding gives ss and fi.
    return re.findall(r"[^\W_]+", text.lower())


def _chinese_split(text: str) -> list[str]:
    # Every Chinese character a word of its own, instead of each run being one word.
    return [
        part
        for run in re.findall(r"[^\W_]+", text.casefold())
        for part in re.findall(r"[\u4e00-\u9fff]|[^\u4e00-\u9fff]+", run)
    ]


def _aliases(*changed: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """The aliases with the targets of some triggers changed."""
    targets = dict(changed)
    return tuple((trigger, targets.get(trigger, target)) for trigger, target in ALIASES)


def _weights() -> dict[str, Defective]:
    clause_of = {
        "message_hit": "RNK-2",
        "prompt_hit": "RNK-2",
        "server_in_message": "RNK-3",
        "server_in_prompt": "RNK-3",
        "read_only": "RNK-4",
        "alias": "RNK-5",
        "read_bonus": "RNK-6",
        "write_penalty": "RNK-6",
    }
    return {
        f"{weight}{delta:+d}": Defective(clause, SPEC_RULES.changed(**{weight: getattr(SPEC_RULES, weight) + delta}))
        for weight, clause in clause_of.items()
        for delta in (-1, 1)
    }


#: Every wrong ranker, by name: each weight one off either way, and the defects of kind.
DEFECTIVE: dict[str, Defective] = {
    **_weights(),
    "underscore_in_words": Defective("RNK-1", SPEC_RULES.changed(words=_words(r"\w+"))),
    "description_ignored": Defective("RNK-1", SPEC_RULES.changed(description_words=False)),
    "lower_not_casefold": Defective("RNK-1", SPEC_RULES.changed(words=_lower_words)),
    "no_casefolding": Defective("RNK-1", SPEC_RULES.changed(words=_words(r"[^\W_]+", fold=False))),
    "ascii_words_only": Defective("RNK-1", SPEC_RULES.changed(words=_words(r"[a-z0-9]+"))),
    "nfkc_before_words": Defective("RNK-1", SPEC_RULES.changed(words=_words(r"[^\W_]+", normalize=True))),
    "chinese_characters_split": Defective("RNK-1", SPEC_RULES.changed(words=_chinese_split)),
    "repeated_message_words": Defective("RNK-2", SPEC_RULES.changed(repeated_message_words=True)),
    "server_id_anywhere": Defective("RNK-3", SPEC_RULES.changed(server_boundary=False)),
    "read_only_truthy": Defective("RNK-4", SPEC_RULES.changed(read_only_truthy=True)),
    "work_order_fires_issues": Defective("RNK-5", SPEC_RULES.changed(aliases=_aliases(("工单", "issues")))),
    "one_alias_per_target": Defective("RNK-5", SPEC_RULES.changed(one_alias_per_target=True)),
    "recent_is_no_read_signal": Defective(
        "RNK-6", SPEC_RULES.changed(read_signals=tuple(s for s in READ_SIGNALS if s != "recent"))
    ),
    "view_is_no_read_verb": Defective("RNK-6", SPEC_RULES.changed(read_verbs=SPEC_RULES.read_verbs - {"view"})),
    "write_word_cancels_read_word": Defective("RNK-6", SPEC_RULES.changed(write_cancels_read=True)),
    "write_penalty_without_read_signal": Defective("RNK-6", SPEC_RULES.changed(penalty_without_signal=True)),
    "read_intent_hides_write_tools": Defective("RNK-6", SPEC_RULES.changed(read_intent_hides_writes=True)),
    "ascii_triggers_as_substrings": Defective("RNK-7", SPEC_RULES.changed(whole_word_triggers=False)),
    "other_triggers_as_whole_words": Defective("RNK-7", SPEC_RULES.changed(other_triggers_whole_words=True)),
    "server_ids_matched_like_triggers": Defective("RNK-7", SPEC_RULES.changed(server_ids_as_triggers=True)),
    "aliases_from_the_prompt": Defective("RNK-7", SPEC_RULES.changed(aliases_from_prompt=True)),
    "read_signal_from_the_prompt": Defective("RNK-7", SPEC_RULES.changed(read_signals_from_prompt=True)),
    "ties_casefolded": Defective("RNK-8", SPEC_RULES.changed(tie_key=str.casefold)),
    "ties_descending": Defective("RNK-8", SPEC_RULES.changed(tie_key=lambda name: [-ord(c) for c in name])),
    "ties_by_server_then_tool": Defective("RNK-8", SPEC_RULES.changed(tie_key=lambda name: name.split("__", 1))),
    "ties_by_tool_name": Defective("RNK-8", SPEC_RULES.changed(tie_key=lambda name: name.split("__", 1)[::-1])),
    "discovery_counts_the_prompt": Defective("DSC-10", SPEC_RULES.changed(prompt_word_relevance=True)),
    "read_intent_is_relevance": Defective("DSC-10", SPEC_RULES.changed(intent_relevance=True)),
    "first_round_ignores_message": Defective("SEL-5", SPEC_RULES, first_round_ignores_message=True),
    "discovery_ignores_the_prompt": Defective("DSC-10", SPEC_RULES, discovery_ignores_prompt=True),
}
