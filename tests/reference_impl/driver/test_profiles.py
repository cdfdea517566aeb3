"""The driver's optional profiles: claimed only when turned on, honoured only in the runs that ask."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mock_servers import ChangeDocument, FleetHost, spec_from_dict
from reference_impl.driver import ReferenceDriver
from reference_impl.driver.__main__ import Server, main

from ..servers import raw_server, tool

BASE = [{"name": f"base_{i}", "description": "", "inputSchema": {"type": "object"}} for i in range(95)]


async def test_a_driver_claims_eviction_and_refresh_only_when_they_are_turned_on() -> None:
    assert (await ReferenceDriver().initialize({}))["profiles"] == ["core", "lexical"]
    assert (await ReferenceDriver(eviction="lru").initialize({}))["profiles"] == ["core", "lexical", "eviction"]
    every = await ReferenceDriver.with_eviction_and_refresh().initialize({})
    assert every["profiles"] == ["core", "lexical", "eviction", "refresh"]


def test_an_unknown_eviction_policy_is_refused_when_the_driver_is_built() -> None:
    with pytest.raises(ValueError, match="eviction must be one of \\['lru'\\]"):
        ReferenceDriver(eviction="fifo")


def _servers(directory: Path, count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"s{i:02d}", "transport": raw_server(directory, f"s{i:02d}", [[tool(f"op{i:02d}")]]).transport()}
        for i in range(count)
    ]


async def _fill_and_one_more(driver: ReferenceDriver, directory: Path, **fields: Any) -> dict[str, Any]:
    run = await driver.open_run({"servers": _servers(directory, 17), "baseTools": BASE, **fields})
    try:
        for i in range(17):
            args = {"query": f"s{i:02d}__op{i:02d}", "server_ids": [f"s{i:02d}"], "limit": 1}
            result = await driver.call(run, "search_mcp_tools", args)
        return dict(result.get("structuredContent") or {})
    finally:
        await driver.close_run(run)


@pytest.mark.e2e
async def test_eviction_is_turned_on_per_run_and_only_by_a_driver_that_claims_it(tmp_path: Path) -> None:
    claimed = ReferenceDriver(eviction="lru")
    plain = ReferenceDriver()

    evicting = await _fill_and_one_more(claimed, tmp_path, eviction="lru")
    growing = await _fill_and_one_more(claimed, tmp_path)
    ignored = await _fill_and_one_more(plain, tmp_path, eviction="lru")

    assert evicting["evicted"] == [{"name": "s00__op00"}]
    assert growing["activated"] == [] == ignored["activated"]


def _line(request_id: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


@pytest.mark.e2e
async def test_run_definitions_carries_the_notices_of_a_refreshing_run(tmp_path: Path) -> None:
    spec = spec_from_dict({"servers": [{"id": "fix", "tool_count": 0, "list_changed": True, "tools": [{"name": "a"}]}]})
    with FleetHost.start() as host:
        urls = host.add_fleet(spec, tmp_path / "ledger.jsonl")
        server = Server(ReferenceDriver(refresh=True))
        transport = {"type": "http", "url": urls["fix"]}
        policy = {"mode": "all", "maxActiveTools": 1}
        opened = await server.handle(
            _line(
                1, "run.open", {"servers": [{"id": "fix", "transport": transport, "policy": policy}], "refresh": True}
            )
        )
        assert opened is not None
        run = opened["result"]["runId"]
        quiet = await server.handle(_line(2, "run.definitions", {"runId": run}))
        added: ChangeDocument = {"add": [{"name": "b"}]}
        answer = await anyio.to_thread.run_sync(host.change_tools, urls, "fix", added)
        listed = await anyio.to_thread.run_sync(host.await_listing, urls, "fix", answer["catalog"])
        told = await server.handle(_line(3, "run.definitions", {"runId": run}))
        await server.driver.aclose()

    assert listed == "complete"
    assert quiet is not None and "notices" not in quiet["result"]
    assert told is not None
    [notice] = told["result"]["notices"]
    assert (notice["kind"], notice["server"], notice["tools"]) == ("required_tool_inactive", "fix", ["fix__b"])


def test_main_turns_the_profiles_on(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}) for method in ("initialize", "shutdown")]
    stdin = io.TextIOWrapper(io.BytesIO(("\n".join(lines) + "\n").encode()))
    out = io.BytesIO()
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(out))

    main(["--eviction", "lru", "--refresh"])

    first = json.loads(out.getvalue().decode().splitlines()[0])
    assert first["result"]["profiles"] == ["core", "lexical", "eviction", "refresh"]
