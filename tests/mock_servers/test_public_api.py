from __future__ import annotations

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
