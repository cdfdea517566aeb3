"""The protocol's methods over :func:`reference_impl.open_toolset`, one supervisor task per run."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from .._bounds import shown
from .._config import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_LIST_TIMEOUT,
    HttpTarget,
    ServerConfig,
    StdioTarget,
    Target,
    ToolPolicy,
    check_server_id,
)
from .._errors import ServerConnectionError
from .._eviction import EVICTION_POLICIES
from .._loop import assemble_request
from .._ranking import LexicalRanker, Ranker
from .._wire import Definition, Notice, ToolResult
from ._schemas import params_problem, preload

if TYPE_CHECKING:
    from .._toolset import AdaptiveToolset, open_toolset
else:

    def open_toolset(*args, **kwargs):
        # The toolset, and with it the MCP SDK (a second of imports), loads with the first
        # run: a driver asked only about the protocol itself starts in a tenth of the time.
        from .._toolset import open_toolset as load

        return load(*args, **kwargs)


async def _toolset_loaded() -> None:
    """Load the toolset off the event loop, which meanwhile answers other requests and a
    signal (PRO-7.2). In a daemon thread: an exit does not wait for an import under way."""
    loop = asyncio.get_running_loop()
    loaded: asyncio.Future[None] = loop.create_future()

    def load() -> None:
        try:
            from .. import _toolset  # noqa: F401
        except BaseException as error:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, loaded, error)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, loaded, None)

    threading.Thread(target=load, name="toolset-import", daemon=True).start()
    await loaded


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # cancelled: the run was closed while its toolset loaded
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


__all__ = ["DEFAULT_CALL_TIMEOUT", "MAX_RUNS", "DriverError", "InitializeResult", "ReferenceDriver", "check_params"]

PROTOCOL_VERSION = "1"
#: Seconds one MCP tool call may take when ``run.open`` sets no ``callTimeoutSeconds``.
DEFAULT_CALL_TIMEOUT = 20.0
#: Runs one driver keeps open (or opening) at once; ``run.open`` beyond it is a connection error.
MAX_RUNS = 1024


class InitializeResult(TypedDict):
    """Who the driver is and the profiles it claims (PROTOCOL.md P17)."""

    name: str
    version: str
    profiles: list[str]
    protocolVersion: NotRequired[str]


class DriverError(Exception):
    """A protocol-level refusal: carries the JSON-RPC code, the protocol's ``kind`` and, for
    invalid params, the JSON path of the offending value."""

    def __init__(self, kind: str, message: str, code: int = -32602, *, path: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code
        self.path = path


def _invalid(message: str, path: str | None = None) -> DriverError:
    return DriverError("invalid_params", message, path=path)


def check_params(method: str, params: Any) -> None:
    """Refuse params that break the method's schema, naming the method and the JSON path.

    PRO-4.1, PRO-4.2: called first by every method, so such a request has no effect.
    """
    problem = params_problem(method, params)
    if problem is not None:
        raise _invalid(f"{method}: {problem.path}: {problem.message}", problem.path)


def _target(transport: Mapping[str, Any]) -> Target:
    # The schema has checked the shape; only building is left.
    if transport["type"] == "stdio":
        env = transport.get("env")
        return StdioTarget(
            command=transport["command"],
            # CAT-1.4: no args when the configuration gives none; env as given.
            args=tuple(transport.get("args", ())),
            env=dict(env) if env is not None else None,
        )
    return HttpTarget(url=transport["url"])


def parse_servers(servers: Sequence[Mapping[str, Any]]) -> list[ServerConfig]:
    """Servers of schema-checked ``run.open`` params; ids and policies are still configuration."""
    configs: list[ServerConfig] = []
    for i, server in enumerate(servers):
        where = f"servers[{i}]"
        target = _target(server["transport"])
        # A policy error names the server by id as well, so that it reads without counting.
        sid = server.get("id")
        policy = ToolPolicy.from_wire(
            server.get("policy"), f"{where} ({shown(sid)}).policy" if isinstance(sid, str) else f"{where}.policy"
        )
        # A bad id is a configuration error (R7), not a protocol error.
        server_id = check_server_id(server.get("id"), f"{where}.id")
        configs.append(ServerConfig(id=server_id, target=target, policy=policy))
    return configs


def _as_json(value: Any) -> Any:
    """A Python caller's tuples and mappings as the JSON arrays and objects a schema checks."""
    if isinstance(value, Mapping):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(item) for item in value]
    return value


@dataclass(slots=True)
class _Run:
    toolset: AdaptiveToolset
    stop: asyncio.Event
    task: asyncio.Task[None]
    #: Requests of one run take effect one at a time, in the order they arrived.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(slots=True)
class _Opening:
    """A run whose servers are being connected: its supervisor and what it will hand over."""

    stop: asyncio.Event
    task: asyncio.Task[None]
    ready: asyncio.Future[AdaptiveToolset]


def _package_version() -> str:
    try:
        return version("mcp-adaptive-conformance")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0+unknown"


def _seconds(params: Mapping[str, Any], field_name: str, default: float) -> float:
    return float(params.get(field_name, default))


class ReferenceDriver:
    """The reference implementation, answering the driver protocol's methods.

    Every method checks its params against the protocol's schema first, so the in-process
    driver refuses exactly what the stdio driver refuses. Methods may run concurrently:
    requests naming one run take effect one at a time in the order they were made, and a
    request naming a run still being opened waits for it.
    """

    def __init__(
        self,
        *,
        ranker: Ranker | None = None,
        list_timeout: float = DEFAULT_LIST_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_runs: int = MAX_RUNS,
        eviction: str | None = None,
        refresh: bool = False,
    ) -> None:
        if eviction is not None and eviction not in EVICTION_POLICIES:
            raise ValueError(f"eviction must be one of {list(EVICTION_POLICIES)} or None, got {shown(eviction)}")
        self.ranker = ranker or LexicalRanker()
        self.list_timeout = list_timeout
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.max_runs = max_runs
        #: The optional profiles this driver claims, and turns on in the runs that ask (P37, P38).
        self.eviction = eviction
        self.refresh = refresh
        self._runs: dict[str, _Run] = {}
        self._opening: dict[str, _Opening] = {}
        self._ids = itertools.count(1)
        # Read now what later requests need from files: with every descriptor in use
        # (a flood of stdio servers) they must still be answered.
        preload()
        self._version = _package_version()

    @classmethod
    def with_eviction_and_refresh(cls) -> ReferenceDriver:
        """The reference claiming every profile: ``--sut reference_impl.driver:ReferenceDriver.with_eviction_and_refresh``."""
        return cls(eviction="lru", refresh=True)

    async def initialize(self, params: Mapping[str, object] | None = None) -> InitializeResult:
        params = _as_json(params or {})
        check_params("initialize", params)
        requested = params.get("protocolVersion", PROTOCOL_VERSION)
        # PRO-4.3: a caller speaking another version learns it here, not from a later misread reply.
        if requested != PROTOCOL_VERSION:
            raise _invalid(
                f"protocolVersion {shown(requested)} is not supported; this driver speaks {PROTOCOL_VERSION!r}"
            )
        profiles = ["core", "lexical"] if self.ranker.name == "lexical" else ["core"]
        profiles += ["eviction"] * (self.eviction is not None) + ["refresh"] * self.refresh
        return {
            "name": "reference_impl",
            "version": self._version,
            "profiles": profiles,
            "protocolVersion": PROTOCOL_VERSION,
        }

    async def open_run(self, params: Mapping[str, object]) -> str:
        # Until checked against the schema the params are whatever the caller sent.
        wire: dict[str, Any] = _as_json(params)
        check_params("run.open", wire)
        servers = parse_servers(wire.get("servers", []))
        if len(self._runs) + len(self._opening) >= self.max_runs:
            raise ServerConnectionError(
                f"this driver has {self.max_runs} runs open, its limit; close a run (run.close) before opening another"
            )
        # SEL-4.4: servers, base tools, user message and system prompt left out count as none and as empty.
        base = wire.get("baseTools", [])
        ready: asyncio.Future[AdaptiveToolset] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()

        async def supervise() -> None:
            try:
                await _toolset_loaded()
                async with open_toolset(
                    servers,
                    base_tools=base,
                    user_message=wire.get("userMessage", ""),
                    system_prompt=wire.get("systemPrompt", ""),
                    ranker=self.ranker,
                    # ERR-5.3, GATE-4.4, PRO-9.2: the caller's bounds on listing, calls and the handshake.
                    list_timeout=_seconds(wire, "listTimeoutSeconds", self.list_timeout),
                    call_timeout=_seconds(wire, "callTimeoutSeconds", self.call_timeout),
                    connect_timeout=_seconds(wire, "connectTimeoutSeconds", self.connect_timeout),
                    # A profile this driver does not claim is not turned on, whatever the run asks (P2).
                    eviction=wire.get("eviction") if self.eviction is not None else None,
                    refresh=bool(wire.get("refresh", False)) and self.refresh,
                ) as toolset:
                    ready.set_result(toolset)
                    await stop.wait()
            except Exception as error:
                if not ready.done():
                    ready.set_exception(error)
            finally:
                if not ready.done():  # cancelled while opening: the driver is closing
                    ready.set_exception(
                        ServerConnectionError("the run was closed while its servers were being connected")
                    )

        # The id is taken now, so that a request naming it, made while it opens, waits for it.
        run_id = f"run-{next(self._ids)}"
        opening = _Opening(stop=stop, task=asyncio.create_task(supervise()), ready=ready)
        self._opening[run_id] = opening
        try:
            toolset = await ready
        except BaseException:
            if ready.cancelled():  # this request itself was cancelled, and the wait with it: stop opening
                opening.task.cancel()
            await asyncio.wait([opening.task])  # the supervisor has closed every connection by now
            raise
        finally:
            del self._opening[run_id]
        self._runs[run_id] = _Run(toolset=toolset, stop=stop, task=opening.task)
        return run_id

    def _run(self, method: str, params: dict[str, Any]) -> _Run:
        check_params(method, params)
        run = self._runs.get(params["runId"])
        if run is None:
            # PRO-8.1, PRO-8.2: a runId of no open run is refused alone; the runs still open stay usable.
            raise DriverError("unknown_run", f"no open run with runId {shown(params['runId'])}")
        return run

    async def _settled(self, run_id: Any) -> None:
        """Wait until a run of this id that is being opened has opened or failed."""
        opening = self._opening.get(run_id) if isinstance(run_id, str) else None
        if opening is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(opening.ready)

    # The methods below take their params as the caller gave them, of any type, because
    # refusing what breaks the schema is their job; what they answer has the protocol's shape.
    async def definitions(self, run_id: Any) -> list[Definition]:
        await self._settled(run_id)
        run = self._run("run.definitions", {"runId": run_id})
        async with run.lock:
            await run.toolset.settled()  # P39: after the re-listings begun before this request
            return run.toolset.request_definitions()

    async def notices(self, run_id: Any) -> list[Notice]:
        """What the run has to tell its operator (P40): the ``notices`` of ``run.definitions``."""
        await self._settled(run_id)
        run = self._run("run.definitions", {"runId": run_id})
        async with run.lock:
            await run.toolset.settled()
            return [notice.copy() for notice in run.toolset.notices]

    async def call(self, run_id: Any, name: Any, arguments: Any = None) -> ToolResult:
        await self._settled(run_id)
        params = {"runId": run_id, "name": name, "arguments": _as_json({} if arguments is None else arguments)}
        run = self._run("run.call", params)
        async with run.lock:
            await run.toolset.settled()
            return await run.toolset.call(name, params["arguments"])

    async def request(self, run_id: Any, extra_tools: Any = ()) -> list[Definition]:
        await self._settled(run_id)
        params = {"runId": run_id, "extraTools": _as_json(extra_tools)}
        run = self._run("run.request", params)
        async with run.lock:
            # BUD-3.4: a refused request changes nothing, and the run stays open (ID-16).
            await run.toolset.settled()
            return assemble_request(run.toolset.request_definitions(), params["extraTools"])

    async def close_run(self, run_id: Any) -> None:
        await self._settled(run_id)
        run = self._run("run.close", {"runId": run_id})
        async with run.lock:
            if self._runs.get(run_id) is not run:  # closed while this request waited its turn
                raise DriverError("unknown_run", f"no open run with runId {shown(run_id)}")
            # ERR-7.1: closing a run closes its connections; its runId then names no open run (PRO-8.1).
            del self._runs[run_id]
            run.stop.set()
            await asyncio.wait([run.task])

    async def aclose(self) -> None:
        """Close every run at once, and stop opening the ones still being opened (PRO-7.1)."""
        runs, opening = list(self._runs.values()), list(self._opening.values())
        self._runs.clear()
        for run in runs:
            run.stop.set()
        for started in opening:
            if not started.ready.done():
                started.task.cancel()
        tasks = [run.task for run in runs] + [started.task for started in opening]
        failures = [
            outcome
            for outcome in await asyncio.gather(*tasks, return_exceptions=True)
            if isinstance(outcome, Exception)
        ]
        if failures:
            raise failures[0]
