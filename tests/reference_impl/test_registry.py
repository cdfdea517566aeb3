"""The ranker registry: each ranker by name, the profiles a replaced one claims, the driver option."""

from __future__ import annotations

import pytest

from reference_impl import RANKERS, Bm25Ranker, LexicalRanker, make_ranker
from reference_impl.driver import ReferenceDriver
from reference_impl.driver.__main__ import main as driver_main


def test_the_registry_builds_each_ranker_by_name() -> None:
    assert sorted(RANKERS) == ["bm25", "bm25-stem", "dense", "hybrid", "lexical"]
    for name in ("lexical", "bm25"):
        assert make_ranker(name).name == name
    assert isinstance(make_ranker("lexical"), LexicalRanker)
    with pytest.raises(ValueError, match="known rankers: bm25, bm25-stem, dense, hybrid, lexical"):
        make_ranker("embeddings")


async def test_a_replaced_ranker_claims_only_the_core_profile() -> None:
    assert (await ReferenceDriver(ranker=Bm25Ranker()).initialize())["profiles"] == ["core"]
    assert (await ReferenceDriver().initialize())["profiles"] == ["core", "lexical"]


def test_the_driver_refuses_an_unknown_ranker(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        driver_main(["--ranker", "nope"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err
