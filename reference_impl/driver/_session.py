"""The protocol's methods over :func:`reference_impl.open_toolset`, one supervisor task per run."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .._config import HttpTarget, ServerConfig, StdioTarget, Target, ToolPolicy, check_server_id
from .._loop import assemble_request
from .._ranking import LexicalRanker, Ranker
from .._toolset import DEFAULT_LIST_TIMEOUT, AdaptiveToolset, open_toolset

__all__ = ["DriverError", "ReferenceDriver"]

PROTOCOL_VERSION = "1"


class DriverError(Exception):
    """A protocol-level refusal: carries the JSON-RPC code and the protocol's ``kind``."""

    def __init__(self, kind: str, message: str, code: int = -32602) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code


def _invalid(message: str) -> DriverError:
    return DriverError("invalid_params", message)


def _require(params: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = params.get(key)
    if not isinstance(value, kind):
        raise _invalid(f"{where}{key} is missing or has the wrong type: {value!r:.80}")
    return value


def _target(transport: Any, where: str) -> Target:
    if not isinstance(transport, Mapping):
        raise _invalid(f"{where} must be an object with a 'type', got {transport!r:.80}")
    kind = transport.get("type")
    if kind == "stdio":
        command = _require(transport, "command", str, f"{where}.")
        args = transport.get("args", [])
        env = transport.get("env")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise _invalid(f"{where}.args must be a list of strings, got {args!r:.80}")
        if env is not None and (
            not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise _invalid(f"{where}.env must map strings to strings, got {env!r:.80}")
        return StdioTarget(command=command, args=tuple(args), env=dict(env) if env is not None else None)
    if kind == "http":
        url = _require(transport, "url", str, f"{where}.")
        if not url.startswith(("http://", "https://")):
            raise _invalid(f"{where}.url must be an http(s) URL, got {url!r}")
        return HttpTarget(url=url)
    raise _invalid(f"{where}.type must be 'stdio' or 'http', got {kind!r}")


def parse_servers(servers: Any) -> list[ServerConfig]:
    if not isinstance(servers, list):
        raise _invalid(f"servers must be a list, got {servers!r:.80}")
    configs: list[ServerConfig] = []
    for i, server in enumerate(servers):
        where = f"servers[{i}]"
        if not isinstance(server, Mapping):
            raise _invalid(f"{where} must be an object, got {server!r:.80}")
        target = _target(server.get("transport"), f"{where}.transport")
        policy = ToolPolicy.from_wire(server.get("policy"), f"{where}.policy")
        # A bad id is a configuration error (R7), not a protocol error.
        server_id = check_server_id(server.get("id"), f"{where}.id")
        configs.append(ServerConfig(id=server_id, target=target, policy=policy))
    return configs


def _tools(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list | tuple) or not all(isinstance(t, Mapping) for t in value):
        raise _invalid(f"{where} must be a list of tool definitions, got {value!r:.80}")
    for i, tool in enumerate(value):
        if not isinstance(tool.get("name"), str):
            raise _invalid(f"{where}[{i}].name must be a string, got {tool.get('name')!r:.80}")
    return [dict(t) for t in value]


@dataclass(slots=True)
class _Run:
    toolset: AdaptiveToolset
    stop: asyncio.Event
    task: asyncio.Task[None]


def _package_version() -> str:
    try:
        return version("mcp-adaptive-conformance")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0+unknown"


class ReferenceDriver:
    """The reference implementation, answering the driver protocol's methods."""

    def __init__(self, *, ranker: Ranker | None = None, list_timeout: float = DEFAULT_LIST_TIMEOUT) -> None:
        self.ranker = ranker or LexicalRanker()
        self.list_timeout = list_timeout
        self._runs: dict[str, _Run] = {}
        self._ids = itertools.count(1)

    async def initialize(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        requested = (params or {}).get("protocolVersion", PROTOCOL_VERSION)
        if requested != PROTOCOL_VERSION:
            raise _invalid(f"protocolVersion {requested!r} is not supported; this driver speaks {PROTOCOL_VERSION!r}")
        profiles = ["core", "lexical"] if self.ranker.name == "lexical" else ["core"]
        return {"name": "reference_impl", "version": _package_version(), "profiles": profiles}

    async def open_run(self, params: Mapping[str, Any]) -> str:
        if not isinstance(params, Mapping):
            raise _invalid(f"run.open params must be an object, got {params!r:.80}")
        servers = parse_servers(params.get("servers", []))
        base = _tools(params.get("baseTools"), "baseTools")
        user_message = params.get("userMessage", "")
        system_prompt = params.get("systemPrompt", "")
        if not isinstance(user_message, str) or not isinstance(system_prompt, str):
            raise _invalid("userMessage and systemPrompt must be strings")
        list_timeout = params.get("listTimeoutSeconds", self.list_timeout)
        if isinstance(list_timeout, bool) or not isinstance(list_timeout, int | float) or not list_timeout > 0:
            raise _invalid(f"listTimeoutSeconds must be a positive number, got {list_timeout!r:.80}")
        ready: asyncio.Future[AdaptiveToolset] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()

        async def supervise() -> None:
            try:
                async with open_toolset(
                    servers,
                    base_tools=base,
                    user_message=user_message,
                    system_prompt=system_prompt,
                    ranker=self.ranker,
                    list_timeout=float(list_timeout),
                ) as toolset:
                    ready.set_result(toolset)
                    await stop.wait()
            except Exception as error:
                if not ready.done():
                    ready.set_exception(error)

        task = asyncio.create_task(supervise())
        try:
            toolset = await ready
        except Exception:
            await task  # the supervisor has closed every connection by now
            raise
        run_id = f"run-{next(self._ids)}"
        self._runs[run_id] = _Run(toolset=toolset, stop=stop, task=task)
        return run_id

    def _run(self, run_id: Any) -> _Run:
        run = self._runs.get(run_id) if isinstance(run_id, str) else None
        if run is None:
            raise DriverError("unknown_run", f"no open run with runId {run_id!r}")
        return run

    async def definitions(self, run_id: Any) -> list[dict[str, Any]]:
        return self._run(run_id).toolset.request_definitions()

    async def call(self, run_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
        run = self._run(run_id)
        if not isinstance(name, str):
            raise _invalid(f"name must be a string, got {name!r:.80}")
        return await run.toolset.call(name, arguments)

    async def request(self, run_id: Any, extra_tools: Any = ()) -> list[dict[str, Any]]:
        extra = _tools(extra_tools, "extraTools")
        return assemble_request(self._run(run_id).toolset.request_definitions(), extra)

    async def close_run(self, run_id: Any) -> None:
        run = self._run(run_id)
        del self._runs[run_id]
        run.stop.set()
        await run.task

    async def aclose(self) -> None:
        for run_id in list(self._runs):
            await self.close_run(run_id)
