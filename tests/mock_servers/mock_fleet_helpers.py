"""Helpers shared by the mock_servers tests."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
