"""Runs with eviction (EVC-*, profile ``eviction``): an active set that rolls within the dynamic
capacity, least recently used first, with the gate and the definitions moving together.

Every run here is opened with ``"eviction": "lru"`` (PROTOCOL.md P37), which a host that does
not claim the profile ignores: its runs only grow (DEF-3.1). Its fleet is made for
predictions: 93 base tools and the discovery tool leave a first round of exactly the two
required tools and a dynamic capacity of 18, and each ``auto`` server has at most four
tools, so that a discovery call scoped to it with the qualified name of one of them and a
limit of 4 must activate that tool (DSC-5.8, EVC-5.3). An oracle follows the run step by
step: what is active, when each tool was last used, and which tools are required.

Every tool fails the calls made with :data:`FAILING` (its server answers with the error
flag). Whether such a call of an active tool is a use is the host's choice (ID-19), one for
the whole run: the oracle keeps the last uses under both readings and holds each eviction to
the readings the run has kept to so far.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance import Run, Sut, clause
from conformance._wire_types import Definition, OpenParams, ToolPolicy
from conformance.suite._fleets import Fleet, Fleets
from conformance.suite._preconditions import nothing_to_check
from conformance.suite._strategies import examples
from conformance.suite._wire import (
    DISCOVERY,
    base_tools,
    fail,
    mcp_definitions,
    named_in,
    names,
    open_params,
    portable,
    result_text,
    run,
    structured,
)
from mock_servers import FleetSpec, ServerSpec, ToolSpec

READ_ONLY = {"readOnlyHint": True}
BASE = base_tools(93)
#: 112 − 93 base tools − the discovery tool.
CAPACITY = 18
#: The servers whose tools discovery activates, their tools, and one with a cap of 2.
ROLLING = ("s0", "s1", "s2", "s3", "s4", "s5")
TOOLS = ("a", "b", "c", "d")
CAPPED = "s5"
#: A server with a cap of 2 and two tools: room for all its candidates once both are evicted.
DUO = "duo"
REQUIRED = ("pin__keep", "fix__always")


#: Arguments every tool of the fleet answers with an error result.
FAILING = {"fail": True}


def _server(server_id: str, tools: Sequence[str]) -> ServerSpec:
    failed = {"content": [{"type": "text", "text": "the operation failed"}], "isError": True}
    explicit = tuple(
        ToolSpec(
            name=t,
            description=f"Operation {t} of {server_id}.",
            annotations=READ_ONLY,
            samples=({"arguments": FAILING, "result": failed},),
        )
        for t in tools
    )
    return ServerSpec(id=server_id, tool_count=0, tools=explicit)


SPEC = FleetSpec(
    servers=(
        *(_server(sid, TOOLS) for sid in ROLLING),
        _server("pin", ("keep", "spare")),
        _server("fix", ("always",)),
        _server(DUO, ("x", "y")),
    )
)
POLICIES: dict[str, ToolPolicy] = {
    CAPPED: {"maxActiveTools": 2},
    DUO: {"maxActiveTools": 2},
    "pin": {"pinnedTools": ["keep"]},
    "fix": {"mode": "allowlist", "allowedTools": ["always"]},
}
CANDIDATES = (*(f"{sid}__{t}" for sid in ROLLING for t in TOOLS), "pin__spare", f"{DUO}__x", f"{DUO}__y")
CAPS = {sid: POLICIES.get(sid, ToolPolicy()).get("maxActiveTools", 24) for sid in (*ROLLING, "pin", "fix", DUO)}


def eviction_params(fleet: Fleet) -> OpenParams:
    return {**open_params(fleet.with_policies(POLICIES), BASE), "eviction": "lru"}


def _growing_params(fleet: Fleet) -> OpenParams:
    return open_params(fleet.with_policies(POLICIES), BASE)


def server_of(name: str) -> str:
    return name.split("__", 1)[0]


#: The two readings of ID-19, the reference's first: when neither holds, its finding is the one reported.
NO_USE, A_USE = "a failed call is no use", "a failed call is a use"


@dataclass
class Oracle:
    """What a run with eviction must look like, step by step."""

    case: dict[str, Any]
    active: set[str] = field(default_factory=set)
    #: The last use of each active tool under each reading of ID-19 the run has kept to so far.
    last_use: dict[str, dict[str, int]] = field(default_factory=lambda: {NO_USE: {}, A_USE: {}})
    moment: int = 0
    #: Calls of active tools the servers must have seen, per qualified name.
    calls: dict[str, int] = field(default_factory=dict)
    evicted_ever: set[str] = field(default_factory=set)
    history: list[dict[str, Any]] = field(default_factory=list)

    def start(self, definitions: Sequence[Definition]) -> None:
        self.active = set(names(mcp_definitions(definitions, names(BASE))))
        missing = [r for r in REQUIRED if r not in self.active]
        if missing:
            raise fail(("POL-6.2",), "required tools are not active when the run opens", observed=missing)
        for uses in self.last_use.values():
            uses.update(dict.fromkeys(self.active, 0))

    def lru(self, reading: str) -> list[str]:
        """The evictable tools, least recently used first, ties by qualified name."""
        uses = self.last_use[reading]
        return sorted((n for n in self.active if n not in REQUIRED), key=lambda n: (uses[n], n))

    def used(self, names: Sequence[str], *, failed: bool = False) -> None:
        self.moment += 1
        for reading, uses in self.last_use.items():
            if not failed or reading == A_USE:
                uses.update(dict.fromkeys(names, self.moment))

    def fail(self, sentence: str, message: str, *, expected: object = None, observed: object = None) -> Exception:
        return fail(
            (sentence,), message, expected=expected, observed=observed, case=self.case | {"steps": self.history}
        )

    async def discover(self, r: Run, target: str) -> dict[str, Any]:
        sid = server_of(target)
        args = {"query": target, "server_ids": [sid], "limit": 4}
        before = set(self.active)
        candidates = [n for n in CANDIDATES if server_of(n) == sid and n not in before]
        server_room = CAPS[sid] - sum(server_of(n) == sid for n in before)
        result = await r.call(DISCOVERY, args)
        self.history.append({"discover": target, "result": structured(result)})
        if result["isError"]:
            raise self.fail("EVC-5.3", f"a discovery call for {target!r} failed", observed=result)
        now = set(names(mcp_definitions(await r.definitions(), names(BASE))))
        content = structured(result)
        activated = [str(t.get("name")) for t in content.get("activated", [])]
        evicted = [str(t.get("name")) for t in content.get("evicted") or []]
        left = before - now
        shown = sorted(set(evicted) & now)
        if shown:
            # Evicted from the gate but not from the definitions, or not evicted at all: the gate tells.
            probe = await r.call(shown[0], {})
            if probe["isError"]:
                raise self.fail(
                    "EVC-2.1",
                    f"{shown[0]!r}, evicted (the gate refuses it), is still in the definitions",
                    observed=shown,
                )
            raise self.fail(
                "EVC-4.1" if left else "EVC-4.3",
                f"the discovery result names {shown[0]!r} as evicted, but it is still active and runs",
                observed=content,
            )
        # EVC-2.1 names the request beside the definitions: one made now carries no tool that left them.
        ghosts = sorted(set(names(mcp_definitions(await r.request(), names(BASE)))) & left)
        if ghosts:
            raise self.fail(
                "EVC-2.1",
                f"{ghosts[0]!r}, evicted from the definitions, is still in the next request",
                expected=sorted(now),
                observed=ghosts,
            )
        if left & set(REQUIRED):
            raise self.fail("EVC-3.1", "a required tool was evicted", observed=sorted(left & set(REQUIRED)))
        self.check_budget(now)
        if sorted(evicted) != sorted(left):
            raise self.fail(
                "EVC-4.1",
                "the tools the discovery result says it evicted are not the tools that left the definitions",
                expected=sorted(left),
                observed=evicted,
            )
        if not activated and evicted:
            raise self.fail("EVC-1.3", "a discovery call that activated nothing evicted tools", observed=evicted)
        needed = max(0, len(activated) - (CAPACITY - len(before)))
        if (needed == 0 and evicted) or len(evicted) < needed:
            raise self.fail(
                "EVC-1.2",
                f"a call that activated {len(activated)} tools with room for {CAPACITY - len(before)} "
                f"evicted {len(evicted)}",
                expected=f"{needed} evicted" if needed == 0 else f"at least {needed} evicted",
                observed=evicted,
            )
        self.check_order(evicted)
        text = result_text(result)
        unnamed = [n for n in evicted if not named_in(n, text)]
        if unnamed:
            raise self.fail(
                "EVC-4.2", "the text of the discovery result does not name every evicted tool", observed=text
            )
        # DSC-6.4 holds in a run with eviction too: saying what left does not replace saying what came.
        unsaid = [n for n in activated if not named_in(n, text)]
        if unsaid:
            raise self.fail(
                "DSC-6.4",
                "the text of a discovery result does not name every tool the call activated",
                expected=activated,
                observed={"not named": unsaid, "text": text},
            )
        if target not in before and candidates and server_room >= len(candidates) and target not in activated:
            sentence = "EVC-5.1" if target in self.evicted_ever else "EVC-5.3"
            raise self.fail(
                sentence,
                f"discovery scoped to {sid!r} with the query {target!r} did not activate it with the capacity used up",
                expected=target,
                observed=content,
            )
        self.active = now
        self.used(activated)
        for uses in self.last_use.values():
            for name in evicted:
                uses.pop(name, None)
        self.evicted_ever |= left
        return content

    def check_budget(self, now: set[str]) -> None:
        if len(now) > CAPACITY:
            raise self.fail(
                "EVC-1.1",
                f"{len(now)} MCP tools are active, past the dynamic capacity of {CAPACITY}",
                observed=sorted(now),
            )
        for sid, cap in CAPS.items():
            count = sum(server_of(n) == sid for n in now)
            if count > cap:
                raise self.fail("EVC-5.2", f"server {sid!r} has {count} active tools, over its maxActiveTools of {cap}")

    def check_order(self, evicted: list[str]) -> None:
        """Hold the evictions to each reading of ID-19 still open; fail when none is left."""
        findings = {reading: self.out_of_order(reading, evicted) for reading in self.last_use}
        kept = {reading: uses for reading, uses in self.last_use.items() if findings[reading] is None}
        if not kept:
            raise next(f for f in findings.values() if f is not None)
        self.last_use = kept

    def out_of_order(self, reading: str, evicted: list[str]) -> Exception | None:
        uses, lru = self.last_use[reading], self.lru(reading)
        chosen = set(evicted)
        kept = [n for n in lru if n not in chosen]
        # The reading matters to the message once a failed call set the two apart, or the run chose one.
        why = f" ({reading})" if len(self.last_use) == 1 or self.readings_differ() else ""
        for name in evicted:
            older = [k for k in kept if uses[k] < uses[name]]
            if older:
                return self.fail(
                    "EVC-3.2",
                    f"{name!r} was evicted while {older[0]!r}, used less recently, stayed{why}",
                    expected=lru[: len(evicted)],
                    observed=evicted,
                )
            tied = [k for k in kept if uses[k] == uses[name] and k < name]
            if tied:
                return self.fail(
                    "EVC-3.3",
                    f"{name!r} was evicted before {tied[0]!r}, last used at the same moment and first by "
                    f"qualified name{why}",
                    expected=lru[: len(evicted)],
                    observed=evicted,
                )
        return None

    def readings_differ(self) -> bool:
        uses = list(self.last_use.values())
        return any(u != uses[0] for u in uses[1:])

    async def call(self, r: Run, name: str, *, failing: bool = False) -> None:
        result = await r.call(name, FAILING if failing else {})
        self.history.append({"fail" if failing else "call": name, "isError": result["isError"]})
        if name in self.active:
            if result["isError"] and not failing:
                raise self.fail("EVC-2.2", f"the active tool {name!r} did not run", observed=result)
            self.calls[name] = self.calls.get(name, 0) + 1
            self.used([name], failed=bool(result["isError"]))
        elif not result["isError"]:
            sentence = "EVC-2.2" if name in self.evicted_ever else "GATE-1.1"
            raise self.fail(sentence, f"a call to {name!r}, which is not active, was not refused", observed=result)

    def check_ledger(self, fleet: Fleet) -> None:
        reached: dict[str, int] = {}
        for event in fleet.ledger().calls():
            qualified = f"{event['server']}__{event['name']}"
            reached[qualified] = reached.get(qualified, 0) + 1
        extra = {n: c for n, c in reached.items() if c > self.calls.get(n, 0)}
        if extra:
            raise self.fail(
                "EVC-2.2",
                "calls of tools that were not active reached their servers",
                expected=self.calls,
                observed=portable(fleet.ledger().calls()),
            )


Step = tuple[str, str]
steps = st.lists(
    st.tuples(st.sampled_from(("discover", "discover", "call", "fail")), st.sampled_from(CANDIDATES)), max_size=40
)
FILL = [("discover", f"{sid}__a") for sid in ROLLING[:4]] + [("discover", "pin__spare")]


async def play(sut: Sut, fleet: Fleet, walk: Sequence[Step]) -> Oracle:
    """Open a run with eviction on ``fleet`` and take ``walk``, checking every step."""
    oracle = Oracle(fleet.describe() | {"open": {"eviction": "lru", "baseTools": len(BASE)}})
    async with sut.open(eviction_params(fleet)) as r:
        oracle.start(await r.definitions())
        for kind, name in walk:
            if kind == "discover":
                await oracle.discover(r, name)
            else:
                await oracle.call(r, name, failing=kind == "fail")
        request = await r.request()
        if len(request) > 112:
            raise oracle.fail("EVC-1.1", f"a request of a run with eviction carries {len(request)} definitions")
    oracle.check_ledger(fleet)
    return oracle


# The walks are judged by the one oracle, which checks every one of these sentences at each step,
# and the core sentences that hold in a run with eviction as in any other: the required tools of
# the first round (POL-6.2) and the activated tools named in a result's text (DSC-6.4).
ORACLE_SENTENCES = (
    *("EVC-1.1", "EVC-1.2", "EVC-1.3", "EVC-2.1", "EVC-2.2", "EVC-3.1", "EVC-3.2", "EVC-3.3"),
    *("EVC-4.1", "EVC-4.2", "EVC-4.3", "EVC-5.1", "EVC-5.2", "EVC-5.3", "POL-6.2", "DSC-6.4"),
)


@clause(*ORACLE_SENTENCES)
@examples(6)
@given(steps)
@example(walk=[("discover", "s4__a"), ("call", "s0__b"), ("discover", "s0__a"), ("discover", "s5__a")])
def test_a_run_with_eviction_rolls_its_active_set_as_the_oracle_says(
    sut: Sut, fleets: Fleets, walk: list[Step]
) -> None:
    """Whatever the discovery calls and the calls of tools, each step keeps the budgets, evicts
    what the oracle predicts (or more, least recently used first), says so, and the gate and the
    definitions follow; at the end no call of a tool that was not active reached its server."""
    with fleets.serve(SPEC, POLICIES) as fleet:
        run(play(sut, fleet, [*FILL, *walk]))


@clause(*ORACLE_SENTENCES)
def test_the_least_recently_used_goes_first_and_comes_back_when_found_again(sut: Sut, fleets: Fleets) -> None:
    """Four servers' tools and one more fill the run; a call keeps a tool, a failed call may; the
    next discovery calls evict the others by last use, ties by qualified name; an evicted tool
    is refused, and found again; a call that activates nothing evicts nothing; a server's cap
    holds."""
    walk: list[Step] = [
        ("call", "s1__a"),  # used: the other tools of s1 go before it
        ("fail", "s0__c"),  # a use or not as the host reads ID-19: s0__c or s1__c goes next
        ("discover", "s4__a"),
        ("call", "s0__b"),  # evicted by now: refused, and never reaches its server
        ("discover", "s3__a"),  # s3 has no candidate left: nothing activated, nothing evicted
        ("discover", "s0__a"),  # evicted when pin__spare came: found again
        ("call", "s0__a"),
        ("discover", "s5__a"),  # at most 2 of s5, its maxActiveTools
    ]
    with fleets.serve(SPEC, POLICIES) as fleet:
        oracle = run(play(sut, fleet, [*FILL, *walk]))
    if not oracle.evicted_ever:
        raise oracle.fail("EVC-5.3", "a run filled past its dynamic capacity evicted nothing")


@clause(*ORACLE_SENTENCES)
def test_a_servers_room_comes_back_with_each_of_its_tools_evicted_and_no_more(sut: Sut, fleets: Fleets) -> None:
    """Two servers with a cap of 2 are found, rolled out by later calls and found again: ``s5``,
    four tools, must stay within its cap (EVC-5.2), and ``duo``, two tools, once both are
    evicted has room for both again (EVC-5.1 by DSC-5.8), one at a time."""
    churn: list[Step] = [("discover", f"{sid}__a") for sid in (*ROLLING[:5], *ROLLING[:5])]
    walk: list[Step] = [
        *FILL,
        ("discover", f"{DUO}__x"),
        ("discover", f"{CAPPED}__a"),
        *churn,
        ("discover", f"{CAPPED}__a"),
        ("discover", f"{DUO}__x"),
        ("discover", f"{DUO}__y"),
    ]
    with fleets.serve(SPEC, POLICIES) as fleet:
        oracle = run(play(sut, fleet, walk))
    if {f"{DUO}__x", f"{DUO}__y", f"{CAPPED}__a"} - oracle.evicted_ever:
        # The oracle held every eviction to last use: these were never evicted because the run
        # never needed the room (a call may activate fewer tools than it could, DSC-5.6).
        nothing_to_check("the walk's discovery calls never needed the room of duo's and s5's tools")


@clause("EVC-3.4")
def test_the_same_run_given_the_same_calls_evicts_the_same_tools(sut: Sut, fleets: Fleets) -> None:
    walk: list[Step] = [*FILL, ("call", "s2__c"), ("discover", "s4__a"), ("discover", "s5__a"), ("discover", "s0__a")]

    async def evictions_of(fleet: Fleet) -> list[Any]:
        said = []
        async with sut.open(eviction_params(fleet)) as r:
            for kind, name in walk:
                if kind == "call":
                    await r.call(name, {})
                else:
                    result = await r.call(DISCOVERY, {"query": name, "server_ids": [server_of(name)], "limit": 4})
                    said.append(structured(result).get("evicted"))
        return said

    evictions = []
    for _ in range(2):
        with fleets.serve(SPEC, POLICIES) as fleet:
            evictions.append(run(evictions_of(fleet)))
    if evictions[0] != evictions[1]:
        raise fail(
            ("EVC-3.4",),
            "two runs given the same calls evicted different tools",
            expected=evictions[0],
            observed=evictions[1],
            case={"steps": walk},
        )


#: How a run that must only grow is opened, and why it must only grow.
_GROWING: dict[str, tuple[Callable[[Fleet], OpenParams], str]] = {
    "without-eviction": (_growing_params, "opened without eviction"),
    "asking-a-host-that-does-not-claim-it": (eviction_params, "it asked for eviction of a host that does not claim it"),
}


@clause("DEF-3.1")
@pytest.mark.parametrize("opened", sorted(_GROWING))
def test_a_run_that_must_only_grow_loses_no_active_tool_past_the_dynamic_capacity(
    sut: Sut, fleets: Fleets, opened: str
) -> None:
    """P37: a run opened without ``eviction`` only grows, also on a host that evicts in the
    runs that ask for it; and a host that does not claim eviction ignores the field. Either
    way, discovery past the dynamic capacity activates what fits, and no active tool ever
    leaves the definitions."""
    claims = sut.implementation is not None and "eviction" in sut.implementation.profiles
    if opened == "without-eviction" and not claims:
        nothing_to_check("the host does not claim eviction: every run of it only grows, which DEF-3's checks cover")
    if opened != "without-eviction" and (claims or sut.implementation is None):
        nothing_to_check("the host claims eviction (or names no profiles): its runs that ask for it roll")
    walk: list[Step] = [*FILL, ("discover", "s4__a"), ("discover", "s5__a"), ("discover", "s0__b")]
    params, why = _GROWING[opened]

    async def body(fleet: Fleet) -> None:
        opening = params(fleet)
        asked = {"eviction": opening.get("eviction", "left out"), "baseTools": len(BASE)}
        async with sut.open(opening) as r:
            active = set(names(mcp_definitions(await r.definitions(), names(BASE))))
            for step, (_, name) in enumerate(walk):
                await r.call(DISCOVERY, {"query": name, "server_ids": [server_of(name)], "limit": 4})
                now = set(names(mcp_definitions(await r.definitions(), names(BASE))))
                if active - now:
                    raise fail(
                        ("DEF-3.1",),
                        f"a run that must only grow ({why}) lost active tools",
                        expected=sorted(active),
                        observed={"lost": sorted(active - now), "after discovering": walk[: step + 1]},
                        case=fleet.describe() | {"open": asked},
                    )
                active = now

    with fleets.serve(SPEC, POLICIES) as fleet:
        run(body(fleet))
