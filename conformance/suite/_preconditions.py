"""What a check relies on, checked before it reports a finding on its own clause.

A check's oracle often assumes that another clause holds: the first-round count SEL-2
predicts assumes the policy was applied (POL-1 to POL-5), the candidates POL-4.3 counts
assume the cap of 12 (SEL-1), a discovered tool to execute assumes that discovery
activates a tool asked for by name (DSC-5.8). When such a clause is broken, a finding on
the check's own clause would send the developer to code that is right. The check calls
:func:`precondition` first instead: when the clause it relies on does not hold, the test
is inconclusive (neither a pass nor a finding, nor an error of the suite), naming that
clause, whose own checks report the finding.

When the SUT's legitimate choices leave an example nothing to check (a discovery that
activates nothing, as DSC-5.6 allows), the check calls :func:`nothing_to_check`: a
property goes on with its other examples, and is inconclusive only when none of them had
anything to check.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from typing import NoReturn

from conformance import CLAUSES, Inconclusive, OutcomeError, Run, Sut, UnknownClause
from conformance._wire_types import Definition, ToolPolicy, ToolResult
from conformance.suite import _wire
from conformance.suite._fleets import Fleet, Fleets, tools_of
from conformance.suite._named import ask_for, plain_server
from conformance.suite._predictions import DYNAMIC, FIRST_ROUND_SERVER_CAP, MAX_LIMIT, FirstRound, Tools, read_only
from conformance.suite._wire import (
    base_tools,
    catalog,
    mcp_definitions,
    names,
    open_params,
    qualified,
    refusal_or,
    run,
)
from mock_servers import AnnotationMix, FleetSpec, ListedTool, ServerSpec, example_arguments, generate_tools

__all__ = [
    "activations_kept",
    "admitted",
    "definitions_follow_activations",
    "discovery_passes_twelve",
    "distinct_definitions",
    "dynamic_capacity_kept",
    "excluded_pins_not_required",
    "exclusion_clause",
    "first_round_capacity_kept",
    "first_round_capped",
    "gate_refuses_inactive",
    "left_out_tools_activatable",
    "named_activation_is_due",
    "named_activation_missed",
    "nothing_to_check",
    "original_names_sent",
    "policy_applied",
    "precondition",
    "qualified_names_kept",
    "read_only_applied",
    "required_active",
    "required_all_active",
    "required_left_out",
    "twelve_per_server",
    "writes_allowed_by_default",
]


def precondition(sentence: str, holds: bool, what: str, *, observed: object = None) -> None:
    """Go on only when ``holds``: the check relies on ``sentence`` (a sentence or clause id),
    and ``what`` says how the SUT broke it. Otherwise the test is inconclusive, naming it.

    Raises:
        Inconclusive: ``holds`` is false.
        UnknownClause: ``sentence`` is no sentence or clause of SPEC.md (a bug of the suite).
    """
    clause_id = sentence.split(".", 1)[0]
    if clause_id not in CLAUSES or ("." in sentence and sentence not in {s.id for s in CLAUSES[clause_id].sentences}):
        raise UnknownClause(sentence, " (named by a precondition)")
    if not holds:
        # A misread policy rule breaks what the sentence predicts too: name the rule.
        if _wire.diagnosis is not None and (misread := _wire.diagnosis.finding_or_inconclusive((sentence,))):
            raise misread
        raise Inconclusive(sentence, what, observed=observed)


def qualified_names_kept(shown: Iterable[str], known: Container[str]) -> None:
    """Go on only when every MCP tool the SUT showed or activated is under a name of the
    catalog (``known``): a check that looks a tool up by its name relies on CAT-3.1, and would
    otherwise break on the first name it cannot find."""
    unknown = [name for name in shown if name not in known]
    precondition(
        "CAT-3.1",
        not unknown,
        "the run showed tools under names that are not their qualified names",
        observed=unknown[:5],
    )


def distinct_definitions(definitions: Sequence[Definition]) -> None:
    """Go on only when no name appears twice among ``definitions`` (DEF-1.1): a check that
    counts them would count a tool twice.

    Raises:
        Inconclusive: naming DEF-1.1.
    """
    shown = names(definitions)
    twice = sorted({name for name in shown if shown.count(name) > 1})
    precondition("DEF-1.1", not twice, "a definition appears twice", observed=twice)


def original_names_sent(calls: Iterable[Mapping[str, object]]) -> None:
    """Go on only when none of ``calls`` (a ledger's ``tool_called`` events) reached a server
    under its tool's qualified name (CAT-4.2): the server answers "unknown tool", and a
    check that an active tool runs, or that the run goes on after a failure, sees the call
    fail for that.

    Raises:
        Inconclusive: naming CAT-4.2.
    """
    qualified_calls = [
        {"server": event.get("server"), "name": event.get("name")}
        for event in calls
        if event.get("unknown") and str(event.get("name")).startswith(f"{event.get('server')}__")
    ]
    precondition(
        "CAT-4.2",
        not qualified_calls,
        "a server was called under a qualified name, not its tool's own",
        observed=qualified_calls[:5],
    )


async def named_activation_missed(r: Run, target: str, tool: ListedTool, result: ToolResult) -> None:
    """Called when a discovery call that asked for ``target`` by its qualified name, scoped
    to its server, left it out of the next definitions (``result`` is the call's): go on only
    when the definitions are not what lags, and the tool can be found at all.

    A tool the result reports activated and the gate runs is active: definitions that leave
    it out break DEF-2.2. A tool that a query of its original name activates is in the
    catalog: the qualified query was misread (DSC-5.8). Either way the check's own sentence
    is not what broke. Both probes act on the run: call it on the way to a finding.

    Raises:
        Inconclusive: naming DEF-2.2 or DSC-5.8.
    """
    arguments = example_arguments(tool)
    if target in _wire.activated(result):
        ran = await r.call(target, arguments)
        precondition(
            "DEF-2.2",
            bool(ran["isError"]),
            f"{target}, which discovery reported activated and the gate runs, is not in the next definitions",
            observed=ran,
        )
        return
    server = target.split("__", 1)[0]
    again = await r.call(_wire.DISCOVERY, {"query": tool["name"], "server_ids": [server], "limit": MAX_LIMIT})
    precondition(
        "DSC-5.8",
        target not in _wire.activated(again),
        f"discovery did not activate {target} asked for by its qualified name, and did by its original name",
        observed=again,
    )


def nothing_to_check(reason: str) -> NoReturn:
    """End this example: the SUT, as the specification allows, left it nothing to check."""
    raise Inconclusive("", reason)


def exclusion_clause(policy: ToolPolicy, tool: ListedTool) -> str:
    """The clause that keeps ``tool`` out under ``policy`` (denial first, then the mode's
    lists, then read-only), or "POL-1" when the policy admits it."""
    name = tool["name"]
    mode = policy.get("mode", "auto")
    allowed = policy.get("allowedTools") or []
    if name in (policy.get("deniedTools") or []):
        return "POL-2"
    if mode == "allowlist" and name not in allowed:
        return "POL-3"
    if mode == "auto" and allowed and name not in allowed:
        return "POL-4"
    if policy.get("sideEffects", "allow") == "readOnly" and not read_only(tool):
        return "POL-5"
    return "POL-1"


def admitted(sut: Sut, fleets: Fleets, server: ServerSpec, policy: ToolPolicy) -> set[str] | None:
    """The tools of ``server`` the SUT admits under ``policy``'s denial and read-only: a run
    of that server alone in ``all`` mode, where every eligible tool is required (POL-6.1),
    shows them all. None when that run does not open."""
    control: ToolPolicy = {
        "mode": "all",
        "maxActiveTools": 96,
        "deniedTools": list(policy.get("deniedTools") or []),
        "sideEffects": policy.get("sideEffects", "allow"),
    }
    with fleets.serve(FleetSpec(servers=(server,)), {server.id: control}) as served:
        got = run(refusal_or(sut, open_params(served.servers)))
    if isinstance(got, OutcomeError):
        return None
    return {name.removeprefix(f"{server.id}__") for name in names(mcp_definitions(got, []))}


def read_only_applied(sut: Sut, fleets: Fleets, spec: FleetSpec, policies: Mapping[str, ToolPolicy]) -> None:
    """Go on only when, for each server of ``spec`` under ``sideEffects: readOnly``, the SUT
    admits no tool whose ``readOnlyHint`` is not the JSON value true (POL-5.1).

    It opens a run per such server: call it on the way to a finding, not before every check.
    A SUT that admits too few tools (annotations lost, CAT-1.2) passes it: only admitting
    writes shows read-only handling broken.

    Raises:
        Inconclusive: naming POL-5.1.
    """
    for server in spec.servers:
        if policies.get(server.id, {}).get("sideEffects") != "readOnly":
            continue
        shown = admitted(sut, fleets, server, {"sideEffects": "readOnly"})
        writes = sorted((shown or set()) - {t["name"] for t in generate_tools(server) if read_only(t)})
        precondition(
            "POL-5.1",
            not writes,
            f"under sideEffects readOnly, {server.id} admits tools whose readOnlyHint is not true: "
            + ", ".join(writes[:3]),
            observed={"server": server.id, "admitted without readOnlyHint true": writes},
        )


def policy_applied(
    sut: Sut,
    fleets: Fleets,
    spec: FleetSpec,
    policies: Mapping[str, ToolPolicy],
    model: FirstRound,
    active: Iterable[str],
) -> None:
    """Go on only when every active MCP tool is one its server's policy admits (POL-1.1),
    naming the rule that should have kept it out: the deny list (POL-2), the allowlist
    (POL-3), ``auto``'s allowed tools (POL-4), read-only handling (POL-5.1).

    Raises:
        Inconclusive: naming the clause that broke first.
    """
    cat = catalog(tools_of(spec))
    for name in active:
        if name not in cat:
            continue
        sid, tool = cat[name]
        if tool["name"] in model.servers[sid].eligible:
            continue
        policy = policies.get(sid, {})
        excluded_by = exclusion_clause(policy, tool)
        if excluded_by == "POL-5":
            server = next(s for s in spec.servers if s.id == sid)
            read_only_applied(sut, fleets, FleetSpec(servers=(server,)), {sid: policy})
        precondition(
            "POL-1.1" if excluded_by in ("POL-1", "POL-5") else excluded_by,
            False,
            f"{name} is active although the policy of {sid} does not admit it",
            observed={"tool": name, "policy": dict(policy), "annotations": tool.get("annotations")},
        )


def excluded_pins_not_required(sut: Sut, served: Fleet, model: FirstRound, base: Sequence[Definition] = ()) -> None:
    """Go on only when the pins the policies exclude are not what got a run refused (POL-7.1):
    a host that counts them as required refuses runs that fit, and the run opens once they
    are left out. Call it on a refusal the oracle does not expect.

    Raises:
        Inconclusive: naming POL-7.1.
    """
    pins = {sid: m.excluded_pins for sid, m in model.servers.items() if m.excluded_pins}
    if not pins:
        return
    servers = served.with_policies(model.without_excluded_pins(served.policies))
    control = run(refusal_or(sut, open_params(servers, base)))
    precondition(
        "POL-7.1",
        isinstance(control, OutcomeError),
        "the run was refused, and opens once the pins its policies exclude are left out: they were counted as required",
        observed={"excluded pins": pins},
    )


def required_active(sut: Sut, model: FirstRound, tools: Tools, active: Iterable[str]) -> None:
    """Go on only when every tool the policies require is in the first round of a run that
    opened (POL-6.2): what fills the rest of it, and what discovery can still activate, is
    predicted from them. A check that cites POL-6.2, or SEL-2.3 (a server outside ``auto``
    contributes its required tools), judges that itself.

    Raises:
        Inconclusive: naming POL-6.2.
    """
    if {"POL-6.2", "SEL-2.3"} & sut.cited:
        return
    cat = catalog(tools)
    active = list(active)
    qualified_names_kept(active, cat)
    shown = {(cat[name][0], cat[name][1]["name"]) for name in active}
    missing = sorted(
        qualified(sid, name) for sid, m in model.servers.items() for name in m.required if (sid, name) not in shown
    )
    precondition(
        "POL-6.2",
        not missing,
        f"the run opened without {len(missing)} of the tools its policies require",
        observed={"required, not active": missing[:10]},
    )


#: Tools of the one server :func:`required_all_active` opens a run over: more than the
#: first-round cap of 12, fewer than any watermark.
_REQUIRED_CONTROL = 30


def required_all_active(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a run of one server in ``all`` mode, every one of its tools required
    (POL-6.1), opens with all of them active (POL-6.2): see :func:`required_left_out`.
    A check that reads a catalog or a ranking through the first round relies on it: call it
    on the way to a finding. A check that cites POL-6.2 judges that itself.

    Raises:
        Inconclusive: naming POL-6.2.
    """
    if "POL-6.2" in sut.cited:
        return
    missing = required_left_out(sut, fleets)
    precondition(
        "POL-6.2",
        not missing,
        f"a run of one server whose {_REQUIRED_CONTROL} tools are all required opened without {missing}",
        observed={"not active": missing},
    )


def required_left_out(sut: Sut, fleets: Fleets) -> str:
    """Open a run of one server of more tools than the first-round cap of 12, all on one page,
    all marked read-only, with nothing restricting them (``all`` mode, no list, no denial):
    every one is required, so every one must be active. Returns what is missing ("" when
    all are active), "refused: ..." for a refusal."""
    server = ServerSpec(
        id="whole",
        tool_count=_REQUIRED_CONTROL,
        page_size=_REQUIRED_CONTROL,
        annotations=AnnotationMix(read_only=1.0, writable=0.0, none=0.0, follow_names=False),
    )
    policy: ToolPolicy = {"mode": "all", "maxActiveTools": 96}
    with fleets.serve(FleetSpec(servers=(server,)), {server.id: policy}) as served:
        got = run(refusal_or(sut, open_params(served.servers)))
        listed = {qualified(server.id, t["name"]) for t in served.tools[server.id]}
    if isinstance(got, OutcomeError):
        return f"refused: {got}"
    shown = set(names(mcp_definitions(got, [])))
    qualified_names_kept(shown, listed)
    missing = sorted(listed - shown)
    return f"{len(missing)} of them: {', '.join(missing[:5])}" if missing else ""


def gate_refuses_inactive(sut: Sut, fleets: Fleets) -> None:
    """Go on only when the gate refuses a tool that is merely inactive, an eligible tool the
    first round left out, with an error result and no ``tools/call`` (GATE-1, GATE-4.1).
    A check that a tool some rule keeps out (its policy, another run) never executes relies
    on the gate refusing what is not active: a gate that runs every tool, or refuses without
    the error flag, fails that check for the gate's fault. Call it on the way to that finding.

    Raises:
        Inconclusive: naming GATE-1, or GATE-4.1 for a refusal without the error flag.
    """
    server = ServerSpec(id="gate", tool_count=_GATE_CONTROL)
    with fleets.serve(FleetSpec(servers=(server,))) as served:

        async def call_one_left_out() -> tuple[ListedTool, ToolResult] | None:
            async with sut.open(open_params(served.servers)) as r:
                active = set(names(await r.definitions()))
                left_out = [t for t in served.tools[server.id] if qualified(server.id, t["name"]) not in active]
                if not left_out:
                    return None  # SEL-1's to judge: the cap of 12 left nothing out
                tool = left_out[0]
                return tool, await r.call(qualified(server.id, tool["name"]), example_arguments(tool))

        got = run(call_one_left_out())
        if got is None:
            return
        tool, result = got
        executed = served.ledger().calls(server.id, tool["name"])
    what = f"a call to {qualified(server.id, tool['name'])}, eligible but not active,"
    precondition("GATE-1", not executed, f"{what} reached its server", observed=result)
    precondition("GATE-4.1", bool(result["isError"]), f"{what} was refused without the error flag", observed=result)


#: Tools of the one server :func:`gate_refuses_inactive` opens a run over: the first round
#: takes 12 (SEL-1), and leaves the others out.
_GATE_CONTROL = 20


def writes_allowed_by_default(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a policy that leaves ``sideEffects`` out admits tools not marked
    read-only (POL-9.4): a check that expects every tool of an ``all``-mode server active,
    annotations or none, relies on it. Call it on the way to that finding.

    Raises:
        Inconclusive: naming POL-9.4.
    """
    server = ServerSpec(
        id="writes",
        tool_count=4,
        annotations=AnnotationMix(read_only=0.0, writable=0.5, none=0.5, follow_names=False),
    )
    with fleets.serve(FleetSpec(servers=(server,)), {server.id: {"mode": "all"}}) as served:
        got = run(refusal_or(sut, open_params(served.servers)))
    shown = [] if isinstance(got, OutcomeError) else names(mcp_definitions(got, []))
    precondition(
        "POL-9.4",
        isinstance(got, OutcomeError) or len(shown) == server.tool_count,
        f"a server in all mode whose {server.tool_count} tools are none of them marked read-only, under a policy "
        f"that leaves sideEffects out, opened with {len(shown)} of them",
        observed=shown,
    )


#: Tools of the one server :func:`twelve_per_server` opens a run over, all room for them.
_CAP_CONTROL = 30


def twelve_per_server(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a run of one ``auto`` server of 30 tools, with room for all of them
    (``maxActiveTools`` 96, no base tools), opens with at most 12 (SEL-1.2: the cap of 12
    binds even when the capacity has room for more). A check that predicts a first round
    from the cap of 12 relies on it: a host whose cap is another number (a share of the
    capacity, say) takes other tools for that. Call it on the way to that finding. A check
    that cites SEL-1.2 judges that itself.

    Raises:
        Inconclusive: naming SEL-1.2.
    """
    if "SEL-1.2" in sut.cited:
        return
    server = ServerSpec(id="capped", tool_count=_CAP_CONTROL)
    with fleets.serve(FleetSpec(servers=(server,)), {server.id: {"maxActiveTools": 96}}) as served:
        got = run(refusal_or(sut, open_params(served.servers)))
    shown = [] if isinstance(got, OutcomeError) else names(mcp_definitions(got, []))
    precondition(
        "SEL-1.2",
        len(shown) <= FIRST_ROUND_SERVER_CAP,
        f"a run of one auto server of {_CAP_CONTROL} tools, room for them all, opened with {len(shown)} of them, "
        f"past the cap of {FIRST_ROUND_SERVER_CAP}",
        observed=shown,
    )


def discovery_passes_twelve(sut: Sut, fleets: Fleets) -> None:
    """Go on only when discovery takes a server past the first round's cap of 12 (SEL-1.3).
    The run has two servers of plain tools and a first-round capacity of 12: ``a`` (14
    tools) fills it, ``b`` (3 tools) is left out. Asked for by name, scoped to its server,
    a tool of ``b`` must be activated (DSC-5.8), and so must one of ``a``, its 13th. A check
    whose discoveries take a server past 12 relies on it. Call it on the way to that
    finding; a check that cites SEL-1.3 judges that itself.

    Raises:
        Inconclusive: naming SEL-1.3 (when ``b``'s tool was activated and ``a``'s was not).
    """
    if "SEL-1.3" in sut.cited:
        return
    spec = FleetSpec(servers=(plain_server("a", 14), plain_server("b", 3)))
    with fleets.serve(spec, {"a": {"maxActiveTools": 14}}) as served:

        async def ask() -> tuple[list[str], bool, bool] | None:
            async with sut.open(open_params(served.servers, base_tools(_PAST_TWELVE_BASE))) as r:
                first = names(await r.definitions())
                in_a = sorted(q for q in first if q.startswith("a__"))
                if len(in_a) != FIRST_ROUND_SERVER_CAP:
                    return None  # the first round left a under 12: nothing to take past it
                got = []
                for target in ("b__tool_0", next(f"a__tool_{i}" for i in range(14) if f"a__tool_{i}" not in in_a)):
                    result = await r.call(_wire.DISCOVERY, {"query": target, "server_ids": [target[0]], "limit": 12})
                    got.append(target in _wire.activated(result))
                return in_a, got[0], got[1]

        asked = run(ask())
    if asked is None:
        return
    _, under_twelve, past_twelve = asked
    precondition(
        "SEL-1.3",
        past_twelve or not under_twelve,
        "discovery activated a tool asked for by name on a server under 12 active tools, and not on one at 12",
        observed={"first round of a": asked[0]},
    )


def definitions_follow_activations(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a tool discovery reports activated, and the gate runs, is in the next
    definitions (DEF-2.2). A check that reads what a call activated from the definitions
    relies on it: definitions that lag make a correct report look wrong. The run asks, by
    name, for the tools of a server of 14 the first round left out. Call it on the way to
    that finding; a check that cites DEF-2.2 judges that itself.

    Raises:
        Inconclusive: naming DEF-2.2.
    """
    if "DEF-2.2" in sut.cited:
        return
    server = plain_server("grow", 14)
    with fleets.serve(FleetSpec(servers=(server,)), {server.id: {"maxActiveTools": 14}}) as served:

        async def unlisted_but_running() -> list[str]:
            async with sut.open(open_params(served.servers)) as r:
                shown = names(await r.definitions())
                for tool in served.tools[server.id]:
                    target = qualified(server.id, tool["name"])
                    if target in shown:
                        continue
                    result = await r.call(_wire.DISCOVERY, {"query": target, "server_ids": [server.id], "limit": 12})
                    shown = names(await r.definitions())
                    unlisted = [q for q in _wire.activated(result) if q not in shown]
                    if unlisted:
                        ran = await r.call(unlisted[0], {})
                        return [] if ran["isError"] else unlisted
                return []

        lagging = run(unlisted_but_running())
    precondition(
        "DEF-2.2",
        not lagging,
        "tools discovery reported activated, which the gate runs, are not in the next definitions",
        observed=lagging,
    )


#: Base tools that, with the discovery tool, leave a first-round MCP capacity of one.
_ONE_FIRST = 94


def left_out_tools_activatable(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a tool the first round left out can be activated later (CAT-1.3): a
    run of one server of 3 tools and a first round of one asks for a tool left out by its
    qualified name (DSC-5.8 makes any ranker activate it), then by its original name. A check
    whose discovery found nothing where it must relies on it, when neither the server's cap
    of 12 nor its policy is in the way here. Call it on the way to that finding; a check that
    cites CAT-1.3 judges that itself.

    Raises:
        Inconclusive: naming CAT-1.3.
    """
    if "CAT-1.3" in sut.cited:
        return
    server = plain_server("late", 3)
    # Every tool listed in allowedTools: eligible whatever an omitted list is read as (POL-9.2).
    policy: ToolPolicy = {"allowedTools": [t.name for t in server.tools]}
    with fleets.serve(FleetSpec(servers=(server,)), {server.id: policy}) as served:

        async def ask() -> tuple[str, bool] | None:
            async with sut.open(open_params(served.servers, base_tools(_ONE_FIRST))) as r:
                shown = names(await r.definitions())
                left_out = [t for t in served.tools[server.id] if qualified(server.id, t["name"]) not in shown]
                if not left_out:
                    return None
                target = qualified(server.id, left_out[0]["name"])
                for query in (target, left_out[0]["name"]):
                    result = await r.call(_wire.DISCOVERY, {"query": query, "server_ids": [server.id], "limit": 12})
                    if target in _wire.activated(result):
                        return target, True
                return target, False

        asked = run(ask())
    precondition(
        "CAT-1.3",
        asked is None or asked[1],
        f"a tool the first round left out ({asked[0] if asked else ''}) was not activated, asked for by its "
        "qualified name or its own, on a server of 3 tools",
    )


def activations_kept(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a tool discovery activated stays active after the next discovery call
    (DEF-3.1): the run asks for ``a__tool_0`` then ``b__tool_0``, each the one candidate of
    its server, and ``a__tool_0`` must still be listed. A check that adds up what calls
    activated, or calls a tool an earlier call activated, relies on it. Call it on the way
    to that finding; a check that cites DEF-3.1 judges that itself.

    Raises:
        Inconclusive: naming DEF-3.1.
    """
    if "DEF-3.1" in sut.cited:
        return
    spec = FleetSpec(servers=(plain_server("a", 1), plain_server("b", 1)))
    with fleets.serve(spec) as served:

        async def both() -> tuple[bool, list[str]]:
            async with sut.open(open_params(served.servers, base_tools(_FILL_BASE))) as r:
                calls = await ask_for(r, ["a__tool_0", "b__tool_0"])
                first = bool(calls) and "a__tool_0" in names(calls[0].after)
                return first, names(await r.definitions())

        first, last = run(both())
    precondition(
        "DEF-3.1",
        not first or "a__tool_0" in last,
        "a tool one discovery call activated left the definitions when the next call activated another",
        observed=last,
    )


#: Base tools that, with the discovery tool, leave a first-round capacity of 0 and a dynamic
#: one of 16: :func:`dynamic_capacity_kept` fills it.
_FILL_BASE = 95


def dynamic_capacity_kept(sut: Sut, fleets: Fleets) -> None:
    """Go on only when discovery fills a dynamic capacity of 16 exactly (BUD-2): the 19 tools
    of three servers of 12, 4 and 3, asked for by name with a limit of 12, leave 112
    definitions. A check of the room a result reports, or of a call held to that room, counts
    the capacity as SPEC does: a host that counts from 113, or one short, reports and fills
    by its own count. Call it on the way to that finding; a check that cites BUD-2 judges
    that itself.

    Raises:
        Inconclusive: naming BUD-2.1 (past 112) or BUD-2.2 (short of it).
    """
    if {"BUD-2.1", "BUD-2.2"} & sut.cited:
        return
    spec = FleetSpec(servers=(plain_server("f0", 12), plain_server("f1", 4), plain_server("f2", 3)))
    with fleets.serve(spec) as served:

        async def fill() -> int:
            async with sut.open(open_params(served.servers, base_tools(_FILL_BASE))) as r:
                await ask_for(r, [qualified(s.id, t["name"]) for s in spec.servers for t in served.tools[s.id]])
                return len(await r.definitions())

        count = run(fill())
    precondition(
        "BUD-2.1" if count > DYNAMIC else "BUD-2.2",
        count == DYNAMIC,
        f"discovery filled a dynamic capacity of 16 (95 base tools and the discovery tool) to {count} "
        f"definitions, not {DYNAMIC}",
    )


#: Base tools that, with the discovery tool, leave a first-round MCP capacity of 12.
_PAST_TWELVE_BASE = 83


#: Base tools that, with the discovery tool, leave a first-round MCP capacity of one.
_EDGE_BASE = 94


def first_round_capacity_kept(sut: Sut, fleets: Fleets) -> None:
    """Go on only when a run whose first-round MCP capacity is one (94 base tools and the
    discovery tool) opens with at most one MCP tool (BUD-1.2). The checks of what must be
    refused at the edge of the capacity (BUD-4, ERR-2) compute it as SPEC does: a host that
    counts from 97, or leaves the discovery tool out, opens the runs they expect refused
    because its capacity is wrong, not its refusals. Call it on the way to that finding. A
    check that cites BUD-1.2 judges that itself.

    Raises:
        Inconclusive: naming BUD-1.2 (or BUD-1.1, from the watermark guard, when the first
            request passes 96 too).
    """
    if "BUD-1.2" in sut.cited:
        return
    base = base_tools(_EDGE_BASE)
    with fleets.serve(FleetSpec(servers=(ServerSpec(id="edge", tool_count=5),))) as served:
        got = run(refusal_or(sut, open_params(served.servers, base)))
    shown = [] if isinstance(got, OutcomeError) else names(mcp_definitions(got, names(base)))
    precondition(
        "BUD-1.2",
        len(shown) <= 1,
        f"a run of first-round MCP capacity 1 ({_EDGE_BASE} base tools and the discovery tool) opened with "
        f"{len(shown)} MCP tools",
        observed=shown,
    )


def first_round_capped(model: FirstRound, tools: Tools, active: Iterable[str]) -> None:
    """Go on only when no server has more first-round tools than its cap (SEL-1.1).

    Raises:
        Inconclusive: naming SEL-1.1.
    """
    cat = catalog(tools)
    per_server: dict[str, int] = {}
    for name in active:
        if name in cat:
            per_server[cat[name][0]] = per_server.get(cat[name][0], 0) + 1
    for sid, count in sorted(per_server.items()):
        cap = model.servers[sid].first_round_cap
        precondition(
            "SEL-1.1",
            count <= cap,
            f"{sid} has {count} tools in the first round, over its cap of {cap} "
            f"(max(required, min({FIRST_ROUND_SERVER_CAP}, maxActiveTools)))",
            observed={"server": sid, "first-round tools": count},
        )


def named_activation_is_due(candidates: int, server_room: int, dynamic_room: int, limit: int = MAX_LIMIT) -> bool:
    """Whether a call scoped to one auto server, whose query is the qualified name of one of
    its ``candidates``, must activate it (DSC-5.8): the server has at most ``limit`` of them
    and the bounds (the limit, its remaining maxActiveTools, the dynamic room) fit them all."""
    return 0 < candidates <= min(limit, MAX_LIMIT, server_room, dynamic_room)
