"""Defects of the driver protocol (PRO-*), one function each.

They patch the reference's stdio driver (``reference_impl.driver.__main__``) and its
methods (``reference_impl.driver._session``) where they frame, parse, dispatch, answer and
shut down, so that the toolset behind them stays conformant.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import signal
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from reference_impl import ToolResult, _toolset
from reference_impl._config import DEFAULT_CONNECT_TIMEOUT
from reference_impl._toolset import AdaptiveToolset
from reference_impl.driver import __main__ as stdio
from reference_impl.driver import _session
from reference_impl.driver._schemas import params_problem
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect

__all__: list[str] = []


@defect("PRO-1.1", "a request with id 0 or an empty string is taken for a notification")
def falsy_id_is_a_notification() -> None:
    """``if not message.get("id")``: ids 0 and ``""`` get no reply and are not executed."""
    original = stdio.Server.handle

    async def handle(self: stdio.Server, line: bytes | str) -> dict[str, Any] | None:
        # A line nested past the parser's depth is the reference's to answer as it does.
        with contextlib.suppress(ValueError, RecursionError):
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") in (0, ""):
                return None
        return await original(self, line)

    _swap(stdio.Server, "handle", handle)


@defect("PRO-2.1", "NaN and Infinity are read as numbers")
def non_finite_numbers_parsed() -> None:
    """Lines are parsed with the JSON library's defaults, which accept ``NaN`` and ``Infinity``."""

    def parse(line: bytes) -> Any:
        try:
            return json.loads(line.decode("utf-8"))
        except RecursionError:
            raise ValueError("nested too deeply") from None

    _swap(stdio, "parse", parse)


@defect("PRO-4.2", "run.open reaches the servers before it checks the rest of its params")
def open_lists_servers_before_checking_params() -> None:
    """The servers of a ``run.open`` are connected and listed first; a bad field is refused after."""
    original = _session.ReferenceDriver.open_run

    async def open_run(self: _session.ReferenceDriver, params: Mapping[str, Any]) -> str:
        if params_problem("run.open", params) is not None:
            with contextlib.suppress(Exception):
                servers = _session.parse_servers(params["servers"])
                async with _toolset.open_toolset(servers, list_timeout=self.list_timeout):
                    pass
        return await original(self, params)

    _swap(_session.ReferenceDriver, "open_run", open_run)


@defect("PRO-4.3", "initialize answers whatever protocolVersion it is asked for")
def any_protocol_version_accepted() -> None:
    """The requested version is never compared with the one the driver speaks: a driver that
    only ever says which version it speaks, and leaves the caller to notice."""
    original = _session.ReferenceDriver.initialize

    async def initialize(
        self: _session.ReferenceDriver, params: Mapping[str, object] | None = None
    ) -> _session.InitializeResult:
        if params is not None and isinstance(params.get("protocolVersion"), str):
            params = {**params, "protocolVersion": _session.PROTOCOL_VERSION}
        return await original(self, params)

    _swap(_session.ReferenceDriver, "initialize", initialize)


@defect("PRO-8.1", "a runId of no open run is refused as invalid params")
def unknown_run_is_invalid_params() -> None:
    original = _session.ReferenceDriver._run

    def _run(self: _session.ReferenceDriver, method: str, params: dict[str, Any]) -> Any:
        try:
            return original(self, method, params)
        except _session.DriverError as error:
            if error.kind == "unknown_run":
                raise _session.DriverError("invalid_params", error.message, path="$.runId") from None
            raise

    _swap(_session.ReferenceDriver, "_run", _run)


@defect("PRO-8.1", "a run.close that waited while another run.close closed its run reports success")
def second_close_of_one_run_succeeds() -> None:
    """A run that was open when the request arrived counts as closed by it: of two closes
    written behind a call of the run, both succeed."""
    original = _session.ReferenceDriver.close_run

    async def close_run(self: _session.ReferenceDriver, run_id: Any) -> None:
        was_open = isinstance(run_id, str) and run_id in self._runs
        try:
            await original(self, run_id)
        except _session.DriverError as error:
            if not (was_open and error.kind == "unknown_run"):
                raise

    _swap(_session.ReferenceDriver, "close_run", close_run)


@defect("PRO-8.2", "a runId of no open run closes the runs that are open")
def unknown_run_closes_the_open_runs() -> None:
    original = _session.ReferenceDriver._run

    def _run(self: _session.ReferenceDriver, method: str, params: dict[str, Any]) -> Any:
        try:
            return original(self, method, params)
        except _session.DriverError as error:
            if error.kind == "unknown_run":
                for run in self._runs.values():
                    run.stop.set()
                self._runs.clear()
            raise

    _swap(_session.ReferenceDriver, "_run", _run)


@defect("PRO-6.2", "a discovery result gives activeCount and remainingCapacity as strings")
def discovery_counts_as_strings() -> None:
    original = AdaptiveToolset.search

    def search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        result = original(self, arguments)
        content = result.get("structuredContent")
        if isinstance(content, dict):
            counts = {key: str(content[key]) for key in ("activeCount", "remainingCapacity") if key in content}
            result = {**result, "structuredContent": content | counts}
        return result

    _swap(AdaptiveToolset, "search", search)


@defect("PRO-7.1", "after answering shutdown the driver goes on reading its input")
def lingers_after_shutdown() -> None:
    """``shutdown`` closes the runs and answers, but the driver only exits at the end of its input."""

    async def _shutdown(self: stdio.Server, params: Mapping[str, Any]) -> Any:
        await self.driver.aclose()
        return {}

    _swap(stdio.Server, "_shutdown", _shutdown)


# Processes the driver started and never ends.
_DETACHED: list[subprocess.Popen[bytes]] = []


@defect("PRO-7.1", "the driver starts a process outside its process group and never ends it")
def detached_process_outlives_the_driver() -> None:
    """A child that waits for signals, in a new session of its own, survives the driver's shutdown."""
    original = stdio.serve

    async def serve(driver: Any) -> None:
        child = [sys.executable, "-c", "import signal; signal.pause()"]
        _DETACHED.append(subprocess.Popen(child, stdin=subprocess.DEVNULL, start_new_session=True))
        await original(driver)

    _swap(stdio, "serve", serve)


def _open_toolset_with(connect_timeout: float) -> None:
    """Every run's servers get ``connect_timeout`` for their handshake, whatever run.open says."""
    original = _toolset.open_toolset

    def open_toolset(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **{**kwargs, "connect_timeout": connect_timeout})

    _swap(_session, "open_toolset", open_toolset)


@defect("PRO-9.1", "the MCP handshake has no time limit: a silent server holds run.open for ever")
def handshake_unbounded() -> None:
    """Only listing is bounded; a server that never answers ``initialize`` is waited for."""
    _open_toolset_with(math.inf)


@defect("PRO-9.2", "connectTimeoutSeconds is ignored: the driver's own 20 s handshake limit applies")
def connect_timeout_ignored() -> None:
    _open_toolset_with(DEFAULT_CONNECT_TIMEOUT)


@defect("PRO-7.2", "SIGTERM is noticed only between requests: a run.open in flight holds the driver")
def signals_wait_for_the_request_in_flight() -> None:
    """The serving loop answers one request at a time and looks at the signal flag between them."""

    async def serve(driver: Any) -> None:
        server = stdio.Server(driver)
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stopped.set)
        try:
            while not server.done and not stopped.is_set():
                line = await loop.run_in_executor(None, sys.stdin.buffer.readline)
                if not line:
                    break
                if line.strip():
                    reply = await server.handle(line)
                    if reply is not None:
                        sys.stdout.buffer.write(stdio.encode(reply))
                        sys.stdout.buffer.flush()
        finally:
            await driver.aclose()

    _swap(stdio, "serve", serve)
