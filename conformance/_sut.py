"""The one interface every conformance test talks to, in-process or through a driver.

:class:`SystemUnderTest` mirrors the driver protocol method for method, in its wire shapes
(:mod:`conformance._wire_types`), so a Python implementation plugs in directly and :class:`~conformance._driver.DriverSut`
forwards the same calls over JSON-RPC. Tests do not call it directly: they use
:class:`Sut`, which checks the shape of every answer, turns refusals into
:class:`OutcomeError`, turns anything else unexpected into :class:`SutMisbehaved`, and
records each step of a run so that a finding carries the inputs that replay it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Protocol, TypeVar, cast, runtime_checkable

import anyio

from conformance._errors import (
    OUTCOME_KINDS,
    Inconclusive,
    Nonconformance,
    OutcomeError,
    OutcomeKind,
    SutBroken,
    SutMisbehaved,
)
from conformance._protocol import reply_problem
from conformance._wire_types import Definition, InitializeResult, Notice, OpenParams, ToolResult

__all__ = ["Implementation", "Run", "Sut", "SystemUnderTest", "outcome_of"]

_T = TypeVar("_T")

#: The methods an adapter must have, in the order of the protocol.
ADAPTER_METHODS: Final = ("initialize", "open_run", "definitions", "call", "request", "close_run", "aclose")
#: The watermarks every definition list keeps to, whatever else a check looks at: a run's
#: first definitions (BUD-1.1), and any later ones (BUD-2.1); with the clauses whose checks
#: judge a list past one themselves (those of the budgets, and of what must be refused or
#: stopped there: a capacity below zero, required tools that do not fit, discovery's room,
#: eviction at the capacity).
WATERMARKS: Final = (
    (96, "BUD-1.1", frozenset({"BUD-1", "BUD-4", "ERR-2"})),
    (112, "BUD-2.1", frozenset({"BUD-2", "DSC-5", "EVC-1"})),
)


@runtime_checkable
class SystemUnderTest(Protocol):
    """An adaptive toolset as the suite sees it; one method per driver-protocol method.

    Refusals that the design defines (``selection_error``, ``config_error``,
    ``connection_error``, ``request_too_large``, ``invalid_params``, ``unknown_run``) are
    raised as any exception with string attributes ``kind`` and ``message``, so an
    implementation need not import this package.
    """

    async def initialize(self) -> InitializeResult:
        """``{"name": str, "version": str, "profiles": [str]}``; profiles always hold "core"."""
        ...

    async def open_run(self, params: OpenParams) -> str:
        """Open a run from ``run.open`` params (servers, baseTools, userMessage, systemPrompt)."""
        ...

    async def definitions(self, run_id: str) -> list[Definition]:
        """The definitions the next model request of the run would carry."""
        ...

    async def call(self, run_id: str, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """A tool call through the run's gate: ``{"content", "isError", "structuredContent"?}``."""
        ...

    async def request(self, run_id: str, extra_tools: Sequence[Definition] = ()) -> list[Definition]:
        """Assemble the next request with ``extra_tools`` and apply the final hard check."""
        ...

    async def close_run(self, run_id: str) -> None:
        """End the run and close its MCP connections."""
        ...

    async def aclose(self) -> None:
        """Release the implementation (for a driver: shut it down)."""
        ...


@dataclass(frozen=True, slots=True)
class Implementation:
    """What the SUT said about itself in ``initialize``."""

    name: str
    version: str
    profiles: tuple[str, ...]


def _copied(params: dict[str, Any]) -> dict[str, Any]:
    """A copy of a request's params for its case: through JSON, which is what params are and
    several times quicker than a deep copy of a run's base tools; a deep copy where a Python
    caller passed something JSON does not hold."""
    try:
        copied: dict[str, Any] = json.loads(json.dumps(params))
    except (TypeError, ValueError):
        return copy.deepcopy(params)
    return copied


def outcome_of(exc: BaseException) -> OutcomeError | None:
    """The :class:`OutcomeError` an exception stands for, if it carries ``kind`` and ``message``.

    Returns None for an exception without both string attributes. A ``kind`` the protocol
    does not define is not an outcome either; the caller reports it as misbehaviour.
    """
    if isinstance(exc, OutcomeError):
        return exc
    kind, message = getattr(exc, "kind", None), getattr(exc, "message", None)
    if isinstance(kind, str) and isinstance(message, str) and kind in OUTCOME_KINDS:
        return OutcomeError(cast(OutcomeKind, kind), message)
    return None


class Sut:
    """The checked front of a :class:`SystemUnderTest` that tests use.

    Args:
        adapter: the implementation, in-process or a driver.
        timeout: seconds an in-process call may take before it counts as hung; None for no
            limit (a driver applies its own per-call timeout).
        describe: how the SUT was given, for messages (``--sut-cmd 'node driver.js'``).
        broken_after: after this many calls in a row that crash, hang or answer garbage,
            the SUT is declared :attr:`broken` and every later call raises
            :class:`SutBroken` without reaching it; None never gives up.
    """

    def __init__(
        self,
        adapter: SystemUnderTest,
        *,
        timeout: float | None = None,
        describe: str = "",
        broken_after: int | None = None,
    ) -> None:
        if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if broken_after is not None and broken_after < 1:
            raise ValueError(f"broken_after must be 1 or more, got {broken_after!r}")
        self.adapter = adapter
        self.timeout = timeout
        self.describe = describe or type(adapter).__name__
        self.broken_after = broken_after
        self.implementation: Implementation | None = None
        #: Why the SUT was declared broken, or None while the suite still calls it.
        self.broken: str | None = None
        self._misbehaved_in_a_row = 0
        self._open: list[Run] = []
        #: The sentences the check being run cites, set before each test: a watermark that a
        #: run passes is a finding for the checks citing it, and leaves every other check
        #: inconclusive (see :meth:`Run.definitions`).
        self.cited: frozenset[str] = frozenset()
        #: The params of the last ``run.open`` sent, opened or refused: what a check asks
        #: again, changed, to tell why a run was refused.
        self.last_opened: OpenParams | None = None

    async def initialize(self) -> Implementation:
        """Ask the SUT who it is; the answer is checked and kept in :attr:`implementation`."""
        __tracebackhide__ = True
        answer = await self._invoke("initialize", self.adapter.initialize, {})
        self.implementation = check_initialize(answer, lambda msg: SutMisbehaved(msg, observed=answer))
        problem = reply_problem("initialize", {}, {"result": answer})
        if problem is not None:
            raise SutMisbehaved(problem, observed=answer)
        return self.implementation

    def open(self, params: OpenParams) -> _OpeningRun:
        """Open a run: ``run = await sut.open(params)`` or ``async with sut.open(params) as run``.

        Raises:
            OutcomeError: the SUT refused the run (selection, config or connection error).
            SutMisbehaved: it failed in any other way.
        """
        return _OpeningRun(self, params)

    @property
    def open_runs(self) -> tuple[Run, ...]:
        """Runs opened through this front and not closed yet."""
        return tuple(self._open)

    async def close_open_runs(self) -> None:
        """Close every run still open, ignoring failures; used after each test."""
        for run in reversed(self._open):
            with contextlib.suppress(Nonconformance, OutcomeError):
                await run.close()

    async def aclose(self) -> None:
        """Close the runs still open, then the adapter."""
        await self.close_open_runs()
        await self.adapter.aclose()

    async def _open_run(self, params: OpenParams) -> Run:
        __tracebackhide__ = True
        case: dict[str, Any] = {"open": _copied(dict(params)), "steps": []}
        # The case's copy: neither it nor a check that asks the run again changes it.
        self.last_opened = cast(OpenParams, case["open"])
        run_id = await self._invoke("run.open", lambda: self.adapter.open_run(params), case)
        if not isinstance(run_id, str) or not run_id:
            raise SutMisbehaved("run.open returned no run id (a non-empty string)", observed=run_id, case=case)
        run = Run(self, run_id, case)
        self._open.append(run)
        return run

    async def _invoke(self, method: str, call: Callable[[], Awaitable[_T]], case: Mapping[str, Any]) -> _T:
        __tracebackhide__ = True
        if self.broken is not None:
            raise SutBroken(f"{method} not sent: {self.broken}", case=copy.deepcopy(dict(case)))
        try:
            answer = await self._answer(method, call, case)
        except OutcomeError:
            self._misbehaved_in_a_row = 0
            raise
        except SutMisbehaved as exc:
            self._misbehaved_in_a_row += 1
            if self.broken_after is not None and self._misbehaved_in_a_row >= self.broken_after:
                self.broken = (
                    f"the SUT crashed, hung or answered garbage on {self._misbehaved_in_a_row} calls in a row; "
                    f"the last: {exc.message}"
                )
            raise
        self._misbehaved_in_a_row = 0
        return answer

    async def _answer(self, method: str, call: Callable[[], Awaitable[_T]], case: Mapping[str, Any]) -> _T:
        __tracebackhide__ = True
        try:
            if self.timeout is None:
                return await call()
            with anyio.fail_after(self.timeout):
                return await call()
        except SutMisbehaved as exc:
            if not exc.case:
                exc.case = copy.deepcopy(dict(case))
            raise
        except (Nonconformance, OutcomeError):
            raise
        except TimeoutError as exc:
            raise SutMisbehaved(f"{method} did not answer within {self.timeout:g} s", case=copy.deepcopy(case)) from exc
        except Exception as exc:
            outcome = outcome_of(exc)
            if outcome is not None:
                raise outcome from exc
            kind = getattr(exc, "kind", None)
            if kind in OUTCOME_KINDS:
                raise SutMisbehaved(
                    f"{method} raised {kind} with a message that is not a string: {getattr(exc, 'message', None)!r}",
                    observed=str(exc),
                    case=copy.deepcopy(case),
                ) from exc
            if isinstance(kind, str):
                raise SutMisbehaved(
                    f"{method} raised an outcome of unknown kind {kind!r}; "
                    f"the protocol defines {', '.join(sorted(OUTCOME_KINDS))}",
                    observed=str(exc),
                    case=copy.deepcopy(case),
                ) from exc
            raise SutMisbehaved(f"{method} raised {type(exc).__name__}: {exc}", case=copy.deepcopy(case)) from exc


class _OpeningRun:
    """A run being opened: awaitable, or an async context manager that closes it."""

    def __init__(self, sut: Sut, params: OpenParams) -> None:
        self._sut, self._params = sut, params
        self._run: Run | None = None

    def __await__(self) -> Generator[Any, None, Run]:
        return self._sut._open_run(self._params).__await__()

    async def __aenter__(self) -> Run:
        __tracebackhide__ = True
        self._run = await self._sut._open_run(self._params)
        return self._run

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        __tracebackhide__ = True
        if self._run is not None:
            await self._run.close()


class Run:
    """One open run of the SUT; every step is recorded in :attr:`case` for replay."""

    def __init__(self, sut: Sut, run_id: str, case: dict[str, Any]) -> None:
        self._sut = sut
        self.id = run_id
        #: ``{"open": run.open params, "steps": [{"method", ...params}]}``.
        self.case = case
        self.closed = False

    async def definitions(self) -> list[Definition]:
        """``run.definitions``: the tools of the next model request, checked for shape.

        Raises:
            Inconclusive: the list passes a watermark (BUD-1.1 for the run's first, BUD-2.1
                for any later) that the check does not cite. Every oracle of the suite
                assumes the budgets hold, so a check of another sentence cannot tell what
                else went wrong; the checks of the budgets report it.
        """
        __tracebackhide__ = True
        first = not self.case["steps"]
        answer = await self._step("run.definitions", {}, lambda: self._sut.adapter.definitions(self.id))
        defs = self._check_definitions("run.definitions", answer)
        limit, sentence, judges = WATERMARKS[0] if first else WATERMARKS[1]
        if len(defs) > limit and not any(cited.split(".")[0] in judges for cited in self._sut.cited):
            raise Inconclusive(
                sentence,
                f"the run's {'first ' if first else ''}definitions number {len(defs)}, over {limit}",
                observed=[d["name"] for d in defs],
            )
        return defs

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """``run.call``: a tool call through the gate; ``{"content", "isError", "structuredContent"?}``."""
        __tracebackhide__ = True
        args = dict(arguments or {})
        params = {"name": name, "arguments": args}
        answer = await self._step("run.call", params, lambda: self._sut.adapter.call(self.id, name, args))
        return self._check_call_result(params, answer)

    async def notices(self) -> list[Notice]:
        """The ``notices`` of ``run.definitions`` (PROTOCOL.md P40); an adapter without a
        ``notices`` method has none."""
        __tracebackhide__ = True
        notices = getattr(self._sut.adapter, "notices", None)
        if notices is None:
            return []
        answer = await self._step("run.definitions", {}, lambda: notices(self.id))
        if not isinstance(answer, list):
            raise self._bad(f"notices returned {type(answer).__name__}, not a list", answer)
        self._check_schema("run.definitions", {}, {"tools": [], "notices": answer})
        return cast(list[Notice], answer)

    async def request(self, extra_tools: Sequence[Definition] = ()) -> list[Definition]:
        """``run.request``: the next request with ``extra_tools``, after the final hard check."""
        __tracebackhide__ = True
        extra = [cast(Definition, dict(tool)) for tool in extra_tools]
        answer = await self._step(
            "run.request", {"extraTools": extra}, lambda: self._sut.adapter.request(self.id, extra)
        )
        return self._check_definitions("run.request", answer)

    async def close(self) -> None:
        """``run.close``; closing twice is a no-op."""
        __tracebackhide__ = True
        if self.closed:
            return
        self.closed = True
        if self in self._sut._open:
            self._sut._open.remove(self)
        await self._step("run.close", {}, lambda: self._sut.adapter.close_run(self.id))

    def closed_by_sut(self) -> None:
        """Forget a run the SUT closed on its own, as SPEC.md BUD-3.4 lets it after a request
        refused as too large: no ``run.close`` is sent for it."""
        self.closed = True
        if self in self._sut._open:
            self._sut._open.remove(self)

    async def __aenter__(self) -> Run:
        __tracebackhide__ = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        __tracebackhide__ = True
        await self.close()

    async def _step(self, method: str, params: Mapping[str, Any], call: Callable[[], Awaitable[_T]]) -> _T:
        __tracebackhide__ = True
        self.case["steps"].append({"method": method, **_copied(dict(params))})
        return await self._sut._invoke(method, call, self.case)

    def _bad(self, message: str, observed: object) -> SutMisbehaved:
        return SutMisbehaved(message, observed=observed, case=copy.deepcopy(self.case))

    def _check_definitions(self, method: str, answer: object) -> list[Definition]:
        if not isinstance(answer, list):
            raise self._bad(f"{method} returned {type(answer).__name__}, not a list of definitions", answer)
        for index, tool in enumerate(answer):
            problem = definition_problem(tool)
            if problem:
                raise self._bad(f"{method}: definition #{index} {problem}", tool)
        self._check_schema(method, {}, {"tools": answer})
        return cast(list[Definition], answer)

    def _check_schema(self, method: str, params: Mapping[str, Any], result: object) -> None:
        # The same schemas a driver's replies are held to (P33), so that an in-process
        # implementation answers nothing a driver could not write.
        problem = reply_problem(method, params, {"result": result})
        if problem is not None:
            raise self._bad(problem, result)

    def _check_call_result(self, params: Mapping[str, Any], answer: object) -> ToolResult:
        if not isinstance(answer, dict):
            raise self._bad(f"run.call returned {type(answer).__name__}, not a tool result object", answer)
        if not isinstance(answer.get("content"), list):
            raise self._bad("run.call result has no 'content' list", answer)
        if not isinstance(answer.get("isError"), bool):
            raise self._bad("run.call result has no boolean 'isError'", answer)
        if "structuredContent" in answer and not isinstance(answer["structuredContent"], dict | None):
            raise self._bad("run.call result has a 'structuredContent' that is not an object", answer)
        self._check_schema("run.call", params, answer)
        return cast(ToolResult, answer)


def definition_problem(tool: object) -> str:
    """What is wrong with a ``{name, description, inputSchema}`` definition, or ``""``."""
    if not isinstance(tool, dict):
        return f"is {type(tool).__name__}, not an object"
    if not isinstance(tool.get("name"), str):
        return "has no string 'name'"
    if not isinstance(tool.get("description"), str):
        return f"({tool['name']!r}) has no string 'description'"
    if not isinstance(tool.get("inputSchema"), dict):
        return f"({tool['name']!r}) has no object 'inputSchema'"
    return ""


def check_initialize(answer: object, error: Callable[[str], Exception]) -> Implementation:
    """Check an ``initialize`` answer; ``error(message)`` builds what is raised when it is wrong."""
    if not isinstance(answer, Mapping):
        raise error(f"initialize returned {type(answer).__name__}, not an object")
    name, version, profiles = answer.get("name"), answer.get("version"), answer.get("profiles")
    if not isinstance(name, str) or not isinstance(version, str):
        raise error("initialize answer needs string 'name' and 'version'")
    if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        raise error("initialize answer needs 'profiles', a list of strings")
    return Implementation(name=name, version=version, profiles=tuple(profiles))
