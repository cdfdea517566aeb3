"""Helpers shared by the mock_servers tests."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from mock_servers import example_arguments

NODE_DIR = Path(__file__).parent / "node"


async def list_all(client: Client) -> list[types.Tool]:
    """Every tool of a server, following nextCursor to the end."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def run_ts_client(
    node: str, *target: str, tool: Mapping[str, Any], child_env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """List every page of a server with the official TypeScript SDK client, then call ``tool``.

    ``target`` is ``"stdio", COMMAND, ARGS...`` or ``"http", URL``. Returns what the client saw:
    ``protocol``, ``pages``, ``tools`` ([name, annotations]), ``definitions`` and ``call``.
    """
    env = {
        "TOOL": tool["name"],
        "ARGS": json.dumps(example_arguments(tool)),
        "CHILD_ENV": json.dumps(dict(child_env or {})),
    }
    done = subprocess.run(
        [node, "ts_client.mjs", *target],
        cwd=NODE_DIR,
        env={**env, "PATH": str(Path(node).parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


async def until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait until ``condition()`` holds (checked every 20 ms), failing after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.02)


def post_initialize(url: str) -> str:
    """Open a legacy-era session with a bare HTTP request, as a client that then vanishes would; its id."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "gone", "version": "0"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as response:
        response.read()
        return str(response.headers["mcp-session-id"])


def free_port_pair() -> int:
    """A port P with P and P+1 free just now (whoever binds them first wins; good enough here)."""
    rng = random.Random(os.getpid())
    for _ in range(200):
        port = rng.randrange(20_000, 60_000)
        with socket.socket() as a, socket.socket() as b:
            try:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise AssertionError("no two consecutive free ports")
