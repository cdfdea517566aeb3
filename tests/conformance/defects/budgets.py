"""Defects of the budgets (BUD-*): the capacities of the first round and of discovery, the
final check of every request against 128, and first-round capacities at and below zero."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from reference_impl import _budgets
from reference_impl._budgets import Budgets
from reference_impl._errors import RequestTooLargeError, SelectionError
from reference_impl._selection import FirstRound
from reference_impl._wire import Definition
from reference_impl.driver import _session
from reference_impl.driver._session import ReferenceDriver
from tests.conformance.defects._hooks import FirstRoundCall, wrap_first_round
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = []


def _too_large(count: int) -> RequestTooLargeError:
    return RequestTooLargeError(
        f"the request would carry {count} tool definitions", count=count, limit=_budgets.REQUEST_LIMIT
    )


@defect("BUD-1.2", "the first-round capacity leaves the discovery tool out of the count")
def capacity_ignores_the_discovery_tool() -> None:
    _swap(Budgets, "first_round_capacity", property(lambda self: _budgets.FIRST_ROUND_LIMIT - self.base_tools))


@defect("BUD-2.2", "discovery stops one tool short of the dynamic capacity")
def dynamic_capacity_one_short() -> None:
    _swap(
        Budgets,
        "dynamic_capacity",
        property(lambda self: _budgets.DYNAMIC_LIMIT - self.base_tools - self.discovery_tools - 1),
    )


@defect("BUD-3.1", "the request check counts the run's definitions as they were when it opened")
def request_check_counts_definitions_at_open() -> None:
    original_open = ReferenceDriver.open_run
    at_open: dict[str, int] = {}

    async def open_run(self: ReferenceDriver, params: Mapping[str, Any]) -> str:
        run_id = await original_open(self, params)
        at_open[run_id] = len(self._runs[run_id].toolset.request_definitions())
        return run_id

    async def request(self: ReferenceDriver, run_id: Any, extra_tools: Any = ()) -> list[Definition]:
        # The params checked as the reference checks them: only the count is wrong.
        run = self._run("run.request", {"runId": run_id, "extraTools": extra_tools})
        extra = [cast(Definition, dict(tool)) for tool in extra_tools]
        if at_open.get(run_id, 0) + len(extra) > _budgets.REQUEST_LIMIT:
            raise _too_large(at_open[run_id] + len(extra))
        return run.toolset.request_definitions() + extra

    _swap(ReferenceDriver, "open_run", open_run)
    _swap(ReferenceDriver, "request", request)


@defect("BUD-3.3", "a request of exactly 128 definitions is refused")
def request_of_128_refused() -> None:
    def assemble_request(
        definitions: Sequence[Mapping[str, Any]], extra_tools: Sequence[Mapping[str, Any]] = ()
    ) -> list[dict[str, Any]]:
        tools = [dict(tool) for tool in definitions] + [dict(tool) for tool in extra_tools]
        if len(tools) >= _budgets.REQUEST_LIMIT:
            raise _too_large(len(tools))
        return tools

    _swap(_session, "assemble_request", assemble_request)


def _on_refusal(then: Callable[[ReferenceDriver, Any], Awaitable[None]]) -> None:
    """Do ``then(driver, run_id)`` to a run whose request is refused as too large, before the
    refusal is answered."""
    original = ReferenceDriver.request

    async def request(self: ReferenceDriver, run_id: Any, extra_tools: Any = ()) -> list[Definition]:
        try:
            return await original(self, run_id, extra_tools)
        except RequestTooLargeError:
            await then(self, run_id)
            raise

    _swap(ReferenceDriver, "request", request)


@variant("ID-16", "a request refused as too large closes its run", clauses=("BUD-3",))
def run_closed_after_request_too_large() -> None:
    """The run is closed, its connections with it, before the refusal is answered."""
    _on_refusal(ReferenceDriver.close_run)


@defect("BUD-3.4", "a request refused as too large forgets its run without closing its connections")
def refusal_forgets_the_run() -> None:
    """ID-16's reading half done: the run id is forgotten, its servers left running."""

    async def forget(driver: ReferenceDriver, run_id: Any) -> None:
        driver._runs.pop(run_id, None)

    _on_refusal(forget)


# Runs that have had a request refused as too large, by id.
_REFUSED: set[Any] = set()


@defect("BUD-3.4", "after a request refused as too large, the open run refuses every request")
def refused_request_leaves_the_run_unusable() -> None:
    """Neither reading of BUD-3.4: the run is neither usable nor closed."""
    original = ReferenceDriver.request

    async def request(self: ReferenceDriver, run_id: Any, extra_tools: Any = ()) -> list[Definition]:
        if run_id in _REFUSED:
            raise _too_large(_budgets.REQUEST_LIMIT + 1)
        try:
            return await original(self, run_id, extra_tools)
        except RequestTooLargeError:
            _REFUSED.add(run_id)
            raise

    _swap(ReferenceDriver, "request", request)


@defect("BUD-4.1", "a first-round capacity below zero is taken as zero")
def negative_capacity_clamped_to_zero() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        budgets = call.budgets
        if budgets.first_round_capacity < 0:
            base = _budgets.FIRST_ROUND_LIMIT - budgets.discovery_tools
            return call.select(budgets=Budgets(base_tools=base, discovery_tools=budgets.discovery_tools))
        return call.select()

    wrap_first_round(select)


@defect("BUD-4.2", "with no MCP server configured, the first-round capacity is not checked")
def no_capacity_check_without_servers() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        return call.select() if call.servers else FirstRound(active=(), outcomes={})

    wrap_first_round(select)


@defect("BUD-4.3", "a first-round capacity of exactly zero is refused")
def zero_capacity_refused() -> None:
    def select(call: FirstRoundCall) -> FirstRound:
        if call.budgets.first_round_capacity == 0:
            raise SelectionError("no first-round slot is left under the 96 watermark")
        return call.select()

    wrap_first_round(select)
