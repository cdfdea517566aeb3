"""A tiny MCP server over stdio that writes raw JSON-RPC, for what SDK servers cannot send.

Run as ``python raw_server.py CONFIG.json``. It imports only the standard library, so it
starts in a few tens of milliseconds. The configuration file holds::

    {"pages": [[tool, ...], ...],   # raw tools/list pages, sent exactly as given
     "log": "/path/to/log",         # optional: "start", "call NAME ARGS" and "exit" lines
     "exit_at_start": false,        # optional: exit before answering anything
     "hang_list": false,            # optional: never answer tools/list
     "crash_on": "name",            # optional: exit without answering a call of this tool
     "hang_on": "name",             # optional: never answer a call of this tool
     "spawn": ["sleep", "300"],     # optional: start this child in the server's process group ("child PID")
     "stderr_bytes": 0}             # optional: write this many bytes to stderr at start

It declines ``server/discover`` so the client falls back to the ``initialize`` handshake,
answers ``tools/list`` page by page (cursor = page number), and echoes ``tools/call``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def _log(path: str | None, line: str) -> None:
    if path:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _answer(request_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _handle(config: dict[str, Any], message: dict[str, Any]) -> None:
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if request_id is None:
        return  # a notification
    if method == "initialize":
        _answer(
            request_id,
            {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            },
        )
    elif method == "tools/list":
        if config.get("hang_list"):
            return
        pages = config["pages"]
        page = int(params.get("cursor") or 0)
        result: dict[str, Any] = {"tools": pages[page]}
        if page + 1 < len(pages):
            result["nextCursor"] = str(page + 1)
        _answer(request_id, result)
    elif method == "tools/call":
        if params.get("name") == config.get("crash_on"):
            raise SystemExit(0)
        if params.get("name") == config.get("hang_on"):
            _log(config.get("log"), f"hang {params.get('name')}")
            return
        _log(config.get("log"), f"call {params.get('name')} {json.dumps(params.get('arguments'), sort_keys=True)}")
        _answer(request_id, {"content": [{"type": "text", "text": f"raw {params.get('name')} ok"}], "isError": False})
    elif method == "ping":
        _answer(request_id, {})
    else:
        _answer(request_id, error={"code": -32601, "message": f"Method not found: {method}"})


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    log = config.get("log")
    _log(log, "start")
    if config.get("spawn"):
        child = subprocess.Popen(config["spawn"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        _log(log, f"child {child.pid}")
    if config.get("stderr_bytes"):
        sys.stderr.write("e" * config["stderr_bytes"])
        sys.stderr.flush()
    try:
        if config.get("exit_at_start"):
            return
        for line in sys.stdin:
            if line.strip():
                _handle(config, json.loads(line))
    finally:
        _log(log, "exit")


if __name__ == "__main__":
    main()
