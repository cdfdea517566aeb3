"""``python -m reference_impl.driver``: the driver protocol over stdin and stdout.

One JSON-RPC 2.0 object per line (conformance/PROTOCOL.md); requests are answered one at a
time, in order, and notifications are neither answered nor executed. Logs go to stderr.
``shutdown``, the end of stdin, SIGINT and SIGTERM all close every open run (and so every
stdio server it started) before the process exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Any

from .._analysis import RankerUnavailableError
from .._errors import ToolsetError
from .._eviction import EVICTION_POLICIES
from .._rankers import RANKERS, make_ranker
from .._toolset import DEFAULT_LIST_TIMEOUT
from ._session import DEFAULT_CALL_TIMEOUT, DriverError, ReferenceDriver

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
OUTCOME_ERROR = -32000
# How much of a value the driver was sent an error message may quote.
_QUOTE = 80


def _error(
    request_id: Any, code: int, message: str, kind: str | None = None, path: str | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if kind is not None:
        error["data"] = {"kind": kind, "message": message} | ({"path": path} if path is not None else {})
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _finite(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"number out of range: {text[:_QUOTE]}")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(line: bytes) -> Any:
    """One line as a JSON value. Raises ValueError for anything that is not UTF-8 JSON."""
    try:
        return json.loads(line.decode("utf-8"), parse_float=_finite, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def encode(message: Mapping[str, Any]) -> bytes:
    """One reply as a line of UTF-8 JSON; a string with a lone surrogate is written escaped.

    Raises:
        ValueError: the message holds something JSON cannot carry (NaN, infinity).
    """
    try:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, allow_nan=False).encode("ascii") + b"\n"
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _valid_id(message: Mapping[str, Any]) -> bool:
    request_id = message.get("id")
    return request_id is None or (isinstance(request_id, str | int | float) and not isinstance(request_id, bool))


class Server:
    """Maps JSON-RPC requests onto a :class:`ReferenceDriver`."""

    def __init__(self, driver: ReferenceDriver) -> None:
        self.driver = driver
        self.done = False
        self._methods: dict[str, Callable[[Mapping[str, Any]], Awaitable[Any]]] = {
            "initialize": self.driver.initialize,
            "run.open": self._open,
            "run.definitions": self._definitions,
            "run.call": self._call,
            "run.request": self._request,
            "run.close": self._close,
            "shutdown": self._shutdown,
        }

    async def _open(self, params: Mapping[str, Any]) -> Any:
        return {"runId": await self.driver.open_run(params)}

    async def _definitions(self, params: Mapping[str, Any]) -> Any:
        tools = await self.driver.definitions(params.get("runId"))
        notices = await self.driver.notices(params.get("runId"))
        return {"tools": tools, "notices": notices} if notices else {"tools": tools}

    async def _call(self, params: Mapping[str, Any]) -> Any:
        arguments = params.get("arguments", {})
        return await self.driver.call(params.get("runId"), params.get("name"), arguments)

    async def _request(self, params: Mapping[str, Any]) -> Any:
        return {"tools": await self.driver.request(params.get("runId"), params.get("extraTools", []))}

    async def _close(self, params: Mapping[str, Any]) -> Any:
        await self.driver.close_run(params.get("runId"))
        return {}

    async def _shutdown(self, params: Mapping[str, Any]) -> Any:
        await self.driver.aclose()
        self.done = True
        return {}

    async def handle(self, line: bytes | str) -> dict[str, Any] | None:
        """The reply to one line, or None for a notification (never answered, never executed)."""
        try:
            message = parse(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line)
        except ValueError as error:
            return _error(None, PARSE_ERROR, f"parse error: {str(error)[:200]}")
        if isinstance(message, list):
            return _error(None, INVALID_REQUEST, "batches are not supported; send one request per line")
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)
            or not _valid_id(message)
        ):
            request_id = message.get("id") if isinstance(message, dict) and _valid_id(message) else None
            return _error(request_id, INVALID_REQUEST, "expected a JSON-RPC 2.0 request object with a string 'method'")
        if "id" not in message:
            return None
        request_id, name = message["id"], message["method"]
        method = self._methods.get(name)
        if method is None:
            return _error(request_id, METHOD_NOT_FOUND, f"unknown method {name!r:.{_QUOTE}}")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(request_id, INVALID_PARAMS, f"{name}: params must be an object", "invalid_params", "$")
        try:
            result = await method(params)
        except DriverError as error:
            return _error(request_id, error.code, error.message, error.kind, error.path)
        except ToolsetError as error:
            return _error(request_id, OUTCOME_ERROR, error.message, error.kind)
        except Exception as error:  # a bug here must not kill the driver mid-certification
            sys.stderr.write(f"internal error in {name}: {error!r:.500}\n")
            return _error(request_id, INTERNAL_ERROR, f"internal error: {str(error)[:500]}")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}


class _Input:
    """stdin lines, read by a daemon thread so that a signal can end the wait for the next one."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.stop = asyncio.Event()
        threading.Thread(target=self._read, name="driver-stdin", daemon=True).start()

    def _read(self) -> None:
        # A reader of its own on a copy of the descriptor: the interpreter aborts at exit when
        # a daemon thread is blocked inside sys.stdin's reader, holding its lock.
        try:
            stream: IO[bytes] = open(os.dup(sys.stdin.fileno()), "rb")  # noqa: SIM115
        except (OSError, ValueError):  # no descriptor behind stdin: it cannot block
            stream = sys.stdin.buffer
        # RuntimeError: the loop is gone; OSError, ValueError: stdin is gone. The driver is ending.
        with contextlib.suppress(RuntimeError, OSError, ValueError):
            for line in iter(stream.readline, b""):
                self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
            self._loop.call_soon_threadsafe(self._lines.put_nowait, b"")

    async def next(self) -> bytes:
        """The next line; ``b""`` at end of input or once :attr:`stop` is set."""
        line = asyncio.ensure_future(self._lines.get())
        stopped = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait({line, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (line, stopped):
            waiter.cancel()
        return b"" if self.stop.is_set() or line.cancelled() else line.result()


async def serve(driver: ReferenceDriver) -> None:
    """Answer lines until ``shutdown``, end of input, SIGINT or SIGTERM; then close every run."""
    server = Server(driver)
    loop = asyncio.get_running_loop()
    lines = _Input(loop)
    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread
            loop.add_signal_handler(signum, lines.stop.set)
    try:
        while not server.done:
            line = await lines.next()
            if not line:
                break
            if not line.strip(b" \t\r\n"):
                continue
            answer = await server.handle(line)
            if answer is None:
                continue
            try:
                data = encode(answer)
            except ValueError as error:
                data = encode(_error(answer["id"], INTERNAL_ERROR, f"the reply cannot be written as JSON: {error}"))
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
    finally:
        for signum in signals:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.remove_signal_handler(signum)
        await driver.aclose()


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 86400):
        raise argparse.ArgumentTypeError(f"expected a number of seconds greater than 0 and at most 86400, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m reference_impl.driver", description=__doc__)
    parser.add_argument(
        "--list-timeout",
        type=_seconds,
        default=DEFAULT_LIST_TIMEOUT,
        help="seconds a server may take to list its tools, unless run.open says otherwise (default: %(default)g)",
    )
    parser.add_argument(
        "--call-timeout",
        type=_seconds,
        default=DEFAULT_CALL_TIMEOUT,
        help="seconds one MCP tool call may take, unless run.open says otherwise (default: %(default)g)",
    )
    parser.add_argument(
        "--ranker",
        choices=sorted(RANKERS),
        default="lexical",
        help="the ranker of every run; only 'lexical' claims the lexical profile (default: lexical)",
    )
    parser.add_argument(
        "--eviction",
        choices=EVICTION_POLICIES,
        help="claim the eviction profile: runs opened with eviction roll their active set, least recently used "
        "first (default: off, growth only)",
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="claim the refresh profile: runs opened with refresh re-list a server on "
        "notifications/tools/list_changed (default: off, the catalog read at open)",
    )
    args = parser.parse_args(argv)
    try:
        ranker = make_ranker(args.ranker)
    except RankerUnavailableError as error:
        parser.exit(2, f"{parser.prog}: --ranker {args.ranker}: {error}\n")
    driver = ReferenceDriver(
        ranker=ranker,
        list_timeout=args.list_timeout,
        call_timeout=args.call_timeout,
        eviction=args.eviction,
        refresh=args.refresh,
    )
    asyncio.run(serve(driver))


if __name__ == "__main__":
    main()
