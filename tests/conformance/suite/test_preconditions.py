"""The controls a check runs before it blames its own sentence, against the reference and
against hosts that break the sentence the control names."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from conformance import (
    Definition,
    Inconclusive,
    InitializeResult,
    OpenParams,
    Sut,
    SystemUnderTest,
    ToolResult,
    load_sut,
)
from conformance.suite._fleets import Fleets
from conformance.suite._preconditions import first_round_capacity_kept, required_all_active, required_left_out

Edit = Callable[[list[Definition]], list[Definition]]
Front = Callable[[Edit | None], Sut]


class Edited:
    """The reference, with every definition list it answers passed through ``edit``."""

    def __init__(self, inner: SystemUnderTest, edit: Edit) -> None:
        self.inner, self.edit = inner, edit

    async def initialize(self) -> InitializeResult:
        return await self.inner.initialize()

    async def open_run(self, params: OpenParams) -> str:
        return await self.inner.open_run(params)

    async def definitions(self, run_id: str) -> list[Definition]:
        return self.edit(await self.inner.definitions(run_id))

    async def call(self, run_id: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        return await self.inner.call(run_id, name, arguments)

    async def request(self, run_id: str, extra_tools: Sequence[Definition] = ()) -> list[Definition]:
        return await self.inner.request(run_id, extra_tools)

    async def close_run(self, run_id: str) -> None:
        await self.inner.close_run(run_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


def twelve_per_server(defs: list[Definition]) -> list[Definition]:
    """A host that activates at most 12 tools of a server, required or not."""
    kept: list[Definition] = []
    seen: dict[str, int] = {}
    for d in defs:
        server = d["name"].split("__", 1)[0] if "__" in d["name"] else ""
        seen[server] = seen.get(server, 0) + 1
        if not server or seen[server] <= 12:
            kept.append(d)
    return kept


def one_more(defs: list[Definition]) -> list[Definition]:
    """A host whose first round takes one MCP tool past its capacity."""
    return [*defs, {"name": "edge__one_more", "description": "One more.", "inputSchema": {"type": "object"}}]


@pytest.fixture
def front() -> Iterator[Callable[[Edit | None], Sut]]:
    """Start the reference as a SUT, its definitions passed through an edit if given; every
    one started is closed after the test."""
    started: list[Sut] = []

    def start(edit: Edit | None = None) -> Sut:
        reference = load_sut("reference")
        sut = Sut(reference if edit is None else Edited(reference, edit))
        asyncio.run(sut.initialize())
        started.append(sut)
        return sut

    yield start
    for sut in started:
        asyncio.run(sut.aclose())


@pytest.mark.e2e
def test_the_reference_passes_the_controls(front: Front, fleets: Fleets) -> None:
    sut = front(None)

    required_all_active(sut, fleets)
    first_round_capacity_kept(sut, fleets)
    assert required_left_out(sut, fleets) == ""


@pytest.mark.e2e
def test_a_host_that_leaves_required_tools_out_leaves_other_checks_inconclusive_naming_pol_6_2(
    front: Front, fleets: Fleets
) -> None:
    sut = front(twelve_per_server)

    assert required_left_out(sut, fleets).startswith("18 of them")
    with pytest.raises(Inconclusive) as caught:
        required_all_active(sut, fleets)
    assert caught.value.because == "POL-6.2"

    sut.cited = frozenset({"POL-6.2"})  # the checks of POL-6.2 report it themselves
    required_all_active(sut, fleets)


@pytest.mark.e2e
def test_a_host_whose_capacity_is_one_too_many_leaves_the_checks_of_refusals_inconclusive_naming_bud_1_2(
    front: Front, fleets: Fleets
) -> None:
    sut = front(one_more)

    sut.cited = frozenset({"ERR-2.1"})  # a check of refusals at the capacity's edge
    with pytest.raises(Inconclusive) as caught:
        first_round_capacity_kept(sut, fleets)
    assert caught.value.because == "BUD-1.2"

    sut.cited = frozenset()  # any other check stops at the watermark first
    with pytest.raises(Inconclusive) as caught:
        first_round_capacity_kept(sut, fleets)
    assert caught.value.because == "BUD-1.1"

    sut.cited = frozenset({"BUD-1.2"})
    first_round_capacity_kept(sut, fleets)
