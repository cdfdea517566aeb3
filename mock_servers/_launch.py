"""How a mock server is started as a stdio subprocess: its command, arguments and environment.

Plain data, without the MCP SDK: a host under test (or the conformance suite, which hands
the command to a host through its driver) spawns the server itself. `stdio_params` wraps
the same command in the SDK's parameters for its stdio client.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TypedDict

from mock_servers._spec import FleetSpec, server_to_dict

__all__ = ["PACKAGE_ROOT", "StdioCommand", "stdio_command"]

# The folder that holds the `mock_servers` package, for the child's PYTHONPATH: the stdio
# client gives a child only a handful of environment variables.
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


class StdioCommand(TypedDict):
    """A process to spawn: the program, its arguments, and the environment it needs."""

    command: str
    args: list[str]
    env: dict[str, str]


def stdio_command(
    spec_source: str | os.PathLike[str] | FleetSpec,
    server_id: str,
    ledger_path: str | os.PathLike[str] | None = None,
    *,
    forkserver: str | None = None,
) -> StdioCommand:
    """How to spawn one server of a fleet as a stdio subprocess.

    ``spec_source`` is a preset name, a spec file, or a `FleetSpec` (then the server's
    spec travels inline on the command line). The command is this interpreter, and the
    environment carries ``PYTHONPATH`` so the child imports this very copy of the package.
    The server is named with ``--server-id`` (not ``--server``, which the MCP Inspector
    takes for itself), so the command line also works under ``mcp-inspector --cli``.
    With ``forkserver`` (a `ForkServer`'s path) the process hands the server to that fork
    server, which starts it without importing the MCP SDK again.

    Raises:
        KeyError: the fleet has no server with this id (when given a `FleetSpec`).
    """
    if isinstance(spec_source, FleetSpec):
        server = spec_source.server(server_id)
        source = json.dumps({"seed": spec_source.seed, "servers": [server_to_dict(server)]}, separators=(",", ":"))
    else:
        source = (
            str(Path(spec_source).resolve()) if Path(spec_source).suffix in (".json", ".toml") else str(spec_source)
        )
    args = ["-m", "mock_servers", "stdio", source, "--server-id", server_id]
    if ledger_path is not None:
        args += ["--ledger", str(Path(ledger_path).resolve())]
    # An MCP client starts a stdio server with a minimal environment: a coverage measurement
    # of the caller (coverage's subprocess patch) reaches the server only if passed on.
    measured = {k: v for k, v in os.environ.items() if k.startswith("COVERAGE_PROCESS_")}
    env = {"PYTHONPATH": PACKAGE_ROOT, **measured}
    if forkserver is not None:
        env["MOCK_SERVERS_FORKSERVER"] = forkserver
    return {"command": sys.executable, "args": args, "env": env}
