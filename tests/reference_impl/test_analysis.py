"""Text analysis from general resources: stems, Chinese glosses, the design's aliases, offline loading."""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference_impl import make_ranker
from reference_impl._analysis import Analyzer, Glossary, RankerUnavailableError, english_words, require
from reference_impl.driver.__main__ import main as driver_main

LINES = [
    "# CC-CEDICT excerpt",
    "刪除 删除 [shan1 chu2] /to delete/to cancel/",
    "分支 分支 [fen1 zhi1] /branch/CL:個|个[ge4]/",
    "新建 新建 [Xin1 jian4] /Xinjian county in Nanchang/",
    "新建 新建 [xin1 jian4] /to build new/",
    "上海 上海 [Shang4 hai3] /Shanghai municipality/",
    "的 的 [de5] /of/~'s (possessive particle)/",
]


def short(word: str) -> str:
    """A stand-in stemmer: the first five letters."""
    return word[:5]


def analyzer(**idf: float) -> Analyzer:
    return Analyzer(short, None, Glossary(LINES), idf)


def test_english_words_are_cut_at_non_letters_and_camel_case_and_stemmed_without_stop_words() -> None:
    assert english_words("listPullRequests of acme/web 删除") == ["list", "pull", "requests", "of", "acme", "web"]
    assert analyzer().terms("Delete the branches") == ["delet", "branc"]


def test_a_chinese_word_shares_its_weight_among_its_senses_scaled_by_its_idf() -> None:
    weights = analyzer(删除=8.0).query("删除")
    assert weights == {"delet": 0.5, "cance": 0.5}
    assert analyzer(删除=4.0).query("删除") == {"delet": 0.25, "cance": 0.25}
    # Classifier notes and parenthesised remarks are not senses, nor are stop words.
    assert Glossary(LINES).senses("分支") == (("branch",),)
    assert Glossary(LINES).senses("的") == ()


def test_a_proper_noun_reading_counts_only_for_a_word_without_another_entry() -> None:
    glossary = Glossary(LINES)
    assert glossary.senses("新建") == (("build", "new"),)
    assert glossary.senses("上海") == (("shanghai", "municipality"),)
    assert glossary.senses("没有") == ()


def test_an_unknown_word_is_cut_into_its_longest_known_pieces_and_lone_characters_are_dropped() -> None:
    glossary = Glossary(LINES)
    assert list(glossary.pieces("删除了分支")) == ["删除", "分支"]
    assert list(glossary.pieces("分支")) == ["分支"]
    assert list(glossary.pieces("了吗")) == []


def test_the_design_aliases_add_their_targets_at_full_weight_and_plurals_fire_them() -> None:
    weights = analyzer().query("看看这个工单和两个 PRs")
    assert weights["issue"] == 1.0
    assert weights["pull"] == weights["reque"] == 1.0
    assert "pull" not in analyzer().query("our project plan")


def test_the_english_text_for_an_encoder_glosses_each_clear_chinese_word() -> None:
    assert analyzer().english("删除 the 分支") == "delete the branch"
    # A word of low inverse document frequency (a function word) is left out.
    assert analyzer(删除=1.0).english("删除分支") == "branch"


def test_the_packaged_resources_load_offline_without_writing_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("jieba")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _block_network(monkeypatch)
    load: Any = Analyzer.load
    load.__func__.cache_clear()
    loaded = Analyzer.load()
    weights = loaded.query("删除已经合并的分支")
    assert {"delet", "branch", "merg"} <= set(weights)
    assert loaded.terms("Restarting instances") == ["restart", "instanc"]
    assert list(tmp_path.iterdir()) == []


def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a ranker tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _without(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """Make ``missing`` impossible to import, and forget the resources already loaded."""
    real = importlib.import_module

    def fake(name: str, package: str | None = None) -> Any:
        if name == missing:
            raise ImportError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", fake)
    load: Any = Analyzer.load
    load.__func__.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_resources() -> Iterator[None]:
    yield
    load: Any = Analyzer.load
    load.__func__.cache_clear()


def test_a_missing_dependency_names_the_package_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "jieba")
    with pytest.raises(RankerUnavailableError, match=r"needs the Python module 'jieba'.*\[semantic\]"):
        require("jieba")
    with pytest.raises(RankerUnavailableError, match="jieba"):
        make_ranker("bm25-stem")


def test_the_driver_says_which_dependency_is_missing_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without(monkeypatch, "Stemmer")
    with pytest.raises(SystemExit) as exit_info:
        driver_main(["--ranker", "hybrid"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--ranker hybrid: this ranker needs the Python module 'Stemmer', which is not installed" in err
    assert "Traceback" not in err
