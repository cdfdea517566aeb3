"""A standard-library stdio MCP server as strict as the official ``everything`` server.

``python strict_server.py LOG`` answers ``initialize`` and serves one tool, but like the
``everything`` server it never answers a request whose ``params`` is ``null`` (it writes
nothing back). ``python strict_server.py LOG silent`` never answers ``tools/list`` and
announces ``notifications/tools/list_changed`` instead. Every line received is appended to LOG.
"""

from __future__ import annotations

import json
import sys

TOOL = {"name": "echo", "description": "Echo a message.", "inputSchema": {"type": "object"}}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(log_path: str, silent: bool) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        for line in sys.stdin:
            log.write(line)
            log.flush()
            message = json.loads(line)
            if "id" not in message:
                continue
            if "params" in message and message["params"] is None:
                continue  # dropped without a word, as the everything server does
            if message["method"] == "initialize":
                result = {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "strict", "version": "1.0.0"},
                }
                send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif message["method"] == "tools/list" and silent:
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            elif message["method"] == "tools/list":
                send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [TOOL]}})
            else:
                error = {"code": -32601, "message": f"{message['method']} is not offered"}
                send({"jsonrpc": "2.0", "id": message["id"], "error": error})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:3] == ["silent"])
