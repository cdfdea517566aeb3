"""Runs with refresh (RFR-*, profile ``refresh``): the catalog follows each server's
``notifications/tools/list_changed`` through the same policy, gate and budgets.

Every run here is opened with ``"refresh": true`` (PROTOCOL.md P38) on a fleet whose servers
serve live catalogs, but one beside it that is opened without, to be left as it opened. A check changes a server's tools through the fleet, waits until the
server has been listed again (every page, from the first) or has refused a listing, and only
then asks the run anything (P39): no check sleeps. Each server has few tools, all active from
the first round, so that a discovery call scoped to a server with the qualified name of its
one candidate must activate it (DSC-5.8).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from conformance import Nonconformance, OutcomeError, Run, Sut, SutMisbehaved, clause
from conformance._wire_types import OpenParams, ToolPolicy
from conformance.suite._fleets import RELIST_SECONDS, Fleet, Fleets
from conformance.suite._preconditions import nothing_to_check, precondition
from conformance.suite._wire import (
    DISCOVERY,
    activated,
    base_tools,
    fail,
    mcp_definitions,
    names,
    open_params,
    portable,
    run,
)
from mock_servers import CatalogChange, ChangeDocument, Faults, FleetSpec, ServerSpec, ToolCalled, ToolSpec

READ_ONLY = {"readOnlyHint": True}
#: How long a host that does not claim refresh is watched after a change: one that refreshes
#: anyway lists the server again within milliseconds, one that keeps its catalog is waited for
#: this long, once. A host owes no signal here (P39 binds only hosts with refresh).
UNCLAIMED_SECONDS = 2.0


def _server(server_id: str, *tools: ToolSpec, page_size: int = 50) -> ServerSpec:
    return ServerSpec(id=server_id, tool_count=0, tools=tools, page_size=page_size, list_changed=True)


def _tool(name: str, description: str = "", annotations: Mapping[str, Any] | None = READ_ONLY) -> ToolSpec:
    return ToolSpec(
        name=name, description=description or f"The {name.replace('_', ' ')} tool.", annotations=annotations
    )


SPEC = FleetSpec(
    servers=(
        # One tool per page: a refresh must follow every cursor (RFR-1.1).
        _server("docs", _tool("get_page"), _tool("list_pages"), page_size=1),
        _server("ro", _tool("read_log"), _tool("tail_log"), _tool("peek_log", annotations=None)),
        _server("fixed", _tool("a"), _tool("b")),
        _server("guarded", _tool("archive_table"), _tool("list_tables")),
        _server("flaky", _tool("x"), _tool("y")),
        _server("noisy", _tool("n1"), _tool("n2")),
    )
)
POLICIES: dict[str, ToolPolicy] = {
    "ro": {"sideEffects": "readOnly"},
    "fixed": {"mode": "all", "maxActiveTools": 2},
    "guarded": {"deniedTools": ["drop_table"]},
}


class Refreshing:
    """A run with refresh on the live fleet, and what the checks ask of it."""

    def __init__(self, fleet: Fleet, r: Run, opened: Mapping[str, Any] | None = None) -> None:
        self.fleet = fleet
        self.run = r
        self.changes: list[dict[str, Any]] = []
        #: What the run was opened with, beside its servers: for the case of a finding.
        self.opened = dict(opened or {"refresh": True})

    @property
    def case(self) -> dict[str, Any]:
        return self.fleet.describe() | {"open": self.opened, "changes": self.changes}

    def fail(self, sentence: str, message: str, *, expected: object = None, observed: object = None) -> Exception:
        return fail((sentence,), message, expected=expected, observed=observed, case=self.case)

    async def change(self, server_id: str, change: ChangeDocument, *, outcome: str = "complete") -> None:
        """Change a server's tools and wait until the run has listed it again (or failed to)."""
        self.changes.append({"server": server_id, **change})
        await self.listed_again(server_id, await self.fleet.change_tools(server_id, change), outcome=outcome)

    async def listed_again(self, server_id: str, catalog: int, *, outcome: str = "complete") -> None:
        """Wait until the run has listed the server since its catalog version ``catalog`` (or failed to)."""
        listed = await self.fleet.relisted(server_id, catalog)
        if listed == "timeout":
            raise self.fail(
                "RFR-1.1",
                f"server {server_id!r} sent notifications/tools/list_changed and was not listed again, every "
                f"page from the first, within {RELIST_SECONDS:g} s",
                observed=portable(self.fleet.ledger().of("tools_listed", server_id)[-3:]),
            )
        if listed != outcome:
            raise AssertionError(f"the fleet's listing of {server_id!r} ended {listed!r}, not {outcome!r}")

    async def removes(self, server_id: str, name: str, stale: str) -> None:
        """The server stops listing ``name``; a definition list that still shows it fails RFR-1.2
        with the ``stale`` message."""
        await self.change(server_id, {"remove": [name]})
        if f"{server_id}__{name}" in await self.active():
            raise self.fail("RFR-1.2", stale)

    async def active(self) -> list[str]:
        return names(mcp_definitions(await self.run.definitions(), []))

    async def discover(self, qualified: str) -> list[str]:
        server_id = qualified.split("__", 1)[0]
        result = await self.run.call(DISCOVERY, {"query": qualified, "server_ids": [server_id], "limit": 12})
        return activated(result)

    async def new_tools_judged(self) -> None:
        """Go on only when a tool a server lists for the first time goes through its policy
        (RFR-3.1): ``ro`` (read-only) adds ``purge_log``, without ``readOnlyHint``, which no
        discovery call may activate. Call it on the way to a finding on a renamed tool.

        Raises:
            Inconclusive: naming RFR-3.1.
        """
        await self.change("ro", {"add": [{"name": "purge_log", "description": "Purge the log."}]})
        found = await self.discover("ro__purge_log")
        precondition(
            "RFR-3.1",
            "ro__purge_log" not in found,
            "a tool new to the read-only server ro, without readOnlyHint, was activated by discovery",
        )

    async def definitions_keep_up(self) -> None:
        """Go on only when the definitions follow the gate through a refresh (RFR-1.3): the
        check's finding is read from the definitions, which lag when a tool ``noisy`` removes
        is still listed while the gate refuses it. Call it on the way to that finding.

        Raises:
            Inconclusive: naming RFR-1.3.
        """
        await self.change("noisy", {"remove": ["n2"]})
        listed = "noisy__n2" in await self.active()
        refused = (await self.run.call("noisy__n2", {}))["isError"]
        precondition(
            "RFR-1.3",
            not (listed and refused),
            "after a refresh the definitions still list a tool its server removed, which the gate refuses",
        )

    async def told_inactive(self, server_id: str, qualified: str) -> None:
        """A required tool left inactive for want of room is in the run's notices (RFR-3.5)."""
        notices = await self.run.notices()
        if not [n for n in notices if n.get("kind") == "required_tool_inactive" and qualified in n.get("tools", [])]:
            raise self.fail(
                "RFR-3.5",
                "a required tool left inactive for want of room is not in the run's notices",
                expected={"kind": "required_tool_inactive", "server": server_id, "tools": [qualified]},
                observed=notices,
            )

    def calls_since(self, qualified: str, start: int) -> list[ToolCalled]:
        server_id, name = qualified.split("__", 1)
        return self.fleet.ledger().calls(server_id, name)[start:]

    async def gone(self, qualified: str, *, still: str, reached: str, found: str) -> None:
        """A tool a refresh took out: absent from the definitions, refused without reaching its
        server, never found by discovery. Each way it is not fails the sentence given for it."""
        start = len(self.fleet.ledger().calls(*qualified.split("__", 1)))
        listed = qualified in await self.active()
        result = await self.run.call(qualified, {})
        calls = self.calls_since(qualified, start)
        if listed and calls:
            raise self.fail(still, f"{qualified!r} is still active after the refresh: listed, and its calls run")
        if listed:
            raise self.fail(
                "RFR-1.3",
                f"the definitions still list {qualified!r}, which the gate refuses after the refresh",
                observed=result,
            )
        if calls or not result["isError"]:
            raise self.fail(
                reached, f"a call to {qualified!r}, which the refresh took out, reached its server", observed=result
            )
        activated_now = await self.discover(qualified)
        if qualified in activated_now:
            raise self.fail(found, f"discovery activated {qualified!r}, which the refresh took out")


def _refreshing(sut: Sut, fleet: Fleet, *, list_timeout: float | None = None) -> Any:
    params: OpenParams = {**open_params(fleet.with_policies(POLICIES)), "refresh": True}
    if list_timeout is not None:
        params["listTimeoutSeconds"] = list_timeout
    return sut.open(params)


def _serve(fleets: Fleets) -> Any:
    return fleets.serve(SPEC, POLICIES)


@clause("RFR-1.1", "RFR-1.2", "RFR-1.3", "RFR-2.1", "RFR-2.2", "RFR-2.3", "RFR-2.4")
def test_a_tool_the_server_removed_leaves_the_definitions_the_gate_and_discovery(sut: Sut, fleets: Fleets) -> None:
    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            before = await live.active()
            if "docs__get_page" not in before:
                raise AssertionError("the first round of this fleet activates every tool of docs")
            await live.change("docs", {"remove": ["get_page"]})
            lost = sorted(set(before) - {"docs__get_page"} - set(await live.active()))
            if lost:
                raise live.fail(
                    "RFR-2.4", "a refresh that removed one tool took other active tools out with it", observed=lost
                )
            await live.gone("docs__get_page", still="RFR-2.1", reached="RFR-2.2", found="RFR-2.3")
            # Another server's refresh rebuilds the catalog from docs' last listing, not its first.
            await live.change("noisy", {"add": [{"name": "n3", "annotations": READ_ONLY}]})
            if "docs__get_page" in await live.discover("docs__get_page"):
                raise live.fail("RFR-1.2", "after noisy's refresh, discovery activated a tool docs no longer lists")

    with _serve(fleets) as fleet:
        run(body(fleet))


NAMED_SPEC = FleetSpec(
    servers=(
        _server("pins", _tool("keep"), _tool("pinned_once")),
        _server("allows", _tool("kept"), _tool("allowed_once")),
    )
)
NAMED_POLICIES: dict[str, ToolPolicy] = {
    "pins": {"pinnedTools": ["pinned_once"]},
    "allows": {"mode": "allowlist", "allowedTools": ["kept", "allowed_once"]},
}


@clause("RFR-1.1", "RFR-1.2", "RFR-1.3", "RFR-2.1", "RFR-2.2", "RFR-2.3", "RFR-2.4")
def test_a_tool_its_policy_names_leaves_like_any_other_when_its_server_stops_listing_it(
    sut: Sut, fleets: Fleets
) -> None:
    """A pinned and an allowlisted tool, both required, are removed by their servers. The
    listing is good (RFR-5 is for listings that fail): the policy's name now matches nothing,
    and the gate never runs a tool its server no longer offers (DESIGN.md, readings)."""

    async def body(fleet: Fleet) -> None:
        async with sut.open({**open_params(fleet.with_policies(NAMED_POLICIES)), "refresh": True}) as r:
            live = Refreshing(fleet, r)
            before = await live.active()
            named = ["pins__pinned_once", "allows__allowed_once"]
            precondition("POL-6.2", set(named) <= set(before), "a required tool was not active from the first round")
            for qualified in named:
                server_id, name = qualified.split("__", 1)
                await live.change(server_id, {"remove": [name]})
                await live.gone(qualified, still="RFR-2.1", reached="RFR-2.2", found="RFR-2.3")
            lost = sorted(set(before) - set(named) - set(await live.active()))
            if lost:
                raise live.fail(
                    "RFR-2.4", "a refresh that removed a named tool took other active tools out with it", observed=lost
                )

    with fleets.serve(NAMED_SPEC, NAMED_POLICIES) as fleet:
        run(body(fleet))


@clause("RFR-1.1", "RFR-1.2", "RFR-3.2", "RFR-3.3")
def test_a_new_tool_is_found_by_the_next_discovery_and_only_then_active(sut: Sut, fleets: Fleets) -> None:
    """A tool added on a later page is in the catalog, not activated, found by discovery, then
    runs; a second change (its description) replaces the first listing too."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            await live.change("docs", {"add": [{"name": "search_pages", "description": "Search pages."}]})
            if "docs__search_pages" in await live.active():
                raise live.fail("RFR-3.3", "the refresh activated a new tool that its policy does not require")
            found = await live.discover("docs__search_pages")
            if "docs__search_pages" not in found:
                raise live.fail(
                    "RFR-3.2",
                    "a discovery call scoped to docs with the qualified name of its one candidate, added by the "
                    "server, did not activate it",
                    expected=["docs__search_pages"],
                    observed=found,
                )
            result = await r.call("docs__search_pages", {})
            if result["isError"]:
                raise live.fail("RFR-3.2", "the new tool, activated by discovery, did not run", observed=result)
            await live.change("docs", {"update": [{"name": "search_pages", "description": "Find pages by words."}]})
            [shown] = [d for d in await r.definitions() if d["name"] == "docs__search_pages"] or [None]
            if shown is None or shown["description"] != "Find pages by words.":
                raise live.fail(
                    "RFR-1.2",
                    "after a second change the definitions read an earlier listing of the server",
                    expected="Find pages by words.",
                    observed=shown,
                )

    with _serve(fleets) as fleet:
        run(body(fleet))


@clause("RFR-1.1", "RFR-3.1")
def test_a_new_tool_its_policy_does_not_admit_is_never_active_found_or_run(sut: Sut, fleets: Fleets) -> None:
    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            await live.change("guarded", {"add": [{"name": "drop_table", "description": "Drop a table."}]})
            await live.change("ro", {"add": [{"name": "purge_log", "description": "Purge the log."}]})
            for qualified in ("guarded__drop_table", "ro__purge_log"):
                if qualified in await live.active() or qualified in await live.discover(qualified):
                    raise live.fail("RFR-3.1", f"{qualified!r}, which its policy excludes, became active")
                result = await r.call(qualified, {})
                if not result["isError"] or live.calls_since(qualified, 0):
                    raise live.fail("RFR-3.1", f"{qualified!r}, which its policy excludes, ran", observed=result)

    with _serve(fleets) as fleet:
        run(body(fleet))


@clause("RFR-1.1", "RFR-4.1")
def test_a_changed_definition_replaces_the_old_one_in_the_next_definitions(sut: Sut, fleets: Fleets) -> None:
    schema = {"type": "object", "properties": {"space": {"type": "string"}}, "required": ["space"]}

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            if "docs__list_pages" not in names(await r.definitions()):
                raise AssertionError("the first round of this fleet activates every tool of docs")
            edit: ChangeDocument = {
                "update": [{"name": "list_pages", "description": "List the pages of a space.", "input_schema": schema}]
            }
            await live.change("docs", edit)
            [shown] = [d for d in await r.definitions() if d["name"] == "docs__list_pages"] or [None]
            expected = {"description": "List the pages of a space.", "inputSchema": schema}
            if shown is None or {k: shown.get(k) for k in expected} != expected:
                await live.definitions_keep_up()
                raise live.fail(
                    "RFR-4.1", "the definition of a changed tool is not the new one", expected=expected, observed=shown
                )

    with _serve(fleets) as fleet:
        run(body(fleet))


@clause("RFR-1.1", "RFR-1.3", "RFR-4.2")
def test_a_tool_that_lost_its_read_only_mark_leaves_a_read_only_server(sut: Sut, fleets: Fleets) -> None:
    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            await live.change("ro", {"update": [{"name": "tail_log", "annotations": {"readOnlyHint": False}}]})
            await live.gone("ro__tail_log", still="RFR-4.2", reached="RFR-4.2", found="RFR-4.2")

    with _serve(fleets) as fleet:
        run(body(fleet))


@clause("RFR-1.1", "RFR-1.3", "RFR-2.1", "RFR-2.2", "RFR-2.3", "RFR-4.3", "RFR-4.4")
def test_a_renamed_tool_is_judged_under_its_new_name(sut: Sut, fleets: Fleets) -> None:
    """``archive_table`` renamed ``drop_table``, a denied name: gone under both names; a tool
    that gains its read-only mark on a read-only server becomes a candidate."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            await live.change("guarded", {"rename": [{"from": "archive_table", "to": "drop_table"}]})
            # The old name is a tool the server removed, whatever else it did (RFR-2's).
            await live.gone("guarded__archive_table", still="RFR-2.1", reached="RFR-2.2", found="RFR-2.3")
            try:
                await live.gone("guarded__drop_table", still="RFR-4.3", reached="RFR-4.3", found="RFR-4.3")
            except Nonconformance:
                # A rename's new name is judged as any new tool is: unless new tools skip the
                # policy altogether (RFR-3.1's), this host carried the old name's standing over.
                await live.new_tools_judged()
                raise
            if "ro__peek_log" in await live.active():
                raise AssertionError("a tool without readOnlyHint is active on a read-only server")
            await live.change("ro", {"update": [{"name": "peek_log", "annotations": {"readOnlyHint": True}}]})
            found = await live.discover("ro__peek_log")
            if "ro__peek_log" not in found:
                raise live.fail(
                    "RFR-4.4", "a tool that gained readOnlyHint: true is not a discovery candidate", observed=found
                )

    with _serve(fleets) as fleet:
        run(body(fleet))


@clause("RFR-1.1", "RFR-3.4", "RFR-3.5")
def test_a_new_required_tool_is_activated_where_it_fits_and_reported_where_not(sut: Sut, fleets: Fleets) -> None:
    """``fixed`` is in ``all`` mode with ``maxActiveTools`` 2: two tools replacing both fit,
    a third does not."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            # Two at once: a host that stops at the first required tool it activates must not pass.
            await live.change(
                "fixed",
                {
                    "remove": ["a", "b"],
                    "add": [{"name": "c", "annotations": READ_ONLY}, {"name": "e", "annotations": READ_ONLY}],
                },
            )
            active = await live.active()
            for name in ("fixed__c", "fixed__e"):
                if name in active:
                    continue
                # a and b, removed, still take the room the new tools need (RFR-2.1's).
                precondition("RFR-2.1", not {"fixed__a", "fixed__b"} & set(active), "a removed tool is still listed")
                # The gate runs it: active, and the definitions lag (RFR-1.3's).
                ran = await r.call(name, {})
                precondition("RFR-1.3", bool(ran["isError"]), f"the gate runs {name}, which the definitions leave out")
                raise live.fail(
                    "RFR-3.4", f"a new required tool with room for it ({name}) was not activated", observed=active
                )
            await live.change("fixed", {"add": [{"name": "d", "annotations": READ_ONLY}]})
            active = [n for n in await live.active() if n.startswith("fixed__")]
            if len(active) > 2 or "fixed__d" in active:
                raise live.fail(
                    "RFR-3.5", "a required tool a refresh brought took fixed past its maxActiveTools", observed=active
                )
            await live.told_inactive("fixed", "fixed__d")

    with _serve(fleets) as fleet:
        run(body(fleet))


#: A run at its dynamic capacity: 93 base tools leave room for 18 MCP tools (112 − 93 − the
#: discovery tool), which discovery fills from ``wide``; ``later`` has room under its own cap.
FULL_BASE = base_tools(93)
FULL_CAPACITY = 18
FULL_SPEC = FleetSpec(
    servers=(
        _server("wide", *(_tool(f"w{i:02d}", f"Wide operation number {i}.") for i in range(20))),
        _server("later", _tool("p")),
    )
)
FULL_POLICIES: dict[str, ToolPolicy] = {"later": {"mode": "all", "maxActiveTools": 3}}


# It cites BUD-2.1 to read the definitions past 112 itself: there, a refresh that brought a
# tool past the watermark is the finding (RFR-3.5), not a budget broken elsewhere.
@clause("RFR-2.4", "RFR-3.5", "BUD-2.1")
@pytest.mark.parametrize("eviction", [False, True], ids=["growing", "with-eviction"])
def test_a_new_required_tool_stays_inactive_in_a_run_at_its_dynamic_capacity(
    sut: Sut, fleets: Fleets, eviction: bool
) -> None:
    """Its server's maxActiveTools leaves room; the dynamic capacity does not. In a run with
    eviction too, a refresh evicts nothing to make room: only a discovery call evicts (EVC-1.2),
    and its result says what went (EVC-4)."""
    if eviction and (sut.implementation is None or "eviction" not in sut.implementation.profiles):
        nothing_to_check("the host does not claim eviction: its runs with refresh only grow")

    async def body(fleet: Fleet) -> None:
        params: OpenParams = {**open_params(fleet.with_policies(FULL_POLICIES), FULL_BASE), "refresh": True}
        if eviction:
            params["eviction"] = "lru"
        async with sut.open(params) as r:
            live = Refreshing(fleet, r, {key: params[key] for key in ("refresh", "eviction") if key in params})
            base = names(FULL_BASE)

            async def active() -> list[str]:
                return names(mcp_definitions(await r.definitions(), base))

            for _ in range(3):
                if len(await active()) >= FULL_CAPACITY:
                    break
                await r.call(DISCOVERY, {"query": "wide operation", "server_ids": ["wide"], "limit": 12})
            before = await active()
            if len(before) < FULL_CAPACITY:
                nothing_to_check("discovery left room under the dynamic capacity (DSC-5.6 allows it)")
            await live.change("later", {"add": [{"name": "q", "annotations": READ_ONLY}]})
            now = await active()
            lost = sorted(set(before) - set(now))
            if lost:
                raise live.fail(
                    "RFR-2.4",
                    "a refresh that only added a tool took active tools out of the run",
                    expected=sorted(before),
                    observed={"lost": lost},
                )
            if "later__q" in now or len(now) > FULL_CAPACITY:
                raise live.fail(
                    "RFR-3.5",
                    f"a required tool a refresh brought was activated with the dynamic capacity of {FULL_CAPACITY} "
                    "used up",
                    observed=now,
                )
            await live.told_inactive("later", "later__q")

    with fleets.serve(FULL_SPEC, FULL_POLICIES) as fleet:
        run(body(fleet))


@clause("RFR-1.1", "RFR-5.1")
def test_a_storm_of_notifications_leaves_the_run_following_the_server(sut: Sut, fleets: Fleets) -> None:
    """300 notifications at once; then the run answers, has the server's last listing, and
    follows its next change."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            # Read through the definitions, not discovery: whether discovery finds a new tool
            # is RFR-3.2's to check, and a host that broke it would fail here too.
            await live.change("noisy", {"remove": ["n2"], "notify": 300})
            if "noisy__n2" in await live.active():
                raise live.fail(
                    "RFR-5.1", "after a storm of notifications the catalog is not the server's last listing"
                )
            try:
                await live.change("noisy", {"remove": ["n1"]})
            except Nonconformance as exc:
                raise live.fail(
                    "RFR-5.1", f"after a storm of notifications the run no longer follows the server: {exc.message}"
                ) from None
            if "noisy__n1" in await live.active():
                raise live.fail("RFR-5.1", "after a storm of notifications a removed tool stays active")

    with _serve(fleets) as fleet:
        run(body(fleet))


#: How long the fleet holds back the last page of a listing it has recorded complete.
HELD_SECONDS = 1.0
LATE = FleetSpec(
    servers=(
        ServerSpec(
            id="late",
            tool_count=0,
            tools=(_tool("read_entry"), _tool("list_entries")),
            list_changed=True,
            faults=Faults(slow_last_page=HELD_SECONDS),
        ),
    )
)


@clause("RFR-1.2")
def test_a_request_sent_while_a_listing_is_being_read_is_answered_from_that_listing(sut: Sut, fleets: Fleets) -> None:
    """The server records a listing complete a second before its last page reaches the host;
    a request sent in that second is later than the listing (PROTOCOL.md P39) and reads it.
    Without the hold, a host answering before it applied a listing wins or loses a race."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            await Refreshing(fleet, r).removes(
                "late",
                "list_entries",
                "a definition list asked for while the host was still reading a listing begun before it shows a tool "
                "that listing removed: it was answered from an earlier listing (PROTOCOL.md P39)",
            )

    with fleets.serve(LATE) as fleet:
        run(body(fleet))


#: A server built before the 2026-07-28 revision, alone in its fleet: a host that does not
#: connect to such servers is left nothing to check here, and every other check keeps its fleet.
LEGACY = FleetSpec(
    servers=(
        ServerSpec(
            id="old", tool_count=0, tools=(_tool("read_note"), _tool("list_notes")), list_changed=True, legacy_only=True
        ),
    )
)


@contextlib.contextmanager
def _connected_to_the_initialize_era() -> Iterator[None]:
    """A host that refuses a server of the initialize era (a reading DESIGN.md accepts) is
    left nothing to check over one."""
    try:
        yield
    except OutcomeError as refused:
        if refused.kind != "connection_error":
            raise
        nothing_to_check(
            "the host does not connect to a server that speaks only the initialize handshake (MCP 2025-11-25 "
            f"and earlier): {refused.message}"
        )


@clause("RFR-1.1", "RFR-1.2")
def test_a_server_of_the_initialize_era_is_followed_through_the_notifications_on_its_connection(
    sut: Sut, fleets: Fleets
) -> None:
    """A server that speaks only the ``initialize`` handshake has no ``subscriptions/listen``
    stream: its ``notifications/tools/list_changed`` come on the connection itself, and a host
    listening only on a stream never hears of its changes."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            await Refreshing(fleet, r).removes(
                "old",
                "read_note",
                "after a server of the initialize era was listed again without a tool, the definitions still list it",
            )

    with fleets.serve(LEGACY) as fleet, _connected_to_the_initialize_era():
        run(body(fleet))


def _stdio(era: str) -> FleetSpec:
    """A server the host starts over stdio, whose catalog changes as it answers its first call:
    a change scheduled in the spec, since no fleet host reaches a process the host started."""
    server = ServerSpec(
        id="local",
        tool_count=0,
        tools=(_tool("read_note"), _tool("list_notes")),
        list_changed=True,
        changes=(CatalogChange(after_calls=1, remove=("read_note",)),),
        legacy_only=era == "initialize",
    )
    return FleetSpec(servers=(server,))


@clause("RFR-1.1", "RFR-1.2")
@pytest.mark.parametrize("era", ["2026-07-28", "initialize"])
def test_a_stdio_server_is_followed_through_its_notifications(sut: Sut, fleets: Fleets, era: str) -> None:
    """The other checks serve their fleets over HTTP: a host that hears of changes only there
    (on its listen stream, or on its HTTP connections) never lists a stdio server again."""

    async def body(fleet: Fleet) -> None:
        async with sut.open({**open_params(fleet.servers), "refresh": True}) as r:
            live = Refreshing(fleet, r)
            precondition("POL-6.2", "local__read_note" in await live.active(), "a tool of mode all was not active")
            await r.call("local__read_note", {})
            reached = bool(live.calls_since("local__read_note", 0))
            precondition("CAT-4.1", reached, "an active tool's call did not reach its server")
            try:
                await live.listed_again("local", 1)
            except Nonconformance:
                # A server started again has a catalog of its own, which only its schedule
                # changes: a host that lists a stdio server on a new process is not judged here.
                if len(fleet.ledger().of("process_started", "local")) > 1:
                    nothing_to_check("the host listed the stdio server again by starting it again")
                raise
            if "local__read_note" in await live.active():
                raise live.fail(
                    "RFR-1.2", "after a stdio server was listed again without a tool, the definitions still list it"
                )

    legacy = _connected_to_the_initialize_era() if era == "initialize" else contextlib.nullcontext()
    with fleets.serve(_stdio(era), {"local": {"mode": "all"}}, transport="stdio") as fleet, legacy:
        run(body(fleet))


#: The listing time-out of the run whose server stops answering: the bound a re-listing
#: that never ends must fail within (PROTOCOL.md P22), well inside a request's time-out.
HANG_LIST_SECONDS = 2.0


#: Beside ``flaky``, a server ``flaky_`` whose tool ``x`` is named ``flaky___x``, as a tool
#: ``_x`` of ``flaky`` would be (ERR-4.1): a listing that adds it cannot be used.
COLLIDING = FleetSpec(servers=(*SPEC.servers, _server("flaky_", _tool("x"))))


@clause("RFR-1.1", "RFR-1.2", "RFR-5.2", "RFR-5.3", "RFR-5.4")
@pytest.mark.parametrize("failure", ["list_error", "list_hang", "collision"])
def test_a_server_that_fails_to_list_again_is_kept_or_dropped_whole(sut: Sut, fleets: Fleets, failure: str) -> None:
    """``flaky`` adds a tool and then refuses every listing, or stops answering it, or lists a
    tool whose name collides with another server's: it keeps its last good catalog or loses
    all its tools, the other servers keep theirs and are followed as before, and the run says
    which. A listing that hangs fails at the run's listTimeoutSeconds, and the requests that
    wait for it (P39) are answered then."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet, list_timeout=HANG_LIST_SECONDS) as r:
            live = Refreshing(fleet, r)
            before = await live.active()
            if failure == "collision":
                await live.change("flaky", {"add": [{"name": "_x", "annotations": READ_ONLY}]})
            else:
                fails: ChangeDocument = {"list_hang": True} if failure == "list_hang" else {"list_error": True}
                await live.change("flaky", {"add": [{"name": "z", "annotations": READ_ONLY}], **fails}, outcome="error")
            kept = await _kept_or_dropped(live, before, "its failed listing", ["flaky__x", "flaky__y"]) is not None
            # A listing the run could not use is not kept for later ones: noisy's next change is followed.
            await live.change("noisy", {"add": [{"name": "n3", "annotations": READ_ONLY}]})
            followed = await live.discover("noisy__n3")
            if "noisy__n3" not in followed:
                raise live.fail(
                    "RFR-1.2",
                    "after flaky's failed listing, a tool noisy lists for the first time cannot be found",
                    observed=followed,
                )
            notices = await r.notices()
            said = {n.get("kind") for n in notices if n.get("server") == "flaky"}
            expected = "listing_failed_kept" if kept else "listing_failed_dropped"
            if expected not in said:
                raise live.fail(
                    "RFR-5.4",
                    "the run does not say in its notices what became of flaky after its failed listing",
                    expected={"kind": expected, "server": "flaky"},
                    observed=notices,
                )

    with fleets.serve(COLLIDING if failure == "collision" else SPEC, POLICIES) as fleet:
        try:
            run(body(fleet))
        except SutMisbehaved as hung:
            raise fail(
                ("RFR-5.2",),
                f"after flaky's listing began to fail ({failure}), the run stopped answering",
                expected=f"answers once the listing has failed, within listTimeoutSeconds ({HANG_LIST_SECONDS:g} s)",
                observed=str(hung),
                case=fleet.describe() | {"open": {"refresh": True, "listTimeoutSeconds": HANG_LIST_SECONDS}},
            ) from None


async def _kept_or_dropped(
    live: Refreshing, before: list[str], after_what: str, good: list[str], *, settled: bool = True
) -> list[str] | None:
    """After ``after_what`` of ``flaky``, the other servers' tools are as ``before`` and run,
    and flaky's active tools are ``good`` (those of its last good listing), all running, or
    none at all (RFR-5.2, RFR-5.3). Flaky's active tools once a discovery call has asked for
    more of them, or None when it was dropped. Unless ``settled``, flaky may be caught half
    way (a host dropping it while it is looked at): it is then taken as kept for the next look."""
    after = await live.active()
    others = sorted(n for n in set(before) ^ set(after) if not n.startswith("flaky__"))
    works = await live.run.call("docs__list_pages", {})
    if others or works["isError"]:
        raise live.fail("RFR-5.2", f"{after_what} changed the run's other servers", observed=others or works)
    # flaky___x is flaky_'s tool (COLLIDING), never flaky's.
    flaky = sorted(n for n in after if n.startswith("flaky__") and n != "flaky___x")
    outcomes = {q: await live.run.call(q, {}) for q in ("flaky__x", "flaky__y", "flaky__z")}
    ran = sorted(q for q, result in outcomes.items() if not result["isError"])
    found = await live.discover("flaky__x")
    kept = flaky == good and ran == flaky
    dropped = not flaky and not ran and not found
    if not (kept or dropped or settled):
        return sorted({*good, *found})
    if not (kept or dropped):
        raise live.fail(
            "RFR-5.3",
            f"after {after_what} flaky neither kept its last good catalog nor lost all its tools",
            expected=f"active and running: {', '.join(good)}, or none of them",
            observed={"listed": flaky, "ran": ran, "found": found, "results": outcomes},
        )
    return sorted({*flaky, *found}) if kept else None


@clause("RFR-1.1", "RFR-5.2", "RFR-5.3")
def test_a_server_whose_listen_stream_breaks_runs_its_tools_or_is_dropped_whole(sut: Sut, fleets: Fleets) -> None:
    """``flaky`` adds a tool and then ends its ``subscriptions/listen`` stream with an error:
    the run goes on answering, and flaky's tools still run or are gone whole. A host that lets
    the error close flaky's connection lists tools that no longer run. The error reaches the
    host beside the requests that follow, not before them for sure: the run is asked three
    times, and a host dropping flaky may be caught half way before the last."""

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            before = await live.active()
            await live.change("flaky", {"add": [{"name": "z", "annotations": READ_ONLY}], "break_listen": True})
            # Listed whole before the stream ended: what flaky keeps, if it keeps anything.
            good: list[str] | None = sorted(n for n in await live.active() if n.startswith("flaky__"))
            after_what = "the end of its listen stream with an error"
            for settled in (False, False, True):
                good = await _kept_or_dropped(live, before, after_what, good or [], settled=settled)

    with _serve(fleets) as fleet:
        try:
            run(body(fleet))
        except SutMisbehaved as hung:
            raise fail(
                ("RFR-5.2",),
                "after flaky ended its listen stream with an error, the run stopped answering",
                expected="answers, whatever became of flaky",
                observed=str(hung),
                case=fleet.describe() | {"open": {"refresh": True}},
            ) from None


#: A server of each era and the tool a change takes from it: on the initialize handshake a
#: notification comes on the connection of every run, the run without refresh's included.
ERAS: dict[str, tuple[FleetSpec, dict[str, ToolPolicy], str, str]] = {
    "2026-07-28": (SPEC, POLICIES, "docs", "get_page"),
    "initialize": (LEGACY, {}, "old", "read_note"),
}


@clause("DEF-3.1")
@pytest.mark.parametrize("era", sorted(ERAS))
def test_a_run_opened_without_refresh_keeps_its_catalog_beside_one_with_it(sut: Sut, fleets: Fleets, era: str) -> None:
    """P38: a run that does not ask for refresh keeps the catalog read at open, also on a host
    that refreshes the runs that do. The run with refresh tells when the change has been
    listed (P39); the run without it is asked after that."""
    if sut.implementation is None or "refresh" not in sut.implementation.profiles:
        nothing_to_check("a host that does not claim refresh has no runs that follow a change to compare with")
    spec, policies, server_id, tool = ERAS[era]

    async def body(fleet: Fleet) -> None:
        async with sut.open(open_params(fleet.with_policies(policies))) as plain, _refreshing(sut, fleet) as r:
            live = Refreshing(fleet, r)
            before = names(mcp_definitions(await plain.definitions(), []))
            try:
                await live.change(server_id, {"remove": [tool]})
            except Nonconformance as finding:
                # The run with refresh never said the change was listed: RFR-1.1's finding,
                # which its own checks report; without that signal there is no moment to ask.
                precondition("RFR-1.1", False, str(finding))
            await live.active()
            lost = sorted(set(before) - set(names(mcp_definitions(await plain.definitions(), []))))
            if lost:
                raise fail(
                    ("DEF-3.1",),
                    "a run opened without refresh lost active tools when its server changed its list",
                    expected=before,
                    observed={"lost": lost},
                    case=fleet.describe() | {"open": {"refresh": "left out"}, "changes": live.changes},
                )

    legacy = _connected_to_the_initialize_era() if era == "initialize" else contextlib.nullcontext()
    with fleets.serve(spec, policies) as fleet, legacy:
        run(body(fleet))


@clause("DEF-3.1")
def test_a_run_asking_for_refresh_of_a_host_that_does_not_claim_it_keeps_its_catalog(sut: Sut, fleets: Fleets) -> None:
    """P38: a host that does not claim refresh ignores the field, so a tool its server stops
    listing stays in the definitions. Such a host owes no signal that a change was listed: the
    check gives it a bounded time to list the server again, then reads the definitions."""
    if sut.implementation is None or "refresh" in sut.implementation.profiles:
        nothing_to_check(
            "the host claims refresh (or names no profiles): its runs that ask for it follow their servers"
        )

    async def body(fleet: Fleet) -> None:
        async with _refreshing(sut, fleet) as r:
            before = names(mcp_definitions(await r.definitions(), []))
            if "docs__get_page" not in before:
                raise AssertionError("the first round of this fleet activates every tool of docs")
            change: ChangeDocument = {"remove": ["get_page"]}
            catalog = await fleet.change_tools("docs", change)
            relisted = await fleet.relisted("docs", catalog, UNCLAIMED_SECONDS)
            lost = sorted(set(before) - set(names(mcp_definitions(await r.definitions(), []))))
            if lost:
                raise fail(
                    ("DEF-3.1",),
                    "a run that asked for refresh, of a host that does not claim it, lost active tools when its "
                    "server changed its list",
                    expected=before,
                    observed={"lost": lost, "docs listed again": relisted != "timeout"},
                    case=fleet.describe() | {"open": {"refresh": True}, "changes": [{"server": "docs", **change}]},
                )

    with _serve(fleets) as fleet:
        run(body(fleet))
