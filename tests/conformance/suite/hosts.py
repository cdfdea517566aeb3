"""Hosts built to break one sentence, for the tests of the suite's controls: the reference
with what it answers or is asked passed through an edit."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conformance import Definition, InitializeResult, OpenParams, Sut, SystemUnderTest, ToolResult
from conformance._wire_types import ToolPolicy

Edit = Callable[[list[Definition]], list[Definition]]
Front = Callable[..., Sut]


OpenEdit = Callable[[OpenParams], OpenParams]


def misreading(change: Callable[[str, ToolPolicy], None]) -> OpenEdit:
    """An edit of ``run.open`` for a host that reads each server's policy as ``change``
    rewrites it in place (given the server id)."""

    def opening(params: OpenParams) -> OpenParams:
        edited = copy.deepcopy(params)
        for server in edited["servers"]:
            policy = server.get("policy") or ToolPolicy()
            change(server["id"], policy)
            server["policy"] = policy
        return edited

    return opening


class Edited:
    """The reference, with every definition list it answers passed through ``edit`` and
    every ``run.open`` it is asked through ``opening``."""

    def __init__(self, inner: SystemUnderTest, edit: Edit | None = None, opening: OpenEdit | None = None) -> None:
        self.inner, self.edit, self.opening = inner, edit, opening

    async def initialize(self) -> InitializeResult:
        return await self.inner.initialize()

    async def open_run(self, params: OpenParams) -> str:
        return await self.inner.open_run(self.opening(params) if self.opening else params)

    async def definitions(self, run_id: str) -> list[Definition]:
        defs = await self.inner.definitions(run_id)
        return self.edit(defs) if self.edit else defs

    async def call(self, run_id: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        return await self.inner.call(run_id, name, arguments)

    async def request(self, run_id: str, extra_tools: Sequence[Definition] = ()) -> list[Definition]:
        return await self.inner.request(run_id, extra_tools)

    async def close_run(self, run_id: str) -> None:
        await self.inner.close_run(run_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


def twelve_per_server(defs: list[Definition]) -> list[Definition]:
    """A host that activates at most 12 tools of a server, required or not."""
    kept: list[Definition] = []
    seen: dict[str, int] = {}
    for d in defs:
        server = d["name"].split("__", 1)[0] if "__" in d["name"] else ""
        seen[server] = seen.get(server, 0) + 1
        if not server or seen[server] <= 12:
            kept.append(d)
    return kept


def one_more(defs: list[Definition]) -> list[Definition]:
    """A host whose first round takes one MCP tool past its capacity."""
    return [*defs, {"name": "edge__one_more", "description": "One more.", "inputSchema": {"type": "object"}}]
