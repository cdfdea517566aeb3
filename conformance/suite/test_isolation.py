"""Isolation (ISO-*): runs over the same fleet, concurrent ones included, never see each
other's activations, and activation never changes the configuration."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from hypothesis import given

from conformance import Inconclusive, Nonconformance, Sut, clause
from conformance.suite._fleets import Fleets
from conformance.suite._preconditions import (
    gate_refuses_inactive,
    named_activation_is_due,
    nothing_to_check,
    precondition,
    qualified_names_kept,
)
from conformance.suite._predictions import DEFAULT_MAX_ACTIVE, DYNAMIC
from conformance.suite._strategies import examples
from conformance.suite._wire import DISCOVERY, activated, by_name, catalog, fail, names, open_params, portable, run
from mock_servers import FleetSpec, example_arguments
from mock_servers.strategies import fleet_specs


# Servers of 14 to 24 tools: a first round of 12 each (SEL-1) leaves 2 to 12 candidates on
# each, so asking for one by its qualified name, scoped to its server, activates it (DSC-5.8).
@clause("ISO-1.1", "ISO-1.2", "ISO-2.1")
@examples(5)
@given(fleet_specs(min_servers=1, max_servers=3, min_tools=14, max_tools=24))
def test_runs_never_see_each_others_activations(sut: Sut, fleets: Fleets, spec: FleetSpec) -> None:
    with fleets.serve(spec) as served:
        cat = catalog(served.tools)
        case = served.describe()

        async def body() -> Nonconformance | Inconclusive | None:
            one, two = await asyncio.gather(
                sut.open(open_params(served.servers)), sut.open(open_params(served.servers))
            )
            try:
                start1, start2 = await asyncio.gather(one.definitions(), two.definitions())
                active = [q for q in names(start1) if q in cat]
                inactive = sorted(set(cat) - set(active))
                precondition("SEL-1.1", bool(inactive), "the first round left no tool out, past the cap of 12")
                target = min(inactive, key=lambda q: (_on(cat, q, inactive), q))
                sid, _ = cat[target]
                results = await asyncio.gather(
                    one.call(DISCOVERY, {"query": target, "server_ids": [sid], "limit": 12}), two.definitions()
                )
                found = activated(results[0])
                if not found:
                    due = named_activation_is_due(
                        _on(cat, target, inactive),
                        DEFAULT_MAX_ACTIVE - _on(cat, target, active),
                        DYNAMIC - 1 - len(active),
                    )
                    precondition("DSC-5.8", not due, f"discovery did not activate {target}, asked for by its name")
                    nothing_to_check(f"discovery activated nothing, not even {target} asked for by name (DSC-5.6)")
                after2 = await two.definitions()
                if by_name(after2) != by_name(start2):
                    raise fail(
                        ("ISO-1.1",),
                        "discovery in one run changed another run's definitions",
                        expected=names(start2),
                        observed=names(after2),
                        case=case | {"activated": found},
                    )
                qualified_names_kept(found, cat)
                # A tool run two had from its first round is its own to call: only those run
                # one activated anew count (that discovery reports active ones is DSC-4.2's).
                for q in sorted(set(found) - set(names(start2))):
                    owner, t = cat[q]
                    # Only calls run two's own makes count: whatever run one did to the server
                    # (discovery calling what it activates, DSC-9) is not run two executing it.
                    before = len(served.ledger().calls(owner, t["name"]))
                    result = await two.call(q, example_arguments(t))
                    executed = served.ledger().calls(owner, t["name"])[before:]
                    if not result["isError"] or executed:
                        # Reported once the runs are closed: whether the gate refuses a tool
                        # that is merely inactive is asked in a run of its own.
                        return fail(
                            ("ISO-1.2",),
                            "a tool activated in one run executed in another",
                            observed={"tool": q, "result": result, "executed": portable(executed)},
                            case=case,
                        )
                async with sut.open(open_params(served.servers)) as three:
                    fresh = await three.definitions()
                # Which tools it starts with: what the definitions say of them and in what
                # order is the business of SEL-4.1 and DEF-4.1, which compare two runs too.
                if sorted(names(fresh)) != sorted(names(start1)):
                    raise fail(
                        ("ISO-2.1",),
                        "a new run after another run's discoveries starts differently",
                        expected=names(start1),
                        observed=names(fresh),
                        case=case,
                    )
            finally:
                await one.close()
                await two.close()
            return None

        executed_elsewhere = run(body())
    if executed_elsewhere is not None:
        gate_refuses_inactive(sut, fleets)
        raise executed_elsewhere


def _on(cat: Mapping[str, tuple[str, Any]], name: str, among: list[str]) -> int:
    """How many of ``among`` belong to the server of ``name``."""
    return sum(cat[q][0] == cat[name][0] for q in among)
