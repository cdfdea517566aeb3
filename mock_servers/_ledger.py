"""The ledger: what happened to each mock server, as JSON lines in a file the caller chooses.

Every event is one JSON object on one line::

    {"seq": 3, "ts": 1733912345.123, "server": "github", "transport": "stdio", "pid": 4242,
     "event": "tool_called", "name": "create_issue", "arguments": {...}}

Several processes may append to the same file: each line is written with a single
``write`` on a descriptor opened with ``O_APPEND`` (under an advisory lock where the
platform has one), so lines never interleave. The order of lines is the order of events;
``seq`` counts the events written by one process.

Events (extra fields in brackets):

- ``process_started`` [argv, started] and ``process_exit`` [code, reason]: a stdio server
  process or an HTTP fleet process; ``started`` is when the process started, in clock ticks
  after boot (Linux), which with the pid names the process even once the pid is reused.
- ``fleet_added`` [fleet, servers] and ``fleet_removed`` [fleet]: an HTTP fleet host
  began or stopped serving a fleet.
- ``session_opened`` [era, protocolVersion, sessionId] and ``session_closed``: a client
  connection began or ended, where the transport lets a server see it (see
  `OBSERVABILITY`).
- ``initialized`` [protocolVersion]: the legacy handshake completed.
- ``discovered`` [protocolVersion]: a ``server/discover`` request (2026-07-28 era).
- ``tools_listed`` [page, cursor, count, nextCursor, protocolVersion, catalog]: one ``tools/list``
  page served (``catalog``: how many changes the server's tools had seen).
- ``tool_called`` [name, arguments, isError, protocolVersion]: a ``tools/call`` reached the server.
- ``fault`` [fault, ...]: a fault of the spec fired (``fault`` is the spec field's name;
  ``list_error`` or ``list_hang`` when a change has made ``tools/list`` fail or hang,
  ``break_listen`` [catalog, streams] when it has ended the open listen streams).
- ``tools_changed`` [trigger, catalog, removed, renamed, updated, added, tools, listError, listHang]: a live
  catalog changed (``trigger``: ``after_calls``, ``after_seconds`` or ``request``).
- ``list_changed`` [catalog, n, of, connections, streams]: one ``notifications/tools/list_changed``
  sent (the ``n``-th of ``of`` after that change), to so many handshake-era connections and
  2026-07-28 ``subscriptions/listen`` streams.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, cast, overload

from mock_servers._errors import LedgerError
from mock_servers._processes import pid_alive, start_time, valid_pid, wait_for_pids

__all__ = [
    "MAX_PROBLEMS",
    "OBSERVABILITY",
    "LedgerEvent",
    "Discovered",
    "FaultFired",
    "FleetAdded",
    "FleetRemoved",
    "Initialized",
    "Ledger",
    "LedgerView",
    "ListChanged",
    "ProcessExit",
    "ProcessStarted",
    "SessionClosed",
    "SessionOpened",
    "ToolCalled",
    "ToolsChanged",
    "ToolsListed",
    "read_ledger",
    "wait_for_exits",
    "wait_for_listing",
]

OBSERVABILITY = """\
What a server can observe about its clients, per transport and protocol era:

- stdio, either era: one process is one connection. The process starts
  (process_started, session_opened), the client closes its stdin (session_closed) and
  the process ends (process_exit; also recorded on SIGTERM and for the crash faults).
- in-memory, either era: each Client opens and closes one session (session_opened and
  session_closed, from the server lifespan).
- Streamable HTTP, legacy era (initialize handshake): session_opened at initialize and
  session_closed when the client sends DELETE on exit (the mcp Python client does; the
  TypeScript SDK 1.x client does not), when the fleet is removed, or after 5 minutes
  without a request (``mcp-fleet serve --session-idle SECONDS`` changes it).
- Streamable HTTP, 2026-07-28 era: every request stands alone. A client that goes away
  leaves no trace, so there is no session_opened or session_closed; only the requests
  themselves (discovered, tools_listed, tool_called) are recorded; a call the client
  gives up on while the server is still working (a ``slow`` fault) is recorded as
  tool_called with ``cancelled: true``.

A session whose server process ended without recording it (kill -9) counts as closed:
``sessions_open()`` only lists sessions of processes that still run.

A tools_listed event means the server's listing handler ran. Clients and the SDK also
list for their own purposes (an mcp 2.x client lists page 1 to find a tool's output
schema when it calls a tool it has not seen), so count listings with care.
"""

if sys.platform != "win32":  # pragma: no branch
    import fcntl


# The events the queries of `LedgerView` answer with, as the servers of this package write them.
# A line is read back checked for the fields every event has (``event``, ``pid``, ``server``)
# and the types of ``seq``, ``ts``, ``started`` and ``sessionId``; the other fields are what
# the writer wrote, so the types say what a reader may expect, and check nothing.


class LedgerEvent(TypedDict):
    """The fields of every event: ``seq``, ``ts`` and ``transport`` a line may lack."""

    event: str
    server: str | None
    pid: int
    seq: NotRequired[int]
    ts: NotRequired[float]
    transport: NotRequired[str]


class ToolCalled(LedgerEvent):
    """``tool_called``: a ``tools/call`` reached the server (``unknown``: no such tool;
    ``cancelled``: cut during its delay, never answered)."""

    name: str
    arguments: dict[str, Any]
    isError: bool
    protocolVersion: NotRequired[str | None]
    unknown: NotRequired[bool]
    cancelled: NotRequired[bool]


class ToolsChanged(LedgerEvent):
    """``tools_changed``: a live catalog changed; a change that could not apply has only ``skipped``."""

    trigger: str
    catalog: NotRequired[int]
    removed: NotRequired[list[str]]
    renamed: NotRequired[list[list[str]]]
    updated: NotRequired[list[str]]
    added: NotRequired[list[str]]
    tools: NotRequired[int]
    listError: NotRequired[bool]
    listHang: NotRequired[bool]
    skipped: NotRequired[str]


class ListChanged(LedgerEvent):
    """``list_changed``: the ``n``-th of ``of`` notifications of one change, to so many
    connections and streams."""

    catalog: int
    n: int
    of: int
    connections: int
    streams: int


class FaultFired(LedgerEvent):
    """``fault``: a fault of the spec fired, with what it fired on."""

    fault: str
    page: NotRequired[int]
    tool: NotRequired[str | None]
    index: NotRequired[int]
    seconds: NotRequired[float]
    catalog: NotRequired[int]
    streams: NotRequired[int]


class SessionOpened(LedgerEvent):
    """``session_opened``: a client connection began (its era, version and id where the transport has them)."""

    era: NotRequired[str]
    protocolVersion: NotRequired[str | None]
    sessionId: NotRequired[str | None]


class ProcessStarted(LedgerEvent):
    """``process_started``: a server or fleet process started (``started``: its start time in clock ticks)."""

    argv: list[str]
    started: NotRequired[int | None]


class ProcessExit(LedgerEvent):
    """``process_exit``: a server or fleet process ended, with its exit code and why."""

    code: int
    reason: str


class FleetAdded(LedgerEvent):
    """``fleet_added``: an HTTP fleet host began serving a fleet, with its servers' ids."""

    fleet: str
    servers: list[str]


class FleetRemoved(LedgerEvent):
    """``fleet_removed``: an HTTP fleet host stopped serving a fleet."""

    fleet: str


class SessionClosed(LedgerEvent):
    """``session_closed``: a client connection ended (its id where the transport has one)."""

    sessionId: NotRequired[str | None]


class Initialized(LedgerEvent):
    """``initialized``: the legacy handshake completed, on this protocol version."""

    protocolVersion: str | None


class Discovered(LedgerEvent):
    """``discovered``: a ``server/discover`` request (2026-07-28 era)."""

    protocolVersion: str | None


class ToolsListed(LedgerEvent):
    """``tools_listed``: one ``tools/list`` page served (``catalog``: how many changes the tools had seen)."""

    page: int
    cursor: str | None
    count: int
    nextCursor: str | None
    protocolVersion: str | None
    catalog: int


class _Writer:
    """The one appender of a ledger file in this process (shared by every `Ledger` on it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seq = 0
        self.lock = threading.RLock()  # re-entrant: a signal handler may record mid-write
        self.fd: int | None = None

    def open(self) -> None:
        """Open the file for appending now.

        Raises:
            LedgerError: it cannot be opened for writing (a missing folder, a folder, no permission).
        """
        with self.lock:
            if self.fd is None:
                try:
                    self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                except OSError as exc:
                    raise _ledger_error(self.path, exc) from None

    def append(self, entry: dict[str, Any]) -> LedgerError | None:
        """Write one event as one line; the error, if the write failed."""
        with self.lock:
            self.seq += 1
            entry["seq"] = self.seq
            text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
            # A lone surrogate (a client's arguments may hold one) is written as its JSON escape.
            line = text.encode("utf-8", "backslashreplace")
            try:
                self.open()
                assert self.fd is not None
                if sys.platform != "win32":
                    fcntl.flock(self.fd, fcntl.LOCK_EX)
                    try:
                        os.write(self.fd, line)
                    finally:
                        fcntl.flock(self.fd, fcntl.LOCK_UN)
                else:  # pragma: no cover
                    os.write(self.fd, line)
            except LedgerError as exc:
                return exc
            except OSError as exc:
                return _ledger_error(self.path, exc)
            return None


def _ledger_error(path: Path, exc: OSError) -> LedgerError:
    why = "it is a folder" if path.is_dir() else exc.strerror or str(exc)
    return LedgerError(f"cannot write the ledger {path}: {why}")


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

    Raises:
        LedgerError: the file cannot be opened for appending.
    """

    def __init__(self, path: str | os.PathLike[str] | None, *, transport: str = "memory") -> None:
        self.path = Path(path) if path is not None else None
        self.transport = transport
        self._writer = _writer(self.path) if self.path is not None else None
        if self._writer is not None:
            self._writer.open()

    def for_transport(self, transport: str) -> Ledger:
        """A ledger writing to the same file with another default transport."""
        return Ledger(self.path, transport=transport)

    def record(self, event: str, server: str | None, **fields: Any) -> None:
        """Append one event. Never raises for a full disk or a vanished file: it is a test aid.

        The first event of a process goes through `record_or_raise`, so that a ledger no
        event can be written to is found at start, not after a run that recorded nothing.
        """
        self._append(event, server, fields)

    def record_or_raise(self, event: str, server: str | None, **fields: Any) -> None:
        """Append one event, or raise.

        Raises:
            LedgerError: the event could not be written (``/proc/version`` opens, and refuses writes).
        """
        failure = self._append(event, server, fields)
        if failure is not None:
            raise failure

    def _append(self, event: str, server: str | None, fields: dict[str, Any]) -> LedgerError | None:
        if self._writer is None:
            return None
        entry: dict[str, Any] = {
            "seq": 0,
            "ts": round(time.time(), 6),
            "server": server,
            "transport": fields.pop("transport", self.transport),
            "pid": os.getpid(),
            "event": event,
        }
        entry.update(fields)
        failure = self._writer.append(entry)
        return (
            failure
            if failure is None or isinstance(failure, LedgerError)
            else _ledger_error(self._writer.path, failure)
        )

    def __repr__(self) -> str:
        return f"Ledger({str(self.path) if self.path else None!r}, transport={self.transport!r})"


@dataclass(frozen=True, slots=True)
class LedgerView:
    """The events of a ledger file, with the queries tests ask most.

    ``problems`` describes the lines that were skipped because they are not ledger events
    (at most `MAX_PROBLEMS` of them; ``skipped`` counts them all).
    """

    events: tuple[dict[str, Any], ...]
    problems: tuple[str, ...] = ()
    skipped: int = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    @overload
    def of(self, event: Literal["process_started"], server: str | None = None) -> list[ProcessStarted]: ...
    @overload
    def of(self, event: Literal["process_exit"], server: str | None = None) -> list[ProcessExit]: ...
    @overload
    def of(self, event: Literal["fleet_added"], server: str | None = None) -> list[FleetAdded]: ...
    @overload
    def of(self, event: Literal["fleet_removed"], server: str | None = None) -> list[FleetRemoved]: ...
    @overload
    def of(self, event: Literal["session_opened"], server: str | None = None) -> list[SessionOpened]: ...
    @overload
    def of(self, event: Literal["session_closed"], server: str | None = None) -> list[SessionClosed]: ...
    @overload
    def of(self, event: Literal["initialized"], server: str | None = None) -> list[Initialized]: ...
    @overload
    def of(self, event: Literal["discovered"], server: str | None = None) -> list[Discovered]: ...
    @overload
    def of(self, event: Literal["tools_listed"], server: str | None = None) -> list[ToolsListed]: ...
    @overload
    def of(self, event: Literal["tool_called"], server: str | None = None) -> list[ToolCalled]: ...
    @overload
    def of(self, event: Literal["fault"], server: str | None = None) -> list[FaultFired]: ...
    @overload
    def of(self, event: Literal["tools_changed"], server: str | None = None) -> list[ToolsChanged]: ...
    @overload
    def of(self, event: Literal["list_changed"], server: str | None = None) -> list[ListChanged]: ...
    @overload
    def of(self, event: str, server: str | None = None) -> list[LedgerEvent]: ...
    def of(self, event: str, server: str | None = None) -> list[Any]:
        """Events of one kind, optionally for one server, typed by their kind."""
        return [e for e in self.events if e["event"] == event and (server is None or e["server"] == server)]

    def calls(self, server: str | None = None, name: str | None = None) -> list[ToolCalled]:
        """``tool_called`` events, optionally for one server and one tool name."""
        return [e for e in self.of("tool_called", server) if name is None or e.get("name") == name]

    def listed_pages(self, server: str) -> list[int]:
        """The page indexes of every ``tools/list`` the server answered, in order."""
        return [e["page"] for e in self.of("tools_listed", server) if isinstance(e.get("page"), int)]

    def listed_since(self, server: str, catalog: int) -> bool:
        """Whether a client has listed the server's tools through their last page, having
        begun (with page 0) at catalog version ``catalog`` or later: a listing that follows
        a change, as `ServerCore.await_listing` counts one for a server served over HTTP."""
        started = -1
        for e in self.of("tools_listed", server):
            page, version = e.get("page"), e.get("catalog")
            if type(page) is int and page == 0:
                # Written by whoever can write the file: a version that is no integer counts as none.
                started = version if type(version) is int else -1
            if e.get("nextCursor") is None and started >= catalog:
                return True
        return False

    def changes(self, server: str | None = None) -> list[ToolsChanged]:
        """``tools_changed`` events: the changes of live catalogs, in order."""
        return self.of("tools_changed", server)

    def notifications(self, server: str | None = None, catalog: int | None = None) -> list[ListChanged]:
        """``list_changed`` events, optionally only those sent after one change (its ``catalog``)."""
        return [e for e in self.of("list_changed", server) if catalog is None or e.get("catalog") == catalog]

    def faults(self, server: str | None = None, kind: str | None = None) -> list[FaultFired]:
        """``fault`` events, optionally for one server and one fault kind."""
        return [e for e in self.of("fault", server) if kind is None or e.get("fault") == kind]

    def sessions_open(self, server: str | None = None) -> list[SessionOpened]:
        """Sessions opened and not closed (matched per server and process, oldest first).

        A session whose server process has ended (it recorded ``process_exit``, or it no
        longer runs, say after ``kill -9``) is not open: nothing can hold it any more.
        """
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
        alive: dict[int, bool] = {}
        return [
            cast(SessionOpened, e)
            for entries in open_.values()
            for e in entries
            if alive.setdefault(e["pid"], pid_alive(e["pid"]))
        ]

    def every_session_closed(self, server: str | None = None) -> bool:
        """Whether every session opened (as far as the transports show) was closed."""
        return not self.sessions_open(server)

    def processes_alive(self) -> list[ProcessStarted]:
        """``process_started`` events with no ``process_exit`` whose process still runs.

        An event that gives the process's start time counts only while the process of that
        pid started then: a pid the system handed to another process is not the server.
        """
        exited = {(e["pid"], e["server"]) for e in self.of("process_exit")}
        return [
            e for e in self.of("process_started") if (e["pid"], e["server"]) not in exited and _same_process_runs(e)
        ]

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of each event kind, per server (``-`` for events of no server)."""
        out: dict[str, dict[str, int]] = {}
        for e in self.events:
            counts = out.setdefault(e["server"] or "-", {})
            counts[e["event"]] = counts.get(e["event"], 0) + 1
        return out


def _same_process_runs(event: ProcessStarted) -> bool:
    pid = event["pid"]
    if not pid_alive(pid):
        return False
    started = event.get("started")
    now = start_time(pid)
    if now is None:
        # Reaped since `pid_alive` looked, or a system that does not tell start times.
        return started is None or pid_alive(pid)
    return started is None or now == started


def wait_for_exits(path: str | os.PathLike[str], timeout: float) -> LedgerView:
    """Wait until every process the ledger saw start has exited, at most ``timeout`` seconds.

    Returns the ledger as it reads afterwards; ``processes_alive()`` on it lists the
    processes still running when time ran out.
    """
    view = read_ledger(path)
    wait_for_pids([int(e["pid"]) for e in view.processes_alive()], timeout)
    return read_ledger(path)


#: How often `wait_for_listing` reads the ledger again: a file has nothing to wait on.
LISTING_POLL_SECONDS = 0.02


def wait_for_listing(path: str | os.PathLike[str], server: str, catalog: int, timeout: float) -> bool:
    """Wait until the ledger shows a listing of ``server`` since catalog version ``catalog``
    (see `LedgerView.listed_since`), at most ``timeout`` seconds; whether it does.

    For servers whose process the host under test starts (stdio): their changes are
    scheduled in the spec, and no fleet host watches their listings.
    """
    deadline = time.monotonic() + timeout
    while not read_ledger(path).listed_since(server, catalog):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(LISTING_POLL_SECONDS, left))
    return True


#: How many skipped lines a `LedgerView` describes (it counts them all).
MAX_PROBLEMS = 20


def read_ledger(path: str | os.PathLike[str]) -> LedgerView:
    """Read a ledger file; a missing file is an empty ledger.

    Lines that are not ledger events are skipped and described in the view's ``problems``:
    not UTF-8, not a JSON object, no ``event`` string, no ``pid`` that is a process id (an
    integer from 1 to the system's largest: never 0, -1 or a huge number), no ``server``
    string-or-null, a ``seq``, ``ts``, ``started`` or ``sessionId`` of the wrong type, or a
    last line torn mid-write. Reading never fails on content: whoever can write the file (a
    host under test can) decides what is in it, and nothing in it is trusted.

    Raises:
        OSError: the file exists but cannot be read.
    """
    p = Path(path)
    if not p.exists():
        return LedgerView(())
    data = p.read_bytes()
    events: list[dict[str, Any]] = []
    problems: list[str] = []
    skipped = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        problem = _event_problem(raw)
        if isinstance(problem, dict):
            events.append(problem)
            continue
        skipped += 1
        if number == len(lines):
            problem = f"{problem}; it is the last line and has no newline, so its writer was probably cut off"
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"line {number}: {problem}")
    return LedgerView(tuple(events), tuple(problems), skipped)


def _event_problem(raw: bytes) -> dict[str, Any] | str:
    """The event on this line, or what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})"
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(entry, dict):
        return f"a JSON {type(entry).__name__}, not an event object"
    if not isinstance(entry.get("event"), str) or not entry["event"]:
        return 'no "event" string'
    if not valid_pid(entry.get("pid")):
        return 'no "pid" that is a process id (an integer from 1 to the largest the system hands out)'
    if not isinstance(entry.get("server", ""), str | None) or "server" not in entry:
        return 'no "server" (a string or null)'
    for field, types, expected in _FIELD_TYPES:
        value = entry.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            return f'"{field}" is not {expected}'
    if isinstance(entry.get("started"), int) and entry["started"] < 0:
        return '"started" is negative'
    return entry


#: Optional fields the queries rely on, with the types they must have when present.
_FIELD_TYPES: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("seq", int, "an integer"),
    ("ts", (int, float), "a number"),
    ("started", int, "an integer"),
    ("sessionId", str, "a string"),
)
