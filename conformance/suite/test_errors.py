"""Errors and cleanup (ERR-*): invalid configuration, colliding names, unreachable and hanging
servers, malformed tool definitions, connections closed on failure and on close (checked
with stdio servers, whose processes the ledger sees), and what error messages say."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, cast

import pytest

from conformance import OutcomeError, Sut, SutMisbehaved, clause
from conformance.suite._fleets import Fleet, Fleets
from conformance.suite._wire import fail, names, open_params, portable, run
from mock_servers import Faults, FleetSpec, ServerSpec, ToolSpec


def _one_server(fleets: Fleets) -> AbstractContextManager[Fleet]:
    return fleets.serve(FleetSpec(servers=(ServerSpec(id="s0", tool_count=4),), seed=0))


BAD_CONFIG = [
    ("ERR-3.1", "id missing", lambda s: {k: v for k, v in s.items() if k != "id"}),
    ("ERR-3.1", "id not a string", lambda s: s | {"id": 7}),
    ("ERR-3.1", "id empty", lambda s: s | {"id": ""}),
    ("ERR-3.1", "id with a space", lambda s: s | {"id": "s 0"}),
    ("ERR-3.1", "id with a dot", lambda s: s | {"id": "s.0"}),
    ("ERR-3.1", "id non-ASCII", lambda s: s | {"id": "sé"}),
    ("ERR-3.1", "id with __", lambda s: s | {"id": "s__0"}),
    ("ERR-3.3", "maxActiveTools 97", lambda s: s | {"policy": {"maxActiveTools": 97}}),
    ("ERR-3.3", "maxActiveTools -1", lambda s: s | {"policy": {"maxActiveTools": -1}}),
    ("ERR-3.3", "maxActiveTools string", lambda s: s | {"policy": {"maxActiveTools": "5"}}),
    ("ERR-3.3", "maxActiveTools float", lambda s: s | {"policy": {"maxActiveTools": 2.5}}),
    ("ERR-3.3", "maxActiveTools boolean", lambda s: s | {"policy": {"maxActiveTools": True}}),
    ("ERR-3.4", "unknown mode", lambda s: s | {"policy": {"mode": "some"}}),
    ("ERR-3.4", "unknown sideEffects", lambda s: s | {"policy": {"sideEffects": "none"}}),
    ("ERR-3.5", "allowedTools a string", lambda s: s | {"policy": {"allowedTools": "a"}}),
    ("ERR-3.5", "deniedTools with a number", lambda s: s | {"policy": {"deniedTools": [1]}}),
    ("ERR-3.5", "pinnedTools an object", lambda s: s | {"policy": {"pinnedTools": {"a": 1}}}),
]


@clause("ERR-3.1", "ERR-3.3", "ERR-3.4", "ERR-3.5")
@pytest.mark.parametrize(("sentence", "what", "mutate"), BAD_CONFIG, ids=[b[1] for b in BAD_CONFIG])
def test_invalid_configuration_is_a_config_error(
    sut: Sut, fleets: Fleets, sentence: str, what: str, mutate: Any
) -> None:
    with _one_server(fleets) as served:
        server = mutate(dict(served.servers[0]))
        params = open_params([server])

        async def body() -> None:
            try:
                async with sut.open(params) as r:
                    got = names(await r.definitions())
            except OutcomeError as exc:
                if exc.kind != "config_error":
                    raise fail(
                        (sentence,),
                        f"{what}: wrong error kind",
                        expected="config_error",
                        observed=str(exc),
                        case=params,
                    ) from None
                return
            raise fail((sentence,), f"{what}: the run opened", expected="config_error", observed=got, case=params)

        run(body())


@clause("ERR-3.3")
@pytest.mark.parametrize("max_active", [0, 1, 95, 96])
def test_max_active_tools_at_the_bounds_is_valid(sut: Sut, fleets: Fleets, max_active: int) -> None:
    with _one_server(fleets) as served:
        params = open_params(served.with_policies({"s0": {"maxActiveTools": max_active}}))

        async def body() -> None:
            try:
                async with sut.open(params) as r:
                    await r.definitions()
            except OutcomeError as exc:
                raise fail(
                    ("ERR-3.3",),
                    f"maxActiveTools {max_active} was refused",
                    expected="an open run",
                    observed=str(exc),
                    case=params,
                ) from None

        run(body())


@clause("ERR-3.2")
def test_repeated_server_id_is_a_config_error(sut: Sut, fleets: Fleets) -> None:
    with _one_server(fleets) as served:
        params = open_params([served.servers[0], served.servers[0]])

        async def body() -> None:
            try:
                await sut.open(params)
            except OutcomeError as exc:
                if exc.kind == "config_error":
                    return
                raise fail(
                    ("ERR-3.2",), "wrong error kind", expected="config_error", observed=str(exc), case=params
                ) from None
            raise fail(("ERR-3.2",), "a repeated server id was accepted", expected="config_error", case=params)

        run(body())


@clause("ERR-4.1", "ERR-4.2")
@pytest.mark.parametrize("kind", ["qualified_collision", "duplicate_listing"])
def test_colliding_qualified_names_are_a_config_error(sut: Sut, fleets: Fleets, kind: str) -> None:
    if kind == "qualified_collision":
        spec = FleetSpec(
            servers=(
                ServerSpec(id="a_", tool_count=0, tools=(ToolSpec(name="x", description="Tool x."),)),
                ServerSpec(id="a", tool_count=0, tools=(ToolSpec(name="_x", description="Tool _x."),)),
            )
        )
    else:
        spec = FleetSpec(servers=(ServerSpec(id="a", tool_count=5, faults=Faults(duplicate_names=1)),))
    sentence = "ERR-4.1" if kind == "qualified_collision" else "ERR-4.2"
    with fleets.serve(spec) as served:

        async def body() -> None:
            try:
                await sut.open(open_params(served.servers))
            except OutcomeError as exc:
                if exc.kind == "config_error":
                    return
                raise fail(
                    (sentence,), "wrong error kind", expected="config_error", observed=str(exc), case=served.describe()
                ) from None
            raise fail(
                (sentence,), "colliding qualified names were accepted", expected="config_error", case=served.describe()
            )

        run(body())


@clause("ERR-5.1")
@pytest.mark.parametrize(
    "faults",
    [Faults(fail_to_start=True), Faults(error_on_list=0), Faults(error_on_list=1)],
    ids=["fail_to_start", "error_on_page_0", "error_on_page_1"],
)
def test_unreachable_server_is_a_connection_error(sut: Sut, fleets: Fleets, faults: Faults) -> None:
    spec = FleetSpec(
        servers=(ServerSpec(id="ok", tool_count=3), ServerSpec(id="broken", tool_count=6, page_size=3, faults=faults))
    )
    with fleets.serve(spec) as served:

        async def body() -> None:
            try:
                await sut.open(open_params(served.servers))
            except OutcomeError as exc:
                if exc.kind == "connection_error" and "broken" in exc.message:
                    return
                raise fail(
                    ("ERR-5.1",),
                    "wrong error, or the server is not named",
                    expected="connection_error naming 'broken'",
                    observed=str(exc),
                    case=served.describe(),
                ) from None
            raise fail(
                ("ERR-5.1",),
                "a server that cannot be listed did not fail the run",
                expected="connection_error",
                case=served.describe(),
            )

        run(body())


STDIO_CASES = {
    "fail_to_start": (
        FleetSpec(
            servers=(
                ServerSpec(id="a", tool_count=3),
                ServerSpec(id="b", tool_count=3, faults=Faults(fail_to_start=True)),
            )
        ),
        {},
        "connection_error",
    ),
    "error_on_list": (
        FleetSpec(
            servers=(ServerSpec(id="a", tool_count=3), ServerSpec(id="b", tool_count=3, faults=Faults(error_on_list=0)))
        ),
        {},
        "connection_error",
    ),
    "selection_error": (
        FleetSpec(servers=(ServerSpec(id="a", tool_count=3), ServerSpec(id="b", tool_count=6))),
        {"b": {"mode": "all", "maxActiveTools": 2}},
        "selection_error",
    ),
    "config_error": (
        FleetSpec(
            servers=(
                ServerSpec(id="a", tool_count=3),
                ServerSpec(id="b", tool_count=3, faults=Faults(duplicate_names=1)),
            )
        ),
        {},
        "config_error",
    ),
}


@clause("ERR-6.1")
@pytest.mark.parametrize("name", sorted(STDIO_CASES))
def test_failed_open_leaves_no_server_process(sut: Sut, fleets: Fleets, name: str) -> None:
    spec, policies, kind = STDIO_CASES[name]
    with fleets.serve(spec, policies, transport="stdio") as served:

        async def body() -> None:
            try:
                await sut.open(open_params(served.servers))
            except OutcomeError as exc:
                if exc.kind != kind:
                    raise fail(
                        ("ERR-6.1",),
                        "the run failed with an unexpected kind",
                        expected=kind,
                        observed=str(exc),
                        case=served.describe(),
                    ) from None
                return
            raise fail(("ERR-6.1",), "the run opened", expected=kind, case=served.describe())

        run(body())
        alive = served.processes_alive()
        if alive or not served.ledger().every_session_closed():
            raise fail(
                ("ERR-6.1",),
                "a failed run.open left server processes or sessions behind",
                expected=[],
                observed=alive or portable(served.ledger().sessions_open()),
                case=served.describe(),
            )


# ID-5 leaves the listing time limit to the implementation; the suite asks for a short one
# through the protocol's optional ``listTimeoutSeconds`` and, when the implementation keeps
# its own longer limit, cannot wait for it within one call.
HANG_LIMIT = 2


@clause("ERR-5.2", "ERR-6.1")
def test_a_server_that_hangs_while_listing_fails_the_run_and_leaves_no_process(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(
        servers=(ServerSpec(id="a", tool_count=3), ServerSpec(id="stuck", tool_count=3, faults=Faults(hang_on_list=0)))
    )
    with fleets.serve(spec, transport="stdio") as served:

        async def body() -> None:
            try:
                await sut.open(open_params(served.servers) | {"listTimeoutSeconds": HANG_LIMIT})
            except OutcomeError as exc:
                if exc.kind != "connection_error" or "stuck" not in exc.message:
                    raise fail(
                        ("ERR-5.2",),
                        "a server hanging while listing did not give a connection error naming it",
                        expected="connection_error naming 'stuck'",
                        observed=str(exc),
                        case=served.describe(),
                    ) from None
                return
            except SutMisbehaved:
                pytest.skip(
                    f"not testable here: the implementation did not give up on a hanging server within "
                    f"the per-call timeout (it ignores listTimeoutSeconds={HANG_LIMIT})"
                )
            raise fail(("ERR-5.2",), "the run opened", expected="connection_error", case=served.describe())

        run(body())
        alive = served.processes_alive()
        if alive or not served.ledger().every_session_closed():
            raise fail(
                ("ERR-6.1",),
                "a run.open that failed on a hanging server left processes or sessions behind",
                expected=[],
                observed=alive or portable(served.ledger().sessions_open()),
                case=served.describe(),
            )


@clause("ERR-7.1")
def test_close_leaves_no_server_process(sut: Sut, fleets: Fleets) -> None:
    spec = FleetSpec(servers=(ServerSpec(id="a", tool_count=3), ServerSpec(id="b", tool_count=4)))
    with fleets.serve(spec, transport="stdio") as served:

        async def body() -> None:
            async with sut.open(open_params(served.servers)) as r:
                await r.definitions()

        run(body())
        alive = served.processes_alive()
        if alive or not served.ledger().every_session_closed():
            raise fail(
                ("ERR-7.1",),
                "run.close left server processes or sessions behind",
                expected=[],
                observed=alive or portable(served.ledger().sessions_open()),
                case=served.describe(),
            )


MALFORMED = {
    "schema-not-object-type": (Faults(schema_not_object=1), ()),
    "missing-name": (Faults(missing_name=1), ()),
    "schema-a-list": (Faults(), (ToolSpec(name="odd_schema", description="Odd.", input_schema=cast(Any, ["x"])),)),
    "schema-a-string": (Faults(), (ToolSpec(name="odd_schema", description="Odd.", input_schema=cast(Any, "object")),)),
}


@clause("ERR-8.1", "ERR-8.2")
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_tool_definition_never_reaches_the_model(sut: Sut, fleets: Fleets, name: str) -> None:
    faults, extra = MALFORMED[name]
    spec = FleetSpec(
        servers=(
            ServerSpec(id="fine", tool_count=3),
            ServerSpec(id="rawsrv", tool_count=4, raw=True, faults=faults, tools=extra),
        ),
        seed=4,
    )
    policies = {"fine": {"mode": "all"}, "rawsrv": {"mode": "all"}}
    with fleets.serve(spec, policies) as served:
        case = served.describe()
        well_formed = {
            f"rawsrv__{t['name']}"
            for t in served.tools["rawsrv"]
            if isinstance(t.get("name"), str)
            and isinstance(t.get("inputSchema"), dict)
            and t["inputSchema"].get("type") == "object"
        }

        async def body() -> list[dict[str, Any]] | OutcomeError:
            try:
                async with sut.open(open_params(served.servers)) as r:
                    return await r.definitions()
            except OutcomeError as exc:
                return exc

        got = run(body())
    if isinstance(got, OutcomeError):
        if "rawsrv" not in got.message:
            raise fail(
                ("ERR-8.2",),
                "the run failed over a malformed tool definition without naming the server",
                expected="an error naming 'rawsrv'",
                observed=str(got),
                case=case,
            )
        return
    raw = [d for d in got if d["name"].startswith("rawsrv__")]
    bad = [
        d["name"]
        for d in raw
        if d["name"] not in well_formed
        or not isinstance(d.get("inputSchema"), dict)
        or d["inputSchema"].get("type") != "object"
    ]
    if bad:
        raise fail(
            ("ERR-8.1",),
            "a malformed tool definition reached the model",
            expected=sorted(well_formed),
            observed=bad,
            case=case,
        )


ERROR_MESSAGES: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "bad-server-id": ("config_error", {"id": "s.0"}, ["s.0"]),
    "max-active-out-of-range": ("config_error", {"policy": {"maxActiveTools": 97}}, ["maxActiveTools", "97"]),
    "unknown-mode": ("config_error", {"policy": {"mode": "some"}}, ["mode", "some"]),
    "unknown-side-effects": ("config_error", {"policy": {"sideEffects": "never"}}, ["sideEffects", "never"]),
    "required-over-max-active": ("selection_error", {"policy": {"mode": "all", "maxActiveTools": 2}}, ["bigsrv"]),
}


@clause("ERR-9.1")
@pytest.mark.parametrize("name", sorted(ERROR_MESSAGES))
def test_error_messages_name_what_was_wrong(sut: Sut, fleets: Fleets, name: str) -> None:
    kind, change, words = ERROR_MESSAGES[name]
    with fleets.serve(FleetSpec(servers=(ServerSpec(id="bigsrv", tool_count=6),), seed=0)) as served:
        params = open_params([served.servers[0] | change])

        async def body() -> OutcomeError | None:
            try:
                async with sut.open(params):
                    return None
            except OutcomeError as exc:
                return exc

        got = run(body())
    if got is None or got.kind != kind:
        # Whether it must fail is ERR-1 / ERR-3; here only the words are judged.
        pytest.skip(f"the run did not fail with {kind} ({got}); ERR-1 and ERR-3 judge that")
    missing = [w for w in words if w not in got.message]
    if missing:
        raise fail(
            ("ERR-9.1",),
            "the error message does not name what was wrong",
            expected=f"a message naming {words}",
            observed=got.message,
            case=params,
        )
