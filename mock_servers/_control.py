"""What a fleet host's clients and the host share: the URLs of a fleet it serves, what a
change of a server's tools made, and how long an idle session lives.

Kept apart from the host's application (`mock_servers._app`) so that a client of the host,
`FleetHost` in a test process, never loads the MCP SDK and the web server for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

__all__ = ["SESSION_IDLE_SECONDS", "ChangeApplied", "FleetUrls"]

#: How long a legacy-era HTTP session may sit idle (no request in flight) before the server
#: closes it, so the sessions of clients that vanished without a DELETE end in the ledger.
SESSION_IDLE_SECONDS = 300.0


class FleetUrls(dict[str, str]):
    """Server id → endpoint URL of one fleet being served; ``.fleet`` is the fleet's name."""

    def __init__(self, fleet: str, urls: Mapping[str, str]) -> None:
        super().__init__(urls)
        self.fleet = fleet


class ChangeApplied(TypedDict):
    """What a change of a server's tools made: the catalog version, how many tools the
    server now lists, how many notifications it sent."""

    catalog: int
    tools: int
    notified: int
