"""``mcp-fleet serve``: a fleet over Streamable HTTP, from this process or spread over several.

With one process the fleet is served here. With ``processes`` above 1 the servers are cut
into contiguous parts of about equal tool counts, each served by a fleet host process
(`FleetHost`) on its own port, and one endpoint list is printed for all of them. Given a
``port``, part ``i`` listens on ``port + i``, so every URL is known in advance
(`endpoint_urls`, which ``mcp-fleet config`` prints for clients).

SIGINT and SIGTERM stop serving: the fleets are removed (their sessions end in the
ledger), the host processes are closed and, should one not go, killed with its whole
process group.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import FrameType
from typing import TextIO

import anyio

from mock_servers._control import SESSION_IDLE_SECONDS, FleetUrls
from mock_servers._errors import FleetArgumentError
from mock_servers._ledger import Ledger
from mock_servers._spec import FleetSpec

__all__ = ["FLEET_NAME", "HOST", "endpoint_urls", "partition", "serve"]

#: The fleet name ``serve`` gives its fleet: the first segment of every URL path.
FLEET_NAME = "fleet"
HOST = "127.0.0.1"


def partition(spec: FleetSpec, processes: int) -> list[FleetSpec]:
    """The fleet cut, in order, into at most ``processes`` parts of about equal tool counts."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise FleetArgumentError(f"processes must be a positive integer, got {processes!r}")
    count = min(processes, len(spec.servers))
    weights = [s.tools_total + 1 for s in spec.servers]  # +1: a server costs something without tools
    total = sum(weights)
    parts: list[list[int]] = [[] for _ in range(count)]
    part, done = 0, 0
    for index, weight in enumerate(weights):
        # Move to the next part when this server's middle lies in a later share of the total,
        # or when the servers left are just enough to give every later part one.
        share = (2 * done + weight) * count // (2 * total)
        if parts[part] and (share > part or len(weights) - index <= count - 1 - part):
            part += 1
        parts[part].append(index)
        done += weight
    return [FleetSpec(servers=tuple(spec.servers[i] for i in part), seed=spec.seed) for part in parts]


def endpoint_urls(spec: FleetSpec, port: int, processes: int = 1) -> dict[str, str]:
    """Server id → the URL ``mcp-fleet serve --port PORT --processes N`` serves it at."""
    _check_ports(port, processes)
    return {
        server.id: f"http://{HOST}:{port + i}/{FLEET_NAME}/{server.id}/mcp"
        for i, part in enumerate(partition(spec, processes))
        for server in part.servers
    }


def _check_ports(port: int, processes: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise FleetArgumentError(f"port must be an integer from 0 to 65535, got {port!r}")
    if port and port + processes - 1 > 65535:
        raise FleetArgumentError(f"{processes} processes need ports {port} to {port + processes - 1}, past 65535")


class Stopped(BaseException):
    """SIGINT or SIGTERM arrived while serving (``signal`` is its name)."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal = signal_name


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into `Stopped` while inside, so every ``finally`` runs."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Stopped(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def serve(
    spec: FleetSpec,
    *,
    ledger_path: str | None = None,
    port: int = 0,
    processes: int = 1,
    session_idle_seconds: float = SESSION_IDLE_SECONDS,
    out: TextIO,
) -> str:
    """Serve until SIGINT or SIGTERM; returns the signal's name.

    Prints one JSON line first (``fleet``, ``pid``, ``servers``: id → URL, ``pids``: every
    serving process), then a table for people.

    Raises:
        FleetArgumentError: a port cannot be listened on, or ``port``/``processes`` are out of range.
    """
    _check_ports(port, processes)
    parts = partition(spec, processes)
    if port:
        from mock_servers._http import bind

        for i in range(len(parts)):
            bind(port + i).close()  # a port in use is one clear error now, not a host failing later
    ledger = Ledger(ledger_path, transport="http")
    ledger.record_or_raise("process_started", None, argv=["serve", f"--processes={len(parts)}"])
    reason = "stopped"
    try:
        with stop_on_signals():
            if len(parts) == 1:
                reason = anyio.run(_serve_here, spec, ledger, port, session_idle_seconds, out)
            else:
                _serve_spread(parts, ledger_path, port, session_idle_seconds, out)
    except Stopped as stopped:
        reason = stopped.signal
    finally:
        ledger.record("process_exit", None, code=0, reason=reason)
    return reason


async def _serve_here(spec: FleetSpec, ledger: Ledger, port: int, idle: float, out: TextIO) -> str:
    from mock_servers._http import run_host

    # Opened first, so a signal during start-up is kept and acted on once serving has begun.
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with run_host(port, session_idle_seconds=idle) as app:
            urls = await app.add_fleet(spec, ledger, name=FLEET_NAME)
            _announce(out, urls, [os.getpid()])
            async for signum in signals:
                return signal.Signals(signum).name
    raise AssertionError("unreachable")  # pragma: no cover


def _serve_spread(parts: list[FleetSpec], ledger_path: str | None, port: int, idle: float, out: TextIO) -> None:
    from mock_servers._host import FleetHost

    launched = []
    try:
        for i in range(len(parts)):
            launched.append(FleetHost.launch(port=port + i if port else 0, session_idle_seconds=idle))
        hosts = [one.connect() for one in launched]
        pool = ThreadPoolExecutor(len(hosts), thread_name_prefix="mcp-fleet-add")
        try:
            added = list(pool.map(lambda h, p: h.add_fleet(p, ledger_path, name=FLEET_NAME), hosts, parts))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        urls = FleetUrls(FLEET_NAME, {sid: url for part in added for sid, url in part.items()})
        _announce(out, urls, [os.getpid(), *(h.process.pid for h in hosts)])
        while True:
            signal.pause()
    finally:
        # Every host first gets the end of its stdin, so they all wind down side by side.
        for one in launched:
            one.group.close_stdin()
        for one in launched:
            one.close()


#: Servers listed in the table for people; every one is in the JSON line.
_TABLE_ROWS = 30


def _announce(out: TextIO, urls: FleetUrls, pids: list[int]) -> None:
    first = {"fleet": urls.fleet, "pid": pids[0], "servers": dict(urls), "pids": pids}
    lines = [json.dumps(first), f"Serving {len(urls)} MCP servers over Streamable HTTP (Ctrl-C to stop):"]
    shown = list(urls.items())[:_TABLE_ROWS]
    width = max(len(s) for s, _ in shown)
    lines += [f"  {server_id.ljust(width)}  {url}" for server_id, url in shown]
    if len(urls) > len(shown):
        # A short table also keeps a reader that stops after the JSON line from filling the pipe.
        lines.append(f"  … and {len(urls) - len(shown)} more (every URL is in the JSON line above)")
    out.write("\n".join(lines) + "\n")
    out.flush()
