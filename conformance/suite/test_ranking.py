"""Ranking (RNK-*, the `lexical` profile), observed through behaviour.

With 95 base tools the first round has no room, so a discovery call with ``limit`` 1
activates exactly the top-ranked candidate of the first-round scorer (DSC-10.1): small
explicit catalogs pin one rule each. Then every case of ``vectors/lexical.json`` whose
catalog a driver can serve: its complete discovery order, one tool per ``limit`` 1 call,
and, where the first round shows more than discovery does, the set a first round of a
chosen capacity takes. :mod:`conformance.suite._vectors` plans the runs, and
:mod:`conformance.suite._probes` runs each once per pytest process (the ``vector_diagnosis``
fixture), serving the catalogs on first use.

A finding names the sentence that differs, not every sentence a vector touches: a case
that isolates a sentence is checked by that sentence's test, and its difference is blamed
on that sentence, unless a case isolating a sentence it assumes differs as well, which
accounts for it (:class:`~conformance.suite._vectors.Diagnosis`). The end-to-end cases,
which mix every term, are blamed on the isolated sentences found broken, or, when none
is, on every sentence that could explain the difference. Every test cites the sentences
its findings can name: its own, and those its cases assume.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from conformance import OutcomeError, Sut, clause
from conformance._errors import Inconclusive, Nonconformance
from conformance.suite._fleets import Fleets
from conformance.suite._preconditions import left_out_tools_activatable, nothing_to_check, precondition
from conformance.suite._probes import PROBES
from conformance.suite._vectors import Diagnosis, Mismatch, Outcome, Probe, Violation
from conformance.suite._wire import DISCOVERY, activated, base_tools, fail, open_params, run
from mock_servers import ChangeDocument, FleetSpec, ServerSpec, ToolSpec

SCHEMA: dict[str, Any] = {"type": "object"}

# The lexical vectors ---------------------------------------------------------------------


def isolating(clause_id: str) -> list[Any]:
    """The probes of the cases that isolate sentences of ``clause_id``, as parameters."""
    chosen = [probe for probe in PROBES if any(s.startswith(f"{clause_id}.") for s in probe.isolates)]
    return [pytest.param(probe, id=probe.id) for probe in chosen]


END_TO_END = [pytest.param(probe, id=probe.id) for probe in PROBES if not probe.isolates]


def _case(probe: Probe, found: Mismatch) -> dict[str, Any]:
    """The vector, and the run that observed it (the vector catalog's servers, served as listed)."""
    return {
        "vector": found.case.describe(),
        "run": {
            "servers": list(probe.servers),
            "baseTools": probe.base_tools,
            "userMessage": probe.user_message,
            "systemPrompt": probe.system_prompt,
            "pinnedTools": list(probe.pinned),
        },
    } | dict(found.detail)


def _finding(probe: Probe, found: Outcome, blamed: Sequence[str]) -> Nonconformance | Inconclusive:
    if isinstance(found, Violation):
        return fail(found.sentences, found.message, observed=found.observed, case={"probe": probe.id})
    vector = found.case
    own = vector.isolates or ()
    because = (
        f"; the cases that isolate {', '.join(blamed)} differ as well, which accounts for it"
        if own and tuple(blamed) != tuple(own)
        else ""
    )
    if found.kind == "SEL-5":
        capacity = found.detail.get("capacity")
        message = (
            f"a first round of capacity {capacity} did not take the best tools of the ranking that the "
            f"lexical scores give for vector {vector.id} ({vector.description}){because}"
        )
    else:
        message = (
            f"{found.detail.get('what', 'the discovery order')} for vector {vector.id} ({vector.description}) "
            f"is not the one the lexical scores give{because}"
        )
    return fail(
        blamed,
        message,
        expected=found.detail.get("expected"),
        observed=found.detail.get("observed"),
        case=_case(probe, found),
    )


def check_probe(diagnosis: Diagnosis, probe: Probe) -> None:
    try:
        found = diagnosis.outcome(probe)
    except OutcomeError:
        # A refused run may come of what earlier runs left behind, as a difference may.
        diagnosis.relied_on(probe)
        raise
    if found is not None:
        if not isinstance(found, Violation):
            diagnosis.relied_on(probe)
        raise _finding(probe, found, diagnosis.blame(found))


# Each test cites its clause's sentences, the sentences its cases assume (a finding names one
# when a case isolating it differs too), and what a probe can see broken on the way:
# discovery activating a tool that was active (DSC-4.2), more than its limit (DSC-5.1), or
# an error result (DSC-5.7).


@clause("RNK-1.1", "RNK-1.2", "RNK-1.3", "DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-1"))
def test_words_are_the_casefolded_runs_of_letters_and_digits_of_the_name_and_description(
    vector_diagnosis: Diagnosis, probe: Probe
) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-2.1", "RNK-2.2", "RNK-2.3", "RNK-1.1", "RNK-1.3", "RNK-6.6", "SEL-5.1", "DSC-10.2")
@clause("DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-2"))
def test_a_word_scores_12_from_the_message_and_2_from_the_prompt_once_per_text(
    vector_diagnosis: Diagnosis, probe: Probe
) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-3.1", "RNK-3.2", "RNK-3.3", "RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-6.6", "SEL-5.1")
@clause("DSC-10.1", "DSC-10.2", "DSC-10.3", "DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-3"))
def test_a_server_named_scores_16_from_the_message_and_3_from_the_prompt(
    vector_diagnosis: Diagnosis, probe: Probe
) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-4.1", "RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-6.6", "SEL-5.1", "DSC-10.2")
@clause("DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-4"))
def test_read_only_scores_3_for_the_json_value_true_alone(vector_diagnosis: Diagnosis, probe: Probe) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-5.1", "RNK-5.2", "RNK-5.3", "RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-4.1", "RNK-6.6")
@clause("SEL-5.1")
@clause("DSC-10.1", "DSC-10.2", "DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-5"))
def test_each_alias_that_fires_adds_12_to_the_tools_its_target_names(vector_diagnosis: Diagnosis, probe: Probe) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-6.1", "RNK-6.2", "RNK-6.3", "RNK-6.4", "RNK-6.5", "RNK-6.6")
@clause("RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-4.1", "SEL-5.1", "DSC-10.2")
@clause("DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-6"))
def test_read_intent_lifts_read_verbs_by_8_and_sinks_write_verbs_by_32(
    vector_diagnosis: Diagnosis, probe: Probe
) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-7.1", "RNK-7.2", "RNK-7.3", "RNK-7.4", "RNK-1.1", "RNK-3.3", "DSC-10.2")
@clause("DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-7"))
def test_triggers_fire_from_the_message_as_whole_words_or_substrings(vector_diagnosis: Diagnosis, probe: Probe) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-8.1", "DSC-10.3", "DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("RNK-8"))
def test_equal_scores_are_ordered_by_qualified_name_in_code_point_order(
    vector_diagnosis: Diagnosis, probe: Probe
) -> None:
    check_probe(vector_diagnosis, probe)


@clause("SEL-5.1", "RNK-1.1", "RNK-1.3", "RNK-6.6", "DSC-10.2", "DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("SEL-5"))
def test_the_first_round_walks_one_ranking_of_every_server_by_the_message_and_prompt(
    vector_diagnosis: Diagnosis, probe: Probe
) -> None:
    check_probe(vector_diagnosis, probe)


@clause("DSC-10.1", "DSC-10.2", "DSC-10.3", "RNK-1.1", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-6.6", "SEL-5.1")
@clause("DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", isolating("DSC-10"))
def test_discovery_ranks_with_the_prompt_and_activates_only_relevant_tools_best_first(
    vector_diagnosis: Diagnosis, probe: Probe
) -> None:
    check_probe(vector_diagnosis, probe)


@clause("RNK-1.1", "RNK-1.2", "RNK-1.3", "RNK-2.1", "RNK-2.2", "RNK-2.3", "RNK-3.1", "RNK-3.2", "RNK-3.3")
@clause("RNK-4.1", "RNK-5.1", "RNK-5.2", "RNK-5.3", "RNK-6.1", "RNK-6.2", "RNK-6.3", "RNK-6.4", "RNK-6.5")
@clause("RNK-6.6", "RNK-7.1", "RNK-7.2", "RNK-7.3", "RNK-7.4", "RNK-8.1", "SEL-5.1", "SEL-5.2")
@clause("DSC-10.1", "DSC-10.2", "DSC-10.3", "DSC-4.2", "DSC-5.1", "DSC-5.7")
@pytest.mark.parametrize("probe", END_TO_END)
def test_rankings_are_the_lexical_vectors(vector_diagnosis: Diagnosis, probe: Probe) -> None:
    check_probe(vector_diagnosis, probe)


#: The test that checks each probe: the test of the clause its cases isolate, or the end-to-end one.
_CHECKS = {
    "RNK-1": test_words_are_the_casefolded_runs_of_letters_and_digits_of_the_name_and_description,
    "RNK-2": test_a_word_scores_12_from_the_message_and_2_from_the_prompt_once_per_text,
    "RNK-3": test_a_server_named_scores_16_from_the_message_and_3_from_the_prompt,
    "RNK-4": test_read_only_scores_3_for_the_json_value_true_alone,
    "RNK-5": test_each_alias_that_fires_adds_12_to_the_tools_its_target_names,
    "RNK-6": test_read_intent_lifts_read_verbs_by_8_and_sinks_write_verbs_by_32,
    "RNK-7": test_triggers_fire_from_the_message_as_whole_words_or_substrings,
    "RNK-8": test_equal_scores_are_ordered_by_qualified_name_in_code_point_order,
    "SEL-5": test_the_first_round_walks_one_ranking_of_every_server_by_the_message_and_prompt,
    "DSC-10": test_discovery_ranks_with_the_prompt_and_activates_only_relevant_tools_best_first,
}


def check_id(probe: Probe) -> str:
    """The id of the test that checks ``probe``, as ``certify --test`` takes it."""
    check = _CHECKS[probe.isolates[0].split(".")[0]] if probe.isolates else test_rankings_are_the_lexical_vectors
    return f"test_ranking.py::{check.__name__}[{probe.id}]"


# One rule per small catalog ------------------------------------------------------------------


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


def rule(sentence: str, servers: dict[str, list[ToolSpec]], query: str, expected: str, *assumes: str, name: str) -> Any:
    """A row of :func:`test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give`:
    ``expected`` is the top candidate for ``query`` by ``sentence``, given the sentences of
    ``assumes`` (and those their isolating cases assume in turn), which the vectors isolate."""
    return pytest.param(sentence, servers, query, expected, assumes, marks=clause(sentence, *assumes), id=name)


# Each rule's expected tool is not the first by name, so a discovery that takes its
# candidates in name order (DSC-10.3) misses it too: every rule assumes DSC-10.3, and the
# words its vector cases assume (RNK-1.1, RNK-1.3).
RULES = [
    rule(
        "RNK-8.1",
        {"s": [tool("beta_thing"), tool("alpha_thing")]},
        "thing",
        "s__alpha_thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="names",
    ),
    rule(
        "RNK-2.1",
        {"s": [tool("b_thing", "Thing with widget."), tool("a_thing", "Thing.")]},
        "widget thing",
        "s__b_thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="two-hits",
    ),
    rule(
        "RNK-1.1",
        {"s": [tool("b_thing", "THING-Widget."), tool("a_thing", "Thing.")]},
        "widget",
        "s__b_thing",
        *("DSC-10.3", "RNK-1.3"),
        name="casefolded-words",
    ),
    rule(
        "RNK-3.1",
        {"beta": [tool("x_thing")], "alpha": [tool("x_thing")]},
        "beta thing",
        "beta__x_thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="named",
    ),
    rule(
        "RNK-4.1",
        {"s": [tool("b_thing", read_only=True), tool("a_thing")]},
        "thing",
        "s__b_thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="read-only",
    ),
    rule(
        "RNK-5.2",
        {"s": [tool("b_pull_request_thing"), tool("a_thing")]},
        "pr thing",
        "s__b_pull_request_thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="alias",
    ),
    rule(
        "RNK-5.1",
        {"s": [tool("b_issue_thing"), tool("a_thing")]},
        "工单 thing",
        "s__b_issue_thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="work-order",
    ),
    rule(
        "RNK-6.3",
        {"s": [tool("z_view_thing"), tool("a_create_thing")]},
        "list thing",
        "s__z_view_thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="read-intent",
    ),
    rule(
        "RNK-6.5",
        {"s": [tool("a_create_thing"), tool("z_view_thing")]},
        "thing",
        "s__a_create_thing",
        *("RNK-8.1", "DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="no-read-intent",
    ),
    rule(
        "RNK-7.2",
        {"s": [tool("b_project", "Fetch."), tool("a_pull_request", "Fetch.")]},
        "project fetch",
        "s__b_project",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="pr-in-project",
    ),
    rule(
        "RNK-8.1",
        {"b": [tool("thing")], "a": [tool("thing")]},
        "thing",
        "a__thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="servers",
    ),
    # A digit, `-` or `_` in a server id changes nothing: a letter or digit beside it still
    # keeps the id from naming its server.
    rule(
        "RNK-7.4",
        {"s1": [tool("thing")], "s2": [tool("thing")]},
        "thing xs2",
        "s1__thing",
        *("RNK-3.3", "RNK-8.1", "DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="xs2",
    ),
    rule(
        "RNK-7.4",
        {"a": [tool("thing")], "my_db-2": [tool("thing")]},
        "thing my_db-2b",
        "a__thing",
        *("RNK-3.3", "RNK-8.1", "DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="my_db-2b",
    ),
    rule(
        "RNK-7.4",
        {"my_db-2": [tool("thing")], "a": [tool("thing")]},
        "thing (my_db-2)",
        "my_db-2__thing",
        *("DSC-10.3", "RNK-1.1", "RNK-1.3"),
        name="(my_db-2)",
    ),
]


@pytest.mark.parametrize(("sentence", "servers", "query", "expected", "assumes"), RULES)
def test_the_top_discovery_candidate_is_the_one_the_lexical_scores_give(
    sut: Sut,
    fleets: Fleets,
    vector_diagnosis: Diagnosis,
    sentence: str,
    servers: dict[str, list[ToolSpec]],
    query: str,
    expected: str,
    assumes: tuple[str, ...],
) -> None:
    got, case = top(sut, fleets, servers, query)
    if got != [expected]:
        # Discovery finds a tool the first round left out at all (CAT-1.3).
        if not got:
            left_out_tools_activatable(sut, fleets)
        # A sentence the rule relies on, found broken by the vectors that isolate it, accounts for it.
        explained = vector_diagnosis.accounting(assumes, sut.cited)
        raise fail(
            explained or (sentence,),
            "discovery's top candidate is not the one the lexical scores give"
            + (f"; the vectors find {', '.join(explained)} broken, which accounts for it" if explained else ""),
            expected=[expected],
            observed=got,
            case=case,
        )


_AFTER_REFRESH = ("DSC-10.3", "RNK-1.1", "RNK-1.3")


@clause("RNK-8.1", *_AFTER_REFRESH)
def test_equal_scores_are_in_code_point_order_also_in_a_catalog_a_refresh_built(
    sut: Sut, fleets: Fleets, vector_diagnosis: Diagnosis
) -> None:
    """Every clause holds of the catalog as the last refresh left it: the tool a refresh adds
    comes after one it ties with in its server's listing, and before it by name."""
    if sut.implementation is not None and "refresh" not in sut.implementation.profiles:
        nothing_to_check("the host does not claim refresh: a run's catalog is the one it opened with")
    server = ServerSpec(id="s", tool_count=0, tools=(tool("beta_thing"),), list_changed=True)
    with fleets.serve(FleetSpec(servers=(server,))) as served:
        case = served.describe() | {"refresh": True, "add": "alpha_thing", "query": "thing", "limit": 1}

        async def body() -> list[str]:
            async with sut.open({**open_params(served.servers, base_tools(95)), "refresh": True}) as r:
                change: ChangeDocument = {
                    "add": [{"name": "alpha_thing", "description": "Thing.", "input_schema": SCHEMA}]
                }
                listed = await served.relisted("s", await served.change_tools("s", change))
                precondition("RFR-1.1", listed == "complete", "the server was not listed again after its change")
                return activated(await r.call(DISCOVERY, {"query": "thing", "limit": 1}))

        got = run(body())
    if got != ["s__alpha_thing"]:
        explained = vector_diagnosis.accounting(_AFTER_REFRESH, sut.cited)
        raise fail(
            explained or ("RNK-8.1",),
            "after a refresh, discovery's top candidate among equal scores is not the first by qualified name"
            + (f"; the vectors find {', '.join(explained)} broken, which accounts for it" if explained else ""),
            expected=["s__alpha_thing"],
            observed=got,
            case=case,
        )
