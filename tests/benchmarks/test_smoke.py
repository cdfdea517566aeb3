"""The benchmarks' smoke mode runs end to end and writes its tables; no timing is asserted."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import benchmarks.__main__ as benchmarks_main
from benchmarks.__main__ import SECTIONS, main
from benchmarks._catalogs import realistic
from benchmarks._quality import BLIND_TASKS, load_tasks
from benchmarks._report import Table

BLIND_DIGEST = "c40d5218ab09464a83cf6b9fd1055567a92dc7f47697ac3554ed25f788f8e035"


@pytest.mark.e2e
@pytest.mark.slow  # every section, each ranker built: half a minute of a core
def test_the_smoke_run_completes_and_writes_every_table(tmp_path: Path) -> None:
    output = tmp_path / "BENCHMARKS.md"
    assert main(["--smoke", "--output", str(output)]) == 0
    text = output.read_text(encoding="utf-8")
    for title in (
        "### Catalog build and indexing",
        "### Selection and discovery",
        "### Selection quality: two task sets",
        "### Blind set by language and kind",
        "### First set by language and kind",
        "### What each ranker is built from",
        "### Ranker cost at 500 tools",
        "### Fleet throughput",
        "### One `mcp-fleet serve`: servers × tools, start time and memory",
    ):
        assert title in text
    for ranker in ("lexical", "bm25", "bm25-stem", "dense", "hybrid"):
        assert f"| {ranker} | first, held-out |" in text
        assert f"| {ranker} | blind |" in text
    assert "| HTTP: list every tool of every server |" in text


def test_only_the_chosen_sections_are_regenerated_and_the_others_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Which sections does not matter, only what is kept: each is a table of its own title
    # (the next test runs a real one).
    monkeypatch.setattr(benchmarks_main, "_run", lambda name, args: [Table(SECTIONS[name], ["a"], [["1"]])])
    output = tmp_path / "BENCHMARKS.md"
    output.write_text("# Benchmarks\n\nHeader.\n\n## Fleet throughput\n\nkept as it was\n", encoding="utf-8")
    assert main(["--smoke", "--sections", "scale", "--output", str(output)]) == 0
    text = output.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks\n\nHeader.\n")
    assert "kept as it was" in text and "### Selection and discovery at scale" in text
    assert text.index("## Selection and discovery at scale") < text.index("## Fleet throughput")
    assert main(["--smoke", "--sections", "quality", "--output", str(output)]) == 0
    text = output.read_text(encoding="utf-8")
    assert "kept as it was" in text and "### Selection quality" in text
    assert text.index("## Selection and discovery at scale") < text.index("## Selection quality")
    with pytest.raises(SystemExit):
        main(["--sections", "nope", "--output", str(output)])


def test_a_section_written_after_the_last_kept_one_starts_on_a_line_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The kept section lost its trailing blank line when it was read back; what the new one
    # holds does not matter (every real section renders in the smoke run above).
    monkeypatch.setattr(benchmarks_main, "_run", lambda name, args: [Table(SECTIONS[name], ["a"], [["1"]])])
    output = tmp_path / "BENCHMARKS.md"
    output.write_text("# Benchmarks\n\n## Selection and discovery at scale\n\nkept\n", encoding="utf-8")
    assert main(["--smoke", "--sections", "ranker-cost", "--output", str(output)]) == 0
    assert "kept\n\n## Ranker cost\n" in output.read_text(encoding="utf-8")


def test_the_blind_set_is_frozen_with_a_query_per_task() -> None:
    tasks = load_tasks(BLIND_TASKS)
    tools = {f"{sid}__{t['name']}" for sid, listing in realistic().items() for t in listing}
    assert len(tasks) == 207
    assert {t.tool for t in tasks} <= tools
    assert all(t.query and t.query != t.text for t in tasks)
    assert {t.kind for t in tasks} == {"direct", "synonym", "paraphrase", "vague"}
    assert sum(t.language == "zh" for t in tasks) * 3 >= len(tasks)
    digest = hashlib.sha256(BLIND_TASKS.read_bytes()).hexdigest()
    assert digest == BLIND_DIGEST, "the blind task set is frozen: never edit it"


def test_the_task_set_labels_real_tools_and_splits_into_two_halves() -> None:
    tasks = load_tasks()
    tools = {f"{sid}__{t['name']}" for sid, listing in realistic().items() for t in listing}
    assert len(tasks) >= 150
    assert {t.tool for t in tasks} <= tools
    assert {t.split for t in tasks} == {"tune", "held-out"}
    assert {t.language for t in tasks} == {"en", "zh"}
    assert any(t.names_server for t in tasks) and not all(t.names_server for t in tasks)
