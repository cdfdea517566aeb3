from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable

import pytest

from conformance import DriverSut, OutcomeError, SutMisbehaved, SutStartError, SystemUnderTest, UsageError
from tests.conformance._procs import child_pid_in, is_running

Argv = Callable[..., list[str]]


@pytest.fixture
async def driver(fake_driver_argv: Argv) -> AsyncIterator[DriverSut]:
    sut = DriverSut(fake_driver_argv(), timeout=5.0, grace=0.5)
    yield sut
    await sut.aclose()


def open_params(user_message: str = "hello", base_tools: int = 1) -> dict[str, object]:
    tools = [
        {"name": f"base{i}", "description": "a base tool", "inputSchema": {"type": "object"}} for i in range(base_tools)
    ]
    return {"servers": [], "baseTools": tools, "userMessage": user_message, "systemPrompt": ""}


def test_a_driver_sut_is_a_system_under_test(fake_driver_argv: Argv) -> None:
    assert isinstance(DriverSut(fake_driver_argv()), SystemUnderTest)


@pytest.mark.e2e
async def test_a_well_behaved_driver_answers_every_method(driver: DriverSut) -> None:
    info = await driver.initialize()
    run_id = await driver.open_run(open_params())
    definitions = await driver.definitions(run_id)
    result = await driver.call(run_id, "github__search", {"q": "x"})
    request = await driver.request(run_id, [{"name": "extra", "description": "", "inputSchema": {}}])
    await driver.close_run(run_id)

    assert info == {"name": "fake", "version": "0.0.1", "profiles": ["core"]}
    assert [tool["name"] for tool in definitions] == ["base0"]
    assert result == {"content": [{"type": "text", "text": "refused github__search"}], "isError": True}
    assert [tool["name"] for tool in request] == ["base0", "extra"]
    assert driver.starts == 1


@pytest.mark.e2e
@pytest.mark.parametrize(
    "kind", ["selection_error", "config_error", "connection_error", "invalid_params", "unknown_run"]
)
async def test_a_refusal_with_a_kind_becomes_an_outcome_error_of_that_kind(driver: DriverSut, kind: str) -> None:
    with pytest.raises(OutcomeError) as refused:
        await driver.open_run(open_params(f"outcome:{kind}"))

    assert (refused.value.kind, refused.value.message) == (kind, f"no: {kind}")


@pytest.mark.e2e
async def test_a_request_over_128_definitions_is_refused_as_too_large(driver: DriverSut) -> None:
    run_id = await driver.open_run(open_params(base_tools=100))

    with pytest.raises(OutcomeError) as refused:
        await driver.request(run_id, [{"name": f"x{i}", "description": "", "inputSchema": {}} for i in range(29)])

    assert refused.value.kind == "request_too_large"


@pytest.mark.e2e
async def test_closing_an_unknown_run_is_an_unknown_run_outcome(driver: DriverSut) -> None:
    with pytest.raises(OutcomeError) as refused:
        await driver.close_run("no-such-run")

    assert refused.value.kind == "unknown_run"


@pytest.mark.e2e
async def test_a_crash_is_reported_with_the_exit_code_and_the_stderr_tail(driver: DriverSut) -> None:
    await driver.initialize()
    pid = driver.pid

    with pytest.raises(SutMisbehaved) as misbehaved:
        await driver.open_run(open_params("crash"))

    assert "exited with code 3" in misbehaved.value.message
    assert "boom: run.open crashed" in misbehaved.value.stderr_tail
    assert pid is not None and not is_running(pid)


@pytest.mark.e2e
async def test_a_hang_is_reported_after_the_per_call_timeout_and_the_driver_is_killed(fake_driver_argv: Argv) -> None:
    driver = DriverSut(fake_driver_argv(), timeout=2.0, grace=0.5)
    await driver.initialize()
    pid = driver.pid

    with pytest.raises(SutMisbehaved) as misbehaved:
        await driver.open_run(open_params("hang"))
    await driver.aclose()

    assert "run.open: driver did not answer within 2 s" in misbehaved.value.message
    assert "stuck in run.open" in misbehaved.value.stderr_tail
    assert pid is not None and not is_running(pid)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("behaviour", "message", "stderr"),
    [
        ("garbage", "wrote a line that is not JSON: 'this is not json'", "about to print garbage"),
        ("wrong-id", "answered id 102 to request id 2", "answering the wrong id"),
    ],
)
async def test_a_corrupt_answer_is_reported_and_the_driver_is_killed(
    driver: DriverSut, behaviour: str, message: str, stderr: str
) -> None:
    await driver.initialize()
    pid = driver.pid

    with pytest.raises(SutMisbehaved) as misbehaved:
        await driver.open_run(open_params(behaviour))

    assert message in misbehaved.value.message
    assert stderr in misbehaved.value.stderr_tail
    assert pid is not None and not is_running(pid)


@pytest.mark.e2e
async def test_a_json_rpc_error_where_a_result_was_due_is_misbehaviour_but_keeps_the_driver(
    driver: DriverSut,
) -> None:
    await driver.initialize()

    with pytest.raises(SutMisbehaved) as misbehaved:
        await driver.open_run(open_params("method-error"))
    run_id = await driver.open_run(open_params())

    assert misbehaved.value.observed == {"code": -32601, "message": "method not found"}
    assert run_id == "run-1"
    assert driver.starts == 1


@pytest.mark.e2e
async def test_after_misbehaviour_the_next_call_runs_on_a_fresh_driver(driver: DriverSut) -> None:
    kept = await driver.open_run(open_params())
    with pytest.raises(SutMisbehaved):
        await driver.open_run(open_params("crash"))

    run_id = await driver.open_run(open_params())
    await driver.close_run(kept)

    assert (run_id, driver.starts) == ("run-1", 2)


@pytest.mark.e2e
async def test_a_child_the_driver_spawned_is_killed_with_it(fake_driver_argv: Argv) -> None:
    driver = DriverSut(fake_driver_argv(), timeout=30.0, grace=0.5)
    await driver.initialize()
    # Started under a time-out a loaded machine cannot miss; the hang is then waited out briefly.
    driver.timeout = 2.0

    with pytest.raises(SutMisbehaved) as misbehaved:
        await driver.open_run(open_params("spawn-and-hang"))
    await driver.aclose()

    assert not is_running(child_pid_in(misbehaved.value.stderr_tail))


@pytest.mark.e2e
async def test_close_shuts_the_driver_down_and_leaves_no_process(driver: DriverSut) -> None:
    await driver.initialize()
    pid = driver.pid

    await driver.aclose()

    assert pid is not None and not is_running(pid)
    assert driver.pid is None


@pytest.mark.e2e
async def test_a_driver_that_ignores_shutdown_and_sigterm_is_killed(fake_driver_argv: Argv) -> None:
    driver = DriverSut(fake_driver_argv("stubborn"), timeout=5.0, grace=0.2)
    await driver.initialize()
    pid = driver.pid

    await driver.aclose()

    assert pid is not None and not is_running(pid)


async def test_a_closed_driver_refuses_further_calls(driver: DriverSut) -> None:
    await driver.aclose()

    with pytest.raises(UsageError, match="was closed"):
        await driver.open_run(open_params())


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("mode", "message", "stderr"),
    [
        ("silent", "did not answer initialize within 3 s", "thinking about initialize"),
        ("exit-at-start", "exited with code 7 without answering", "fatal: no configuration found"),
        (
            "bad-initialize",
            "the result breaks initialize.result.schema.json at $: 'profiles' is a required property",
            "started",
        ),
        ("protocol-2", "speaks protocol version '2'", "started"),
    ],
)
def test_a_driver_that_does_not_complete_initialize_is_a_start_error(
    fake_driver_argv: Argv, mode: str, message: str, stderr: str
) -> None:
    # The time-out covers the interpreter's start too. Only the silent driver waits it out, so
    # the others get one no loaded machine reaches; the silent one, one long enough for a busy
    # machine to start it and let it write its stderr line.
    driver = DriverSut(fake_driver_argv(mode), timeout=3.0 if mode == "silent" else 60.0, grace=0.2)

    with pytest.raises(SutStartError) as failed:
        driver.start()

    assert message in str(failed.value)
    assert stderr in str(failed.value)
    assert driver.pid is None


@pytest.mark.e2e
def test_a_command_that_cannot_be_run_is_a_start_error() -> None:
    driver = DriverSut(["/nonexistent/driver-binary"])

    with pytest.raises(SutStartError, match="cannot start driver '/nonexistent/driver-binary'"):
        driver.start()


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        ([], {}),
        ("python driver.py", {}),
        ([sys.executable], {"timeout": 0}),
        ([sys.executable], {"grace": float("inf")}),
    ],
)
def test_bad_arguments_are_refused_up_front(argv: object, options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        DriverSut(argv, **options)  # type: ignore[arg-type]
