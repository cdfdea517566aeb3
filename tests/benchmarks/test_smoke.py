"""The benchmarks' smoke mode runs end to end and writes its tables; no timing is asserted."""

from __future__ import annotations

from pathlib import Path

from benchmarks.__main__ import _replace_section, main
from benchmarks._catalogs import realistic
from benchmarks._quality import load_tasks
from benchmarks._report import Table


def test_the_smoke_run_completes_and_writes_every_table(tmp_path: Path) -> None:
    output = tmp_path / "BENCHMARKS.md"
    assert main(["--smoke", "--output", str(output)]) == 0
    text = output.read_text(encoding="utf-8")
    for title in (
        "### Catalog build and indexing",
        "### Selection and discovery",
        "### Selection quality",
        "### Held-out recall after one discovery call",
        "### Fleet throughput",
        "### One `mcp-fleet serve`: servers × tools, start time and memory",
    ):
        assert title in text
    assert "| lexical | held-out |" in text
    assert "| bm25 | held-out |" in text
    assert "| HTTP: list every tool of every server |" in text


def test_one_section_is_rewritten_in_place_and_the_rest_of_the_file_is_kept(tmp_path: Path) -> None:
    output = tmp_path / "BENCHMARKS.md"
    output.write_text("# Benchmarks\n\n## First\n\nold first\n\n## Fleet scale\n\nold\n\n## Last\n\nkept\n")
    table = Table("New", ["a"], [["1"]])
    _replace_section(output, "Fleet scale", [table])
    text = output.read_text(encoding="utf-8")
    assert "old first" in text and "kept" in text and "\nold\n" not in text
    assert text.index("## Fleet scale") < text.index("### New") < text.index("## Last")
    _replace_section(output, "Suite cost", [table])
    assert output.read_text(encoding="utf-8").rstrip().endswith("| 1 |")


def test_the_task_set_labels_real_tools_and_splits_into_two_halves() -> None:
    tasks = load_tasks()
    tools = {f"{sid}__{t['name']}" for sid, listing in realistic().items() for t in listing}
    assert len(tasks) >= 150
    assert {t.tool for t in tasks} <= tools
    assert {t.split for t in tasks} == {"tune", "held-out"}
    assert {t.language for t in tasks} == {"en", "zh"}
    assert any(t.names_server for t in tasks) and not all(t.names_server for t in tasks)
