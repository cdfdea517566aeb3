"""The policy diagnosis a finding asks first, against the reference and against hosts that
misread one rule."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from conformance import Inconclusive, Nonconformance, OpenParams, OutcomeError, Sut
from conformance._wire_types import ToolPolicy
from conformance.suite import _wire
from conformance.suite._eligibility import PolicyDiagnosis
from conformance.suite._fleets import Fleets, tools_of
from conformance.suite._preconditions import precondition
from conformance.suite._wire import base_tools, open_params, refusal_or, run
from mock_servers import Faults, FleetSpec, ServerSpec
from tests.conformance.suite.hosts import Front, OpenEdit, misreading, twelve_per_server

SPEC = FleetSpec(servers=(ServerSpec(id="s0", tool_count=20), ServerSpec(id="s1", tool_count=20, seed=1)))


def _policies(s1: ToolPolicy, s0: ToolPolicy | None = None) -> dict[str, ToolPolicy]:
    return {"s0": s0 or {}, "s1": s1}


@misreading
def all_mode_reads_allowed_tools(sid: str, policy: ToolPolicy) -> None:
    """A host whose ``all`` servers admit only their ``allowedTools`` when it is not empty."""
    if policy.get("mode") == "all" and policy.get("allowedTools"):
        policy["mode"] = "allowlist"


@misreading
def deny_read_in_auto_only(sid: str, policy: ToolPolicy) -> None:
    """A host that reads ``deniedTools`` only in ``auto`` mode."""
    if policy.get("mode", "auto") != "auto":
        policy["deniedTools"] = []


@misreading
def policy_names_read_as_qualified(sid: str, policy: ToolPolicy) -> None:
    """A host that matches the names of a policy's lists against qualified names."""
    prefix = f"{sid}__"
    for field in ("allowedTools", "deniedTools", "pinnedTools"):
        if field in policy:
            names = policy[field]
            policy[field] = [n.removeprefix(prefix) if n.startswith(prefix) else f"{n}\u0000" for n in names]


@misreading
def read_only_ignored_outside_auto(sid: str, policy: ToolPolicy) -> None:
    """A host that applies ``sideEffects: readOnly`` in ``auto`` mode only."""
    if policy.get("mode", "auto") != "auto":
        policy["sideEffects"] = "allow"


@misreading
def allowing_beats_denial(sid: str, policy: ToolPolicy) -> None:
    """A host for which a tool both allowed and denied is allowed."""
    allowed = set(policy.get("allowedTools", []))
    if "deniedTools" in policy:
        policy["deniedTools"] = [n for n in policy["deniedTools"] if n not in allowed]


def defaults_misread(field: str, value: object) -> OpenEdit:
    """A host that reads a policy that leaves ``field`` out as if it said ``value``."""

    def leave_in(sid: str, policy: ToolPolicy) -> None:
        cast(dict[str, object], policy).setdefault(field, value)

    return misreading(leave_in)


def _diagnosed(
    sut: Sut, fleets: Fleets, s1: ToolPolicy, sentences: tuple[str, ...] = ("SEL-2.1",), *, s0: ToolPolicy | None = None
) -> str | None:
    diagnosis = PolicyDiagnosis(sut, fleets)
    fleets.recent.clear()  # as before each test of the suite
    with fleets.serve(SPEC, _policies(s1, s0)):
        pass
    found = diagnosis.finding_or_inconclusive(sentences)
    return None if found is None else found.because


def _denied(count: int) -> list[str]:
    return [t["name"] for t in tools_of(SPEC)["s1"][:count]]


@pytest.mark.e2e
def test_the_reference_misreads_no_rule(front: Front, fleets: Fleets) -> None:
    sut = front()
    denied = _denied(3)

    for policy in (
        {},
        {"mode": "all", "allowedTools": denied[:1]},
        {"mode": "allowlist", "allowedTools": denied, "deniedTools": denied[:1]},
        {"mode": "all", "deniedTools": denied, "sideEffects": "readOnly"},
    ):
        assert _diagnosed(sut, fleets, policy) is None, policy  # type: ignore[arg-type]


@pytest.mark.e2e
def test_an_all_server_restricted_by_its_allowed_tools_is_blamed_on_pol_4_4_outside_pol_4(
    front: Front, fleets: Fleets
) -> None:
    sut = front(opening=all_mode_reads_allowed_tools)
    policy: ToolPolicy = {"mode": "all", "allowedTools": _denied(2)}

    assert _diagnosed(sut, fleets, policy) == "POL-4.4"
    assert _diagnosed(sut, fleets, policy, ("POL-4.4",)) is None  # POL-4's own finding stands
    sut.cited = frozenset({"POL-4.3"})  # and so does any finding of a test citing POL-4
    assert _diagnosed(sut, fleets, policy) is None


@pytest.mark.e2e
def test_a_deny_list_read_in_auto_mode_only_is_blamed_on_pol_2_1(front: Front, fleets: Fleets) -> None:
    sut = front(opening=deny_read_in_auto_only)

    assert _diagnosed(sut, fleets, {"mode": "allowlist", "allowedTools": _denied(5), "deniedTools": _denied(1)}) == (
        "POL-2.1"
    )
    assert _diagnosed(sut, fleets, {"deniedTools": _denied(2)}) == "POL-2.1"  # the control runs in all mode


@pytest.mark.e2e
def test_writes_admitted_under_read_only_are_blamed_on_pol_5_1(front: Front, fleets: Fleets) -> None:
    sut = front(opening=read_only_ignored_outside_auto)

    assert _diagnosed(sut, fleets, {"sideEffects": "readOnly"}) == "POL-5.1"


@pytest.mark.e2e
def test_allowing_that_beats_denial_is_blamed_on_pol_2_3(front: Front, fleets: Fleets) -> None:
    sut = front(opening=allowing_beats_denial)
    listed = _denied(4)

    assert _diagnosed(sut, fleets, {"mode": "allowlist", "allowedTools": listed, "deniedTools": listed[:1]}) == (
        "POL-2.3"
    )


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("field", "value", "sentence"),
    [("mode", "all", "POL-9.1"), ("maxActiveTools", 12, "POL-9.3"), ("sideEffects", "readOnly", "POL-9.4")],
)
def test_a_field_left_out_and_misread_is_blamed_on_its_pol_9_sentence(
    front: Front, fleets: Fleets, field: str, value: object, sentence: str
) -> None:
    sut = front(opening=defaults_misread(field, value))

    spelled = cast(ToolPolicy, {field: value})

    assert _diagnosed(sut, fleets, {}) == sentence
    assert _diagnosed(sut, fleets, spelled, s0=spelled) is None  # spelled out, it is read as written


@pytest.mark.e2e
def test_policy_names_read_as_qualified_names_are_blamed_on_pol_9_5(front: Front, fleets: Fleets) -> None:
    sut = front(opening=policy_names_read_as_qualified)

    assert _diagnosed(sut, fleets, {"deniedTools": _denied(2)}) == "POL-9.5"


@pytest.mark.e2e
def test_a_host_that_leaves_tools_out_whatever_the_policy_has_no_rule_blamed(front: Front, fleets: Fleets) -> None:
    sut = front(twelve_per_server)  # 20 tools a server, 12 shown: a required-tools defect

    assert _diagnosed(sut, fleets, {"mode": "all", "allowedTools": _denied(2)}) is None


@pytest.mark.e2e
def test_findings_on_pol_1_stand_whatever_rule_is_misread(front: Front, fleets: Fleets) -> None:
    sut = front(opening=all_mode_reads_allowed_tools)

    assert _diagnosed(sut, fleets, {"mode": "all", "allowedTools": _denied(2)}, ("POL-1.2",)) is None


def _misreading_all_mode(front: Front, fleets: Fleets) -> PolicyDiagnosis:
    """The diagnosis of a host that lets allowedTools restrict an all server, a fleet it
    misreads just served."""
    sut = front(opening=all_mode_reads_allowed_tools)
    diagnosis = PolicyDiagnosis(sut, fleets)
    with fleets.serve(SPEC, _policies({"mode": "all", "allowedTools": _denied(2)})):
        pass
    return diagnosis


@pytest.mark.e2e
def test_a_finding_or_a_precondition_becomes_inconclusive_naming_the_misread_rule(front: Front, fleets: Fleets) -> None:
    diagnosis = _misreading_all_mode(front, fleets)
    _wire.diagnosis = diagnosis
    try:
        found = _wire.fail(("SEL-2.1",), "the first round did not fill")
        with pytest.raises(Inconclusive) as caught:
            precondition("POL-6.2", False, "required tools are missing")
    finally:
        _wire.diagnosis = None

    assert isinstance(found, Inconclusive) and found.because == "POL-4.4"
    assert caught.value.because == "POL-4.4"
    assert isinstance(_wire.fail(("SEL-2.1",), "no diagnosis asked"), Nonconformance)


@pytest.mark.e2e
def test_a_diagnosis_is_made_once_per_server_and_policy(front: Front, fleets: Fleets) -> None:
    diagnosis = _misreading_all_mode(front, fleets)
    sut = diagnosis.sut
    opened: list[OpenParams] = []
    real = sut.open

    def counting(params: OpenParams):  # type: ignore[no-untyped-def]
        opened.append(params)
        return real(params)

    sut.open = counting  # type: ignore[method-assign]

    first = diagnosis.finding_or_inconclusive(("SEL-2.1",))
    runs = len(opened)
    again = diagnosis.finding_or_inconclusive(("SEL-2.1",))

    assert first is not None and again is not None and first.because == again.because == "POL-4.4"
    assert runs > 0 and len(opened) == runs


def refuses_denied_pins(params: OpenParams) -> OpenParams:
    """A host that refuses a run pinning a tool its policy denies, without naming the tool."""
    for server in params["servers"]:
        policy = server.get("policy") or {}
        if set(policy.get("pinnedTools", [])) & set(policy.get("deniedTools", [])):
            raise OutcomeError("config_error", f"server {server['id']!r} has an invalid pinnedTools")
    return params


def refuses_everything(params: OpenParams) -> OpenParams:
    raise OutcomeError("config_error", "no run opens here")


def _refused(sut: Sut, fleets: Fleets, s1: ToolPolicy, *, base: int = 0) -> str | None:
    """Open a run the host refuses, let its fleet end, then ask why."""
    diagnosis = PolicyDiagnosis(sut, fleets)
    with fleets.serve(SPEC, _policies(s1)) as served:
        got = run(refusal_or(sut, open_params(served.servers, base_tools(base))))
    assert isinstance(got, OutcomeError)
    found = diagnosis.refusal_or_inconclusive(got.kind)
    return None if found is None else found.because


@pytest.mark.e2e
def test_a_run_refused_for_excluded_pins_without_naming_them_is_blamed_on_pol_7_2(front: Front, fleets: Fleets) -> None:
    sut = front(opening=refuses_denied_pins)
    pinned_and_denied: ToolPolicy = {"pinnedTools": _denied(1), "deniedTools": _denied(1)}

    assert _refused(sut, fleets, pinned_and_denied) == "POL-7.2"
    sut.cited = frozenset({"POL-7.1"})  # the checks of POL-7 judge such refusals themselves
    assert _refused(sut, fleets, pinned_and_denied) is None


@pytest.mark.e2e
def test_a_refusal_that_stays_without_the_excluded_pins_is_left_to_the_finding(front: Front, fleets: Fleets) -> None:
    sut = front(opening=refuses_everything)

    assert _refused(sut, fleets, {"pinnedTools": _denied(1), "deniedTools": _denied(1)}) is None
    assert _refused(sut, fleets, {"pinnedTools": _denied(1)}) is None  # no pin excluded


@pytest.mark.e2e
def test_a_run_refused_for_a_max_active_tools_read_as_12_when_left_out_is_blamed_on_pol_9_3(
    front: Front, fleets: Fleets
) -> None:
    # An `all` server of 20 tools requires all 20: within the default of 24, past 12.
    sut = front(opening=defaults_misread("maxActiveTools", 12))

    assert _refused(sut, fleets, {"mode": "all"}) == "POL-9.3"
    sut.cited = frozenset({"POL-9.3"})  # its own check judges the default itself
    assert _refused(sut, fleets, {"mode": "all"}) is None
    sut.cited = frozenset({"POL-9.5"})  # a check of another default does not
    assert _refused(sut, fleets, {"mode": "all"}) == "POL-9.3"


def refuses_zero_capacity(params: OpenParams) -> OpenParams:
    """A host that refuses a run whose first-round MCP capacity is exactly zero."""
    if len(params.get("baseTools", [])) == 95:
        raise OutcomeError("selection_error", "no first-round slot is left under the 96 watermark")
    return params


@pytest.mark.e2e
def test_a_run_at_the_watermark_refused_for_a_capacity_of_zero_is_blamed_on_bud_4_3(
    front: Front, fleets: Fleets
) -> None:
    sut = front(opening=refuses_zero_capacity)
    assert _refused(sut, fleets, {}, base=95) == "BUD-4.3"
    sut.cited = frozenset({"BUD-4.3"})  # its own check judges the refusal itself
    assert _refused(sut, fleets, {}, base=95) is None
    assert _refused(front(opening=refuses_everything), fleets, {}, base=95) is None


@pytest.mark.e2e
def test_a_finding_made_inside_a_runs_body_is_diagnosed_on_a_thread_of_its_own(front: Front, fleets: Fleets) -> None:
    sut = front(opening=all_mode_reads_allowed_tools)
    diagnosis = PolicyDiagnosis(sut, fleets)

    async def body() -> Inconclusive | None:
        with fleets.serve(SPEC, _policies({"mode": "all", "allowedTools": _denied(2)})) as served:
            async with sut.open(open_params(served.servers)):
                return diagnosis.finding_or_inconclusive(("SEL-2.1",))

    found = asyncio.run(body())

    assert found is not None and found.because == "POL-4.4"


@misreading
def empty_allowlist_read_as_open(sid: str, policy: ToolPolicy) -> None:
    """A host that reads an allowlist that leaves allowedTools out as restricting nothing."""
    if policy.get("mode") == "allowlist" and "allowedTools" not in policy:
        policy["mode"] = "all"


@pytest.mark.e2e
def test_an_allowlist_that_leaves_its_list_out_and_admits_everything_is_blamed_on_pol_9_2(
    front: Front, fleets: Fleets
) -> None:
    sut = front(opening=empty_allowlist_read_as_open)

    assert _diagnosed(sut, fleets, {"mode": "allowlist"}, s0={"mode": "allowlist", "allowedTools": []}) == "POL-9.2"


@pytest.mark.e2e
def test_a_server_that_lists_a_tool_twice_is_left_to_the_checks_of_malformed_listings(
    front: Front, fleets: Fleets
) -> None:
    sut = front(opening=all_mode_reads_allowed_tools)
    twice = FleetSpec(servers=(ServerSpec(id="s1", tool_count=20, seed=1, faults=Faults(duplicate_names=1)),))
    diagnosis = PolicyDiagnosis(sut, fleets)
    fleets.recent.clear()
    with fleets.serve(twice, {"s1": {"mode": "all", "allowedTools": _denied(2)}}):
        pass

    assert diagnosis.finding_or_inconclusive(("SEL-2.1",)) is None
