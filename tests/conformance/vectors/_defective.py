"""Deliberately wrong lexical rankers, and what the suite's probes would observe of each.

:func:`observe` replays a probe of :mod:`conformance.suite._vectors` against a ranker given
as :class:`~tests.conformance.vectors._spec_scorer.Rules`, the way ``test_ranking.py`` drives a
SUT: the first round's active set, then the discovery calls with ``limit`` 1, each taking
the best relevant candidate not yet active while the room lasts, judged by the suite's own
:func:`~conformance.suite._vectors.first_round_mismatch` and
:class:`~conformance.suite._vectors.DiscoveryWalk`. :func:`findings` replays the whole of
``test_ranking.py``'s vector checks, with the suite's :class:`~conformance.suite._vectors.Diagnosis`,
and returns the sentences its findings would name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from conformance._clauses import clause_id_of
from conformance.suite._vectors import (
    ROOM,
    Diagnosis,
    DiscoveryWalk,
    Outcome,
    Probe,
    VectorTool,
    first_round_mismatch,
    walk,
)
from tests.conformance.vectors._spec_scorer import ALIASES, READ_SIGNALS, SPEC_RULES, Rules, rank

__all__ = ["DEFECTIVE", "Defective", "findings", "observe"]

FirstRound = Literal["ranked", "ignores_message", "server_by_server"]


@dataclass(frozen=True, slots=True)
class Defective:
    """A wrong ranker and the sentence it breaks."""

    sentence: str
    rules: Rules
    # How the first round walks: the ranking (SEL-5.1), the ranking of an empty message, or
    # each server's ranking after the other in the servers' order.
    first_round: FirstRound = "ranked"
    # Discovery ranks as if the system prompt were empty.
    discovery_ignores_prompt: bool = False
    # Discovery takes the relevant candidates in catalog order, not by rank: the order of
    # qualified names, the reference's catalog order (ID-1).
    discovery_in_catalog_order: bool = False

    @property
    def clause(self) -> str:
        return clause_id_of(self.sentence)


def _first_round(probe: Probe, served: Sequence[VectorTool], defective: Defective) -> set[str]:
    server_of = {tool.qualified: tool.server for tool in served}
    message = "" if defective.first_round == "ignores_message" else probe.user_message
    order = rank(served, message, probe.system_prompt, defective.rules).first_round
    if defective.first_round == "server_by_server":
        position = {server: i for i, server in enumerate(probe.servers)}
        order = sorted(order, key=lambda name: position[server_of[name]])
    return set(walk(order, probe.capacity, server_of))


def observe(probe: Probe, defective: Defective) -> Outcome | None:
    """The first difference a probe shows against ``defective``, or None when it sees none."""
    served = [tool for tool in probe.group.tools if tool.server in probe.servers]
    rules = defective.rules
    active = set(probe.pinned) if probe.pinned else _first_round(probe, served, defective)
    found: Outcome | None = first_round_mismatch(probe, active)
    if found is not None:
        return found
    room = ROOM
    for check in probe.discoveries:
        prompt = "" if defective.discovery_ignores_prompt else probe.system_prompt
        candidates = rank(served, check.case.user_message, prompt, rules).discovery
        if defective.discovery_in_catalog_order:
            candidates.sort()
        steps = DiscoveryWalk(probe.group, check, active)
        while not steps.done:
            got = next((name for name in candidates if name not in active), None) if room else None
            if (found := steps.see([got] if got is not None else [])) is not None:
                return found
            if got is not None:
                active.add(got)
                room -= 1
    return None


def findings(probes: Iterable[Probe], defective: Defective) -> dict[str, tuple[str, ...]]:
    """What ``test_ranking.py``'s vector checks would find against ``defective``: the sentences
    each failing probe's finding names, by probe id."""
    probes = list(probes)
    diagnosis = Diagnosis(probes, lambda probe: observe(probe, defective))
    named = {}
    for probe in probes:
        found = diagnosis.outcome(probe)
        if found is not None:
            named[probe.id] = diagnosis.blame(found)
    return named


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
    sentence_of = {
        "message_hit": "RNK-2.1",
        "prompt_hit": "RNK-2.2",
        "server_in_message": "RNK-3.1",
        "server_in_prompt": "RNK-3.2",
        "read_only": "RNK-4.1",
        "alias": "RNK-5.2",
        "read_bonus": "RNK-6.2",
        "write_penalty": "RNK-6.3",
    }
    return {
        f"{weight}{delta:+d}": Defective(sentence, SPEC_RULES.changed(**{weight: getattr(SPEC_RULES, weight) + delta}))
        for weight, sentence in sentence_of.items()
        for delta in (-1, 1)
    }


#: Every wrong ranker, by name: each weight one off either way, and the defects of kind.
DEFECTIVE: dict[str, Defective] = {
    **_weights(),
    "underscore_in_words": Defective("RNK-1.1", SPEC_RULES.changed(words=_words(r"\w+"))),
    "lower_not_casefold": Defective("RNK-1.1", SPEC_RULES.changed(words=_lower_words)),
    "no_casefolding": Defective("RNK-1.1", SPEC_RULES.changed(words=_words(r"[^\W_]+", fold=False))),
    "ascii_words_only": Defective("RNK-1.1", SPEC_RULES.changed(words=_words(r"[a-z0-9]+"))),
    "nfkc_before_words": Defective("RNK-1.1", SPEC_RULES.changed(words=_words(r"[^\W_]+", normalize=True))),
    "chinese_characters_split": Defective("RNK-1.2", SPEC_RULES.changed(words=_chinese_split)),
    "description_ignored": Defective("RNK-1.3", SPEC_RULES.changed(description_words=False)),
    "repeated_message_words": Defective("RNK-2.3", SPEC_RULES.changed(repeated_message_words=True)),
    "server_id_anywhere": Defective("RNK-3.3", SPEC_RULES.changed(server_boundary=False)),
    "read_only_truthy": Defective("RNK-4.1", SPEC_RULES.changed(read_only_truthy=True)),
    "work_order_fires_issues": Defective("RNK-5.1", SPEC_RULES.changed(aliases=_aliases(("工单", "issues")))),
    "one_alias_per_target": Defective("RNK-5.3", SPEC_RULES.changed(one_alias_per_target=True)),
    "recent_is_no_read_signal": Defective(
        "RNK-6.1", SPEC_RULES.changed(read_signals=tuple(s for s in READ_SIGNALS if s != "recent"))
    ),
    "view_is_no_read_verb": Defective("RNK-6.2", SPEC_RULES.changed(read_verbs=SPEC_RULES.read_verbs - {"view"})),
    "write_word_cancels_read_word": Defective("RNK-6.4", SPEC_RULES.changed(write_cancels_read=True)),
    "write_penalty_without_read_signal": Defective("RNK-6.5", SPEC_RULES.changed(penalty_without_signal=True)),
    "read_intent_hides_write_tools": Defective("RNK-6.6", SPEC_RULES.changed(read_intent_hides_writes=True)),
    "aliases_from_the_prompt": Defective("RNK-7.1", SPEC_RULES.changed(aliases_from_prompt=True)),
    "read_signal_from_the_prompt": Defective("RNK-7.1", SPEC_RULES.changed(read_signals_from_prompt=True)),
    "ascii_triggers_as_substrings": Defective("RNK-7.2", SPEC_RULES.changed(whole_word_triggers=False)),
    "other_triggers_as_whole_words": Defective("RNK-7.3", SPEC_RULES.changed(other_triggers_whole_words=True)),
    "server_ids_matched_like_triggers": Defective("RNK-7.4", SPEC_RULES.changed(server_ids_as_triggers=True)),
    "ties_casefolded": Defective("RNK-8.1", SPEC_RULES.changed(tie_key=str.casefold)),
    "ties_descending": Defective("RNK-8.1", SPEC_RULES.changed(tie_key=lambda name: [-ord(c) for c in name])),
    "ties_by_server_then_tool": Defective("RNK-8.1", SPEC_RULES.changed(tie_key=lambda name: name.split("__", 1))),
    "ties_by_tool_name": Defective("RNK-8.1", SPEC_RULES.changed(tie_key=lambda name: name.split("__", 1)[::-1])),
    "ties_by_listing_order": Defective("RNK-8.1", SPEC_RULES.changed(ties_by_listing=True)),
    "first_round_ignores_message": Defective("SEL-5.1", SPEC_RULES, first_round="ignores_message"),
    "first_round_server_by_server": Defective("SEL-5.1", SPEC_RULES, first_round="server_by_server"),
    "discovery_ignores_the_prompt": Defective("DSC-10.1", SPEC_RULES, discovery_ignores_prompt=True),
    "discovery_counts_the_prompt": Defective("DSC-10.2", SPEC_RULES.changed(prompt_word_relevance=True)),
    "read_intent_is_relevance": Defective("DSC-10.2", SPEC_RULES.changed(intent_relevance=True)),
    "positive_score_is_relevance": Defective("DSC-10.2", SPEC_RULES.changed(positive_relevance=True)),
    "discovery_in_catalog_order": Defective("DSC-10.3", SPEC_RULES, discovery_in_catalog_order=True),
}
