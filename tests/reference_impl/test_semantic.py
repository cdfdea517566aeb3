"""Rankers from general resources: the RankingIndex protocol, discovery's scorer, fusion, the packaged model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl import ToolDoc, make_ranker
from reference_impl._analysis import Analyzer, Glossary
from reference_impl._semantic import SemanticBreakdown, SemanticIndex, SemanticParams, WordLlamaEncoder
from reference_impl.driver import ReferenceDriver
from tests.reference_impl.strategies import tool_lists

np = pytest.importorskip("numpy")

CATALOG = (
    ToolDoc("github__list_pull_requests", "github", "list_pull_requests", "One page, newest first", True),
    ToolDoc(
        "github__list_pull_request_files",
        "github",
        "list_pull_request_files",
        "List the files that pull requests change",
        True,
    ),
    ToolDoc("linear__create_issue", "linear", "create_issue", "Create an issue", False),
    ToolDoc("aws__restart_instance", "aws", "restart_instance", "Restart an instance", False),
    ToolDoc("aws__delete_bucket", "aws", "delete_bucket", "Delete a storage bucket", False),
)
GLOSSARY = Glossary(["重啟 重启 [chong2 qi3] /to restart/", "实例 实例 [shi2 li4] /instance/example/"])


class BagOfWords:
    """A deterministic stand-in encoder: words hashed (by their letters) into 64 dimensions."""

    def embed(self, texts: Sequence[str]) -> Any:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.casefold().split():
                out[row, sum((k + 1) * ord(c) for k, c in enumerate(word)) % 64] += 1
        lengths = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, lengths, out=np.zeros_like(out), where=lengths > 0)


def index(tools: Sequence[ToolDoc] = CATALOG, system: str = "", **params: Any) -> SemanticIndex:
    analyzer = Analyzer(lambda word: word[:6], None, GLOSSARY, {})
    return SemanticIndex(tools, system, SemanticParams(**params), analyzer, BagOfWords())


def names(positions: Any) -> list[str]:
    return [CATALOG[i].name for i in positions]


def test_discovery_prefers_the_tool_whose_name_the_query_spells_out() -> None:
    query = "list pull requests"
    assert names(index().matches(query))[0] == "list_pull_requests"
    # Without name coverage the longer description, repeating the words, would win.
    assert names(index(name_coverage=False).matches(query))[0] == "list_pull_request_files"


def test_a_chinese_message_reaches_english_tools_through_the_glossary() -> None:
    assert names(index().order("重启实例"))[0] == "restart_instance"
    assert names(index(dense=True).order("帮我重启一下实例"))[0] == "restart_instance"


def test_a_server_id_matches_every_tool_of_that_server() -> None:
    for built in (index(), index(dense=True), index(lexical=False, dense=True)):
        assert set(names(built.matches("aws"))) >= {"restart_instance", "delete_bucket"}


def test_a_dense_neighbour_matches_a_query_that_shares_no_stem_with_it() -> None:
    # "the" is a stop word, so only the embedding (which sees every word) can match it.
    assert list(index().matches("the")) == []
    fused = index(dense=True, dense_depth=2)
    assert names(fused.matches("the")) == ["list_pull_request_files"]
    breakdown = fused.breakdown(1, "the")
    assert isinstance(breakdown, SemanticBreakdown) and breakdown.relevant and not breakdown.user_words
    # Unrelated in embedding space too: no match at all.
    assert list(fused.matches("quokka")) == []


def test_fusion_adds_reciprocal_ranks_and_a_breakdown_explains_the_score() -> None:
    fused = index(dense=True, fusion_k=60.0)
    query = "restart an instance"
    scores = fused.scores(query)
    top = next(fused.order(query))
    assert CATALOG[top].name == "restart_instance"
    assert scores[top] == pytest.approx(2 / 61, abs=1e-3)  # first in both rankings
    breakdown = fused.breakdown(top, query)
    assert breakdown.user_words and breakdown.total == round(scores[top] * 1000)
    assert str(breakdown).startswith(f"{scores[top]:.4f} (terms=")


def test_an_empty_message_leaves_the_order_to_the_static_prior_not_to_names() -> None:
    system = "restart instances"
    assert list(index(system=system, dense=True).order("")) == list(index(system=system).order(""))
    assert names(index(system=system, dense=True).order(""))[0] == "restart_instance"


_text = st.text(alphabet="abc _-重启实例prlistgetcreate", max_size=24)
_tools = tool_lists(_text)


@settings(max_examples=120, deadline=None)
@given(
    tools=_tools,
    system=_text,
    queries=st.lists(_text, min_size=1, max_size=3),
    signals=st.sampled_from([(True, False), (False, True), (True, True)]),
)
def test_order_is_every_tool_by_score_then_name_and_matches_are_the_tools_with_a_signal(
    tools: list[ToolDoc], system: str, queries: list[str], signals: tuple[bool, bool]
) -> None:
    lexical, dense = signals
    built = index(tools, system, lexical=lexical, dense=dense, dense_depth=3)
    for query in queries:
        scores = built.scores(query)
        expected = sorted(range(len(tools)), key=lambda i: (-scores[i], tools[i].qualified_name))
        assert list(built.order(query)) == expected
        matched = list(built.matches(query))
        assert len(set(matched)) == len(matched)
        assert all(built.breakdown(i, query).relevant for i in matched)
        unmatched = set(range(len(tools))) - set(matched)
        assert not any(built.breakdown(i, query).relevant for i in unmatched)


def test_the_packaged_model_loads_with_downloads_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    wordllama = pytest.importorskip("wordllama")
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model loader tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    seen: dict[str, Any] = {}
    real = wordllama.WordLlama.load

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(wordllama.WordLlama, "load", spy)
    load: Any = WordLlamaEncoder.load
    load.__func__.cache_clear()
    try:
        encoder = WordLlamaEncoder.load()
    finally:
        load.__func__.cache_clear()
    assert seen["disable_download"] is True
    vectors = encoder.embed(["restart a virtual machine", "reboot the server", "delete a storage bucket", ""])
    assert vectors.shape == (4, 256)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
    assert not vectors[3].any()
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


@pytest.mark.parametrize("name", ["bm25-stem", "dense", "hybrid"])
async def test_each_ranker_from_general_resources_claims_only_the_core_profile(name: str) -> None:
    pytest.importorskip("wordllama")
    ranker = make_ranker(name)
    assert ranker.name == name
    assert (await ReferenceDriver(ranker=ranker).initialize())["profiles"] == ["core"]
    built = ranker.index(CATALOG, "")
    assert CATALOG[next(iter(built.matches("reboot the instance")))].name == "restart_instance"
