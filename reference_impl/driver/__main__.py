"""``python -m reference_impl.driver``: the driver protocol over stdin and stdout.

One JSON-RPC 2.0 object per line (conformance/PROTOCOL.md); notifications are neither
answered nor executed, and logs go to stderr. Requests are worked on as they arrive, at
most :data:`MAX_PENDING` at once (a hung ``run.open`` holds up nothing else), and their
replies are written in the order the requests came; requests naming one run take effect
one at a time, in order. ``shutdown`` and the end of stdin close every open run (and so
every stdio server it started) before the process exits; SIGINT and SIGTERM end it within
about a second, giving the stdio servers a short grace before their process groups are
killed. Should the driver be killed outright, a watchdog process (:mod:`._watchdog`) ends the servers' groups.

Bounds: a line is at most :data:`MAX_LINE` bytes and nests at most :data:`MAX_DEPTH`
levels (deeper is a parse error); at most :data:`~._session.MAX_RUNS` runs are open at
once; an error message quotes at most :data:`MAX_MESSAGE` characters.
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
from typing import IO, Any, Final

from .._analysis import RankerUnavailableError
from .._bounds import clip, deeper_than
from .._config import DEFAULT_CONNECT_TIMEOUT, DEFAULT_LIST_TIMEOUT
from .._errors import ToolsetError
from .._eviction import EVICTION_POLICIES
from .._groups import GROUPS
from .._registry import RANKERS, make_ranker
from ._session import DEFAULT_CALL_TIMEOUT, DriverError, ReferenceDriver, check_params
from ._watchdog import Watchdog

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
OUTCOME_ERROR = -32000
# How much of a value the driver was sent an error message may quote.
_QUOTE = 80
#: Characters of an error message; the rest is cut, saying how much.
MAX_MESSAGE: Final = 2000
#: Levels of nesting a line may have (PROTOCOL.md P13: at least 64, never 1000): the
#: reference passes on nothing deeper (``reference_impl._bounds.MAX_DEPTH``).
MAX_DEPTH: Final = 128
#: Bytes of one line; a longer line is a parse error, read to its end and dropped.
MAX_LINE: Final = 64 * 1024 * 1024
#: Requests read and not yet answered; reading waits while there are this many.
MAX_PENDING: Final = 64
#: Seconds closing may take after SIGINT or SIGTERM; the servers' groups are then killed.
STOP_GRACE: Final = 1.0


def _error(
    request_id: Any, code: int, message: str, kind: str | None = None, path: str | None = None
) -> dict[str, Any]:
    message = clip(message, MAX_MESSAGE)
    # PRO-6.1: the error schema's shape: code, message and, for an outcome, data.kind.
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
        # PRO-2.1: bytes that are not UTF-8, NaN and infinities are not JSON; nor is nesting too deep.
        value = json.loads(line.decode("utf-8"), parse_float=_finite, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if deeper_than(value, MAX_DEPTH):
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return value


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
        #: A ``shutdown`` request began: nothing more is read (P30).
        self.ending = False
        #: It has closed every run: the driver may exit.
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
        if "arguments" in params and params["arguments"] is None:
            # On the wire a null is not a left-out field (P25): the schema refuses it like any non-object.
            check_params("run.call", params)
        return await self.driver.call(params.get("runId"), params.get("name"), params.get("arguments", {}))

    async def _request(self, params: Mapping[str, Any]) -> Any:
        return {"tools": await self.driver.request(params.get("runId"), params.get("extraTools", []))}

    async def _close(self, params: Mapping[str, Any]) -> Any:
        await self.driver.close_run(params.get("runId"))
        return {}

    async def _shutdown(self, params: Mapping[str, Any]) -> Any:
        self.ending = True
        try:
            await self.driver.aclose()
        except Exception as error:  # the driver exits all the same; what did close is closed
            _log(f"closing the runs at shutdown failed: {error!r:.500}")
        finally:
            self.done = True
        return {}

    async def handle(self, line: bytes | str) -> dict[str, Any] | None:
        """The reply to one line, or None for a notification (never answered, never executed)."""
        try:
            message = parse(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line)
        except ValueError as error:
            # PRO-2.1: a parse error, -32700 with id null.
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
        # PRO-5.1, PRO-5.2: a notification is neither answered nor executed.
        if "id" not in message:
            return None
        request_id, name = message["id"], message["method"]
        method = self._methods.get(name)
        if method is None:
            # PRO-3.1: an unknown method, -32601 with the request's id.
            return _error(request_id, METHOD_NOT_FOUND, f"unknown method {name!r:.{_QUOTE}}")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            # PRO-4.1: params that are not an object.
            return _error(request_id, INVALID_PARAMS, f"{name}: params must be an object", "invalid_params", "$")
        try:
            result = await method(params)
        except DriverError as error:
            return _error(request_id, error.code, error.message, error.kind, error.path)
        except ToolsetError as error:
            return _error(request_id, OUTCOME_ERROR, error.message, error.kind)
        except Exception as error:  # a bug here must not kill the driver mid-certification
            _log(f"internal error in {name}: {error!r:.500}")
            return _error(request_id, INTERNAL_ERROR, f"internal error: {str(error)[:500]}")
        # PRO-1.1: one reply per request, with its id unchanged.
        return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _log(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


#: What :meth:`_Input.next` gives for a line longer than :data:`MAX_LINE` (told apart by identity).
TOO_LONG: Final = b"\0a line too long"


class _Input:
    """stdin lines, read by a daemon thread so that a signal can end the wait for the next one.

    The thread reads a line only while fewer than ``pending`` lines are unanswered
    (:meth:`done` says one was answered), so a flood of requests waits in the pipe, not in
    memory.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, pending: int = MAX_PENDING) -> None:
        self._loop = loop
        self._lines: asyncio.Queue[bytes] = asyncio.Queue()
        self._slots = threading.Semaphore(pending)
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
            while True:
                self._slots.acquire()
                line = stream.readline(MAX_LINE + 1)
                if len(line) > MAX_LINE and not line.endswith(b"\n"):
                    while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                        pass
                    line = TOO_LONG
                self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
                if not line:
                    return

    def done(self) -> None:
        """One line read has been dealt with: another may be read."""
        self._slots.release()

    async def next(self) -> bytes:
        """The next line; ``b""`` at end of input or once :attr:`stop` is set."""
        line = asyncio.ensure_future(self._lines.get())
        stopped = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait({line, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (line, stopped):
            waiter.cancel()
        return b"" if self.stop.is_set() or line.cancelled() else line.result()


class _Replies:
    """Writes the replies to stdout in the order the requests were read, each once it is ready (PRO-1.2)."""

    def __init__(self, lines: _Input) -> None:
        self._lines = lines
        self._queue: asyncio.Queue[asyncio.Future[dict[str, Any] | None] | None] = asyncio.Queue()
        self.broken = False
        self.task = asyncio.create_task(self._write_all())

    def add(self, answer: asyncio.Future[dict[str, Any] | None]) -> None:
        self._queue.put_nowait(answer)

    def finish(self) -> None:
        """No more replies will be added; :attr:`task` ends once the last is written."""
        self._queue.put_nowait(None)

    async def _write_all(self) -> None:
        while (answer := await self._queue.get()) is not None:
            try:
                reply = await answer
            except asyncio.CancelledError:
                if not answer.cancelled():
                    raise
                reply = None  # a request cancelled on the way out: nobody waits for it
            finally:
                self._lines.done()
            if reply is not None and not self.broken:
                self._write(reply)

    def _write(self, reply: dict[str, Any]) -> None:
        try:
            data = encode(reply)
        except ValueError as error:
            data = encode(_error(reply["id"], INTERNAL_ERROR, f"the reply cannot be written as JSON: {error}"))
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except (OSError, ValueError):  # the reader went away: nothing more can be answered
            self.broken = True
            self._lines.stop.set()


def _answered(reply: dict[str, Any] | None) -> asyncio.Future[dict[str, Any] | None]:
    future: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
    future.set_result(reply)
    return future


async def serve(driver: ReferenceDriver) -> None:
    """Answer lines until ``shutdown``, end of input, SIGINT or SIGTERM; then close every run."""
    server = Server(driver)
    loop = asyncio.get_running_loop()
    lines = _Input(loop)
    signalled = asyncio.Event()

    def on_signal() -> None:
        signalled.set()
        lines.stop.set()

    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread
            # PRO-7.2: SIGTERM ends the driver promptly, a request in flight or not.
            loop.add_signal_handler(signum, on_signal)
    watchdog = Watchdog()
    GROUPS.listen(watchdog)
    replies = _Replies(lines)
    requests: set[asyncio.Task[dict[str, Any] | None]] = set()
    try:
        while not server.ending:
            line = await lines.next()
            if not line:
                break
            if line is TOO_LONG:
                replies.add(_answered(_error(None, PARSE_ERROR, f"parse error: a line longer than {MAX_LINE:,} bytes")))
                continue
            if not line.strip(b" \t\r\n"):
                lines.done()
                continue
            # PRO-2.2, PRO-3.1, PRO-9.1: each line is a task of its own, so a bad line or a hung run.open
            # holds up nothing that follows.
            request = asyncio.create_task(server.handle(line))
            requests.add(request)
            request.add_done_callback(requests.discard)
            replies.add(request)
            # Let it start: a shutdown stops the reading before the next line is taken.
            await asyncio.sleep(0)
        replies.finish()
        if not signalled.is_set():
            # What was read is answered (a signal meanwhile cuts this short).
            stopped = asyncio.ensure_future(signalled.wait())
            await asyncio.wait({replies.task, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
    finally:
        for signum in signals:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.remove_signal_handler(signum)
        # PRO-7.1: shutdown or end of input close every run, and so end every stdio server, before the exit.
        await _close(driver, requests, replies, hurry=signalled.is_set())
        GROUPS.unlisten(watchdog)
        watchdog.close()


async def _close(
    driver: ReferenceDriver,
    requests: set[asyncio.Task[dict[str, Any] | None]],
    replies: _Replies,
    *,
    hurry: bool,
) -> None:
    """Close every run; in a hurry (a signal), with short graces, and kill what is left after a bound."""
    if hurry:
        GROUPS.hurry = True
        for request in list(requests):
            request.cancel()
        replies.task.cancel()
    try:
        await asyncio.wait_for(driver.aclose(), STOP_GRACE if hurry else None)
    except (Exception, asyncio.CancelledError) as error:
        _log(f"closing the runs failed: {error!r:.500}")
    finally:
        GROUPS.kill_all()  # nothing is left in a group by now, unless closing was cut short
        GROUPS.hurry = False
    if requests:
        await asyncio.wait(requests, timeout=STOP_GRACE)
    if not replies.task.done():
        await asyncio.wait({replies.task}, timeout=STOP_GRACE)


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
        "--connect-timeout",
        type=_seconds,
        default=DEFAULT_CONNECT_TIMEOUT,
        help="seconds a server may take to start and complete the MCP handshake, unless run.open says "
        "otherwise (default: %(default)g)",
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
        connect_timeout=args.connect_timeout,
        eviction=args.eviction,
        refresh=args.refresh,
    )
    asyncio.run(serve(driver))


def _exit() -> None:
    """Exit now: everything is closed, and the interpreter's teardown would cost a loaded
    machine a second of the grace the protocol gives (P30)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    # A measured run (coverage's subprocess support) keeps what it measured.
    coverage = sys.modules.get("coverage")
    current = getattr(getattr(coverage, "Coverage", None), "current", lambda: None)()
    if current is not None:
        with contextlib.suppress(Exception):
            current.stop()
            current.save()
    os._exit(0)


if __name__ == "__main__":
    main()
    _exit()
