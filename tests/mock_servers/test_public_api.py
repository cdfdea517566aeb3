from __future__ import annotations

import subprocess
import sys

import pytest

import mock_servers
import mock_servers.strategies


def test_the_package_exports_exactly_its_public_names() -> None:
    public = {name for name in dir(mock_servers) if not name.startswith("_")} - {"annotations", "TYPE_CHECKING", "Any"}
    modules = {name for name in public if type(getattr(mock_servers, name)).__name__ == "module"}
    assert set(mock_servers.__all__) == public - modules | {"FleetHost", "FleetUrls", "serve_http"}
    assert all(getattr(mock_servers, name) is not None for name in mock_servers.__all__)


def test_the_strategies_module_exports_exactly_its_strategies() -> None:
    assert mock_servers.strategies.__all__ == [
        "catalog_changes",
        "fleet_specs",
        "server_specs",
        "tool_policies",
        "tool_specs",
    ]


@pytest.mark.e2e
def test_a_client_of_fleets_never_loads_the_mcp_sdk() -> None:
    """What the conformance suite's process needs (specs, the host's client, stdio commands,
    the ledger) is light: every certification starts one, and the SDK costs seconds to load."""
    code = (
        "import sys, mock_servers as m; "
        "spec = m.preset('realistic'); m.generate_tools(spec.servers[0]); m.stdio_command(spec, spec.servers[0].id); "
        "[m.FleetHost, m.FleetUrls, m.ForkServer, m.ChangeApplied, m.read_ledger, m.wait_for_exits, m.spec_to_dict, m.LedgerView]; "
        "print(sorted(n for n in ('mcp', 'mcp_types', 'uvicorn', 'faker') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_stdio_command_is_the_sdks_stdio_parameters() -> None:
    spec = mock_servers.preset("seed-example")
    server = spec.servers[0].id

    command = mock_servers.stdio_command(spec, server, "ledger.jsonl")
    params = mock_servers.stdio_params(spec, server, "ledger.jsonl")

    assert (params.command, params.args, params.env) == (command["command"], command["args"], command["env"])
