"""An MCP server on stdio whose ``tools/list`` pages are exactly the ones it is given.

The fleet's servers page evenly and end a listing by leaving ``nextCursor`` out. The
catalog clauses (CAT-2) also speak of pages that are empty but carry a cursor, pages of
any size, and listings that end with ``nextCursor`` null or the empty string: this server
serves such listings, so the suite can check that a host reads every page and stops where
it must.

Run as a script, ``python _paged_server.py PAGES LOG``: ``PAGES`` is a JSON list of
``{"tools": [...], "next": "cursor" | "absent" | "null" | "empty"}``, where ``"cursor"``
hands out the cursor of the next page and the others end the listing in that way; ``LOG``
is a file to which the cursor of every ``tools/list`` request is appended, one JSON value
a line. A cursor this server never handed out (the empty string included) is answered
with an error. Run with no arguments, it reads ``PAGES`` and ``LOG`` from the environment
variables ``PAGED_SERVER_PAGES`` and ``PAGED_SERVER_LOG`` instead, so that the suite can
check that a host starts a stdio server with the environment it was configured with. It
imports only the standard library, so that it starts quickly.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["ENDINGS", "ENV_LOG", "ENV_PAGES", "PATH", "cursor_of", "serve"]

#: This file: the script a stdio transport runs.
PATH = Path(__file__).resolve()
#: The environment variables that stand for the arguments.
ENV_PAGES = "PAGED_SERVER_PAGES"
ENV_LOG = "PAGED_SERVER_LOG"
#: How a page without a next page ends the listing.
ENDINGS = ("absent", "null", "empty")
_META_VERSION = "io.modelcontextprotocol/protocolVersion"


def cursor_of(page: int) -> str:
    """The cursor that stands for page ``page``."""
    return f"page-{page}"


def _page(pages: list[dict[str, Any]], index: int) -> dict[str, Any]:
    page = pages[index]
    result: dict[str, Any] = {"tools": page["tools"]}
    ending = page["next"]
    if ending == "cursor":
        result["nextCursor"] = cursor_of(index + 1)
    elif ending == "null":
        result["nextCursor"] = None
    elif ending == "empty":
        result["nextCursor"] = ""
    return result


def _answer(pages: list[dict[str, Any]], log: Path, method: str, params: dict[str, Any]) -> dict[str, Any]:
    capabilities = {"tools": {"listChanged": False}}
    info = {"name": "paged", "version": "1.0.0"}
    meta = params.get("_meta")
    version = meta.get(_META_VERSION) if isinstance(meta, dict) else None
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion"), "capabilities": capabilities, "serverInfo": info}
    if method == "server/discover":
        return {"supportedVersions": [version], "capabilities": capabilities}
    if method == "tools/list":
        cursor = params.get("cursor")
        with log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(cursor) + "\n")
        known = {cursor_of(i): i for i in range(1, len(pages))}
        if cursor is not None and cursor not in known:
            raise LookupError(f"unknown cursor {cursor!r}")
        return _page(pages, 0 if cursor is None else known[cursor])
    if method == "tools/call":
        return {"content": [{"type": "text", "text": f"called {params.get('name')}"}], "isError": False}
    if method == "ping":
        return {}
    raise NotImplementedError(method)


def _modern(params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The fields a result carries in the protocol era without a handshake."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or _META_VERSION not in meta:
        return result
    info = {"io.modelcontextprotocol/serverInfo": {"name": "paged", "version": "1.0.0"}}
    return {**result, "resultType": "complete", "ttlMs": 0, "cacheScope": "private", "_meta": info}


def serve(pages: list[dict[str, Any]], log: Path) -> None:
    """Answer JSON-RPC lines on stdin until it closes."""
    for line in sys.stdin:
        message = json.loads(line) if line.strip() else None
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification, or nothing
        params = message.get("params") or {}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = _modern(params, _answer(pages, log, str(message.get("method")), params))
        except LookupError as error:
            reply["error"] = {"code": -32602, "message": str(error)}
        except NotImplementedError as error:
            reply["error"] = {"code": -32601, "message": f"Method not found: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) == 3:
        serve(json.loads(sys.argv[1]), Path(sys.argv[2]))
    elif ENV_PAGES in os.environ and ENV_LOG in os.environ:
        serve(json.loads(os.environ[ENV_PAGES]), Path(os.environ[ENV_LOG]))
    else:
        sys.exit(f"usage: {PATH.name} PAGES LOG, or no arguments and {ENV_PAGES} and {ENV_LOG} set")
