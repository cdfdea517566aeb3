"""The stdio driver against servers and callers that would make it hang, leak or lose a server.

Each test starts a real driver process and bounds every wait: a driver that hangs fails
the test at the bound rather than holding the test run.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_servers._processes import pid_alive, wait_for_pids
from reference_impl.driver import ReferenceDriver
from reference_impl.driver.__main__ import Server

from ..servers import RawServer, raw_server, tool
from ._child import Driver, request

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals and process groups are POSIX")

SILENT = {"type": "stdio", "command": sys.executable, "args": ["-c", "import time; time.sleep(300)"]}


def _started() -> Driver:
    child = Driver()
    child.result("init", "initialize", {"protocolVersion": "1"})
    return child


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    """One driver for the tests that leave it serving (each checks that it does)."""
    child = _started()
    yield child
    child.close()


@pytest.fixture
def fresh() -> Iterator[Driver]:
    """A driver of the test's own, for the tests that end it."""
    child = _started()
    yield child
    child.close()


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A URL whose port accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"


def _open(server_id: str, transport: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"servers": [{"id": server_id, "transport": transport}], **fields}


def _connection_error(reply: dict[str, Any] | None, server_id: str) -> str:
    assert reply is not None, "run.open was not answered in time"
    error = reply.get("error", {})
    assert error.get("code") == -32000 and error["data"]["kind"] == "connection_error", reply
    assert repr(server_id) in error["message"], error
    message: str = error["message"]
    return message


@pytest.mark.e2e
@pytest.mark.parametrize(
    "transport",
    [SILENT, {"type": "stdio", "command": "/bin/sleep", "args": ["300"]}, "black-hole"],
    ids=["python-sleeps", "bin-sleep", "http-black-hole"],
)
def test_run_open_of_a_server_that_never_answers_fails_within_the_handshake_bound(
    driver: Driver, black_hole: str, transport: Any
) -> None:
    if transport == "black-hole":
        transport = {"type": "http", "url": black_hole}
    driver.write(request(1, "run.open", _open("mute", transport, connectTimeoutSeconds=1)))

    message = _connection_error(driver.read(timeout=10), "mute")

    assert "did not start or complete the MCP handshake within 1 s" in message
    assert driver.result(2, "initialize", {})["name"] == "reference_impl"


@pytest.mark.e2e
def test_a_server_writing_garbage_fails_run_open_and_does_not_flood_the_drivers_stderr(driver: Driver) -> None:
    before = len(driver.stderr())
    driver.write(request(1, "run.open", _open("yes", {"type": "stdio", "command": "/usr/bin/yes"})))

    message = _connection_error(driver.read(timeout=20), "yes")

    assert "lines that are not JSON-RPC messages" in message
    assert driver.result(2, "initialize", {})["name"] == "reference_impl"
    assert len(driver.stderr()) - before < 5000


@pytest.mark.e2e
def test_a_hung_run_open_holds_up_no_other_request_and_replies_keep_their_order(driver: Driver, tmp_path: Path) -> None:
    quick = raw_server(tmp_path, "quick", [[tool("a")]])
    run_id = driver.result(1, "run.open", _open("quick", quick.transport()))["runId"]

    driver.write(
        request(2, "run.open", _open("mute", SILENT, connectTimeoutSeconds=3)),
        request(3, "run.close", {"runId": run_id}),
        request(4, "initialize", {}),
    )

    # The close took effect while run.open still waited for its server...
    deadline = time.monotonic() + 2.5
    while not quick.exited and time.monotonic() < deadline:
        wait_for_pids([], 0)  # nothing to wait on: the server's log is the signal
        time.sleep(0.05)
    assert quick.exited
    # ... and the replies still came in the order of the requests.
    replies = [driver.read(timeout=15) for _ in range(3)]
    assert [r.get("id") if r else None for r in replies] == [2, 3, 4]


def _running_server(driver: Driver, tmp_path: Path, **options: Any) -> tuple[str, RawServer]:
    server = raw_server(tmp_path, "s", [[tool("a"), tool("b")]], **options)
    params = _open("s", server.transport(), callTimeoutSeconds=120) | {
        "servers": [{"id": "s", "transport": server.transport(), "policy": {"mode": "all"}}]
    }
    return driver.result("open", "run.open", params)["runId"], server


@pytest.mark.e2e
@pytest.mark.parametrize("value", ['"a\\udfff"', '{"\\ud83d": ["x", "\\ud800"]}'])
def test_a_lone_surrogate_in_call_arguments_is_an_error_result_and_the_server_stays(
    driver: Driver, tmp_path: Path, value: str
) -> None:
    run_id, server = _running_server(driver, tmp_path)
    call = f'{{"jsonrpc": "2.0", "id": 1, "method": "run.call", "params": {{"runId": "{run_id}", "name": "s__a", '
    driver.write(f'{call}"arguments": {{"path": {value}}}}}}}'.encode())

    refused = driver.read()

    assert refused is not None and refused["result"]["isError"] is True, refused
    assert "lone surrogate" in refused["result"]["content"][0]["text"]
    after = driver.result(2, "run.call", {"runId": run_id, "name": "s__b", "arguments": {"n": 1}})
    assert after == {"content": [{"type": "text", "text": "raw b ok"}], "isError": False}
    assert [line for line in server.lines() if line.startswith("call")] == ['call b {"n": 1}']


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_driver_promptly_while_a_call_is_in_flight_and_ends_its_servers_groups(
    fresh: Driver, tmp_path: Path, signum: int
) -> None:
    driver = fresh
    run_id, server = _running_server(driver, tmp_path, hang_on="a", spawn=["sleep", "300"])
    [child] = server.children()
    driver.write(request(1, "run.call", {"runId": run_id, "name": "s__a", "arguments": {}}))
    while "hang a" not in server.lines():  # the call has reached the server
        wait_for_pids([], 0)
        time.sleep(0.02)

    sent = time.monotonic()
    driver.process.send_signal(signum)

    assert driver.exit_code(2) is not None, "the driver still runs 2 s after the signal"
    assert time.monotonic() - sent < 2
    assert server.exited
    wait_for_pids([child], 5)  # what the server started in its group went with it
    assert not pid_alive(child)


@pytest.mark.e2e
def test_sigterm_ends_the_driver_promptly_while_run_open_waits_for_a_silent_server(fresh: Driver) -> None:
    driver = fresh
    driver.write(request(1, "run.open", _open("mute", SILENT, connectTimeoutSeconds=120)))
    assert driver.read(timeout=1) is None

    driver.process.send_signal(signal.SIGTERM)

    assert driver.exit_code(2) is not None, "the driver still runs 2 s after SIGTERM"


# Imported at start-up from the PYTHONPATH: the toolset takes 30 s to load, as it may take
# seconds on a loaded machine, and a file says when its import began.
_SLOW_TOOLSET = """
import importlib.abc, os, sys, time

class _Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "reference_impl._toolset":
            open(os.environ["TOOLSET_IMPORT_BEGAN"], "w").close()
            time.sleep(30)
        return None

sys.meta_path.insert(0, _Slow())
"""


@pytest.mark.e2e
def test_sigterm_ends_the_driver_promptly_while_its_first_run_loads_the_toolset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sitecustomize.py").write_text(_SLOW_TOOLSET)
    began = tmp_path / "began"
    monkeypatch.setenv("TOOLSET_IMPORT_BEGAN", str(began))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    driver = _started()
    try:
        driver.write(request(1, "run.open", _open("mute", SILENT)))
        while not began.exists():
            assert driver.exit_code(0.02) is None, "the driver ended before loading the toolset"

        driver.process.send_signal(signal.SIGTERM)

        assert driver.exit_code(2) is not None, "the driver still runs 2 s after SIGTERM"
    finally:
        driver.close()


@pytest.mark.e2e
@pytest.mark.parametrize("depth", [128, 129, 490, 979])
def test_json_nested_below_a_thousand_levels_is_a_result_or_a_parse_error_never_an_internal_error(
    driver: Driver, depth: int
) -> None:
    # Nested inside the params, where the method's own handling sees it.
    params = '{"protocolVersion": "1", "x": ' + "[" * (depth - 2) + "]" * (depth - 2) + "}"
    driver.write(f'{{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {params}}}'.encode())

    reply = driver.read()

    assert reply is not None
    if "error" in reply:
        assert (reply["id"], reply["error"]["code"]) == (None, -32700), reply
    else:
        assert depth <= 128
    assert driver.result(2, "initialize", {})["name"] == "reference_impl"


@pytest.mark.e2e
def test_a_deeply_nested_call_argument_is_a_result_and_the_server_stays(driver: Driver, tmp_path: Path) -> None:
    run_id, _server = _running_server(driver, tmp_path)
    deep: Any = 1
    for _ in range(120):
        deep = {"a": deep}

    nested = driver.result(1, "run.call", {"runId": run_id, "name": "s__a", "arguments": {"x": deep}})

    assert nested["content"][0]["text"] == "raw a ok"
    assert driver.result(2, "run.call", {"runId": run_id, "name": "s__b", "arguments": {}})["isError"] is False


@pytest.mark.e2e
def test_under_descriptor_exhaustion_initialize_and_shutdown_are_answered_and_the_driver_exits(tmp_path: Path) -> None:
    limit = 32
    prefix = [
        sys.executable,
        "-c",
        f"import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit})); "
        "os.execv(sys.argv[1], sys.argv[1:])",
    ]
    child = Driver(prefix=prefix)
    try:
        server = raw_server(tmp_path, "s", [[tool("a")]])
        failed = None
        for i in range(limit):
            reply = child.send(i, "run.open", _open("s", server.transport()))
            if "error" in reply:
                failed = reply
                break
        assert failed is not None, "the descriptors never ran out"
        assert failed["error"]["data"]["kind"] == "connection_error", failed
        assert child.result("again", "initialize", {})["name"] == "reference_impl"
        assert child.result("bye", "shutdown", {}) == {}
        assert child.exit_code(10) == 0
    finally:
        child.close()


@pytest.mark.e2e
def test_sigkill_of_the_drivers_group_still_ends_what_a_stdio_server_started(fresh: Driver, tmp_path: Path) -> None:
    driver = fresh
    _run_id, server = _running_server(driver, tmp_path, spawn=["sleep", "300"])
    [child] = server.children()

    # What the suite does to a driver that misses its time-out (PROTOCOL.md P4).
    os.killpg(driver.process.pid, signal.SIGKILL)

    wait_for_pids([child], 10)
    assert not pid_alive(child)


@pytest.mark.e2e
def test_shutdown_with_a_thousand_runs_open_ends_within_the_protocols_grace(fresh: Driver) -> None:
    driver = fresh
    driver.write(*(request(i, "run.open", {"servers": []}) for i in range(1000)))
    for _i in range(1000):
        reply = driver.read()
        assert reply is not None and "result" in reply, reply

    sent = time.monotonic()
    assert driver.result("bye", "shutdown", {}) == {}

    assert driver.exit_code(2) == 0
    assert time.monotonic() - sent < 2


class _CloseFails(ReferenceDriver):
    async def aclose(self) -> None:
        raise OSError(24, "Too many open files")


@contextlib.contextmanager
def _no_descriptor_left() -> Iterator[None]:
    """Every file descriptor of this process in use, for the length of the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    taken: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 16, hard))
    try:
        with contextlib.suppress(OSError):
            while True:
                taken.append(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for fd in taken:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_with_no_descriptor_left_initialize_and_shutdown_are_answered_and_serving_ends() -> None:
    server = Server(_CloseFails())
    with _no_descriptor_left():
        hello = await server.handle(request(1, "initialize", {"protocolVersion": "1"}))
        bye = await server.handle(request(2, "shutdown", {}))

    assert hello is not None and hello["result"]["name"] == "reference_impl", hello
    assert bye == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert server.done
