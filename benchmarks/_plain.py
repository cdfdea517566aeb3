"""The plain server the fleet is compared with: one `MCPServer` per server id, tools registered the ordinary way.

``python -m benchmarks._plain http CATALOG`` serves every server of a catalog file (server id →
wire-form tools) from one uvicorn process, one `MCPServer` app mounted per path, and prints one
JSON line with the URLs; ``python -m benchmarks._plain stdio CATALOG SERVER_ID`` serves one
server on stdin and stdout. Either ends when its stdin closes.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import keyword
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

if TYPE_CHECKING:
    from mcp.server import MCPServer


_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict[str, Any],
}


def _python_type(schema: Mapping[str, Any]) -> Any:
    """The Python annotation `MCPServer` derives (roughly) the same JSON Schema from."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if kind == "array":
        return list[_python_type(schema.get("items") or {})]  # type: ignore[misc]
    return _JSON_TYPES.get(kind or "", Any)


def _signature(input_schema: Mapping[str, Any]) -> inspect.Signature:
    """A keyword-only signature with one parameter per schema property, optional ones defaulting to None."""
    required = set(input_schema.get("required") or ())
    parameters = []
    for name, prop in (input_schema.get("properties") or {}).items():
        usable = name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
        field_args: dict[str, Any] = {"description": prop.get("description")}
        if not usable:
            field_args["alias"] = name
        from pydantic import Field

        annotation: Any = _python_type(prop)
        default: Any = inspect.Parameter.empty
        if name not in required:
            annotation, default = annotation | None, None
        parameters.append(
            inspect.Parameter(
                name if usable else f"p_{abs(hash(name))}",
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=Annotated[annotation, Field(**field_args)],
            )
        )
    return inspect.Signature(parameters, return_annotation=str)


def _digest(arguments: Mapping[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _tool_function(server_id: str, tool: Mapping[str, Any]) -> Callable[..., Awaitable[str]]:
    name = tool["name"]

    async def call(**arguments: Any) -> str:
        given = {k: v for k, v in arguments.items() if v is not None}
        return f"{server_id}.{name} ok {_digest(given)}"

    call.__name__ = name.replace("-", "_").replace(".", "_")
    call.__signature__ = _signature(tool.get("inputSchema") or {})  # type: ignore[attr-defined]
    return call


def plain_server(server_id: str, tools: list[dict[str, Any]]) -> MCPServer:
    """A server written the ordinary way with the SDK's high-level API, exposing ``tools``."""
    import mcp_types as types
    from mcp.server import MCPServer

    server: MCPServer = MCPServer(server_id, version="1.0.0", log_level="WARNING")
    for tool in tools:
        annotations = tool.get("annotations")
        server.add_tool(
            _tool_function(server_id, tool),
            name=tool["name"],
            title=tool.get("title"),
            description=tool.get("description"),
            annotations=types.ToolAnnotations.model_validate(annotations) if annotations else None,
            structured_output=False,
        )
    return server


def _exit_when_stdin_closes() -> None:
    # So the server never outlives the benchmark, even if the benchmark is killed.
    def wait() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(65536):
                pass
        os._exit(0)

    threading.Thread(target=wait, daemon=True).start()


async def _serve_plain_http(catalog: dict[str, list[dict[str, Any]]]) -> None:
    import anyio
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    apps = [(sid, plain_server(sid, tools).streamable_http_app()) for sid, tools in catalog.items()]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # A mounted app's lifespan (its session manager) does not run by itself.
        async with contextlib.AsyncExitStack() as stack:
            for _sid, app in apps:
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield

    root = Starlette(routes=[Mount(f"/{sid}", app=app) for sid, app in apps], lifespan=lifespan)
    server = uvicorn.Server(uvicorn.Config(root, host="127.0.0.1", port=0, log_level="warning", ws="none"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            if server.should_exit:
                raise SystemExit("the plain server could not start")
            await anyio.sleep(0.005)
        port = server.servers[0].sockets[0].getsockname()[1]
        urls = {sid: f"http://127.0.0.1:{port}/{sid}/mcp" for sid in catalog}
        sys.stdout.write(json.dumps({"servers": urls}) + "\n")
        sys.stdout.flush()


def _plain_main(argv: list[str]) -> None:
    mode, catalog_path, *rest = argv
    catalog: dict[str, list[dict[str, Any]]] = json.loads(Path(catalog_path).read_text(encoding="utf-8"))
    if mode == "http":
        import anyio

        _exit_when_stdin_closes()
        anyio.run(_serve_plain_http, catalog)
        return
    import anyio

    anyio.run(plain_server(rest[0], catalog[rest[0]]).run_stdio_async)
    os._exit(0)  # the fleet's stdio servers skip interpreter teardown too


if __name__ == "__main__":
    _plain_main(sys.argv[1:])
