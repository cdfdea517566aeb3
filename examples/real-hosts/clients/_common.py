"""What the Python client scripts share: read the plan, visit each server under a deadline, report.

A client script is run as ``python CLIENT.py PLAN.json`` in the virtual environment of its
library. The plan gives each server's connection object (driver-protocol form) and the tool
to call on it. The script prints one JSON line naming the library, then one JSON line per
server as soon as it is done with it, so a run that hangs still reports what it finished.

A plan with ``"scenario": "list-changed"`` is a live catalog instead: list the tools, call
``keep`` (the server then removes ``gone``, adds ``fresh`` and sends
``notifications/tools/list_changed``), leave the library ``settle`` seconds to act on the
notification, then call ``gone`` the way the library offers it, and report what came back.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

Visit = Callable[[str, dict[str, Any], dict[str, Any], dict[str, Any]], Awaitable[None]]


def describe(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}"[:200] if text else type(error).__name__


def run(library: str, package: str, visit: Visit, visit_live: Visit) -> None:
    """Visit every server of the plan with ``visit(server_id, connection, call, entry)``, or
    with ``visit_live`` in the list-changed scenario (``call`` is then the whole plan)."""
    with open(sys.argv[1], encoding="utf-8") as file:
        plan = json.load(file)
    print(json.dumps({"library": library, "version": version(package)}), flush=True)
    if plan.get("scenario") == "list-changed":
        plan = {**plan, "calls": dict.fromkeys(plan["servers"], plan)}
        visit = visit_live
    asyncio.run(_visit_all(plan, visit))


async def outcome_of(call: Callable[[], Awaitable[bool]]) -> str:
    """``ok``, ``tool error`` or ``raised …``: what a call through the library came back as."""
    try:
        error = await call()
    except Exception as exc:
        return f"raised {describe(exc)}"
    return "tool error" if error else "ok"


async def settle(plan: dict[str, Any]) -> None:
    """Leave the library time to act on a notification, as a host would between two turns."""
    await asyncio.sleep(plan["settle"])


async def _visit_all(plan: dict[str, Any], visit: Visit) -> None:
    for server_id, connection in plan["servers"].items():
        entry: dict[str, Any] = {"server": server_id, "listed": None, "read_only": None, "error": None, "call": None}
        started = time.monotonic()
        try:
            await asyncio.wait_for(
                visit(server_id, connection, plan["calls"].get(server_id) or {}, entry), plan["timeout"]
            )
        except TimeoutError:
            entry["error"] = f"no answer within {plan['timeout']:g} s"
        except Exception as exc:
            entry["error"] = describe(exc)
        entry["seconds"] = round(time.monotonic() - started, 2)
        print(json.dumps(entry), flush=True)
        print(f"  {server_id}: {entry['listed']} tools listed, error: {entry['error']}", file=sys.stderr, flush=True)


async def call_if_listed(
    names: list[str], call: dict[str, Any], entry: dict[str, Any], do: Callable[[], Awaitable[Any]]
) -> None:
    """Call the planned tool if the library listed it; record whether the call succeeded."""
    if not call:
        return
    if call["tool"] not in names:
        entry["call"] = {"tool": call["tool"], "outcome": "not listed, not called"}
        return
    try:
        error = await do()
    except Exception as exc:
        entry["call"] = {"tool": call["tool"], "outcome": f"raised {describe(exc)}"}
        return
    entry["call"] = {"tool": call["tool"], "outcome": "tool error" if error else "ok"}
