"""``python -m reference_impl.driver``: the driver protocol over stdin and stdout.

One JSON-RPC 2.0 object per line; requests are answered in order. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._analysis import RankerUnavailableError
from .._errors import ToolsetError
from .._rankers import RANKERS, make_ranker
from ._session import DriverError, ReferenceDriver

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
OUTCOME_ERROR = -32000


def _error(request_id: Any, code: int, message: str, kind: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if kind is not None:
        error["data"] = {"kind": kind, "message": message}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


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
        return {"tools": await self.driver.definitions(params.get("runId"))}

    async def _call(self, params: Mapping[str, Any]) -> Any:
        arguments = params.get("arguments", {})
        return await self.driver.call(params.get("runId"), params.get("name"), arguments)

    async def _request(self, params: Mapping[str, Any]) -> Any:
        return {"tools": await self.driver.request(params.get("runId"), params.get("extraTools"))}

    async def _close(self, params: Mapping[str, Any]) -> Any:
        await self.driver.close_run(params.get("runId"))
        return {}

    async def _shutdown(self, params: Mapping[str, Any]) -> Any:
        await self.driver.aclose()
        self.done = True
        return {}

    async def handle(self, line: str) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except ValueError as error:
            return _error(None, PARSE_ERROR, f"parse error: {error}")
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)
        ):
            request_id = message.get("id") if isinstance(message, dict) else None
            return _error(request_id, INVALID_REQUEST, "expected a JSON-RPC 2.0 request object with a string 'method'")
        request_id = message.get("id")
        method = self._methods.get(message["method"])
        if method is None:
            return _error(request_id, METHOD_NOT_FOUND, f"unknown method {message['method']!r}")
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(request_id, INVALID_PARAMS, "params must be an object", "invalid_params")
        try:
            result = await method(params)
        except DriverError as error:
            return _error(request_id, error.code, error.message, error.kind)
        except ToolsetError as error:
            return _error(request_id, OUTCOME_ERROR, error.message, error.kind)
        except Exception as error:  # a bug here must not kill the driver mid-certification
            sys.stderr.write(f"internal error in {message['method']}: {error!r}\n")
            return _error(request_id, INTERNAL_ERROR, f"internal error: {error}")
        if "id" not in message:
            return None  # a notification gets no answer
        return {"jsonrpc": "2.0", "id": request_id, "result": result}


async def serve(driver: ReferenceDriver) -> None:
    server = Server(driver)
    loop = asyncio.get_running_loop()
    try:
        while not server.done:
            line = await loop.run_in_executor(None, sys.stdin.buffer.readline)
            if not line:
                break
            if not line.strip():
                continue
            answer = await server.handle(line.decode("utf-8", errors="replace"))
            if answer is not None:
                sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
                sys.stdout.flush()
    finally:
        await driver.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m reference_impl.driver", description=__doc__)
    parser.add_argument("--list-timeout", type=float, default=30.0, help="seconds a server may take to list its tools")
    parser.add_argument(
        "--ranker",
        choices=sorted(RANKERS),
        default="lexical",
        help="the ranker of every run; only 'lexical' claims the lexical profile (default: lexical)",
    )
    args = parser.parse_args(argv)
    try:
        ranker = make_ranker(args.ranker)
    except RankerUnavailableError as error:
        parser.exit(2, f"{parser.prog}: --ranker {args.ranker}: {error}\n")
    asyncio.run(serve(ReferenceDriver(ranker=ranker, list_timeout=args.list_timeout)))


if __name__ == "__main__":
    main()
