"""Isolation (ISO-*): runs over the same fleet, concurrent ones included, never see each
other's activations, and activation never changes the configuration."""

from __future__ import annotations

import asyncio

from hypothesis import assume, given

from conformance import Sut, clause
from conformance.suite._fleets import Fleets
from conformance.suite._strategies import examples
from conformance.suite._wire import DISCOVERY, activated, catalog, fail, names, open_params, portable, run
from mock_servers import FleetSpec, example_arguments
from mock_servers.strategies import fleet_specs


@clause("ISO-1.1", "ISO-1.2", "ISO-2.1")
@examples(5)
@given(fleet_specs(min_servers=1, max_servers=3, min_tools=20, max_tools=40))
def test_runs_never_see_each_others_activations(sut: Sut, fleets: Fleets, spec: FleetSpec) -> None:
    with fleets.serve(spec) as served:
        cat = catalog(served.tools)
        case = served.describe()

        async def body() -> None:
            one, two = await asyncio.gather(
                sut.open(open_params(served.servers)), sut.open(open_params(served.servers))
            )
            try:
                start1, start2 = await asyncio.gather(one.definitions(), two.definitions())
                inactive = sorted(set(cat) - set(names(start1)))
                assume(inactive)
                target = inactive[0]
                sid, _ = cat[target]
                # The target's qualified name, scoped to its server (DSC-5.8 when it has few candidates).
                results = await asyncio.gather(
                    one.call(DISCOVERY, {"query": target, "server_ids": [sid], "limit": 12}), two.definitions()
                )
                found = activated(results[0])
                after2 = await two.definitions()
                if after2 != start2:
                    raise fail(
                        ("ISO-1.1",),
                        "discovery in one run changed another run's definitions",
                        expected=names(start2),
                        observed=names(after2),
                        case=case | {"activated": found},
                    )
                for q in found:
                    owner, t = cat[q]
                    result = await two.call(q, example_arguments(t))
                    executed = served.ledger().calls(owner, t["name"])
                    if not result["isError"] or executed:
                        raise fail(
                            ("ISO-1.2",),
                            "a tool activated in one run executed in another",
                            observed={"tool": q, "result": result, "executed": portable(executed)},
                            case=case,
                        )
                async with sut.open(open_params(served.servers)) as three:
                    fresh = await three.definitions()
                if fresh != start1:
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

        run(body())
