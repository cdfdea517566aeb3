from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import anyio
import pytest

from conformance import (
    Definition,
    Implementation,
    Inconclusive,
    InitializeResult,
    OpenParams,
    OutcomeError,
    Sut,
    SutMisbehaved,
    SystemUnderTest,
    ToolResult,
)

TOOL: Definition = {"name": "base", "description": "a base tool", "inputSchema": {"type": "object"}}


class Refusal(Exception):
    """How an implementation that does not import the suite refuses: kind and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


class FakeSut:
    """An in-process SUT whose answers the test sets."""

    def __init__(self) -> None:
        self.info: Any = {"name": "fake", "version": "1.0", "profiles": ["core"]}
        self.run_id: Any = "run-1"
        self.tools: Any = [TOOL]
        self.result: Any = {"content": [], "isError": False}
        self.failure: BaseException | None = None
        self.hang = False
        self.closed: list[str] = []
        self.calls: list[tuple[str, Mapping[str, Any]]] = []

    async def _answer(self, value: Any) -> Any:
        if self.failure is not None:
            raise self.failure
        if self.hang:
            await anyio.Event().wait()
        return value

    async def initialize(self) -> InitializeResult:
        return await self._answer(self.info)  # type: ignore[no-any-return]

    async def open_run(self, params: Mapping[str, Any]) -> str:
        return await self._answer(self.run_id)  # type: ignore[no-any-return]

    async def definitions(self, run_id: str) -> list[Definition]:
        return await self._answer(self.tools)  # type: ignore[no-any-return]

    async def call(self, run_id: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        return await self._answer(self.result)  # type: ignore[no-any-return]

    async def request(self, run_id: str, extra_tools: Sequence[Definition] = ()) -> list[Definition]:
        return await self._answer([*self.tools, *extra_tools])  # type: ignore[no-any-return]

    async def close_run(self, run_id: str) -> None:
        self.closed.append(run_id)

    async def aclose(self) -> None:
        pass


@pytest.fixture
def fake() -> FakeSut:
    return FakeSut()


@pytest.fixture
def sut(fake: FakeSut) -> Sut:
    return Sut(fake, timeout=5.0)


PARAMS: OpenParams = {"servers": [], "baseTools": [TOOL], "userMessage": "hi", "systemPrompt": ""}


def test_a_plain_class_with_the_methods_is_a_system_under_test(fake: FakeSut) -> None:
    assert isinstance(fake, SystemUnderTest)


async def test_initialize_gives_the_implementation(sut: Sut) -> None:
    assert await sut.initialize() == Implementation("fake", "1.0", ("core",))
    assert sut.implementation == Implementation("fake", "1.0", ("core",))


async def test_a_run_answers_checked_values_and_records_every_step(sut: Sut, fake: FakeSut) -> None:
    run = await sut.open(PARAMS)
    definitions = await run.definitions()
    result = await run.call("github__search", {"q": "x"})
    request = await run.request([{**TOOL, "name": "extra"}])
    await run.close()

    assert definitions == [TOOL]
    assert result == {"content": [], "isError": False}
    assert [tool["name"] for tool in request] == ["base", "extra"]
    assert run.case == {
        "open": PARAMS,
        "steps": [
            {"method": "run.definitions"},
            {"method": "run.call", "name": "github__search", "arguments": {"q": "x"}},
            {"method": "run.request", "extraTools": [{**TOOL, "name": "extra"}]},
            {"method": "run.close"},
        ],
    }
    assert fake.closed == ["run-1"]


async def test_a_case_keeps_its_own_copy_of_what_a_python_caller_passed(sut: Sut, fake: FakeSut) -> None:
    arguments: dict[str, Any] = {"tags": {"b"}, "page": {"n": 1}}
    run = await sut.open(PARAMS)
    await run.call("github__search", arguments)
    # JSON holds no set: the step is copied deeply instead, and what the caller changes later stays out of it.
    arguments["page"]["n"] = 2
    assert run.case["steps"] == [
        {"method": "run.call", "name": "github__search", "arguments": {"tags": {"b"}, "page": {"n": 1}}}
    ]
    await run.close()


def _tools(count: int) -> list[Definition]:
    return [{**TOOL, "name": f"t{i}"} for i in range(count)]


@pytest.mark.parametrize(
    ("reads", "count", "sentence"),
    [(1, 97, "BUD-1.1"), (2, 113, "BUD-2.1")],
    ids=["first-over-96", "later-over-112"],
)
async def test_definitions_past_a_watermark_leave_a_check_of_another_sentence_inconclusive(
    sut: Sut, fake: FakeSut, reads: int, count: int, sentence: str
) -> None:
    run = await sut.open(PARAMS)
    if reads == 2:
        await run.definitions()
        fake.tools = _tools(112)  # a later list may reach 112, not pass it
        assert len(await run.definitions()) == 112
    fake.tools = _tools(count)

    with pytest.raises(Inconclusive) as caught:
        await run.definitions()
    assert caught.value.because == sentence

    sut.cited = frozenset({sentence})  # a check of the watermark sees the list and judges it
    assert len(await run.definitions()) == count


async def test_a_first_list_of_96_and_a_later_one_of_112_pass(sut: Sut, fake: FakeSut) -> None:
    run = await sut.open(PARAMS)
    fake.tools = _tools(96)
    assert len(await run.definitions()) == 96
    fake.tools = _tools(112)
    assert len(await run.definitions()) == 112


async def test_a_run_opened_as_a_context_manager_is_closed_even_when_the_body_fails(sut: Sut, fake: FakeSut) -> None:
    with pytest.raises(RuntimeError):
        async with sut.open(PARAMS) as run:
            assert run.id == "run-1"
            raise RuntimeError

    assert fake.closed == ["run-1"]
    assert sut.open_runs == ()


async def test_closing_a_run_twice_closes_it_once(sut: Sut, fake: FakeSut) -> None:
    async with await sut.open(PARAMS) as run:
        await run.close()

    assert fake.closed == ["run-1"]


async def test_runs_left_open_are_closed_by_close_open_runs(sut: Sut, fake: FakeSut) -> None:
    fake.run_id = "left-open"
    await sut.open(PARAMS)

    await sut.close_open_runs()

    assert fake.closed == ["left-open"]
    assert sut.open_runs == ()


@pytest.mark.parametrize(
    "kind", ["selection_error", "config_error", "connection_error", "request_too_large", "unknown_run"]
)
async def test_an_exception_with_kind_and_message_becomes_an_outcome_error(sut: Sut, fake: FakeSut, kind: str) -> None:
    fake.failure = Refusal(kind, "because")

    with pytest.raises(OutcomeError) as refused:
        await sut.open(PARAMS)

    assert (refused.value.kind, refused.value.message) == (kind, "because")


async def test_an_outcome_without_a_string_message_is_misbehaviour(sut: Sut, fake: FakeSut) -> None:
    fake.failure = Refusal("config_error", cast(Any, None))

    with pytest.raises(SutMisbehaved, match="raised config_error with a message that is not a string: None"):
        await sut.open(PARAMS)


async def test_an_outcome_of_unknown_kind_is_misbehaviour(sut: Sut, fake: FakeSut) -> None:
    fake.failure = Refusal("budget_exceeded", "too many")

    with pytest.raises(SutMisbehaved, match="unknown kind 'budget_exceeded'"):
        await sut.open(PARAMS)


async def test_any_other_exception_is_misbehaviour_chained_to_it(sut: Sut, fake: FakeSut) -> None:
    fake.failure = KeyError("servers")

    with pytest.raises(SutMisbehaved, match=re.escape("run.open raised KeyError: 'servers'")) as misbehaved:
        await sut.open(PARAMS)

    assert isinstance(misbehaved.value.__cause__, KeyError)
    assert misbehaved.value.case == {"open": PARAMS, "steps": []}


async def test_an_in_process_call_that_hangs_past_the_timeout_is_misbehaviour(fake: FakeSut) -> None:
    sut = Sut(fake, timeout=0.05)
    run = await sut.open(PARAMS)
    fake.hang = True

    with pytest.raises(SutMisbehaved, match=r"run.call did not answer within 0.05 s") as misbehaved:
        await run.call("github__search")

    assert misbehaved.value.case["steps"] == [{"method": "run.call", "name": "github__search", "arguments": {}}]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("run_id", "", "run.open returned no run id"),
        ("run_id", 7, "run.open returned no run id"),
        ("tools", {"tools": []}, "run.definitions returned dict, not a list of definitions"),
        ("tools", ["search"], "definition #0 is str, not an object"),
        ("tools", [{"description": "", "inputSchema": {}}], "definition #0 has no string 'name'"),
        ("tools", [{"name": "a", "inputSchema": {}}], "definition #0 ('a') has no string 'description'"),
        ("tools", [{"name": "a", "description": "", "inputSchema": None}], "has no object 'inputSchema'"),
        ("result", [], "run.call returned list, not a tool result object"),
        ("result", {"isError": False}, "run.call result has no 'content' list"),
        ("result", {"content": [], "isError": "false"}, "run.call result has no boolean 'isError'"),
        ("result", {"content": [], "isError": False, "structuredContent": []}, "'structuredContent' that is not"),
        # What only the protocol's schemas say, held against an in-process answer too.
        ("tools", [{"name": "", "description": "", "inputSchema": {}}], "run.definitions.result.schema.json at"),
        ("result", {"content": [{"type": "text"}], "isError": False}, "run.call.result.schema.json at $.content[0]"),
        ("result", {"content": [], "isError": True}, "no item matches: An error result says what happened"),
    ],
)
async def test_an_answer_of_the_wrong_shape_is_misbehaviour(
    sut: Sut, fake: FakeSut, field: str, value: object, message: str
) -> None:
    setattr(fake, field, value)

    with pytest.raises(SutMisbehaved, match=re.escape(message)):
        run = await sut.open(PARAMS)
        await run.definitions()
        await run.call("x")


@pytest.mark.parametrize(
    "info",
    [
        [],
        {"name": "fake", "profiles": ["core"]},
        {"name": "fake", "version": "1", "profiles": "core"},
        {"name": "fake", "version": "1", "profiles": [1]},
    ],
)
async def test_a_malformed_initialize_answer_is_misbehaviour(sut: Sut, fake: FakeSut, info: object) -> None:
    fake.info = info

    with pytest.raises(SutMisbehaved, match="initialize"):
        await sut.initialize()


def test_a_timeout_that_is_not_a_positive_number_is_refused(fake: FakeSut) -> None:
    with pytest.raises(ValueError):
        Sut(fake, timeout=0)
