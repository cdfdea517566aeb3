"""``mcp-fleet capture``: snapshot a real MCP server's tools into a fleet spec.

The capture speaks JSON-RPC itself over the SDK's stdio and Streamable HTTP transports
(legacy ``initialize`` handshake, the era every server speaks), so each tool definition is
kept exactly as the server sent it: a ``readOnlyHint`` of ``"true"``, an unknown key, a
``null`` default. It follows ``nextCursor`` through every page, and optionally records the
results of a few calls. The spec it writes holds one server whose tools are ``wire``
definitions; ``raw = true`` is set when the SDK could not send them byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from mock_servers._errors import CaptureError, SpecError
from mock_servers._spec import SERVER_ID
from mock_servers._spec_reader import spec_from_dict
from mock_servers._vocabulary import DOMAINS

__all__ = ["Captured", "add_parser", "capture", "capture_command", "captured_spec"]

MAX_PAGES = 10_000


@dataclass
class Captured:
    """What a capture saw: the server's name, the tools page by page, and recorded calls."""

    server_name: str
    protocol_version: str
    pages: list[list[Any]] = field(default_factory=list)
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def tools(self) -> list[Any]:
        return [tool for page in self.pages for tool in page]


class _RawSession:
    """JSON-RPC requests over an SDK transport's message streams, results kept as sent."""

    def __init__(self, read: Any, write: Any, timeout: float, stamp_version: bool) -> None:
        self.read = read
        self.write = write
        self.timeout = timeout
        self.stamp_version = stamp_version
        self.version: str | None = None
        self._next_id = 0

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        self._next_id += 1
        request_id = self._next_id
        message = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params)
        await self.write.send(SessionMessage(message, self._metadata()))
        with anyio.fail_after(self.timeout):
            while True:
                item = await self.read.receive()
                if isinstance(item, Exception):
                    raise CaptureError(f"{method}: the transport failed: {item}")
                incoming = item.message
                if isinstance(incoming, types.JSONRPCRequest):
                    await self._refuse(incoming)
                elif isinstance(incoming, types.JSONRPCError) and incoming.id == request_id:
                    raise CaptureError(
                        f"{method}: the server answered error {incoming.error.code}: {incoming.error.message}"
                    )
                elif isinstance(incoming, types.JSONRPCResponse) and incoming.id == request_id:
                    return dict(incoming.result)

    async def notify(self, method: str) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        await self.write.send(SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=method), self._metadata()))

    def _metadata(self) -> Any:
        from mcp.shared.message import ClientMessageMetadata

        if self.stamp_version and self.version is not None:
            return ClientMessageMetadata(headers={"mcp-protocol-version": self.version})
        return None

    async def _refuse(self, request: Any) -> None:
        # A server may ask the client things (ping, roots, sampling); a capture offers nothing.
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        if request.method == "ping":
            reply: Any = types.JSONRPCResponse(jsonrpc="2.0", id=request.id, result={})
        else:
            error = types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"{request.method} is not offered")
            reply = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        await self.write.send(SessionMessage(reply, self._metadata()))


@contextlib.asynccontextmanager
async def _connect(
    command: Sequence[str], url: str | None, headers: Mapping[str, str]
) -> AsyncIterator[tuple[Any, Any]]:
    if url is not None:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # The SDK's own default: a server may hold a response stream open for minutes.
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(headers=dict(headers), timeout=timeout) as client,
            streamable_http_client(url, http_client=client) as (read, write),
        ):
            yield read, write
        return
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    # The command runs as from the user's shell, with the whole environment (tokens included).
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        yield read, write


async def capture(
    command: Sequence[str] = (),
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    calls: Sequence[tuple[str, dict[str, Any]]] = (),
    sample: int = 0,
    allow_writes: bool = False,
    timeout: float = 30.0,
    progress: Callable[[str], None] = lambda _: None,
) -> Captured:
    """List every tool of a server (a stdio ``command`` or a Streamable HTTP ``url``).

    ``calls`` are made and recorded after listing, as are up to ``sample`` calls with no
    arguments to read-only tools that require none. A tool not marked ``readOnlyHint:
    true`` is only called with ``allow_writes``.

    Raises:
        CaptureError: the server could not be reached, failed, looped or was refused a call.
    """
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    if not command and url is None:
        raise CaptureError("give a command to run a stdio server, or a URL")
    try:
        async with _connect(command, url, headers or {}) as (read, write):
            session = _RawSession(read, write, timeout, stamp_version=url is not None)
            info = {"name": "mcp-fleet-capture", "version": "1.0.0"}
            params = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": info}
            hello = await session.request("initialize", params)
            session.version = str(hello.get("protocolVersion", LATEST_HANDSHAKE_VERSION))
            await session.notify("notifications/initialized")
            server = hello.get("serverInfo")
            name = str(server.get("name", "")) if isinstance(server, Mapping) else ""
            captured = Captured(name, session.version)
            await _list_every_page(session, captured, progress)
            for tool_name, arguments in _planned_calls(captured, calls, sample, allow_writes):
                progress(f"calling {tool_name} {json.dumps(arguments)}")
                params = {"name": tool_name, "arguments": arguments}
                result = await session.request("tools/call", params)
                captured.samples.setdefault(tool_name, []).append({"arguments": arguments, "result": result})
            return captured
    except Exception as exc:
        raise _explained(exc, timeout) from None


def _explained(error: BaseException, timeout: float) -> CaptureError:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, CaptureError):
        return error
    if isinstance(error, TimeoutError):
        return CaptureError(f"the server did not answer within {timeout:g} s")
    if isinstance(error, anyio.EndOfStream | anyio.ClosedResourceError | anyio.BrokenResourceError):
        return CaptureError("the server closed the connection")
    if isinstance(error, OSError):
        return CaptureError(f"could not start or reach the server: {error}")
    return CaptureError(f"could not talk to the server: {type(error).__name__}: {error}")


async def _list_every_page(session: _RawSession, captured: Captured, progress: Callable[[str], None]) -> None:
    cursor: str | None = None
    seen: set[str] = set()
    while len(captured.pages) < MAX_PAGES:
        page = await session.request("tools/list", {"cursor": cursor} if cursor is not None else None)
        tools = page.get("tools")
        if not isinstance(tools, list):
            raise CaptureError(f"tools/list page {len(captured.pages)} has no list of tools: {json.dumps(page)[:200]}")
        captured.pages.append(tools)
        progress(f"page {len(captured.pages) - 1}: {len(tools)} tools ({len(captured.tools)} so far)")
        cursor = page.get("nextCursor")
        if cursor is None or cursor == "":
            return
        if not isinstance(cursor, str) or cursor in seen:
            raise CaptureError(f"tools/list handed out the cursor {cursor!r} again: the listing loops")
        seen.add(cursor)
    raise CaptureError(f"tools/list went on for more than {MAX_PAGES} pages")


def _planned_calls(
    captured: Captured, calls: Sequence[tuple[str, dict[str, Any]]], sample: int, allow_writes: bool
) -> list[tuple[str, dict[str, Any]]]:
    tools = {t["name"]: t for t in captured.tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
    planned = list(calls)
    for name, _ in planned:
        if name not in tools:
            raise CaptureError(f"--call {name}: the server lists no tool of that name")
        if not allow_writes and not _read_only(tools[name]):
            raise CaptureError(
                f"--call {name}: the tool is not marked readOnlyHint: true; pass --allow-writes to call it"
            )
    for name, tool in tools.items():
        if sample <= 0:
            break
        schema = tool.get("inputSchema")
        needs = schema.get("required") if isinstance(schema, dict) else None
        if _read_only(tool) and not needs and all(name != n for n, _ in planned):
            planned.append((name, {}))
            sample -= 1
    return planned


def _read_only(tool: Mapping[str, Any]) -> bool:
    annotations = tool.get("annotations")
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


# ---------------------------------------------------------------------------------------------
# The spec


def captured_spec(captured: Captured, *, server_id: str | None = None, domain: str | None = None) -> dict[str, Any]:
    """A fleet spec (plain data) serving what was captured, as one server.

    Raises:
        CaptureError: ``server_id`` is not a valid server id, or ``domain`` is unknown.
    """
    sid = server_id or _server_id(captured.server_name)
    if not SERVER_ID.fullmatch(sid):
        raise CaptureError(f"server id {sid!r}: use 1 to 64 ASCII letters, digits, '.', '-' or '_'")
    if domain is not None and domain not in DOMAINS:
        raise CaptureError(f"domain {domain!r}: use one of {', '.join(sorted(DOMAINS))}")
    tools = captured.tools
    first = captured.pages[0] if captured.pages else []
    page_size = len(first) if len(captured.pages) > 1 else max(1, len(tools))
    entries: list[dict[str, Any]] = []
    for tool in tools:
        entry: dict[str, Any] = {"wire": tool}
        name = tool.get("name") if isinstance(tool, dict) else None
        if (
            isinstance(name, str)
            and name in captured.samples
            and not any(e["wire"].get("name") == name for e in entries)
        ):
            entry["samples"] = captured.samples[name]
        entries.append(entry)
    server: dict[str, Any] = {
        "id": sid,
        "domain": domain or guess_domain(tools),
        "tool_count": 0,
        "page_size": max(1, page_size),
        "tools": entries,
    }
    if not all(_sdk_sends_exactly(t) for t in tools):
        server["raw"] = True
    return {"seed": 0, "servers": [server]}


def _server_id(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:64]
    return cleaned or "captured"


def _sdk_sends_exactly(tool: Any) -> bool:
    """Whether the SDK's server would send this definition unchanged (else it needs a raw server)."""
    import mcp_types as types
    from pydantic import ValidationError

    if not isinstance(tool, dict):
        return False
    try:
        model = types.Tool.model_validate(tool)
    except ValidationError:
        return False
    return bool(model.model_dump(by_alias=True, mode="json", exclude_none=True) == tool)


def guess_domain(tools: Sequence[Any]) -> str:
    """The vocabulary domain whose words the tool names share most (results are shaped by it)."""
    words = [w for t in tools if isinstance(t, dict) for w in re.split(r"[^a-z]+", str(t.get("name", "")).lower()) if w]
    best, best_score = "code_hosting", 0
    for key, domain in DOMAINS.items():
        vocabulary = {w for e in domain.entities for w in f"{e.one} {e.many}".lower().split()}
        vocabulary |= {w for a in domain.actions for w in a.name.split("_")}
        score = sum(w in vocabulary for w in words)
        if score > best_score:
            best, best_score = key, score
    return best


# ---------------------------------------------------------------------------------------------
# The command


def add_parser(sub: Any) -> None:
    """Add ``capture`` to the ``mcp-fleet`` subcommands."""
    import argparse

    parser = sub.add_parser(
        "capture",
        help="snapshot a real server's tools into a fleet spec",
        description=(
            "List every tool of a real MCP server, following every page, and write a fleet spec that serves "
            "exactly those definitions. stdio: mcp-fleet capture --out FILE -- CMD ARGS...; "
            "Streamable HTTP: mcp-fleet capture --url URL --out FILE."
        ),
    )
    parser.add_argument("--out", required=True, metavar="FILE", help="the spec to write (.json)")
    parser.add_argument("--url", help="a Streamable HTTP endpoint instead of a command")
    parser.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'", help="HTTP header (repeatable)"
    )
    parser.add_argument(
        "--id", dest="server_id", metavar="ID", help="server id in the spec (default: the server's name)"
    )
    parser.add_argument(
        "--domain", choices=sorted(DOMAINS), help="shapes made-up results (default: guessed from names)"
    )
    parser.add_argument(
        "--call",
        action="append",
        default=[],
        metavar="TOOL[=JSON]",
        help="call this tool with these arguments and record the result to replay (repeatable)",
    )
    parser.add_argument(
        "--sample", type=int, default=0, metavar="N", help="also record N read-only calls that need no arguments"
    )
    parser.add_argument("--allow-writes", action="store_true", help="let --call call tools not marked read-only")
    parser.add_argument(
        "--append", action="store_true", help="add the server to FILE's fleet instead of replacing FILE"
    )
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per request (default 30)")
    parser.add_argument(
        "server_command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the stdio server to run"
    )


def capture_command(args: Any) -> int:
    """Run ``mcp-fleet capture`` with parsed arguments; returns the exit status."""
    command = list(args.server_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(command) == bool(args.url):
        _complain("give either -- CMD ARGS... (stdio) or --url URL")
        return 2
    out = Path(args.out)
    if out.suffix.lower() != ".json":
        _complain(f"--out {out}: captured specs are JSON (TOML has no null)")
        return 2
    try:
        calls = [_parse_call(text) for text in args.call]
        headers = dict(_parse_header(text) for text in args.header)
    except ValueError as exc:
        _complain(str(exc))
        return 2

    captured = anyio.run(
        lambda: capture(
            command,
            url=args.url,
            headers=headers,
            calls=calls,
            sample=args.sample,
            allow_writes=args.allow_writes,
            timeout=args.timeout,
            progress=_complain,
        )
    )
    spec = captured_spec(captured, server_id=args.server_id, domain=args.domain)
    server = spec["servers"][0]
    if args.append and out.exists():
        spec = _merged(out, spec)
    spec_from_dict(spec, source=str(out))  # what is written, serve accepts
    out.write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    raw = " (raw: some definitions need the raw JSON-RPC server)" if server.get("raw") else ""
    recorded = sum(len(v) for v in captured.samples.values())
    sys.stdout.write(
        f"Captured {len(captured.tools)} tools in {len(captured.pages)} pages from {captured.server_name or 'the server'}"
        f" as server {server['id']!r}{raw}; {recorded} recorded calls.\nWrote {out}; serve it with: mcp-fleet serve {out}\n"
    )
    return 0


def _complain(line: str) -> None:
    # Progress and usage errors go to stderr, so stdout carries only the summary.
    sys.stderr.write(f"mcp-fleet capture: {line}\n")
    sys.stderr.flush()


def _merged(path: Path, spec: dict[str, Any]) -> dict[str, Any]:
    try:
        existing = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError(str(path), "", "a JSON fleet spec to append to", str(exc)) from None
    if not isinstance(existing, dict) or not isinstance(existing.get("servers"), list):
        raise SpecError(str(path), "servers", "a list of servers to append to", repr(existing)[:80])
    server = spec["servers"][0]
    servers = [s for s in existing["servers"] if not (isinstance(s, dict) and s.get("id") == server["id"])]
    return {**existing, "servers": [*servers, server]}


def _parse_call(text: str) -> tuple[str, dict[str, Any]]:
    name, _, raw = text.partition("=")
    try:
        arguments = json.loads(raw) if raw else {}
    except ValueError:
        arguments = None
    if not name or not isinstance(arguments, dict):
        raise ValueError(f"--call {text!r}: expected TOOL or TOOL={{json object of arguments}}")
    return name, arguments


def _parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise ValueError(f"--header {text!r}: expected 'Name: value'")
    return name.strip(), value.strip()
