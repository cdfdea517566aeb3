"""The stdio transport and the handshake bound: servers that never answer, write garbage or
leave children behind cost a run a bounded time and leave nothing running."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_servers._processes import pid_alive, wait_for_pids
from reference_impl import HttpTarget, ServerConfig, ServerConnectionError, StdioTarget, open_toolset
from reference_impl._groups import GROUPS
from reference_impl._stdio import STDERR_FORWARD

from .servers import raw_server, tool

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")

SLEEP = "import sys, time; sys.stdin.read() if 'eof' in sys.argv else time.sleep(300)"


def _stdio(server_id: str, command: str, *args: str) -> ServerConfig:
    return ServerConfig(server_id, StdioTarget(command=command, args=args))


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A URL whose port accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"


@pytest.mark.e2e
@pytest.mark.parametrize(
    "argv",
    [[sys.executable, "-c", SLEEP], ["/bin/cat"], [sys.executable, "-c", SLEEP, "eof"]],
    ids=["sleeps", "echoes", "reads-and-never-answers"],
)
async def test_a_server_that_never_completes_the_handshake_fails_the_run_within_its_bound(argv: list[str]) -> None:
    started = time.monotonic()

    with pytest.raises(ServerConnectionError) as failed:
        async with open_toolset([_stdio("mute", *argv)], connect_timeout=1, list_timeout=1):
            pass

    # cat echoes the client's own requests back, which ends the handshake sooner.
    assert failed.value.message.startswith("server 'mute' ")
    if argv != ["/bin/cat"]:
        assert failed.value.message == "server 'mute' did not start or complete the MCP handshake within 1 s"
    # The bound, plus the grace a server gets once its stdin is closed.
    assert time.monotonic() - started < 1 + 2 + 2
    assert len(GROUPS) == 0


async def test_an_http_endpoint_that_never_replies_fails_the_run_within_the_handshake_bound(black_hole: str) -> None:
    started = time.monotonic()

    with pytest.raises(ServerConnectionError) as failed:
        async with open_toolset([ServerConfig("hole", HttpTarget(black_hole))], connect_timeout=1, list_timeout=60):
            pass

    assert "server 'hole' did not start or complete the MCP handshake within 1 s" in failed.value.message
    assert time.monotonic() - started < 5


@pytest.mark.e2e
async def test_a_server_writing_garbage_is_given_up_and_its_garbage_is_not_logged_line_by_line(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ServerConnectionError) as failed:
        async with open_toolset([_stdio("yes", "/usr/bin/yes")], connect_timeout=30):
            pass

    assert failed.value.message == (
        "server 'yes' could not be reached or listed: it wrote 100 lines that are not JSON-RPC messages"
    )
    assert len(capfd.readouterr().err) < 2000


@pytest.mark.e2e
async def test_only_the_start_of_a_servers_stderr_reaches_the_hosts(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    loud = raw_server(tmp_path, "loud", [[tool("a")]], stderr_bytes=1_000_000)

    async with open_toolset([loud.config("loud")]) as toolset:
        assert toolset.active_names == ("loud__a",)

    err = capfd.readouterr().err
    assert err.count("e") >= STDERR_FORWARD
    assert len(err) < STDERR_FORWARD + 1000
    assert f"[server 'loud': {1_000_000 - STDERR_FORWARD:,} more bytes of stderr dropped]" in err


@pytest.mark.e2e
async def test_closing_a_run_ends_what_a_server_started_in_its_process_group(tmp_path: Path) -> None:
    parent = raw_server(tmp_path, "parent", [[tool("a")]], spawn=["sleep", "300"])

    async with open_toolset([parent.config("parent")]):
        [child] = parent.children()
        assert pid_alive(child)

    # The server left when its stdin closed; the child it left behind did not, until now.
    assert parent.exited
    wait_for_pids([child], 5)
    assert not pid_alive(child)
