"""Defects of the execution gate (GATE-*), one function each.

They wrap :meth:`AdaptiveToolset.call` (what the gate answers) or
:meth:`Connection.call` (what a server's answer becomes), so that the catalog, the
selection and the definitions behind them stay conformant.
"""

from __future__ import annotations

from typing import Any

from reference_impl import ToolResult, _bounds, _connections, _stdio
from reference_impl._discovery import DISCOVERY_TOOL
from reference_impl._toolset import AdaptiveToolset
from tests.conformance.defects._patches import _refused_by_gate, _swap
from tests.conformance.defects._registry import defect

__all__: list[str] = []


@defect("GATE-2.1", "the refusal of an inactive tool does not mention the discovery tool")
def refusal_without_discovery_hint() -> None:
    """A refusal says the tool is not active, and nothing about how to activate it."""
    original = AdaptiveToolset.call

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        if _refused_by_gate(self, name):
            return _connections.error_result(f"Tool {name!r} is not available.")
        return await original(self, name, arguments)

    _swap(AdaptiveToolset, "call", call)


@defect("GATE-3.1", "tools discovery activates are listed but the gate refuses them")
def discovered_tools_not_executable() -> None:
    """Discovery activates a tool for the definitions; the gate knows only the first round."""
    original = AdaptiveToolset._activate

    def _activate(self: AdaptiveToolset, i: int) -> None:
        original(self, i)
        del self._active_by_name[self.catalog.entries[i].exposed_name]

    _swap(AdaptiveToolset, "_activate", _activate)


@defect("GATE-4.1", "a refusal comes back without the error flag")
def refusal_without_error_flag() -> None:
    """The gate refuses with a message but ``isError: false``: the agent takes the refusal
    for the tool's output. (A refusal with the flag and no message breaks the result schema,
    which PRO-6 judges before any GATE check.)"""
    original = AdaptiveToolset.call

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        result = await original(self, name, arguments)
        return {**result, "isError": False} if _refused_by_gate(self, name) else result

    _swap(AdaptiveToolset, "call", call)


@defect("GATE-4.2", "a tool call that fails on its way comes back without the error flag")
def failure_reported_as_success() -> None:
    """A JSON-RPC error or a dropped connection comes back as a result with its message and
    ``isError: false``. (The server's own results pass unchanged, error flag included: to
    change those is CAT-4.4's defect.)"""
    original = _connections.Connection.call

    async def call(self: _connections.Connection, name: str, arguments: Any) -> dict[str, Any]:
        result = await original(self, name, arguments)
        text = next((str(block.get("text", "")) for block in result.get("content") or []), "")
        failed = text.startswith(f"calling {name!r} on server {self.config.id!r} failed:")
        return {**result, "isError": False} if result["isError"] and failed else dict(result)

    _swap(_connections.Connection, "call", call)


# Runs (by id of their toolset) that gave up after an error result.
_ABORTED: set[int] = set()


def _abort_after(refused: bool) -> None:
    """After a refused call (``refused``) or a failed one, every later call of the run fails."""
    original = AdaptiveToolset.call

    async def call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        if id(self) in _ABORTED:
            return _connections.error_result("this run was aborted after an earlier tool call went wrong")
        result = await original(self, name, arguments)
        if result["isError"] and name != DISCOVERY_TOOL and _refused_by_gate(self, name) == refused:
            _ABORTED.add(id(self))
        return result

    _swap(AdaptiveToolset, "call", call)


@defect("GATE-4.3", "a failed tool call aborts the run: every later call fails")
def run_aborts_after_a_failure() -> None:
    _abort_after(refused=False)


@defect("GATE-4.3", "a refused call aborts the run: every later call fails")
def run_aborts_after_a_refusal() -> None:
    _abort_after(refused=True)


@defect("GATE-4.3", "a JSON-RPC error from a server ends its connection: its later calls fail")
def connection_lost_after_a_server_error() -> None:
    """The error result comes back as it should; the server's other tools are gone with it."""
    original = _connections.Connection.call

    async def call(self: _connections.Connection, name: str, arguments: Any) -> ToolResult:
        result = await original(self, name, arguments)
        if result["isError"] and "MCP error" in str(result.get("content")):
            self._client = None
        return result

    _swap(_connections.Connection, "call", call)


@defect("GATE-4.4", "callTimeoutSeconds is ignored: a slow tool call is waited for")
def call_time_out_ignored() -> None:
    """Every MCP tool call is waited for as long as the server takes."""
    original = _connections.Connection.__init__

    def __init__(self: _connections.Connection, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.call_timeout = None

    _swap(_connections.Connection, "__init__", __init__)


@defect("GATE-4.5", "a lone surrogate in a call's arguments is written to the server and loses it")
def surrogate_loses_the_server() -> None:
    """Arguments go out unchecked, and a stdio link whose writer fails on them gives up, as the
    MCP SDK's own writers do (over HTTP the SDK gives up by itself)."""
    _swap(_connections, "unencodable", lambda value, path="$": None)

    async def _refuse(self: _stdio._Link, message: Any, error: Exception) -> None:
        await self.to_session.aclose()

    _swap(_stdio._Link, "_refuse", _refuse)


@defect("GATE-4.5", "a call whose arguments hold a lone surrogate is answered with a success it never sent")
def surrogate_call_reported_done() -> None:
    """The call is dropped, as the reference drops it, but reported as done."""
    call = _connections.Connection.call

    async def wrapped(self: _connections.Connection, name: str, arguments: Any) -> ToolResult:
        if _bounds.unencodable(arguments, "arguments") is not None:
            return {"content": [{"type": "text", "text": "Done."}], "isError": False}
        return await call(self, name, arguments)

    _swap(_connections.Connection, "call", wrapped)
