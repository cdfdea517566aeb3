"""BM25F: terms, the design's aliases, intents, breakdowns, and the RankingIndex protocol's invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl import Bm25Breakdown, Bm25Params, Bm25Ranker, ToolDoc
from reference_impl._bm25 import fold, terms
from tests.reference_impl.strategies import tool_lists

CATALOG = (
    ToolDoc("github__list_pull_requests", "github", "list_pull_requests", "List open pull requests", True),
    ToolDoc("github__merge_pull_request", "github", "merge_pull_request", "Merge a pull request", False),
    ToolDoc("linear__list_issues", "linear", "list_issues", "List issues in a project", True),
    ToolDoc("linear__create_issue", "linear", "create_issue", "Create an issue", False),
    ToolDoc("aws__restart_instance", "aws", "restart_instance", "Restart an instance", False),
    ToolDoc("aws__get_function_logs", "aws", "get_function_logs", "Read recent log lines of a function", False),
)


def test_terms_drop_stop_words_fold_plurals_and_split_names() -> None:
    assert terms("List the open Pull Requests") == ["list", "open", "pull", "request"]
    assert terms("list_issue_comments") == ["list", "issue", "comment"]
    assert terms("getQueryResults") == ["get", "query", "result"]
    assert [fold(w) for w in ("queries", "boxes", "status", "class", "bus", "logs")] == [
        "query", "box", "status", "class", "bus", "log",
    ]  # fmt: skip


def test_the_design_aliases_reach_their_targets_and_no_other_word_is_mapped() -> None:
    index = Bm25Ranker().index(CATALOG, "")
    assert CATALOG[next(index.order("show me the open pr"))].name == "list_pull_requests"
    assert {CATALOG[i].name for i in index.matches("工单")} == {"list_issues", "create_issue"}
    assert list(index.matches("reboot the EC2 box")) == []
    plain = Bm25Ranker(Bm25Params(aliases=False)).index(CATALOG, "")
    assert list(plain.matches("工单")) == []


def test_read_intent_prefers_reading_tools_and_a_write_request_the_writing_ones() -> None:
    index = Bm25Ranker().index(CATALOG, "")
    assert CATALOG[next(index.order("show pull requests"))].name == "list_pull_requests"
    assert CATALOG[next(index.order("merge the pull request"))].name == "merge_pull_request"


def test_a_breakdown_explains_the_score() -> None:
    index = Bm25Ranker().index(CATALOG, "You triage issues.")
    breakdown = index.breakdown(2, "list issues")
    assert isinstance(breakdown, Bm25Breakdown)
    assert breakdown.user_words == ("issue", "list")
    assert breakdown.relevant
    assert breakdown.total == round(index.scores("list issues")[2] * 1000)
    assert str(breakdown).startswith(f"{breakdown.score:.3f} (terms=")
    assert sum(breakdown.components.values()) == pytest.approx(breakdown.total, abs=3)
    assert str(index.breakdown(4, "")) == "0.000 (no signal)"


_text = st.text(alphabet="abc _-日志工单prlistgetcreate", max_size=24)
_tools = tool_lists(_text)


@settings(max_examples=150, deadline=None)
@given(tools=_tools, system=_text, queries=st.lists(_text, min_size=1, max_size=3), aliases=st.booleans())
def test_bm25_order_is_every_tool_by_score_then_name_and_matches_are_the_tools_with_a_signal(
    tools: list[ToolDoc], system: str, queries: list[str], aliases: bool
) -> None:
    index = Bm25Ranker(Bm25Params(aliases=aliases)).index(tools, system)
    for query in queries:
        scores = index.scores(query)
        expected = sorted(range(len(tools)), key=lambda i: (-scores[i], tools[i].qualified_name))
        assert list(index.order(query)) == expected
        matched = list(index.matches(query))
        assert matched == [i for i in expected if index.breakdown(i, query).user_words]
        assert all(index.breakdown(i, query).relevant for i in matched)
