"""A fleet of generated mock MCP servers over real transports, with faults and a ledger.

Describe a fleet (`FleetSpec`, or a JSON/TOML file, or a preset), then serve it in
memory (`memory_server`), over stdio (`stdio_params`, ``mcp-fleet stdio``; a `ForkServer`
starts each in milliseconds) or over Streamable HTTP (`serve_http`, `FleetHost`,
``mcp-fleet serve``), and read what happened to each server from its ledger
(`read_ledger`). Every spec stays within `LIMITS`.
A server may serve a live catalog: its tools change while it serves, by the schedule of its
spec or on a test's request (`MemoryFleet`, `FleetHost.change_tools`), and it sends
``notifications/tools/list_changed``.
`ProcessGroup` starts a child process in a group of its own and ends it with everything
it started.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mock_servers._control import ChangeApplied, FleetUrls
    from mock_servers._errors import (
        CaptureError,
        FleetArgumentError,
        FleetError,
        HostError,
        LedgerError,
        SpecError,
        SpecProblem,
    )
    from mock_servers._fixture import FleetFactory, ServedFleet
    from mock_servers._forkserver import ForkServer
    from mock_servers._generate import MCP_TOOL_NAME, PROVIDER_TOOL_NAME, example_arguments, generate_tools
    from mock_servers._host import FleetHost
    from mock_servers._http import serve_http
    from mock_servers._launch import StdioCommand, stdio_command
    from mock_servers._ledger import (
        OBSERVABILITY,
        Discovered,
        FaultFired,
        FleetAdded,
        FleetRemoved,
        Initialized,
        Ledger,
        LedgerEvent,
        LedgerView,
        ListChanged,
        ProcessExit,
        ProcessStarted,
        SessionClosed,
        SessionOpened,
        ToolCalled,
        ToolsChanged,
        ToolsListed,
        read_ledger,
        wait_for_exits,
        wait_for_listing,
    )
    from mock_servers._limits import LIMITS, Limits
    from mock_servers._processes import ProcessGroup
    from mock_servers._server import CallResult, MemoryFleet, build_server, call_result, memory_server
    from mock_servers._spec import (
        AnnotationMix,
        CatalogChange,
        Faults,
        FleetSpec,
        Rename,
        SchemaShapes,
        ServerSpec,
        ToolSpec,
        ToolUpdate,
        spec_to_dict,
    )
    from mock_servers._spec_format import ChangeDocument, ServerDocument, SpecDocument, ToolDocument
    from mock_servers._spec_reader import load_spec, preset, preset_names, spec_from_dict, spec_from_text
    from mock_servers._stdio import stdio_params
    from mock_servers._wire import JsonSchema, ListedTool, ToolAnnotations, ToolPolicy

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
    "SpecDocument",
    "ServerDocument",
    "ToolDocument",
    "LIMITS",
    "Limits",
    # Live catalogs (changes while serving, notifications/tools/list_changed)
    "CatalogChange",
    "ChangeDocument",
    "Rename",
    "ToolUpdate",
    "MemoryFleet",
    "ChangeApplied",
    # Generation
    "MCP_TOOL_NAME",
    "PROVIDER_TOOL_NAME",
    "example_arguments",
    "generate_tools",
    "JsonSchema",
    "ListedTool",
    "ToolAnnotations",
    "ToolPolicy",
    # Servers and transports
    "FleetHost",
    "FleetUrls",
    "build_server",
    "call_result",
    "CallResult",
    "memory_server",
    "serve_http",
    "stdio_params",
    "stdio_command",
    "StdioCommand",
    "ForkServer",
    # Fleets for pytest tests (the mcp_fleet fixture)
    "FleetFactory",
    "ServedFleet",
    # Processes
    "ProcessGroup",
    # The ledger
    "OBSERVABILITY",
    "Ledger",
    "LedgerView",
    "LedgerEvent",
    "FaultFired",
    "ListChanged",
    "ProcessStarted",
    "ProcessExit",
    "FleetAdded",
    "FleetRemoved",
    "SessionOpened",
    "SessionClosed",
    "Initialized",
    "Discovered",
    "ToolsListed",
    "ToolCalled",
    "ToolsChanged",
    "read_ledger",
    "wait_for_exits",
    "wait_for_listing",
    # Errors
    "CaptureError",
    "FleetArgumentError",
    "FleetError",
    "HostError",
    "LedgerError",
    "SpecError",
    "SpecProblem",
]

# Every name loads on first use, so that importing the package (the pytest plugin does, in
# every test run of a project that installs it) costs nothing until a fleet is wanted. A
# name comes from the first of these modules that has it, cheapest first: what a client of
# fleets needs (specs, the host's client `FleetHost`, stdio commands, the ledger: all the
# conformance suite's process uses) never loads the MCP SDK, and only the HTTP side loads
# uvicorn.
_MODULES = (
    "_errors",
    "_limits",
    "_wire",
    "_control",
    "_spec_format",
    "_spec",
    "_launch",
    "_forkserver",
    "_spec_reader",
    "_generate",
    "_ledger",
    "_processes",
    "_host",
    "_fixture",
    "_server",
    "_stdio",
    "_app",
    "_http",
)


def __getattr__(name: str) -> Any:
    if name in __all__:
        for module in _MODULES:
            value = getattr(importlib.import_module(f"mock_servers.{module}"), name, _MISSING)
            if value is not _MISSING:
                globals()[name] = value
                return value
    raise AttributeError(f"module 'mock_servers' has no attribute {name!r}")


_MISSING = object()


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
