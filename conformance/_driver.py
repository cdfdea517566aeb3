"""A system under test reached through the driver protocol (JSON-RPC 2.0 lines over stdio).

The driver runs as a child process in its own process group. Its stdout is read by a
thread into a queue and its stderr into a bounded tail, so the client is independent of
any event loop: the async methods hand one blocking round trip at a time to a worker
thread. Anything the protocol does not allow (an exit, a hang past the per-call timeout, a
line that is not JSON, another request's id) is a :class:`SutMisbehaved` carrying the
stderr tail; the driver is then killed, and started afresh on the next call, so one bad
test does not poison the rest.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import shlex
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import anyio.to_thread

from conformance._channel import RawChannel
from conformance._driver_process import EOF, DriverProcess
from conformance._errors import OutcomeError, OutcomeKind, SutMisbehaved, SutStartError, UsageError
from conformance._protocol import reply_problem
from conformance._sut import check_initialize

__all__ = ["PROTOCOL_VERSION", "DriverSut"]

PROTOCOL_VERSION: Final = "1"

# The outcome kinds each JSON-RPC error code may carry.
_OUTCOME_CODES: Final[Mapping[int, frozenset[str]]] = {
    -32000: frozenset({"selection_error", "config_error", "connection_error", "request_too_large"}),
    -32602: frozenset({"invalid_params", "unknown_run"}),
}


class _Broken(Exception):
    """The byte stream from the driver can no longer be trusted; the process must go."""


class DriverSut:
    """A :class:`~conformance.SystemUnderTest` that is a driver program speaking protocol 1.

    Args:
        argv: the driver's command line, already split (no shell is involved).
        timeout: seconds each request may take, ``initialize`` included.
        grace: seconds the driver gets to exit after ``shutdown`` or SIGTERM.
        env: the driver's environment; None inherits the suite's.
        tail_lines: how many of the driver's last stderr lines a finding carries.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 30.0,
        grace: float = 2.0,
        env: Mapping[str, str] | None = None,
        tail_lines: int = 40,
    ) -> None:
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"argv must be a non-empty list of strings, got {argv!r}")
        for label, value in (("timeout", timeout), ("grace", grace)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{label} must be a positive number of seconds, got {value!r}")
        self.argv = list(argv)
        self.timeout, self.grace = timeout, grace
        self._env, self._tail_lines = env, tail_lines
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._process: DriverProcess | None = None
        self._info: dict[str, Any] | None = None
        self._runs: set[str] = set()
        self._stale_runs: set[str] = set()
        self._closed = False
        #: How many times the driver was started; more than 1 after a restart.
        self.starts = 0

    @property
    def command(self) -> str:
        """The driver's command line, quoted as a shell would need it."""
        return shlex.join(self.argv)

    @property
    def pid(self) -> int | None:
        """Process id (and process group id) of the running driver, if any."""
        return self._process.pgid if self._process is not None else None

    def stderr_tail(self) -> str:
        """The last lines the current (or last) driver wrote to stderr."""
        return self._process.stderr_tail() if self._process is not None else ""

    def raw_channel(self) -> RawChannel:
        """A fresh process of this driver's command, for checks of the protocol itself.

        The caller owns it: ``with driver.raw_channel() as channel: ...`` ends it.
        """
        return RawChannel(self.argv, env=self._env, timeout=self.timeout, grace=self.grace)

    # -- the SystemUnderTest interface ---------------------------------------------------------

    async def initialize(self) -> Mapping[str, Any]:
        """The ``initialize`` answer, starting the driver if needed."""
        __tracebackhide__ = True
        return await anyio.to_thread.run_sync(self.start)

    async def open_run(self, params: Mapping[str, Any]) -> str:
        """``run.open``; the ``runId`` it answers."""
        __tracebackhide__ = True
        result = await self._call("run.open", params)
        run_id = result.get("runId")
        if not isinstance(run_id, str) or not run_id:
            raise SutMisbehaved(
                "run.open answered without a 'runId' string", observed=result, stderr_tail=self.stderr_tail()
            )
        self._runs.add(run_id)
        return run_id

    async def definitions(self, run_id: str) -> list[dict[str, Any]]:
        """``run.definitions``."""
        __tracebackhide__ = True
        return self._tools("run.definitions", await self._call("run.definitions", {"runId": run_id}))

    async def notices(self, run_id: str) -> list[dict[str, Any]]:
        """The ``notices`` of a ``run.definitions`` result (P40); none when it has none."""
        result = await self._call("run.definitions", {"runId": run_id})
        notices = result.get("notices", [])
        return [dict(n) for n in notices] if isinstance(notices, list) else []

    async def call(self, run_id: str, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``run.call``."""
        __tracebackhide__ = True
        return await self._call("run.call", {"runId": run_id, "name": name, "arguments": dict(arguments)})

    async def request(self, run_id: str, extra_tools: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
        """``run.request``."""
        __tracebackhide__ = True
        params: dict[str, Any] = {"runId": run_id}
        if extra_tools:
            params["extraTools"] = [dict(tool) for tool in extra_tools]
        return self._tools("run.request", await self._call("run.request", params))

    async def close_run(self, run_id: str) -> None:
        """``run.close``; a run of a driver that has since been restarted is already gone."""
        __tracebackhide__ = True
        if run_id in self._stale_runs:
            self._stale_runs.discard(run_id)
            return
        await self._call("run.close", {"runId": run_id})
        self._runs.discard(run_id)

    async def aclose(self) -> None:
        """Shut the driver down; see :meth:`close`."""
        await anyio.to_thread.run_sync(self.close)

    # -- synchronous lifecycle -----------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Start the driver unless it runs, and return its ``initialize`` answer.

        Raises:
            SutStartError: the command cannot be run, or the driver exits, hangs or
                answers badly before completing ``initialize``.
        """
        __tracebackhide__ = True
        with self._lock:
            return self._ensure_started()

    def close(self) -> None:
        """Send ``shutdown``, give the driver ``grace`` s, then end its whole process group."""
        with self._lock:
            self._closed = True
            process, self._process = self._process, None
            if process is None:
                return
            if process.popen.poll() is None:
                with contextlib.suppress(_Broken, TimeoutError, SutMisbehaved, OutcomeError):
                    self._roundtrip(process, "shutdown", {}, timeout=self.grace)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.popen.wait(self.grace)
            process.terminate(self.grace)

    # -- internals -----------------------------------------------------------------------------

    def _ensure_started(self) -> dict[str, Any]:
        if self._closed:
            raise UsageError(f"driver {self.command!r} was closed; create a new DriverSut")
        if self._process is not None and self._info is not None:
            return self._info
        try:
            process = DriverProcess(self.argv, env=self._env, tail_lines=self._tail_lines)
        except OSError as exc:
            raise SutStartError(f"cannot start driver {self.command!r}: {exc.strerror or exc}") from exc
        self.starts += 1
        self._process = process
        try:
            answer = self._roundtrip(process, "initialize", {"protocolVersion": PROTOCOL_VERSION})
            check_initialize(answer, SutStartError)
            version = answer.get("protocolVersion", PROTOCOL_VERSION)
            if version != PROTOCOL_VERSION:
                raise SutStartError(f"it speaks protocol version {version!r}, the suite speaks {PROTOCOL_VERSION!r}")
        except TimeoutError:
            problem = f"did not answer initialize within {self.timeout:g} s"
        except (_Broken, SutMisbehaved, OutcomeError, SutStartError) as exc:
            problem = f"failed to initialize: {exc}"
        else:
            self._info = cast(dict[str, Any], answer)
            return self._info
        self._discard(process)
        tail = process.stderr_tail()
        raise SutStartError(
            f"driver {self.command!r} {problem}"
            + (f"\nstderr (last lines):\n{tail}" if tail else " (it wrote nothing to stderr)")
        )

    def _discard(self, process: DriverProcess) -> None:
        """Kill a misbehaving driver; the next call starts a fresh one."""
        process.terminate(self.grace)
        if self._process is process:
            self._process, self._info = None, None
            self._stale_runs |= self._runs
            self._runs = set()

    async def _call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        __tracebackhide__ = True
        try:
            return await anyio.to_thread.run_sync(self._call_sync, method, params)
        except (SutMisbehaved, OutcomeError) as exc:
            # Report it from here, not from the worker thread's frames.
            raise exc.with_traceback(None) from None

    def _call_sync(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        __tracebackhide__ = True
        with self._lock:
            self._ensure_started()
            process = cast(DriverProcess, self._process)
            try:
                result = self._roundtrip(process, method, params)
            except TimeoutError:
                self._discard(process)
                raise SutMisbehaved(
                    f"{method}: driver did not answer within {self.timeout:g} s",
                    stderr_tail=process.stderr_tail(),
                ) from None
            except _Broken as exc:
                self._discard(process)
                raise SutMisbehaved(f"{method}: driver {exc}", stderr_tail=process.stderr_tail()) from None
            if not isinstance(result, dict):
                raise SutMisbehaved(
                    f"{method}: driver answered with {type(result).__name__}, not an object",
                    observed=result,
                    stderr_tail=process.stderr_tail(),
                )
            return result

    def _roundtrip(
        self, process: DriverProcess, method: str, params: Mapping[str, Any], *, timeout: float | None = None
    ) -> Any:
        """One request and its response. Raises _Broken, TimeoutError, OutcomeError, SutMisbehaved."""
        request_id = next(self._ids)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        try:
            process.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)})
        except (OSError, ValueError):
            raise _Broken(f"{process.exit_status(self.grace)} and no longer reads its stdin") from None
        line = process.receive(deadline)
        if line == EOF:
            raise _Broken(f"{process.exit_status(self.grace)} without answering")
        try:
            message = json.loads(line)
        except ValueError:
            raise _Broken(f"wrote a line that is not JSON: {_clip(line)}") from None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise _Broken(f"wrote a line that is not a JSON-RPC 2.0 message: {_clip(line)}")
        if message.get("id") != request_id:
            raise _Broken(f"answered id {message.get('id')!r} to request id {request_id}: {_clip(line)}")
        if "result" not in message and "error" not in message:
            raise _Broken(f"answered request {request_id} with neither 'result' nor 'error': {_clip(line)}")
        problem = reply_problem(method, params, message)
        if problem is not None:
            observed = message["error"] if "error" in message else message["result"]
            raise SutMisbehaved(problem, observed=observed, stderr_tail=process.stderr_tail())
        if "error" in message:
            raise self._error(method, message["error"], process)
        return message["result"]

    def _error(self, method: str, error: object, process: DriverProcess) -> Exception:
        if isinstance(error, dict):
            code, data = error.get("code"), error.get("data")
            kind = data.get("kind") if isinstance(data, dict) else None
            if code == -32602 and kind is None:
                kind = "invalid_params"
            if isinstance(code, int) and kind in _OUTCOME_CODES.get(code, ()):
                text = data.get("message") if isinstance(data, dict) else None
                if not isinstance(text, str):
                    text = error.get("message")
                return OutcomeError(cast(OutcomeKind, kind), text if isinstance(text, str) else "")
        return SutMisbehaved(
            f"{method}: driver answered with a JSON-RPC error where a result was due",
            observed=error,
            stderr_tail=process.stderr_tail(),
        )

    def _tools(self, method: str, result: Mapping[str, Any]) -> list[dict[str, Any]]:
        tools = result.get("tools")
        if not isinstance(tools, list):
            raise SutMisbehaved(
                f"{method}: driver answered without a 'tools' list", observed=result, stderr_tail=self.stderr_tail()
            )
        return cast(list[dict[str, Any]], tools)


def _clip(line: bytes, limit: int = 200) -> str:
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    return repr(text if len(text) <= limit else text[:limit] + "…")
