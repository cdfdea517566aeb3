"""The paged server answers tools/list with exactly the pages it is given."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.suite._paged_server import ENDINGS, cursor_of, serve

TOOL = {"name": "t", "description": "A tool.", "inputSchema": {"type": "object"}}


def exchange(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pages: list[dict[str, Any]], *messages: Any
) -> tuple[list[dict[str, Any]], list[Any]]:
    """The replies to ``messages`` (JSON lines), and the cursors the server logged."""
    lines = "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)
    out = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    monkeypatch.setattr("sys.stdout", out)
    tmp_path.mkdir(exist_ok=True)
    log = tmp_path / "cursors.jsonl"
    serve(pages, log)
    logged = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [json.loads(line) for line in out.getvalue().splitlines()], logged


def request(n: int, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": method, "params": params}


def test_pages_follow_their_cursors_and_the_last_one_ends_as_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    endings: tuple[dict[str, Any], ...] = ({}, {"nextCursor": None}, {"nextCursor": ""})
    for ending, wire in zip(ENDINGS, endings, strict=True):
        pages: list[dict[str, Any]] = [
            {"tools": [TOOL], "next": "cursor"},
            {"tools": [], "next": "cursor"},
            {"tools": [TOOL], "next": ending},
        ]
        replies, logged = exchange(
            monkeypatch,
            tmp_path / ending,
            pages,
            request(1, "tools/list"),
            request(2, "tools/list", cursor=cursor_of(1)),
            request(3, "tools/list", cursor=cursor_of(2)),
        )

        assert [r["result"] for r in replies] == [
            {"tools": [TOOL], "nextCursor": cursor_of(1)},
            {"tools": [], "nextCursor": cursor_of(2)},
            {"tools": [TOOL], **wire},
        ]
        assert logged == [None, cursor_of(1), cursor_of(2)]


def test_a_cursor_it_never_handed_out_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pages = [{"tools": [TOOL], "next": "empty"}]

    replies, _ = exchange(
        monkeypatch, tmp_path, pages, request(1, "tools/list", cursor=""), request(2, "tools/list", cursor="page-0")
    )

    assert [r["error"]["code"] for r in replies] == [-32602, -32602]


def test_it_answers_both_handshakes_calls_and_pings_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    replies, _ = exchange(
        monkeypatch,
        tmp_path,
        [{"tools": [], "next": "absent"}],
        request(1, "initialize", protocolVersion="2025-06-18"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "",
        request(2, "server/discover", **meta),
        request(3, "tools/call", name="t", arguments={}),
        request(4, "ping"),
        request(5, "resources/list"),
    )

    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[1]["result"]["supportedVersions"] == ["2026-07-28"]
    assert replies[1]["result"]["resultType"] == "complete"
    assert replies[2]["result"]["isError"] is False
    assert replies[3]["result"] == {}
    assert replies[4]["error"]["code"] == -32601
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5]
