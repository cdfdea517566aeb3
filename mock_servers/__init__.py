"""A fleet of generated mock MCP servers over real transports, with faults and a ledger.

Describe a fleet (`FleetSpec`, or a JSON/TOML file, or a preset), then serve it in
memory (`memory_server`), over stdio (`stdio_params`, ``mcp-fleet stdio``) or over
Streamable HTTP (`serve_http`, `FleetHost`, ``mcp-fleet serve``), and read what
happened to each server from its ledger (`read_ledger`). Every spec stays within `LIMITS`.
`ProcessGroup` starts a child process in a group of its own and ends it with everything
it started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mock_servers._errors import FleetArgumentError, FleetError, HostError, SpecError, SpecProblem
from mock_servers._generate import MCP_TOOL_NAME, PROVIDER_TOOL_NAME, example_arguments, generate_tools
from mock_servers._ledger import OBSERVABILITY, Ledger, LedgerView, read_ledger, wait_for_exits
from mock_servers._limits import LIMITS, Limits
from mock_servers._processes import ProcessGroup
from mock_servers._server import build_server, call_digest, memory_server
from mock_servers._spec import (
    AnnotationMix,
    Faults,
    FleetSpec,
    SchemaShapes,
    ServerSpec,
    ToolSpec,
    load_spec,
    preset,
    preset_names,
    spec_from_dict,
    spec_from_text,
    spec_to_dict,
)
from mock_servers._stdio import stdio_params

if TYPE_CHECKING:
    from mock_servers._app import FleetUrls
    from mock_servers._host import FleetHost
    from mock_servers._http import serve_http

__all__ = [
    # The fleet specification
    "AnnotationMix",
    "Faults",
    "FleetSpec",
    "SchemaShapes",
    "ServerSpec",
    "ToolSpec",
    "load_spec",
    "preset",
    "preset_names",
    "spec_from_dict",
    "spec_from_text",
    "spec_to_dict",
    "LIMITS",
    "Limits",
    # Generation
    "MCP_TOOL_NAME",
    "PROVIDER_TOOL_NAME",
    "example_arguments",
    "generate_tools",
    # Servers and transports
    "FleetHost",
    "FleetUrls",
    "build_server",
    "call_digest",
    "memory_server",
    "serve_http",
    "stdio_params",
    # Processes
    "ProcessGroup",
    # The ledger
    "OBSERVABILITY",
    "Ledger",
    "LedgerView",
    "read_ledger",
    "wait_for_exits",
    # Errors
    "FleetArgumentError",
    "FleetError",
    "HostError",
    "SpecError",
    "SpecProblem",
]

_LAZY = {"FleetHost": "_host", "FleetUrls": "_app", "serve_http": "_http"}


def __getattr__(name: str) -> Any:
    # The HTTP side (uvicorn) loads on first use, so a stdio server process starts faster.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"mock_servers.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'mock_servers' has no attribute {name!r}")
