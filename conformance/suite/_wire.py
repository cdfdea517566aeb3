"""How the suite talks to the SUT: run parameters, definition lists, results, findings.

Everything here works on the wire shapes of the driver protocol (``run.open`` params,
``{name, description, inputSchema}`` definitions, ``{content, isError,
structuredContent}`` results), so that checks read the same whether the SUT runs in this
process or behind a driver.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

from conformance._errors import Inconclusive, Nonconformance, OutcomeError
from conformance._sut import Sut
from conformance._wire_types import Definition, JsonObject, OpenParams, ServerConfig, ToolResult
from mock_servers import ListedTool

__all__ = [
    "DISCOVERY",
    "Definition",
    "activated",
    "by_name",
    "base_tools",
    "catalog",
    "fail",
    "mcp_definitions",
    "named_in",
    "names",
    "open_params",
    "portable",
    "qualified",
    "refusal_or",
    "result_text",
    "run",
    "structured",
]

_T = TypeVar("_T")

DISCOVERY: Final = "search_mcp_tools"
#: Ledger fields that change from run to run (processes, clocks, session ids).
_VOLATILE: Final = frozenset({"pid", "ts", "seq", "sessionId"})


def run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run one example's async body in a fresh event loop."""
    return asyncio.run(coro)


def base_tools(count: int, prefix: str = "base") -> list[Definition]:
    """``count`` non-MCP tool definitions with names no MCP tool can take."""
    return [
        {
            "name": f"{prefix}_{i}",
            "description": f"Built-in helper number {i}.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
        for i in range(count)
    ]


def qualified(server_id: str, name: str) -> str:
    return f"{server_id}__{name}"


def open_params(
    servers: Sequence[ServerConfig],
    base: Sequence[Definition] = (),
    user: str = "",
    system: str = "",
) -> OpenParams:
    """``run.open`` params."""
    return {"servers": list(servers), "baseTools": list(base), "userMessage": user, "systemPrompt": system}


def names(defs: Iterable[Definition]) -> list[str]:
    return [str(d["name"]) for d in defs]


def by_name(defs: Iterable[Definition]) -> dict[str, Definition]:
    """The definitions of a list, keyed by name: what it holds, whatever its order. The order
    is DEF-4's to check; a check of another sentence that compared ordered lists would fail
    that sentence too for a host whose only fault is its order."""
    return {str(d["name"]): d for d in defs}


def mcp_definitions(defs: Sequence[Definition], base_names: Iterable[str]) -> list[Definition]:
    """The definitions that are neither base tools nor the discovery tool."""
    skip = set(base_names) | {DISCOVERY}
    return [d for d in defs if d["name"] not in skip]


def catalog(tools: Mapping[str, Sequence[ListedTool]]) -> dict[str, tuple[str, ListedTool]]:
    """Qualified name -> (server id, listed tool)."""
    return {qualified(sid, t["name"]): (sid, t) for sid, ts in tools.items() for t in ts}


def structured(result: ToolResult) -> JsonObject:
    """A result's ``structuredContent``, or ``{}``."""
    content = result.get("structuredContent")
    return dict(content) if isinstance(content, Mapping) else {}


def activated(result: ToolResult) -> list[str]:
    """The qualified names a discovery result reports as activated, in its order."""
    entries = structured(result).get("activated")
    if not isinstance(entries, list):
        return []
    return [str(e.get("name")) for e in entries if isinstance(e, Mapping)]


def result_text(result: ToolResult) -> str:
    """The texts of a result's text blocks, joined; a block of another type says nothing."""
    blocks = [c for c in result.get("content", []) if isinstance(c, Mapping) and c.get("type") == "text"]
    return " ".join(c["text"] for c in blocks if isinstance(c.get("text"), str))


def named_in(name: str, text: str) -> bool:
    """Whether ``text`` names ``name`` as a name of its own: no name character glued to either side."""
    return re.search(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])", text) is not None


def portable(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Ledger events without what changes between runs, for a finding's ``observed``."""
    return [{k: v for k, v in e.items() if k not in _VOLATILE} for e in events]


class Diagnosis(Protocol):
    """What a finding asks before it is made (:mod:`conformance.suite._eligibility`)."""

    def finding_or_inconclusive(self, sentences: Sequence[str]) -> Inconclusive | None:
        """The inconclusive outcome naming a clause the finding on ``sentences`` relies on
        that the SUT broke, or None."""

    def refusal_or_inconclusive(
        self, kind: str, sentences: Sequence[str] = (), params: OpenParams | None = None
    ) -> Inconclusive | None:
        """For a finding on a refused ``run.open`` (``params``, or the last sent): the
        inconclusive outcome naming the clause the refusal was for, or None."""


#: Asked before a finding is made, set per test by the suite's conftest.
diagnosis: Diagnosis | None = None


def fail(
    sentences: Sequence[str],
    message: str,
    *,
    expected: object = None,
    observed: object = None,
    case: Any = None,
    refused: tuple[OutcomeError, OpenParams | None] | None = None,
) -> Nonconformance | Inconclusive:
    """A finding on ``sentences`` (ids like ``"DSC-5.2"``), with what replays it; or, when
    `diagnosis` finds a clause the check relies on broken (for a finding on a run.open being
    ``refused``, with its params, the refusal first), the inconclusive outcome naming it."""
    if diagnosis is not None:
        if refused and (refused_for := diagnosis.refusal_or_inconclusive(refused[0].kind, sentences, refused[1])):
            return refused_for
        if (broken_first := diagnosis.finding_or_inconclusive(sentences)) is not None:
            return broken_first
    return Nonconformance(sentences, message, expected=expected, observed=observed, case=case)


async def refusal_or(sut: Sut, params: OpenParams) -> list[Definition] | OutcomeError:
    """Open a run and read its first definitions, or the refusal ``run.open`` gave."""
    try:
        async with sut.open(params) as r:
            return await r.definitions()
    except OutcomeError as exc:
        return exc
