"""Fleet throughput: the mock fleet beside a plain `MCPServer` serving the same tools, over HTTP and stdio.

Both sides serve the same generated tools (names, titles, descriptions, annotations) from one
process over Streamable HTTP, or from one process per server over stdio, and are driven by the
same official `mcp.Client` code in this process. Every measure is taken for both sides in the
same repeat, alternating which side goes first.

The plain server is `benchmarks._plain` (``python -m benchmarks._plain http|stdio CATALOG …``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._report import Sample, Table, fmt_seconds

if TYPE_CHECKING:
    from mcp import Client

    from mock_servers import FleetSpec

ROOT = Path(__file__).resolve().parent.parent

FLEET = "fleet"
PLAIN = "plain"
SIDES = (FLEET, PLAIN)


@dataclass(frozen=True, slots=True)
class Plan:
    """How big a run is."""

    http_servers: int  # servers of the `large` preset served over HTTP
    stdio_servers: int  # the first servers of `large`, one stdio process each
    repeats: int
    clients: int  # concurrent clients in the tools/call measure
    max_calls: int  # per repeat, across all clients
    max_seconds: float  # per repeat: the call loop stops at whichever bound comes first
    list_concurrency: int  # servers listed at once


FULL = Plan(
    http_servers=100, stdio_servers=20, repeats=3, clients=8, max_calls=1500, max_seconds=2.0, list_concurrency=20
)
CALLED_TOOLS = 10
SMOKE = Plan(http_servers=3, stdio_servers=2, repeats=1, clients=2, max_calls=20, max_seconds=0.25, list_concurrency=3)


# ---------------------------------------------------------------------------------------------
# Clients


async def _list_all(client: Client) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            return tools


@dataclass(eq=False)
class _Connection:
    """One client, entered and exited by its own task (anyio's rule for many connections)."""

    target: Any
    server_id: str
    client: Client | None = None
    tools: list[Any] = field(default_factory=list)
    error: BaseException | None = None

    def __post_init__(self) -> None:
        import anyio

        self.ready = anyio.Event()
        self.stop = anyio.Event()

    async def run(self) -> None:
        from mcp import Client

        try:
            async with Client(self.target, read_timeout_seconds=60) as client:
                self.tools = await _list_all(client)
                self.client = client
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:  # one failing server is reported, not fatal to the others
            self.error = exc
        finally:
            self.client = None
            self.ready.set()


@contextlib.asynccontextmanager
async def _connections(targets: list[tuple[str, Any]], limit: int) -> AsyncIterator[list[_Connection]]:
    """Connect to every target and list its tools, at most ``limit`` at a time; yields once all are listed."""
    import anyio

    limiter = anyio.CapacityLimiter(limit)
    connections = [_Connection(target, sid) for sid, target in targets]

    async with anyio.create_task_group() as tg:
        for connection in connections:
            tg.start_soon(_hold, limiter, connection)
        try:
            for connection in connections:
                await connection.ready.wait()
            failed = [c for c in connections if c.error is not None or c.client is None]
            if failed:
                raise RuntimeError(f"{failed[0].server_id}: could not connect and list: {failed[0].error!r}")
            yield connections
        finally:
            for connection in connections:
                connection.stop.set()


async def _hold(limiter: Any, connection: _Connection) -> None:
    """Run a connection, holding a slot of ``limiter`` until it has listed its tools."""
    import anyio

    await limiter.acquire_on_behalf_of(connection)
    released = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.run)
            await connection.ready.wait()
            limiter.release_on_behalf_of(connection)
            released = True
    finally:
        if not released:
            limiter.release_on_behalf_of(connection)


async def _call_rate(
    connections: list[_Connection], arguments: dict[str, list[tuple[str, dict[str, Any]]]], plan: Plan
) -> tuple[float, int]:
    """Calls per second of ``len(connections)`` clients calling at once, bounded in count and time."""
    import anyio

    # Warm up first: one untimed call of each tool per client (first calls build validators and caches).
    async def warm(connection: _Connection) -> None:
        assert connection.client is not None
        for name, args in arguments[connection.server_id]:
            await connection.client.call_tool(name, args)

    async with anyio.create_task_group() as tg:
        for connection in connections:
            tg.start_soon(warm, connection)

    state = {"left": plan.max_calls, "done": 0, "errors": 0}
    deadline = time.perf_counter() + plan.max_seconds

    async def worker(connection: _Connection) -> None:
        calls = arguments[connection.server_id]
        index = 0
        while state["left"] > 0 and time.perf_counter() < deadline:
            state["left"] -= 1
            assert connection.client is not None
            name, args = calls[index % len(calls)]
            index += 1
            result = await connection.client.call_tool(name, args)
            state["done"] += 1
            state["errors"] += bool(result.is_error)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for connection in connections:
            tg.start_soon(worker, connection)
    elapsed = time.perf_counter() - start
    if state["errors"]:
        raise RuntimeError(f"{state['errors']} of {state['done']} tool calls returned isError")
    return state["done"] / elapsed, state["done"]


# ---------------------------------------------------------------------------------------------
# Processes


@contextlib.contextmanager
def _process(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """A server process in its own process group, ended with its group whatever happens."""
    from mock_servers import ProcessGroup

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    with ProcessGroup.start(argv, cwd=ROOT, env=env, stderr=subprocess.DEVNULL) as group:
        yield group.popen


def _server_argv(side: str, spec: FleetSpec, catalog_path: Path, mode: str, server_id: str = "") -> list[str]:
    from mock_servers import spec_to_dict

    if side == FLEET:
        source = json.dumps(spec_to_dict(spec), separators=(",", ":"))
        if mode == "http":
            return [sys.executable, "-m", "mock_servers", "serve", source]
        sub = json.dumps(
            {"seed": spec.seed, "servers": [spec_to_dict(spec)["servers"][_index(spec, server_id)]]},
            separators=(",", ":"),
        )
        return [sys.executable, "-m", "mock_servers", "stdio", sub, "--server-id", server_id]
    return [sys.executable, "-m", "benchmarks._plain", mode, str(catalog_path), *([server_id] if server_id else [])]


def _index(spec: FleetSpec, server_id: str) -> int:
    return [s.id for s in spec.servers].index(server_id)


# ---------------------------------------------------------------------------------------------
# One repeat of each transport


@dataclass
class _Results:
    samples: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)

    def add(self, transport: str, measure: str, side: str, value: float) -> None:
        self.samples.setdefault((transport, measure, side), []).append(value)

    def sample(self, transport: str, measure: str, side: str) -> Sample:
        return Sample(tuple(self.samples[(transport, measure, side)]))


def _read_first_line(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline().decode(errors="replace").strip()
    if not line:
        raise RuntimeError(f"server process exited (status {process.poll()}) before printing its addresses")
    data: dict[str, Any] = json.loads(line)
    return data


async def _http_repeat(
    side: str, spec: FleetSpec, catalog_path: Path, calls: dict[str, list[tuple[str, dict[str, Any]]]], plan: Plan
) -> dict[str, float]:
    import anyio
    from mcp import Client

    argv = _server_argv(side, spec, catalog_path, "http")
    start = time.perf_counter()
    with _process(argv) as process:
        info = await anyio.to_thread.run_sync(_read_first_line, process)
        urls: dict[str, str] = info["servers"]
        first = spec.servers[0].id
        async with Client(urls[first]) as client:
            await client.list_tools()
        started = time.perf_counter() - start

        start = time.perf_counter()
        targets = [(s.id, urls[s.id]) for s in spec.servers]
        async with _connections(targets, plan.list_concurrency) as connections:
            listed = time.perf_counter() - start
            _check_listing(side, spec, connections)
        step = max(1, len(spec.servers) // plan.clients)
        chosen = [spec.servers[(i * step) % len(spec.servers)].id for i in range(plan.clients)]
        callers = [(sid, urls[sid]) for sid in chosen]
        async with _connections(callers, plan.clients) as connections:
            rate, _ = await _call_rate(connections, calls, plan)
    return {"start": started, "list": listed, "calls": rate}


async def _stdio_repeat(
    side: str, spec: FleetSpec, catalog_path: Path, calls: dict[str, list[tuple[str, dict[str, Any]]]], plan: Plan
) -> dict[str, float]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {"PYTHONPATH": str(ROOT)}
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        targets: list[tuple[str, Any]] = []
        for server in spec.servers:
            command, *args = _server_argv(side, spec, catalog_path, "stdio", server.id)
            params = StdioServerParameters(command=command, args=args, env=env, cwd=ROOT)
            targets.append((server.id, stdio_client(params, errlog=devnull)))
        start = time.perf_counter()
        async with _connections(targets, len(targets)) as connections:
            listed = time.perf_counter() - start
            _check_listing(side, spec, connections)
            rate, _ = await _call_rate(connections[: plan.clients], calls, plan)
    return {"start_list": listed, "calls": rate}


def _check_listing(side: str, spec: FleetSpec, connections: list[_Connection]) -> None:
    from mock_servers import generate_tools

    for connection in connections:
        expected = [t["name"] for t in generate_tools(spec.server(connection.server_id))]
        got = [t.name for t in connection.tools]
        if got != expected:
            raise RuntimeError(f"{side} {connection.server_id}: listed {len(got)} tools, expected {len(expected)}")


# ---------------------------------------------------------------------------------------------
# The section


def run_fleet(smoke: bool = False) -> list[Table]:
    from mock_servers import example_arguments, generate_tools, preset

    plan = SMOKE if smoke else FULL
    large = preset("large")
    http_spec = _subset(large, plan.http_servers)
    stdio_spec = _subset(large, plan.stdio_servers)
    catalog = {s.id: generate_tools(s) for s in http_spec.servers}
    # Each client cycles through CALLED_TOOLS of its server's tools, spread over the catalog.
    calls = {
        sid: [(t["name"], example_arguments(t)) for t in tools[:: max(1, len(tools) // CALLED_TOOLS)][:CALLED_TOOLS]]
        for sid, tools in catalog.items()
    }
    results = _Results()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp, _Interrupts().installed() as interrupts:
        catalog_path = Path(tmp) / "catalog.json"
        catalog_path.write_text(json.dumps(catalog), encoding="utf-8")
        for repeat in range(plan.repeats):
            order = SIDES if repeat % 2 == 0 else SIDES[::-1]
            for side in order:
                http = interrupts.repeat(_http_repeat, side, http_spec, catalog_path, calls, plan)
                for measure, value in http.items():
                    results.add("http", measure, side, value)
            for side in order:
                stdio = interrupts.repeat(_stdio_repeat, side, stdio_spec, catalog_path, calls, plan)
                for measure, value in stdio.items():
                    results.add("stdio", measure, side, value)
    return [_table(results, plan, http_spec, stdio_spec)]


class _Interrupts:
    """Ctrl-C during a repeat cancels it (so every client and process is closed) and then ends the run.

    Needed because the SDK's shielded client cleanup can absorb the cancellation asyncio uses for
    Ctrl-C, after which the run would carry on. A second Ctrl-C interrupts at once.
    """

    def __init__(self) -> None:
        self.count = 0
        self.task: Any = None
        self.loop: Any = None

    def handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.count > 1 or self.task is None:
            raise KeyboardInterrupt
        self.loop.call_soon_threadsafe(self.task.cancel)

    async def run(self, repeat: Callable[..., Awaitable[dict[str, float]]], *args: Any) -> dict[str, float]:
        import asyncio

        self.task, self.loop = asyncio.current_task(), asyncio.get_running_loop()
        try:
            return await repeat(*args)
        finally:
            self.task = self.loop = None

    def repeat(self, repeat: Callable[..., Awaitable[dict[str, float]]], *args: Any) -> dict[str, float]:
        """``anyio.run`` one repeat, raising KeyboardInterrupt after it if Ctrl-C was pressed."""
        import asyncio

        import anyio

        try:
            result = anyio.run(self.run, repeat, *args)
        except asyncio.CancelledError:
            if not self.count:
                raise
        if self.count:
            raise KeyboardInterrupt
        return result

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Interrupts]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self.handle)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


def _subset(spec: FleetSpec, count: int) -> FleetSpec:
    from mock_servers import spec_from_dict, spec_to_dict

    data = spec_to_dict(spec)
    data["servers"] = data["servers"][:count]
    return spec_from_dict(data, source=f"large[:{count}]")


MEASURES = (
    ("http", "start", "HTTP: start the process until it answers", False),
    ("http", "list", "HTTP: list every tool of every server", False),
    ("http", "calls", "HTTP: `tools/call` round trips", True),
    ("stdio", "start_list", "stdio: start every process and list every tool", False),
    ("stdio", "calls", "stdio: `tools/call` round trips", True),
)
GOAL = 1.5


def _table(results: _Results, plan: Plan, http_spec: FleetSpec, stdio_spec: FleetSpec) -> Table:
    table = Table(
        f"Fleet throughput: the mock fleet beside a plain MCPServer ({len(http_spec.servers)} servers over HTTP, "
        f"{len(stdio_spec.servers)} over stdio)",
        ["measure", "mock fleet", "plain MCPServer", "fleet ÷ plain (cost)", f"goal ≤ {GOAL}×"],
    )
    for transport, key, label, is_rate in MEASURES:
        fleet = results.sample(transport, key, FLEET)
        plain = results.sample(transport, key, PLAIN)
        if is_rate:
            cost = plain.median / fleet.median if fleet.median else float("inf")
            cells = [_show_rate(fleet), _show_rate(plain)]
            label = f"{label}, {plan.clients} clients at once"
        else:
            cost = fleet.median / plain.median if plain.median else float("inf")
            cells = [fleet.show(), plain.show()]
        table.rows.append([label, *cells, f"{cost:.2f}×", "met" if cost <= GOAL else "not met"])
    http_tools = sum(s.tool_count for s in http_spec.servers)
    table.notes += [
        f"{plan.repeats} repeats, the two sides alternating which goes first; one official `mcp.Client` per server "
        f"(2026-07-28 era), listing {plan.list_concurrency} servers at a time and following `nextCursor`; "
        f"{http_tools:,} tools over HTTP. Each calling client first calls {CALLED_TOOLS} of its server's tools once "
        "(untimed warm-up), then cycles through them with `example_arguments` and stops "
        f"after {plan.max_calls:,} calls or {fmt_seconds(plan.max_seconds)}, and every result is checked to be a "
        "success. For a rate the cost ratio is plain rate ÷ fleet rate, so above 1 always means the fleet is slower.",
        "HTTP start is from spawning the process until its first `tools/list` answers: for the fleet "
        "`mcp-fleet serve` generating the catalog, for the plain side one uvicorn process with one `MCPServer` "
        "app mounted per path, reading the same catalog from a file. stdio start runs all processes at once "
        "(`python -m mock_servers stdio` against `python -m benchmarks._plain stdio`), each ending with "
        "`os._exit` on close.",
        "Differences that remain: the plain server's input schemas come from Python signatures built from the "
        "fleet's schemas (same property names, types, enums, descriptions and required sets; optional properties "
        "become `anyOf [T, null]`, `date-time` formats are dropped) and arguments are checked by pydantic (lax) "
        "instead of `jsonschema`; its results carry text only, where the fleet adds `structuredContent`; and "
        "`MCPServer` answers `tools/list` in one page, where the fleet's servers page 50 tools at a time, so the "
        "fleet's listing makes twice the `tools/list` round trips. The fleet also decodes an opaque cursor and "
        "records each list and call in its ledger (a no-op without a ledger file).",
        "Reading the ratios: the plain HTTP process starts slower because `MCPServer` builds a pydantic argument "
        "model and its JSON Schema for every tool when it is added (10,000 here), where the fleet generates "
        "plain dictionaries; stdio start is mostly interpreter start and `import mcp` on both sides, with "
        "`MCPServer`'s imports and models the larger share. Listing and calls are measured through the official "
        "client in this one process, whose parsing and validation cost about as much per round trip as the "
        "servers' own work, so on two cores those ratios stay near 1 even where the servers differ. The one "
        "exception is stdio calls: each fleet result is made with Faker from a per-call seed (about 0.7 ms of "
        "CPU per call here, `ResultMaker.make`), which the plain server's one-line reply does not cost, and stdio, "
        "the cheapest transport, leaves that cost in plain view.",
    ]
    return table


def _show_rate(sample: Sample) -> str:
    median = sample.median
    return f"{median:,.0f} /s ±{100 * sample.spread:.0f}%"
