"""The limits that bound what a fleet spec can ask for, in memory and in time.

Every spec is checked against them when it is read (a `SpecError` naming the field) and
every `FleetSpec` when it is built (a `FleetArgumentError`), so no document, however
hostile, makes a server generate or hold more than this. At about 4 KB per generated tool
in a serving process, the largest fleet (100,000 tools) needs about 0.5 GB.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LIMITS", "Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """The numbers; `LIMITS` holds the ones in force."""

    #: Servers in one fleet.
    servers: int = 10_000
    #: Generated tools of one server (``tool_count``).
    tools_per_server: int = 10_000
    #: Tools of a whole fleet: generated, explicit and ``duplicate_names`` copies of every server.
    fleet_tools: int = 100_000
    #: Characters of one description (``huge_description_chars``, an explicit tool's description).
    description_chars: int = 1_000_000
    #: Characters of every huge and explicit description of a fleet together.
    fleet_description_chars: int = 50_000_000
    #: Bytes of a spec file.
    spec_bytes: int = 64 * 1024 * 1024
    #: How deeply lists and tables may nest in a spec (an input schema included).
    nesting: int = 64
    #: The largest seed (fleet or server).
    seed: int = 2**63 - 1
    #: Count-valued faults (``duplicate_names``, ``huge_descriptions``…) per server.
    fault_count: int = 1_000
    #: Seconds of the ``slow`` fault.
    slow_seconds: float = 600.0
    #: Scheduled changes of one server's live catalog.
    changes_per_server: int = 1_000
    #: ``notifications/tools/list_changed`` one change sends (a storm).
    notifications_per_change: int = 10_000
    #: Seconds after which a scheduled change may fire (``after_seconds``), and calls (``after_calls``).
    change_seconds: float = 86_400.0
    change_calls: int = 1_000_000


LIMITS = Limits()
