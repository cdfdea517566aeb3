"""``mcp-fleet capture``: snapshot a real MCP server's tools into a fleet spec.

The capture speaks JSON-RPC itself over the SDK's stdio and Streamable HTTP transports
(legacy ``initialize`` handshake, the era every server speaks), so each tool definition is
kept exactly as the server sent it: a ``readOnlyHint`` of ``"true"``, an unknown key, a
``null`` default. Its requests are shaped as the SDKs send them (no ``params`` member
rather than ``"params": null``, which strict servers drop). It follows ``nextCursor``
through every page, and optionally records the results of a few calls. The spec it writes holds one server whose tools are ``wire``
definitions; ``raw = true`` is set when the SDK could not send them byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import math
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
from mock_servers._vocabulary import DOMAINS, VERBS

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
        """Send a request and wait for its answer.

        A request without params carries no ``params`` member, as the SDKs send it: some
        servers (the official ``everything`` server) silently drop ``"params": null``.

        Raises:
            CaptureError: the server answered with an error, the transport failed, or no
                answer came within the time-out (the message says what was sent and what
                came back meanwhile).
        """
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        self._next_id += 1
        request_id = self._next_id
        if params is None:
            message = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method)
        else:
            message = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params)
        await self.write.send(SessionMessage(message, self._metadata()))
        meanwhile: list[str] = []
        try:
            with anyio.fail_after(self.timeout):
                while True:
                    item = await self.read.receive()
                    if isinstance(item, Exception):
                        raise CaptureError(f"{method}: the transport failed: {item}")
                    incoming = item.message
                    if isinstance(incoming, types.JSONRPCError) and incoming.id == request_id:
                        raise CaptureError(
                            f"{method}: the server answered error {incoming.error.code}: {incoming.error.message}"
                        )
                    if isinstance(incoming, types.JSONRPCResponse) and incoming.id == request_id:
                        return dict(incoming.result)
                    meanwhile.append(_described(incoming))
                    if isinstance(incoming, types.JSONRPCRequest):
                        await self._refuse(incoming)
        except TimeoutError:
            sent = message.model_dump_json(by_alias=True, exclude_unset=True)
            raise CaptureError(
                f"{method}: the server did not answer within {self.timeout:g} s; sent {_cut(sent)}; "
                f"{_summary(meanwhile)}"
            ) from None

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


def _described(message: Any) -> str:
    """One message the server sent while a request waited, in a few words."""
    method = getattr(message, "method", None)
    if hasattr(message, "id") and method is not None:
        return f"request {method}"
    if method is not None:
        return str(method)
    if hasattr(message, "error"):
        return f"error {message.error.code} for id {message.id!r}"
    return f"a result for id {getattr(message, 'id', None)!r}"


def _summary(messages: Sequence[str]) -> str:
    if not messages:
        return "it sent nothing back meanwhile"
    counts: dict[str, int] = {}
    for text in messages:
        counts[text] = counts.get(text, 0) + 1
    listed = ", ".join(f"{text} (x{n})" if n > 1 else text for text, n in list(counts.items())[:10])
    more = f", and {len(counts) - 10} other kinds" if len(counts) > 10 else ""
    return f"meanwhile it sent: {listed}{more}"


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


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


#: Words real servers use for a domain's things that its vocabulary does not generate.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "code_hosting": ("repo", "git", "gist", "pr", "diff", "fork", "tag", "merge", "code"),
    "issue_tracker": ("ticket", "bug", "epic", "story", "sprint", "backlog", "jira", "linear", "board"),
    "browser": ("browser", "url", "click", "navigate", "screenshot", "element", "selector", "scroll", "dom"),
    "data_platform": ("sql", "query", "warehouse", "column", "row", "schema", "bigquery", "snowflake"),
    "chat": ("thread", "dm", "slack", "conversation", "emoji", "mention"),
    "cloud": ("vm", "ec2", "s3", "lambda", "cluster", "container", "pod", "kubernetes", "region", "volume"),
    "docs": ("doc", "wiki", "notion", "confluence", "comment", "content"),
    "calendar": ("meeting", "invitation", "slot", "availability", "agenda", "schedule"),
    "crm": ("lead", "account", "opportunity", "customer", "salesforce", "hubspot"),
    "monitoring": ("log", "metric", "uptime", "oncall", "latency", "error", "span"),
}
#: Words of tool names that say what is done, not to what: no domain evidence.
_ACTION_WORDS = frozenset(
    {"all", "and", "by", "do", "fetch", "find", "for", "from", "in", "into", "make", "of", "on", "read"}
    | {"run", "set", "show", "the", "to", "with", "write", "new", "my", "me", "i", "am", "who", "is"}
)


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    """The words of a tool name or description: camelCase, snake_case and kebab-case split, singular."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [_singular(w) for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def _domain_words(key: str) -> frozenset[str]:
    domain = DOMAINS[key]
    words = {w for e in domain.entities for w in _words(f"{e.one} {e.many}")}
    # An action's name is its prefix, a verb, then what it acts on: the last part is evidence.
    words |= {w for a in domain.actions for w in _words(a.name.removeprefix(domain.prefix))[1:]}
    words |= set(_words(domain.prefix)) | {_singular(w) for w in _SYNONYMS.get(key, ())}
    return frozenset(words - _ACTION_WORDS - {_singular(v) for verb in VERBS for v in verb.split("_")})


def guess_domain(tools: Sequence[Any]) -> str:
    """The vocabulary domain whose things the tools are about (results are shaped by it).

    Only the nouns count: the words of each tool's name (and, at a quarter of the weight,
    of its description) that name a domain's entities, its own actions' objects or the
    words real servers use for them (``ticket`` for an issue tracker). Verbs (``get``,
    ``close``, ``search``…) are left out: every domain has them. With no evidence at all
    the guess is ``code_hosting``.
    """
    vocabularies = {key: _domain_words(key) for key in DOMAINS}
    scores = dict.fromkeys(DOMAINS, 0.0)
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        for text, weight in ((tool.get("name"), 1.0), (tool.get("description"), 0.25)):
            if not isinstance(text, str):
                continue
            for word in _words(text):
                for key, vocabulary in vocabularies.items():
                    if word in vocabulary:
                        scores[key] += weight
    best = max(scores.values())
    if best <= 0:
        return "code_hosting"
    return next(key for key, score in scores.items() if score == best)


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
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="also record N (0 or more) read-only calls that need no arguments",
    )
    parser.add_argument("--allow-writes", action="store_true", help="let --call call tools not marked read-only")
    parser.add_argument(
        "--append", action="store_true", help="add the server to FILE's fleet instead of replacing FILE"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help=f"per request, above 0 and at most {MAX_TIMEOUT:g} (default 30; a server started with npx -y "
        "may first download itself)",
    )
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
    problem = _bad_option(out, args.timeout, args.sample)
    if problem is not None:
        _complain(problem)
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
    try:
        out.write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise CaptureError(f"--out {out}: could not write the captured spec: {exc.strerror or exc}") from None
    raw = " (raw: some definitions need the raw JSON-RPC server)" if server.get("raw") else ""
    recorded = sum(len(v) for v in captured.samples.values())
    sys.stdout.write(
        f"Captured {len(captured.tools)} tools in {len(captured.pages)} pages from {captured.server_name or 'the server'}"
        f" as server {server['id']!r}{raw}; {recorded} recorded calls.\nWrote {out}; serve it with: mcp-fleet serve {out}\n"
    )
    return 0


#: The longest --timeout accepted: a day (a larger number is a mistake, and far larger ones overflow the clock).
MAX_TIMEOUT = 86_400.0


def _bad_option(out: Path, timeout: float, sample: int) -> str | None:
    """What is wrong with the options, checked before the server is started; None when nothing is."""
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        return f"--timeout {timeout:g}: expected a number of seconds above 0 and at most {MAX_TIMEOUT:g}"
    if sample < 0:
        return f"--sample {sample}: expected a number of calls, 0 or more"
    if out.suffix.lower() != ".json":
        return f"--out {out}: captured specs are JSON (TOML has no null)"
    if out.is_dir():
        return f"--out {out}: is a directory; name the spec file to write"
    folder = out.parent
    if not folder.is_dir():
        return f"--out {out}: the directory {folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"--out {out}: the directory {folder} is not writable"
    return None


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
