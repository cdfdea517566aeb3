"""One mock server on this process's stdin and stdout, and the parameters to spawn one."""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType
from typing import NoReturn

import anyio
from mcp import StdioServerParameters
from mcp.server.stdio import stdio_server

from mock_servers._ledger import Ledger
from mock_servers._raw import serve_raw_stdio
from mock_servers._server import ServerCore, sdk_server_for
from mock_servers._spec import FleetSpec, ServerSpec, server_to_dict

__all__ = ["run_stdio", "stdio_params"]

# The folder that holds the `mock_servers` package, for the child's PYTHONPATH: the stdio
# client gives a child only a handful of environment variables.
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


def stdio_params(
    spec_source: str | os.PathLike[str] | FleetSpec,
    server_id: str,
    ledger_path: str | os.PathLike[str] | None = None,
) -> StdioServerParameters:
    """How to spawn one server of a fleet as a stdio subprocess.

    ``spec_source`` is a preset name, a spec file, or a `FleetSpec` (then the server's
    spec travels inline on the command line). The command is this interpreter, and the
    environment carries ``PYTHONPATH`` so the child imports this very copy of the package.
    The server is named with ``--server-id`` (not ``--server``, which the MCP Inspector
    takes for itself), so the command line also works under ``mcp-inspector --cli``.

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
    return StdioServerParameters(command=sys.executable, args=args, env={"PYTHONPATH": PACKAGE_ROOT})


def run_stdio(server: ServerSpec, ledger_path: str | os.PathLike[str] | None) -> NoReturn:
    """Serve ``server`` on stdin/stdout until stdin closes, then end the process at once.

    The process records ``process_started`` and ``process_exit`` in the ledger, exits
    with status 1 at once for ``fail_to_start``, and ends without interpreter teardown
    (``os._exit``) so a client's close is quick.
    """
    ledger = Ledger(ledger_path, transport="stdio")
    core = ServerCore(server, ledger, "stdio")
    core.record("process_started", argv=sys.argv[1:3])

    def on_signal(signum: int, frame: FrameType | None) -> None:
        core.exit_process(128 + signum, signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if server.faults.fail_to_start:
        core.fault("fail_to_start")
        sys.stderr.write(f"mock server {server.id!r}: failing to start (fail_to_start fault)\n")
        sys.stderr.flush()
        core.exit_process(1, "fail_to_start")
    try:
        anyio.run(_serve, core)
    except BaseException as exc:
        if _client_gone(exc):
            # The client died mid-request: its end of our stdout is closed. Not a crash.
            core.exit_process(0, "client gone")
        core.record("process_exit", code=1, reason=f"crashed: {type(exc).__name__}")
        traceback.print_exception(exc)
        sys.stderr.flush()
        os._exit(1)
    core.exit_process(0, "stdin closed")
    raise AssertionError("unreachable")  # pragma: no cover


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` only says that the other end of a pipe went away."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_client_gone(e) for e in exc.exceptions)
    return isinstance(exc, BrokenPipeError | ConnectionResetError)


async def _serve(core: ServerCore) -> None:
    if core.spec.raw:
        await serve_raw_stdio(core)
        return
    sdk_server = sdk_server_for(core)
    async with stdio_server() as (read, write):
        await sdk_server.run(read, write, sdk_server.create_initialization_options())
