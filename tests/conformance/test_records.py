"""Record files: values stored as stable JSON, and reading back what a killed process left."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path

from conformance._records import jsonable, read_records


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    label: str


class Opaque:
    pass


def test_values_from_a_run_are_stored_as_plain_json_without_addresses() -> None:
    value = {
        "colour": Colour.RED,
        "point": Point(1, "a"),
        "tags": frozenset({"b", "a"}),
        "pair": (1, 2.5),
        "bytes": b"\xffok",
        "error": ValueError("bad cursor"),
        "path": Path("/tmp/x"),
        "nan": float("nan"),
        "thing": Opaque(),
        3: None,
    }
    stored = jsonable(value)
    assert stored == {
        "colour": "red",
        "point": {"x": 1, "label": "a"},
        "tags": ["a", "b"],
        "pair": [1, 2.5],
        "bytes": "\\xffok",
        "error": "ValueError: bad cursor",
        "path": "/tmp/x",
        "nan": "nan",
        "thing": "<Opaque>",
        "3": None,
    }
    assert json.loads(json.dumps(stored)) == stored


def test_a_value_nested_past_fifty_levels_is_cut_rather_than_recursing_forever() -> None:
    deep: list[object] = []
    node = deep
    for _ in range(60):
        child: list[object] = []
        node.append(child)
        node = child
    stored = jsonable(deep)
    for _ in range(51):
        assert isinstance(stored, list)
        [stored] = stored
    assert stored == "…"


def test_lines_that_are_not_records_are_counted_and_the_rest_still_read(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        "\n".join(
            [
                json.dumps({"record": "session", "sut": "x", "implementation": None, "problem": "no answer"}),
                "",
                '{"record": "test", "kind": "pass", "name": "torn',
                "[1, 2]",
                json.dumps({"record": "mystery"}),
                json.dumps({"record": "test", "kind": "bogus", "name": "t"}),
                json.dumps({"record": "event", "event": "broken", "nodeid": "n", "message": "hung"}),
                json.dumps({"record": "test", "kind": "pass", "name": "t1", "clauses": ["GATE-1"]}),
            ]
        ),
        encoding="utf-8",
    )
    records = read_records([tmp_path / "a.jsonl", tmp_path / "missing.jsonl"])
    assert records.unreadable == 4
    assert [t["name"] for t in records.tests] == ["t1"]
    assert records.tests[0]["cites"] == ["GATE-1"]
    assert [(e["event"], e["message"]) for e in records.events] == [("broken", "hung")]
    assert records.session is not None and records.session["problem"] == "no answer"


def test_the_session_kept_is_the_first_that_names_an_implementation(tmp_path: Path) -> None:
    impl = {"name": "host", "version": "1.0", "profiles": ["core"]}
    lines = [
        {"record": "session", "sut": "first", "implementation": None},
        {"record": "session", "sut": "second", "implementation": impl},
        {"record": "session", "sut": "third", "implementation": {**impl, "name": "other"}},
    ]
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    session = read_records([tmp_path / "r.jsonl"]).session
    assert session is not None
    assert session["sut"] == "second"
    assert session["implementation"] == {"name": "host", "version": "1.0", "profiles": ["core"]}
