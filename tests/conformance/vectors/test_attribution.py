"""A wrong lexical ranker is found on the sentence it breaks, and on that clause alone.

Each vector case that isolates a sentence is ranked the same by every wrong ranker of
:mod:`._defective` that breaks another sentence (but those it assumes); the assumptions
form no cycle; and replaying every check of ``test_ranking.py`` against each wrong ranker,
with the suite's own :class:`~conformance.suite._vectors.Diagnosis`, names the clause it
breaks and no other. The lexical checks of other sections that lean on ranking terms cite,
and are blamed on, the sentences they rely on.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from conformance import Inconclusive
from conformance._clauses import clause_id_of
from conformance.suite import test_discovery, test_ranking, test_selection
from conformance.suite._discovery_cases import LEXICAL_DISCOVERY, LEXICAL_TOOLS
from conformance.suite._predictions import FIRST_ROUND, FIRST_ROUND_SERVER_CAP
from conformance.suite._probes import PROBES
from conformance.suite._vectors import (
    LEXICAL_SENTENCES,
    Diagnosis,
    VectorCase,
    VectorGroup,
    VectorTool,
    Violation,
    assumed,
    load_vectors,
)
from mock_servers import ToolSpec
from tests.conformance.vectors._defective import DEFECTIVE, Defective, findings
from tests.conformance.vectors._spec_scorer import rank

GROUPS = load_vectors()
ISOLATING = [(group, case) for group in GROUPS for case in group.cases if case.isolates]
#: The probes run the first round and discovery as the specification says: only the ranker is wrong.
RANKERS = {name: d for name, d in DEFECTIVE.items() if d.first_round == "ranked"}
#: Ranking's mechanics that the vectors leave to other checks: SEL-5.2's skip of a server at
#: its cap (test_selection.py's walk cases, with maxActiveTools below 12).
NOT_ISOLATED = {"SEL-5.2"}
#: What a probe can see broken on the way to a ranking (a discovery call's result).
ON_THE_WAY = {"DSC-4.2", "DSC-5.1", "DSC-5.7"}


def _orders(group: VectorGroup, case: VectorCase, defective: Defective) -> tuple[list[str], list[str]]:
    """The first-round ranking and the discovery order ``defective`` gives for ``case``."""
    first = rank(group.tools, case.user_message, case.system_prompt, defective.rules).first_round
    prompt = "" if defective.discovery_ignores_prompt else case.system_prompt
    found = rank(group.tools, case.user_message, prompt, defective.rules).discovery
    if defective.discovery_in_catalog_order:
        found.sort()
    return first, found


@pytest.mark.parametrize(("group", "case"), ISOLATING, ids=[case.id for _, case in ISOLATING])
def test_an_isolating_case_is_ranked_the_same_by_a_ranker_that_breaks_another_sentence(
    group: VectorGroup, case: VectorCase
) -> None:
    allowed = {*case.isolates, *case.assumes}
    for name, defective in RANKERS.items():
        if defective.sentence in allowed:
            continue
        first, found = _orders(group, case, defective)
        position = {tool: i for i, tool in enumerate(first)}
        swapped = [
            (a, b)
            for a in case.first_round
            for b in case.first_round
            if case.score(a) > case.score(b) and position[a] > position[b]
        ]
        assert found == list(case.discovery), f"{name} ({defective.sentence}) changes the discovery order"
        assert swapped == [], f"{name} ({defective.sentence}) swaps {swapped[0]} in the first round"


def test_every_sentence_of_the_lexical_profile_has_isolating_cases_but_the_skip_at_a_cap() -> None:
    isolated = {sentence for _, case in ISOLATING for sentence in case.isolates}

    assert set(LEXICAL_SENTENCES) - isolated == NOT_ISOLATED


def test_every_wrong_ranker_is_found_by_the_cases_that_isolate_its_sentence() -> None:
    isolating = [probe for probe in PROBES if probe.isolates]
    missed = [
        name
        for name, defective in DEFECTIVE.items()
        if not any(
            defective.sentence in probe.isolates for probe in isolating if probe.id in findings([probe], defective)
        )
    ]

    assert missed == []


def test_no_sentence_assumes_itself_through_the_cases_that_isolate_what_it_assumes() -> None:
    assumes: dict[str, set[str]] = {}
    for _, case in ISOLATING:
        for sentence in case.isolates:
            assumes.setdefault(sentence, set()).update(case.assumes)
    cyclic = [s for s in assumes if s in set(assumed(assumes[s])) - {s} or s in _reachable(assumes, s)]

    assert cyclic == []


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = list(edges.get(start, ()))
    while pending:
        node = pending.pop()
        if node not in seen:
            seen.add(node)
            pending += edges.get(node, ())
    return seen


@pytest.mark.parametrize("name", list(DEFECTIVE))
def test_each_wrong_ranker_is_blamed_on_its_own_clause_alone(name: str) -> None:
    defective = DEFECTIVE[name]

    named = findings(PROBES, defective)

    assert named, f"no check of the lexical vectors tells {name} from the specification"
    clauses = {clause_id_of(sentence) for sentences in named.values() for sentence in sentences}
    assert clauses == {defective.clause}, f"{name} ({defective.sentence}) is blamed on {sorted(clauses)}"


# What each check cites --------------------------------------------------------------------


def _cited(function: Any, *values: Any) -> set[str]:
    marks = [*getattr(function, "pytestmark", []), *(m for value in values for m in getattr(value, "marks", ()))]
    return {str(arg) for mark in marks if mark.name == "clause" for arg in mark.args}


def _vector_tests() -> list[tuple[Any, list[Any]]]:
    found = []
    for _, function in inspect.getmembers(test_ranking, inspect.isfunction):
        marks = [m for m in getattr(function, "pytestmark", []) if m.name == "parametrize" and m.args[0] == "probe"]
        if marks:
            found.append((function, [param.values[0] for param in marks[0].args[1]]))
    return found


def test_every_vector_probe_is_checked_by_exactly_one_test() -> None:
    checked = [probe.id for _, probes in _vector_tests() for probe in probes]

    assert sorted(checked) == sorted(probe.id for probe in PROBES)


@pytest.mark.parametrize("function", [f for f, _ in _vector_tests()], ids=lambda f: f.__name__)
def test_each_vector_test_cites_every_sentence_its_findings_can_name(function: Any) -> None:
    probes = dict(_vector_tests())[function]
    isolated = [sentence for probe in probes for sentence in probe.isolates]
    needed = set(assumed(isolated)) | ON_THE_WAY if isolated else set(LEXICAL_SENTENCES) | ON_THE_WAY

    assert _cited(function) == needed


@pytest.mark.parametrize("index", range(len(test_ranking.RULES)), ids=[row.id for row in test_ranking.RULES])
def test_each_rule_is_ranked_the_same_by_a_ranker_that_breaks_another_sentence(index: int) -> None:
    row = test_ranking.RULES[index]
    sentence, servers, query, expected, assumes = row.values
    tools = tuple(
        VectorTool(sid, t.name, t.description or "", t.annotations) for sid, ts in servers.items() for t in ts
    )
    group = VectorGroup("rule", "", tools, ())
    case = VectorCase(row.id, "", (), "", query, {}, (), (expected,))
    changed = {
        name: d.sentence
        for name, d in RANKERS.items()
        if d.sentence not in {sentence, *assumes} and _orders(group, case, d)[1][:1] != [expected]
    }

    assert rank(tools, query, "").discovery[:1] == [expected]
    assert changed == {}
    assert set(assumed(assumes)) == set(assumes)
    assert _cited(test_ranking.test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give, row) == {
        sentence,
        *assumes,
    }


def _first_round(
    servers: Mapping[str, Sequence[ToolSpec]], policies: Any, base: int, user: str, d: Defective
) -> set[str]:
    tools = [VectorTool(sid, t.name, t.description or "", t.annotations) for sid, ts in servers.items() for t in ts]
    order = rank(tools, user, "", d.rules).first_round
    server_of = {tool.qualified: tool.server for tool in tools}
    caps = {sid: min(FIRST_ROUND_SERVER_CAP, policies.get(sid, {}).get("maxActiveTools", 24)) for sid in servers}
    taken: list[str] = []
    for name in order:
        if (
            len(taken) < FIRST_ROUND - 1 - base
            and sum(server_of[t] == server_of[name] for t in taken) < caps[server_of[name]]
        ):
            taken.append(name)
    return set(taken)


@pytest.mark.parametrize("name", sorted(test_selection.FIRST_ROUND_CASES))
def test_the_first_round_walk_cases_rely_on_no_ranking_sentence_they_do_not_cite(name: str) -> None:
    servers, policies, base, user, expected, _ = test_selection.FIRST_ROUND_CASES[name]
    relied = set(test_selection.FIRST_ROUND_RELIES_ON)
    changed = {
        n: d.sentence
        for n, d in RANKERS.items()
        if d.sentence not in relied and _first_round(servers, policies, base, user, d) != expected
    }

    assert changed == {}
    assert set(assumed(relied)) - {"SEL-5.1"} == relied


def test_the_lexical_discovery_calls_rely_on_no_ranking_sentence_they_do_not_cite() -> None:
    tools = tuple(
        VectorTool(sid, t.name, t.description or "", t.annotations) for sid, ts in LEXICAL_TOOLS.items() for t in ts
    )
    group = VectorGroup("discovery", "", tools, ())
    relied = set(test_discovery.LEXICAL_RELIES_ON)
    changed = {
        (query, n): d.sentence
        for query, system, limit, expected in LEXICAL_DISCOVERY
        for n, d in RANKERS.items()
        if d.sentence not in relied
        and _orders(group, VectorCase("", "", (), system, query, {}, (), ()), d)[1][:limit] != expected
    }

    assert changed == {}
    assert set(assumed(relied)) == relied


def test_a_broken_sentence_a_check_does_not_cite_leaves_it_inconclusive_naming_that_sentence() -> None:
    # Every probe sees discovery past its limit on the way to the ranking.
    diagnosis = Diagnosis(PROBES, lambda probe: Violation(("DSC-5.1",), "two tools for a limit of 1"))
    sentences = ("RNK-1.1", "RNK-8.1")

    assert diagnosis.accounting(sentences, cited={"RNK-1.1", "RNK-8.1", "DSC-5.1"}) == ("DSC-5.1",)
    with pytest.raises(Inconclusive) as caught:
        diagnosis.accounting(sentences, cited={"RNK-1.1", "RNK-8.1"})
    assert caught.value.because == "DSC-5.1"
    assert Diagnosis(PROBES, lambda probe: None).accounting(sentences, cited=set()) == ()
