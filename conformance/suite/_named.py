"""Discovery calls that name the tool they want: what every ranker must activate.

A call whose ``server_ids`` names one ``auto`` server with at most ``limit`` candidates,
and whose query is the qualified name of one of them, activates that candidate whenever
the limits leave room for all of that server's candidates (DSC-5.8). Checks of ``core``
sentences that need discovery to activate given tools build their fleets so that this
holds (small servers of interchangeable tools) and ask for the tools one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance._sut import Run, Sut
from conformance.suite._predictions import MAX_LIMIT
from conformance.suite._wire import DISCOVERY, base_tools, names, open_params
from mock_servers import ServerSpec, ToolSpec

__all__ = ["NamedCall", "ask_for", "discover_in_turn", "plain_server"]


def plain_server(server_id: str, count: int, *, prefix: str = "tool") -> ServerSpec:
    """A server of ``count`` tools that only their numbers tell apart: ``tool_0``, ``tool_1``…"""
    return ServerSpec(
        id=server_id,
        tool_count=0,
        tools=tuple(
            ToolSpec(name=f"{prefix}_{i}", description=f"Does thing number {i}.", input_schema={"type": "object"})
            for i in range(count)
        ),
    )


@dataclass
class NamedCall:
    """One discovery call asking for ``target`` by its qualified name."""

    target: str
    arguments: dict[str, Any]
    result: dict[str, Any]
    #: Names of the definitions right before and right after the call.
    before: list[str]
    after: list[dict[str, Any]]


async def ask_for(r: Run, targets: Iterable[str], *, limit: int | None = MAX_LIMIT) -> list[NamedCall]:
    """Ask discovery for each of ``targets`` (qualified names) that is not active yet,
    scoped to its server; ``limit`` None leaves the argument out."""
    calls: list[NamedCall] = []
    defs = await r.definitions()
    for target in targets:
        if target in names(defs):
            continue
        arguments: dict[str, Any] = {"query": target, "server_ids": [target.split("__", 1)[0]]}
        if limit is not None:
            arguments["limit"] = limit
        result = await r.call(DISCOVERY, arguments)
        after = await r.definitions()
        calls.append(NamedCall(target, arguments, result, names(defs), after))
        defs = after
    return calls


async def discover_in_turn(
    sut: Sut,
    servers: Sequence[Mapping[str, Any]],
    base: int,
    calls: Iterable[Mapping[str, Any]],
    *,
    system: str = "",
) -> list[tuple[Mapping[str, Any], dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]]:
    """Open a run with ``base`` base tools and make each discovery call in turn, arguments as
    given (valid or not): [(arguments, result, definitions before, definitions after)]."""
    out = []
    async with sut.open(open_params(servers, base_tools(base), system=system)) as r:
        for arguments in calls:
            before = await r.definitions()
            result = await r.call(DISCOVERY, arguments)
            out.append((arguments, result, before, await r.definitions()))
    return out
