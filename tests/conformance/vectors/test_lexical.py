"""The shipped lexical vectors: up to date, right by the specification's text, and able to fail.

The file is generated with the reference ranker, so it is checked other ways: every score,
component and order is recomputed by an independent scorer written from SPEC.md
(:mod:`._spec_scorer`); a subset of scores is worked out by hand below; and
``test_attribution.py`` shows that every deliberately wrong ranker of :mod:`._defective` is
found, and on its own clause alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from conformance import CLAUSES
from conformance.suite._predictions import DYNAMIC, FIRST_ROUND
from conformance.suite._probes import PROBES
from conformance.suite._vectors import LEXICAL_SENTENCES, ROOM, load_vectors, plan
from tests.conformance.vectors._defective import Defective, observe
from tests.conformance.vectors._generate import VECTORS_PATH, document, render
from tests.conformance.vectors._spec_scorer import SPEC_RULES, rank, spec_words

SHIPPED: dict[str, Any] = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))
CASES = [(group, case) for group in SHIPPED["groups"] for case in group["cases"]]
_IDS = [case["id"] for _, case in CASES]
_COMPONENTS = ("messageHits", "promptHits", "serverInMessage", "serverInPrompt", "readOnly", "aliases", "intent")


def _case(case_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return next((group, case) for group, case in CASES if case["id"] == case_id)


def test_the_committed_vectors_are_what_the_generator_writes() -> None:
    assert VECTORS_PATH.read_text(encoding="utf-8") == render(document()), (
        f"{VECTORS_PATH} is out of date: regenerate it with python -m tests.conformance.vectors"
    )


@pytest.mark.parametrize(("group", "case"), CASES, ids=_IDS)
def test_every_score_and_order_is_what_the_specification_gives(group: dict[str, Any], case: dict[str, Any]) -> None:
    tools = next(loaded.tools for loaded in load_vectors() if loaded.id == group["id"])
    ranking = rank(tools, case["userMessage"], case["systemPrompt"])

    for name, scored in ranking.scores.items():
        shipped = case["scores"][name]
        assert shipped["score"] == scored.score, name
        assert shipped.get("messageHits", []) == list(scored.message_hits), name
        assert shipped.get("promptHits", []) == list(scored.prompt_hits), name
        assert shipped.get("serverInMessage", False) == scored.server_in_message, name
        assert shipped.get("serverInPrompt", False) == scored.server_in_prompt, name
        assert shipped.get("readOnly", False) == scored.read_only, name
        assert shipped.get("aliases", []) == list(scored.aliases), name
        assert shipped.get("intent", 0) == scored.intent, name
    assert case["firstRound"] == ranking.first_round
    assert case["discovery"] == ranking.discovery


@pytest.mark.parametrize(("group", "case"), CASES, ids=_IDS)
def test_each_case_is_consistent_with_itself(group: dict[str, Any], case: dict[str, Any]) -> None:
    weights = SHIPPED["weights"]
    for name, entry in case["scores"].items():
        total = (
            weights["messageHit"] * len(entry.get("messageHits", []))
            + weights["promptHit"] * len(entry.get("promptHits", []))
            + weights["serverInMessage"] * entry.get("serverInMessage", False)
            + weights["serverInPrompt"] * entry.get("serverInPrompt", False)
            + weights["readOnly"] * entry.get("readOnly", False)
            + weights["alias"] * len(entry.get("aliases", []))
            + entry.get("intent", 0)
        )
        assert entry["score"] == total, name
        assert set(entry) <= {"score", *_COMPONENTS}, name
        assert entry.get("intent", 0) in (0, weights["readBonus"], weights["writePenalty"], -24), name
    names = list(case["scores"])
    assert sorted(case["firstRound"]) == sorted(names)
    assert case["firstRound"] == sorted(names, key=lambda name: (-case["scores"][name]["score"], name))
    relevant = [
        name for name in case["firstRound"] if {"messageHits", "aliases", "serverInMessage"} & set(case["scores"][name])
    ]
    assert case["discovery"] == relevant
    assert case["messageWords"] == list(dict.fromkeys(spec_words(case["userMessage"])))
    assert case["promptWords"] == list(dict.fromkeys(spec_words(case["systemPrompt"])))
    assert set(case["clauses"]) <= {c for c, clause in CLAUSES.items() if clause.profile == "lexical"}
    assert set(case["isolates"]) <= set(LEXICAL_SENTENCES)
    assert set(case["assumes"]) <= set(LEXICAL_SENTENCES) - set(case["isolates"])
    assert {sentence.split(".")[0] for sentence in case["isolates"]} <= set(case["clauses"])


def test_each_catalog_lists_the_words_of_its_tools() -> None:
    for group in SHIPPED["groups"]:
        for server in group["catalog"]:
            for tool in server["tools"]:
                assert tool["words"] == list(dict.fromkeys(spec_words(f"{tool['name']} {tool['description']}")))


# Worked out by hand from RNK-1..RNK-8 and the catalog in _cases.py: (case, tool, score, how).
HAND_WORKED = [
    ("workbench-01", "github__list_pull_requests", 35, "pull, requests 2×12 + readOnly 3 + show→read 8"),
    ("workbench-01", "github__create_pull_request", -8, "open, pull 2×12 − write 32"),
    ("workbench-01", "logs__show_metrics", 15, "show 12 + readOnly 3; show is no read verb of names"),
    ("workbench-09", "logs-eu__find_street", 15, "STRASSE folds to strasse, as Straße does: 12 + 3"),
    ("workbench-14", "logs__get_error_summary", 39, "top, ٣, errors 3×12 + 3; no read signal"),
    ("workbench-15", "logs__get_error_summary", 27, "top, errors 2×12 + 3; 3 is not ٣"),
    ("workbench-18", "logs__find_trace", 39, "trace, i, d 3×12 + 3: İD folds to i, U+0307, d"),
    ("workbench-19", "logs__find_trace", 15, "trace 12 + 3; id is no word of the tool"),
    ("workbench-08", "github__push_files", 36, "ﬁles folds to files: files, to, push 3×12; not read-only"),
    ("workbench-31", "logs-eu__find_street", 31, "eu 12 + logs-eu named 16 + 3"),
    ("workbench-31", "logs__tail_log", 28, "tail 12 + logs named (a hyphen follows it) 16; readOnlyHint 1 is not true"),
    ("workbench-32", "logs-eu__find_street", 15, "eu 12 + 3; logs_eu names logs only"),
    ("workbench-29", "Linear__search_issues", 23, "search 12 + 3 + read 8; nonlinear names nothing"),
    ("workbench-28", "Linear__search_issues", 39, "search 12 + Linear named 16 + 3 + read 8"),
    ("workbench-28", "Linear__create_issue", -16, "Linear named 16 − write 32; no annotations"),
    ("workbench-36", "github__get_changelog", 15, "日志 fires log in changelog 12 + 3; 查github: not named"),
    ("workbench-39", "logs__query_logs", 12, 'query 12; readOnlyHint "true" is not true'),
    ("workbench-39", "logs-eu__query_logs", 12, "query 12; no annotations"),
    ("workbench-42", "github__get_pull_request", 15, "pr fires pull_request 12 + 3"),
    ("workbench-42", "github__merge_pull_request", 12, "pr 12; no read signal, so no penalty"),
    ("workbench-44", "Linear__list_projects", 3, "readOnly 3 only: pr is not in project, project is not projects"),
    ("workbench-49", "Linear__list_issues", 27, "工单 is its word 12 + 工单 fires issue 12 + 3"),
    ("workbench-49", "Linear__reissue_invite", 12, "工单 fires issue, a substring of reissue_invite"),
    ("workbench-49", "Linear__add_comment", 0, "issue is in its description, not its name"),
    ("workbench-53", "logs-eu__query_logs", 24, "查询日志 is its word 12 + 日志 fires log 12; query is no read verb"),
    ("workbench-53", "github__get_changelog", 23, "日志 fires log 12 + 3 + 查询→read 8"),
    ("workbench-53", "logs__delete_logs", -20, "日志 12 − write 32"),
    ("workbench-61", "logs__delete_logs", 40, "delete, logs 2×12 + logs named 16; no read signal"),
    ("workbench-62", "logs__delete_logs", 8, "delete, logs 2×12 + 16 − write 32: list fires"),
    ("workbench-72", "Linear__create_issue", 24, "create, issue 2×12; ties github__create_issue"),
    ("workbench-72", "github__create_issue", 24, "create, issue 2×12; readOnlyHint false"),
    ("workbench-77", "github__get_changelog", 14, "prompt: the, of, a, release 4×2 + github named 3 + 3"),
    ("workbench-77", "Linear__ListCycles", 11, "prompt: the, of, a, team 4×2 + 3"),
    (
        "workbench-85",
        "logs__delete_logs",
        45,
        "delete, logs 2×12 + 16 + prompt: logs 2 + logs named 3; list only in the prompt",
    ),
]


@pytest.mark.parametrize(
    ("case_id", "tool", "score", "how"), HAND_WORKED, ids=[f"{c}:{t}" for c, t, _, _ in HAND_WORKED]
)
def test_hand_worked_scores(case_id: str, tool: str, score: int, how: str) -> None:
    _, case = _case(case_id)

    assert case["scores"][tool]["score"] == score, how


# Complete discovery orders worked out by hand.
HAND_ORDERS = {
    "workbench-39": ["logs-eu__query_logs", "logs__query_logs"],
    "workbench-42": [
        "github__get_pull_request",
        "github__list_pull_requests",
        "github__create_pull_request",
        "github__merge_pull_request",
    ],
    "workbench-44": [],
    "workbench-52": [
        "github__get_changelog",
        "logs-eu__query_logs",
        "logs-eu__tail_log",
        "logs__delete_logs",
        "logs__query_logs",
        "logs__tail_log",
    ],
    "workbench-29": ["Linear__search_issues", "github__search_code"],
}


@pytest.mark.parametrize("case_id", sorted(HAND_ORDERS))
def test_hand_worked_discovery_orders(case_id: str) -> None:
    _, case = _case(case_id)

    assert case["discovery"] == HAND_ORDERS[case_id]


def test_the_hand_worked_subset_covers_at_least_fifteen_messages() -> None:
    assert len({case_id for case_id, *_ in HAND_WORKED} | set(HAND_ORDERS)) >= 15


def _text(case: Mapping[str, Any]) -> str:
    return f"{case['userMessage']}{case['systemPrompt']}"


def test_the_vectors_cover_what_the_lexical_clauses_turn_on() -> None:
    catalog_text = json.dumps([group["catalog"] for group in SHIPPED["groups"]], ensure_ascii=False)
    messages = "".join(_text(case) for _, case in CASES)
    fired = {kind: {t for _, case in CASES for t in case["triggers"][kind]} for kind in CASES[0][1]["triggers"]}

    assert len(CASES) >= 80
    for char in ("ß", "ﬁ", "Σ", "İ", "٣", "３", "工"):
        assert char in catalog_text
    for char in ("ß", "ﬁ", "ς", "İ", "٣", "３", "ｐ"):
        assert char in messages
    assert fired["aliases"] == {"pr", "合并请求", "工单", "评审", "日志"}
    assert {"查询", "列出", "最近", "查看", "summary", "review", "list", "show", "find", "search", "recent"} == (
        fired["readSignals"]
    )
    assert {"github", "Linear", "logs", "logs-eu"} <= fired["serversInMessage"]
    assert {"github", "Linear", "logs", "logs-eu"} <= fired["serversInPrompt"]
    assert any(not case["discovery"] for _, case in CASES)
    assert any(group["id"] == "names" and not load_vectors()[1].servable for group in SHIPPED["groups"])


def test_the_driver_plan_checks_every_servable_discovery_order_completely() -> None:
    for group in load_vectors():
        if not group.servable:
            continue
        revealed: dict[str, list[tuple[int, tuple[str, ...], bool]]] = {}
        for probe in plan(group):
            assert 0 <= probe.capacity <= FIRST_ROUND - 1 and 0 <= probe.base_tools <= FIRST_ROUND - 1
            assert probe.used <= DYNAMIC - FIRST_ROUND == ROOM
            assert probe.servers, probe.id
            for check in probe.discoveries:
                revealed.setdefault(check.case.id, []).append((check.start, check.expected, check.complete))
        for case in group.cases:
            if not case.user_message.strip():
                continue  # a blank query is invalid arguments (DSC-7)
            chunks = sorted(revealed[case.id])
            assert tuple(name for _, names, _ in chunks for name in names) == case.discovery, case.id
            assert chunks[-1][2], f"{case.id}: the end of its discovery order is not checked"


def test_the_driver_plan_checks_the_first_round_where_it_tells_more_than_discovery() -> None:
    group = load_vectors()[0]
    probes = plan(group)
    checked = {probe.first_round.case.id for probe in probes if probe.first_round is not None}

    assert checked
    assert {case.id for case in group.cases if not case.discovery} <= checked


def test_no_probe_leaves_the_room_and_capacity_the_budgets_give_without_slack() -> None:
    for probe in PROBES:
        complete = any(check.complete for check in probe.discoveries)
        assert probe.used + complete < ROOM, probe.id


def test_the_specification_itself_is_caught_by_no_probe() -> None:
    spec = Defective("RNK-1.1", SPEC_RULES)

    assert [probe.id for probe in PROBES if observe(probe, spec) is not None] == []
