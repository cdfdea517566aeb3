"""Conformance suite for adaptive MCP toolsets.

Point it at an implementation, in this process or through a driver program, and it tells
which clauses of ``SPEC.md`` the implementation meets and which it breaks::

    mcp-conformance certify --sut-cmd "node driver.js"      # a certificate, in a pytest of its own
    pytest -p conformance.plugin --sut reference            # the bundled reference implementation
    pytest -p conformance.plugin --sut my_host.testing:make_sut   # any SystemUnderTest, in-process
    pytest -p conformance.plugin --sut-cmd "node driver.js" # any program speaking the driver protocol

The names below load lazily, so loading the pytest plugin costs nothing until a SUT is
named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance._clauses import CLAUSES, Clause, Level, Profile, clause, profile_of
    from conformance._driver import DriverSut
    from conformance._errors import (
        ConformanceError,
        Inconclusive,
        Nonconformance,
        OutcomeError,
        OutcomeKind,
        SpecError,
        SutMisbehaved,
        SutStartError,
        UnknownClause,
        UsageError,
    )
    from conformance._loading import driver_argv, load_sut, start_driver
    from conformance._sut import Implementation, Run, Sut, SystemUnderTest

__all__ = [
    # The specification and how tests cite it
    "CLAUSES",
    "Clause",
    "Level",
    "Profile",
    "clause",
    "profile_of",
    # The system under test
    "DriverSut",
    "Implementation",
    "Run",
    "Sut",
    "SystemUnderTest",
    "driver_argv",
    "load_sut",
    "start_driver",
    # Findings, outcomes and errors of the suite
    "ConformanceError",
    "Inconclusive",
    "Nonconformance",
    "OutcomeError",
    "OutcomeKind",
    "SpecError",
    "SutMisbehaved",
    "SutStartError",
    "UnknownClause",
    "UsageError",
]

_HOMES = {
    **dict.fromkeys(("CLAUSES", "Clause", "Level", "Profile", "clause", "profile_of"), "conformance._clauses"),
    **dict.fromkeys(("Implementation", "Run", "Sut", "SystemUnderTest"), "conformance._sut"),
    **dict.fromkeys(("driver_argv", "load_sut", "start_driver"), "conformance._loading"),
    "DriverSut": "conformance._driver",
    **dict.fromkeys(
        (
            "ConformanceError",
            "Inconclusive",
            "Nonconformance",
            "OutcomeError",
            "OutcomeKind",
            "SpecError",
            "SutMisbehaved",
            "SutStartError",
            "UnknownClause",
            "UsageError",
        ),
        "conformance._errors",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
