"""The ledger: what happened to each mock server, as JSON lines in a file the caller chooses.

Every event is one JSON object on one line::

    {"seq": 3, "ts": 1733912345.123, "server": "github", "transport": "stdio", "pid": 4242,
     "event": "tool_called", "name": "create_issue", "arguments": {...}}

Several processes may append to the same file: each line is written with a single
``write`` on a descriptor opened with ``O_APPEND`` (under an advisory lock where the
platform has one), so lines never interleave. The order of lines is the order of events;
``seq`` counts the events written by one process.

Events (extra fields in brackets):

- ``process_started`` [argv] and ``process_exit`` [code, reason]: a stdio server process or
  an HTTP fleet process.
- ``fleet_added`` [fleet, servers] and ``fleet_removed`` [fleet]: an HTTP fleet host
  began or stopped serving a fleet.
- ``session_opened`` [era, protocolVersion, sessionId] and ``session_closed``: a client
  connection began or ended, where the transport lets a server see it (see
  `OBSERVABILITY`).
- ``initialized`` [protocolVersion]: the legacy handshake completed.
- ``discovered`` [protocolVersion]: a ``server/discover`` request (2026-07-28 era).
- ``tools_listed`` [page, cursor, count, nextCursor, protocolVersion]: one ``tools/list`` page served.
- ``tool_called`` [name, arguments, isError, protocolVersion]: a ``tools/call`` reached the server.
- ``fault`` [fault, ...]: a fault of the spec fired (``fault`` is the spec field's name).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["OBSERVABILITY", "Ledger", "LedgerView", "read_ledger"]

OBSERVABILITY = """\
What a server can observe about its clients, per transport and protocol era:

- stdio, either era: one process is one connection. The process starts
  (process_started, session_opened), the client closes its stdin (session_closed) and
  the process ends (process_exit; also recorded on SIGTERM and for the crash faults).
- in-memory, either era: each Client opens and closes one session (session_opened and
  session_closed, from the server lifespan).
- Streamable HTTP, legacy era (initialize handshake): session_opened at initialize and
  session_closed when the client sends DELETE on exit (the mcp Python client does; the
  TypeScript SDK 1.x client does not), when the fleet is removed, or after 30 idle minutes.
- Streamable HTTP, 2026-07-28 era: every request stands alone. A client that goes away
  leaves no trace, so there is no session_opened or session_closed; only the requests
  themselves (discovered, tools_listed, tool_called) are recorded.

A tools_listed event means the server's listing handler ran. Clients and the SDK also
list for their own purposes (an mcp 2.x client lists page 1 to find a tool's output
schema when it calls a tool it has not seen), so count listings with care.
"""

if sys.platform != "win32":  # pragma: no branch
    import fcntl


class _Writer:
    """The one appender of a ledger file in this process (shared by every `Ledger` on it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seq = 0
        self.lock = threading.RLock()  # re-entrant: a signal handler may record mid-write
        self.fd: int | None = None

    def append(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.seq += 1
            entry["seq"] = self.seq
            line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()
            with contextlib.suppress(OSError):
                if self.fd is None:
                    self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                if sys.platform != "win32":
                    fcntl.flock(self.fd, fcntl.LOCK_EX)
                    try:
                        os.write(self.fd, line)
                    finally:
                        fcntl.flock(self.fd, fcntl.LOCK_UN)
                else:  # pragma: no cover
                    os.write(self.fd, line)


_WRITERS: dict[str, _Writer] = {}
_WRITERS_LOCK = threading.Lock()


def _writer(path: Path) -> _Writer:
    key = str(path.resolve())
    with _WRITERS_LOCK:
        writer = _WRITERS.get(key)
        if writer is None:
            writer = _WRITERS[key] = _Writer(Path(key))
        return writer


class Ledger:
    """Appends events to a JSON-lines file; ``Ledger(None)`` records nothing.

    Every `Ledger` of one process on one file shares a single appender, so ``seq``
    numbers the events that process wrote.

    Args:
        path: the ledger file, created if missing.
        transport: the default ``transport`` field of events (``stdio``, ``http``, ``memory``).
    """

    def __init__(self, path: str | os.PathLike[str] | None, *, transport: str = "memory") -> None:
        self.path = Path(path) if path is not None else None
        self.transport = transport
        self._writer = _writer(self.path) if self.path is not None else None

    def for_transport(self, transport: str) -> Ledger:
        """A ledger writing to the same file with another default transport."""
        return Ledger(self.path, transport=transport)

    def record(self, event: str, server: str | None, **fields: Any) -> None:
        """Append one event. Never raises for a full disk or a vanished file: it is a test aid."""
        if self._writer is None:
            return
        entry: dict[str, Any] = {
            "seq": 0,
            "ts": round(time.time(), 6),
            "server": server,
            "transport": fields.pop("transport", self.transport),
            "pid": os.getpid(),
            "event": event,
        }
        entry.update(fields)
        self._writer.append(entry)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path) if self.path else None!r}, transport={self.transport!r})"


@dataclass(frozen=True, slots=True)
class LedgerView:
    """The events of a ledger file, with the queries tests ask most."""

    events: tuple[dict[str, Any], ...]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def of(self, event: str, server: str | None = None) -> list[dict[str, Any]]:
        """Events of one kind, optionally for one server."""
        return [e for e in self.events if e["event"] == event and (server is None or e["server"] == server)]

    def calls(self, server: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        """``tool_called`` events, optionally for one server and one tool name."""
        return [e for e in self.of("tool_called", server) if name is None or e.get("name") == name]

    def listed_pages(self, server: str) -> list[int]:
        """The page indexes of every ``tools/list`` the server answered, in order."""
        return [int(e["page"]) for e in self.of("tools_listed", server)]

    def faults(self, server: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        """``fault`` events, optionally for one server and one fault kind."""
        return [e for e in self.of("fault", server) if kind is None or e.get("fault") == kind]

    def sessions_open(self, server: str | None = None) -> list[dict[str, Any]]:
        """Sessions opened and not closed (matched per server and process, oldest first)."""
        open_: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for e in self.events:
            if server is not None and e["server"] != server:
                continue
            key = (e["server"], e["pid"], e.get("sessionId"))
            if e["event"] == "session_opened":
                open_.setdefault(key, []).append(e)
            elif e["event"] == "session_closed" and open_.get(key):
                open_[key].pop(0)
            elif e["event"] == "process_exit":
                for k in [k for k in open_ if k[1] == e["pid"] and k[0] == e["server"]]:
                    open_[k].clear()
        return [e for entries in open_.values() for e in entries]

    def every_session_closed(self, server: str | None = None) -> bool:
        """Whether every session opened (as far as the transports show) was closed."""
        return not self.sessions_open(server)

    def processes_alive(self) -> list[dict[str, Any]]:
        """``process_started`` events with no ``process_exit`` whose process still runs."""
        exited = {(e["pid"], e["server"]) for e in self.of("process_exit")}
        return [e for e in self.of("process_started") if (e["pid"], e["server"]) not in exited and _pid_alive(e["pid"])]

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of each event kind, per server (``-`` for events of no server)."""
        out: dict[str, dict[str, int]] = {}
        for e in self.events:
            counts = out.setdefault(e["server"] or "-", {})
            counts[e["event"]] = counts.get(e["event"], 0) + 1
        return out


def _wait_for_pid(pid: int, timeout: float) -> None:
    """Block until a process that is not our child exits, or the timeout passes."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, or already gone
        return
    try:
        # A pidfd becomes readable when its process terminates: no polling needed.
        select.select([fd], [], [], max(0.0, timeout))
    finally:
        os.close(fd)


def wait_for_exits(path: str | os.PathLike[str], timeout: float) -> LedgerView:
    """Wait until every process the ledger saw start has exited, at most ``timeout`` seconds.

    Returns the ledger as it reads afterwards; ``processes_alive()`` on it lists the
    processes still running when time ran out.
    """
    deadline = time.monotonic() + timeout
    view = read_ledger(path)
    for event in view.processes_alive():
        _wait_for_pid(int(event["pid"]), deadline - time.monotonic())
    return read_ledger(path)


def read_ledger(path: str | os.PathLike[str]) -> LedgerView:
    """Read a ledger file; a missing file is an empty ledger, a torn last line is skipped."""
    p = Path(path)
    if not p.exists():
        return LedgerView(())
    events = []
    for line in p.read_text(encoding="utf-8").splitlines():
        if line.strip():
            with contextlib.suppress(json.JSONDecodeError):
                events.append(json.loads(line))
    return LedgerView(tuple(events))


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    # A zombie child still answers kill(0); it has exited for our purposes.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True
