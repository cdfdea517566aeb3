"""Opening a run over a generated fleet and reading its first definitions, against the oracle.

The first-round properties of several sections (policy, selection, budgets, discovery,
definitions) share this: the oracle decides, before anything is served, whether the run
must open. The properties that judge an open run draw runs that must open
(:func:`~conformance.suite._strategies.opening`); those that judge refusals too open
whatever they draw, and a refusal the oracle does not predict, or an acceptance it
forbids, is a finding on the sentence that decides it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import example

from conformance import ConformanceError, Inconclusive, Nonconformance, OutcomeError
from conformance._sut import Run, Sut
from conformance._wire_types import Definition, OpenParams
from conformance.suite._explore import plan
from conformance.suite._fleets import Fleets
from conformance.suite._preconditions import excluded_pins_not_required, read_only_applied, required_active
from conformance.suite._predictions import FirstRound
from conformance.suite._strategies import FleetAndPolicies
from conformance.suite._wire import base_tools, fail, mcp_definitions, names, open_params, refusal_or, run
from mock_servers import ListedTool, ToolCalled

__all__ = ["Opened", "Then", "open_first_round", "with_examples"]

_F = TypeVar("_F", bound=Callable[..., None])
#: What to do on the open run after its first definitions are read (given them).
Then = Callable[[Run, list[Definition]], Awaitable[Any]]


@dataclass
class Opened:
    """A run opened (or refused) over a served fleet, and what the oracle predicted."""

    model: FirstRound
    tools: dict[str, list[ListedTool]]
    base: list[str]
    #: The first definitions, or the refusal of ``run.open``.
    got: list[Definition] | OutcomeError
    case: dict[str, Any]
    #: What ``then`` returned, and the ``tools/call`` events the servers saw by then.
    after: Any = None
    calls: list[ToolCalled] = field(default_factory=list)
    #: The ``run.open`` params of the run (the last attempt, when it was opened again).
    params: OpenParams | None = None

    def definitions(self, sentences: Sequence[str]) -> list[Definition]:
        """The definitions of a run that had to open; a refusal is a finding on ``sentences``."""
        if isinstance(self.got, OutcomeError):
            raise fail(
                sentences,
                "run.open refused a run that fits every budget and cap",
                expected="an open run",
                observed=str(self.got),
                case=self.case,
                refused=(self.got, self.params),
            )
        return self.got

    def refused_for_a_pin(self) -> bool:
        """Whether the run was refused for a pinned tool its policy excludes (POL-7, ID-9)."""
        return isinstance(self.got, OutcomeError) and self.model.refused_for_a_pin(self.got.kind, self.got.message)

    def refusal(self) -> Nonconformance | Inconclusive | None:
        """For a run the oracle refuses: the finding when the SUT opened it or refused otherwise."""
        model = self.model
        assert model.error is not None
        if isinstance(self.got, OutcomeError):
            if self.got.kind == model.error or self.refused_for_a_pin():
                return None
            return fail(
                (model.error_sentence,),
                f"run.open refused with {self.got.kind}",
                expected=f"{model.error}: {model.why}",
                observed=str(self.got),
                case=self.case,
                refused=(self.got, self.params),
            )
        return fail(
            (model.error_sentence,),
            "run.open accepted a run that must fail",
            expected=f"{model.error}: {model.why}",
            observed=names(self.got),
            case=self.case,
        )


def open_first_round(
    sut: Sut,
    fleets: Fleets,
    fleet: FleetAndPolicies,
    base_count: int,
    *,
    must_open: bool = True,
    then: Then | None = None,
    blame_excluded_pins: bool = True,
) -> Opened:
    """Open a run over ``fleet`` with ``base_count`` base tools and read its first definitions,
    then run ``then`` on the open run.

    A run refused for a pinned tool its policy excludes, which POL-7 allows (ID-9), is
    opened again without those pins, to the same first round. Any other refusal the oracle
    does not expect is first checked against what decides how many tools are required: if
    the run opens without the pins its policies exclude, the check is inconclusive naming
    POL-7.1 (unless ``blame_excluded_pins`` is false: a check of pins and denial, for which
    that refusal is its own finding), and read-only handling must hold (POL-5.1).

    Raises:
        ConformanceError: ``must_open`` (the default) and the oracle refuses the run: the
            check drew it without :func:`~conformance.suite._strategies.opening`.
    """
    model = plan(fleet, base_count)
    if must_open and model.error is not None:
        raise ConformanceError(f"the suite drew a run that must not open ({model.error_sentence}: {model.why})")
    spec, policies = fleet
    base = base_tools(base_count)
    if not spec.servers:  # a run of base tools alone: there is no fleet to serve
        got = run(refusal_or(sut, open_params([], base)))
        return Opened(model, {}, names(base), got, {"servers": [], "baseTools": base_count})
    with fleets.serve(spec, policies) as served:
        case = served.describe() | {"baseTools": base_count}
        servers = served.servers
        for _attempt in range(2):
            params = open_params(servers, base)
            if then is None:
                got, after = run(refusal_or(sut, params)), None
            else:
                got, after = run(_open_then(sut, params, then, case))
            if not (
                isinstance(got, OutcomeError) and model.error is None and model.refused_for_a_pin(got.kind, got.message)
            ):
                break
            case["policies"] = model.without_excluded_pins(served.policies)
            servers = served.with_policies(case["policies"])
        unexpected = isinstance(got, OutcomeError) and model.error is None
        if unexpected and blame_excluded_pins:
            # A refusal the oracle does not expect, soon a finding on the check's sentences.
            # How many tools a run requires follows from which pins count: when a host counts
            # the ones its policies exclude, that is what broke first (POL-7.1).
            excluded_pins_not_required(sut, served, model, base)
        opened = Opened(model, served.tools, names(base), got, case, after, served.ledger().calls(), params)
    if isinstance(got, list) and model.error is None:
        # What fills the rest of the first round, and what discovery can still activate, is
        # predicted from the required tools: a run that left some out broke that first.
        required_active(sut, model, served.tools, names(mcp_definitions(got, names(base))))
    if unexpected:
        # And from which tools each policy admits: read-only handling that lets writes in
        # makes more tools required (POL-5.1).
        read_only_applied(sut, fleets, spec, policies)
    return opened


async def _open_then(
    sut: Sut, params: OpenParams, then: Then, case: dict[str, Any]
) -> tuple[list[Definition] | OutcomeError, Any]:
    try:
        async with sut.open(params) as r:
            defs = await r.definitions()
            after = await then(r, defs)
            case["steps"] = r.case["steps"]
            return defs, after
    except OutcomeError as exc:
        return exc, None


def with_examples(cases: list[tuple[FleetAndPolicies, int]]) -> Callable[[_F], _F]:
    """Decorate a ``(fleet, base_count)`` property with each case as an explicit example."""

    def decorate(test: _F) -> _F:
        for fleet, base_count in reversed(cases):
            test = example(fleet=fleet, base_count=base_count)(test)
        return test

    return decorate
