"""Ranking (RNK-*, the `lexical` profile), observed through behaviour.

With 95 base tools the first round has no room, so a discovery call with ``limit`` 1
activates exactly the top-ranked candidate of the first-round scorer (DSC-10.1): small
explicit catalogs pin one rule each. Then every case of ``vectors/lexical.json`` whose
catalog a driver can serve: its complete discovery order, one tool per ``limit`` 1 call,
and, where the first round shows more than discovery does, the set a first round of a
chosen capacity takes. :mod:`conformance.suite._vectors` plans the runs; the catalog is
served once for the module. A vector finding names the vector and the run that observed
it, and cites SEL-5 or DSC-10 for the part that differed, the clauses the vector is about,
and the clauses of whatever sets the expected tool and the observed one apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from conformance import Run, Sut, clause
from conformance._clauses import CLAUSES
from conformance._errors import Nonconformance
from conformance.suite._fleets import Fleets
from conformance.suite._vectors import (
    DiscoveryCheck,
    FirstRoundCheck,
    Probe,
    VectorCase,
    VectorGroup,
    load_vectors,
    plan,
)
from conformance.suite._wire import DISCOVERY, activated, base_tools, fail, open_params, run
from mock_servers import FleetSpec, ServerSpec, ToolSpec

SCHEMA: dict[str, Any] = {"type": "object"}


def tool(name: str, description: str = "Thing.", read_only: bool | None = None) -> ToolSpec:
    annotations = None if read_only is None else {"readOnlyHint": read_only}
    return ToolSpec(name=name, description=description, input_schema=SCHEMA, annotations=annotations)


def top(
    sut: Sut, fleets: Fleets, servers: dict[str, list[ToolSpec]], query: str, limit: int = 1
) -> tuple[list[str], dict[str, Any]]:
    """What one discovery call activates on a run whose first round is empty."""
    spec = FleetSpec(servers=tuple(ServerSpec(id=sid, tool_count=0, tools=tuple(ts)) for sid, ts in servers.items()))
    base = base_tools(95)
    with fleets.serve(spec) as served:

        async def body() -> list[str]:
            async with sut.open(open_params(served.servers, base)) as r:
                return activated(await r.call(DISCOVERY, {"query": query, "limit": limit}))

        return run(body()), served.describe() | {"query": query, "limit": limit, "baseTools": 95}


CASES = [
    ("RNK-8.1", {"s": [tool("beta_thing"), tool("alpha_thing")]}, "thing", ["s__alpha_thing"]),
    (
        "RNK-2.1",
        {"s": [tool("a_thing", "Thing."), tool("b_thing", "Thing with widget.")]},
        "widget thing",
        ["s__b_thing"],
    ),
    ("RNK-1.1", {"s": [tool("a_thing", "Thing."), tool("b_thing", "THING-Widget.")]}, "widget", ["s__b_thing"]),
    ("RNK-3.1", {"alpha": [tool("x_thing")], "beta": [tool("x_thing")]}, "beta thing", ["beta__x_thing"]),
    ("RNK-4.1", {"s": [tool("a_thing"), tool("b_thing", read_only=True)]}, "thing", ["s__b_thing"]),
    ("RNK-5.2", {"s": [tool("a_thing"), tool("b_pull_request_thing")]}, "pr thing", ["s__b_pull_request_thing"]),
    ("RNK-5.1", {"s": [tool("a_thing"), tool("b_issue_thing")]}, "工单 thing", ["s__b_issue_thing"]),
    ("RNK-6.3", {"s": [tool("a_create_thing"), tool("z_view_thing")]}, "list thing", ["s__z_view_thing"]),
    ("RNK-6.5", {"s": [tool("a_create_thing"), tool("z_view_thing")]}, "thing", ["s__a_create_thing"]),
    (
        "RNK-7.2",
        {"s": [tool("a_pull_request", "Fetch."), tool("b_project", "Fetch.")]},
        "project fetch",
        ["s__b_project"],
    ),
    ("RNK-8.1", {"b": [tool("thing")], "a": [tool("thing")]}, "thing", ["a__thing"]),
    # A digit, `-` or `_` in a server id changes nothing: a letter or digit beside it still
    # keeps the id from naming its server.
    ("RNK-7.4", {"s1": [tool("thing")], "s2": [tool("thing")]}, "thing xs2", ["s1__thing"]),
    ("RNK-7.4", {"a": [tool("thing")], "my_db-2": [tool("thing")]}, "thing my_db-2b", ["a__thing"]),
    ("RNK-7.4", {"z": [tool("thing")], "my_db-2": [tool("thing")]}, "thing (my_db-2)", ["my_db-2__thing"]),
]


@pytest.mark.parametrize(
    ("sentence", "servers", "query", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give(
    sut: Sut, fleets: Fleets, sentence: str, servers: dict[str, list[ToolSpec]], query: str, expected: list[str]
) -> None:
    got, case = top(sut, fleets, servers, query)
    if got != expected:
        raise fail(
            (sentence,),
            "discovery's top candidate is not the one the lexical scores give",
            expected=expected,
            observed=got,
            case=case,
        )


test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give = clause(
    "DSC-10.1", *sorted({c[0] for c in CASES})
)(test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give)


# The lexical vectors ---------------------------------------------------------------------

GROUPS = tuple(group for group in load_vectors() if group.servable)
PROBES = [probe for group in GROUPS for probe in plan(group)]
CITED = ("RNK-1", "RNK-2", "RNK-3", "RNK-4", "RNK-5", "RNK-6", "RNK-7", "RNK-8", "SEL-5", "DSC-10")
# The complete orders enforce every sentence of these clauses.
CITED_SENTENCES = tuple(s.id for clause_id in CITED for s in CLAUSES[clause_id].sentences)
_SCHEMA = {"type": "object"}

Catalogs = Mapping[str, Mapping[str, Mapping[str, Any]]]


def _spec(group: VectorGroup) -> FleetSpec:
    servers = []
    for server_id in group.servers:
        tools = [tool for tool in group.tools if tool.server == server_id]
        # Only a raw server can send a readOnlyHint that is not a JSON boolean.
        raw = any(not isinstance((tool.annotations or {}).get("readOnlyHint", False), bool) for tool in tools)
        specs = tuple(
            ToolSpec(name=tool.name, description=tool.description, input_schema=_SCHEMA, annotations=tool.annotations)
            for tool in tools
        )
        servers.append(ServerSpec(id=server_id, tool_count=0, tools=specs, raw=raw))
    return FleetSpec(servers=tuple(servers))


@pytest.fixture(scope="module")
def catalogs(fleets: Fleets) -> Iterator[Catalogs]:
    """Every servable vector catalog, served once: group id -> server id -> wire server entry."""
    with contextlib.ExitStack() as stack:
        served = {group.id: stack.enter_context(fleets.serve(_spec(group))) for group in GROUPS}
        yield {group_id: {s["id"]: s for s in fleet.servers} for group_id, fleet in served.items()}


# The clauses behind each component of a score (lexical.json's field names). Server ids are
# triggers too (RNK-7.1, RNK-7.4).
_COMPONENT_CLAUSES = {
    "messageHits": ("RNK-1", "RNK-2"),
    "promptHits": ("RNK-1", "RNK-2"),
    "serverInMessage": ("RNK-3", "RNK-7"),
    "serverInPrompt": ("RNK-3", "RNK-7"),
    "readOnly": ("RNK-4",),
    "aliases": ("RNK-5", "RNK-7"),
    "intent": ("RNK-6", "RNK-7"),
}


def _shape(group: VectorGroup, name: str) -> int:
    """What read intent does to a tool (RNK-6: 8, -32, -24 or 0), read off a case of the
    group where it applies; 0 when no case has read intent."""
    for case in group.cases:
        if name in case.scores and any(score.get("intent") for score in case.scores.values()):
            return int(case.scores[name].get("intent", 0))
    return 0


def _clauses(
    kind: str, group: VectorGroup, case: VectorCase, expected: str | None, observed: str | None
) -> tuple[str, ...]:
    """What a finding names: the part that differed, the clauses the case is about, and what
    sets the expected tool and the observed one apart.

    That is the clauses of the components where their scores differ (where discovery stopped
    early or went on too long, the nonzero components of the one tool there is); RNK-8 when
    they score the same;
    RNK-6 when their names differ in read or write words, which only read intent may weigh
    (RNK-6.5); and RNK-4 when either has a readOnlyHint that is not a boolean.
    """
    found = [kind, *case.clauses]
    known = [name is None or name in case.scores for name in (expected, observed)]
    if all(known) and (expected, observed) != (None, None):
        a, b = (case.scores[name] if name is not None else {} for name in (expected, observed))
        found += [c for key, clauses in _COMPONENT_CLAUSES.items() if a.get(key) != b.get(key) for c in clauses]
        if expected is not None and observed is not None:
            if a["score"] == b["score"]:
                found.append("RNK-8")
            if _shape(group, expected) != _shape(group, observed):
                found.append("RNK-6")
    for name in (expected, observed):
        tool = group.tool(name) if name is not None else None
        hint = (tool.annotations or {}).get("readOnlyHint") if tool is not None else None
        if hint is not None and not isinstance(hint, bool):
            found.append("RNK-4")
    return tuple(c for c in dict.fromkeys(found) if c in CITED)


def _case(probe: Probe, vector: VectorCase) -> dict[str, Any]:
    """The vector, and the run that observed it (the vector catalog's servers, served as listed)."""
    return {
        "vector": vector.describe(),
        "run": {
            "servers": list(probe.servers),
            "baseTools": probe.base_tools,
            "userMessage": probe.user_message,
            "systemPrompt": probe.system_prompt,
            "pinnedTools": list(probe.pinned),
        },
    }


def _first_round(probe: Probe, check: FirstRoundCheck, active: set[str]) -> Nonconformance | None:
    if active == check.expected:
        return None
    vector = check.case
    missing = [name for name in vector.first_round if name in check.expected - active]
    # Names the vectors do not know (a mapped or made-up name) sort last.
    rank = {name: i for i, name in enumerate(vector.first_round)}
    extra = sorted(active - check.expected, key=lambda name: (rank.get(name, len(rank)), name))
    return fail(
        _clauses("SEL-5", probe.group, vector, missing[0] if missing else None, extra[0] if extra else None),
        f"a first round of capacity {check.capacity} did not take the best {check.capacity} tools "
        f"of the ranking that the lexical scores give for vector {vector.id} ({vector.description})",
        expected=sorted(check.expected),
        observed=sorted(active),
        case=_case(probe, vector) | {"missing": missing, "unexpected": extra},
    )


async def _discovery(r: Run, probe: Probe, check: DiscoveryCheck) -> None:
    vector = check.case
    steps: Sequence[str | None] = [*check.expected, *((None,) if check.complete else ())]
    seen: list[str] = []
    for position, want in enumerate(steps, start=check.start + 1):
        result = await r.call(DISCOVERY, {"query": vector.user_message, "limit": 1})
        structured = result.get("structuredContent") or {}
        activated = [item.get("name") for item in structured.get("activated", []) if isinstance(item, Mapping)]
        if result.get("isError") or len(activated) > 1:
            raise fail(
                ("DSC-5.7" if result.get("isError") else "DSC-5.1",),
                f"a discovery call with limit 1 for vector {vector.id} did not succeed with at most one tool",
                observed=result,
                case=_case(probe, vector),
            )
        got = activated[0] if activated else None
        if got == want:
            if got is not None:
                seen.append(got)
            continue
        what = f"tool {position} of the discovery order" if want is not None else "the end of the discovery order"
        raise fail(
            _clauses("DSC-10", probe.group, vector, want, got),
            f"{what} for vector {vector.id} ({vector.description}) is not the one the lexical scores give",
            expected=[*seen, want] if want is not None else [*seen, "nothing more"],
            observed=[*seen, got] if got is not None else [*seen, "nothing"],
            case=_case(probe, vector) | {"discoveryOrder": list(vector.discovery)},
        )


async def _observe(sut: Sut, probe: Probe, servers: list[dict[str, Any]]) -> None:
    base = base_tools(probe.base_tools)
    params = open_params(servers, base, probe.user_message, probe.system_prompt)
    async with sut.open(params) as r:
        skip = {tool["name"] for tool in base} | {DISCOVERY}
        active = {d["name"] for d in await r.definitions() if d["name"] not in skip}
        if probe.first_round is not None:
            finding = _first_round(probe, probe.first_round, active)
            if finding is not None:
                raise finding
        for check in probe.discoveries:
            await _discovery(r, probe, check)


@clause(*CITED_SENTENCES, "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", PROBES, ids=[probe.id for probe in PROBES])
def test_rankings_are_the_lexical_vectors(sut: Sut, catalogs: Catalogs, probe: Probe) -> None:
    policies = probe.policies()
    served = catalogs[probe.group.id]
    servers = [{**served[server_id], "policy": policies.get(server_id, {})} for server_id in probe.servers]
    run(_observe(sut, probe, servers))
