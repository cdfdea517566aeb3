"""The raw channel the protocol checks use: a fresh driver process, lines in, lines out."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from conformance import DriverSut, SutStartError
from conformance._channel import ChannelError, RawChannel
from tests.conformance._procs import is_running

pytestmark = pytest.mark.e2e

Argv = Callable[..., list[str]]
INITIALIZE = {"protocolVersion": "1"}


def _channel(argv: list[str], timeout: float = 5.0) -> RawChannel:
    return RawChannel(argv, env=None, timeout=timeout, grace=0.5)


def test_a_raw_channel_is_a_fresh_process_of_the_drivers_command(fake_driver_argv: Argv) -> None:
    driver = DriverSut(fake_driver_argv(), timeout=5.0, grace=0.5)
    driver.start()
    try:
        with driver.raw_channel() as channel:
            reply = channel.request("a", "initialize", INITIALIZE)

            assert reply == {
                "jsonrpc": "2.0",
                "id": "a",
                "result": {"name": "fake", "version": "0.0.1", "profiles": ["core"]},
            }
            assert channel.pid != driver.pid
        assert not is_running(channel.pid)
        # Read once the driver has exited: until then its stderr may lag behind its stdout.
        assert "fake driver good started" in channel.stderr_tail()
        assert driver.starts == 1
    finally:
        driver.close()


def test_lines_written_together_are_read_one_by_one(fake_driver_argv: Argv) -> None:
    with _channel(fake_driver_argv()) as channel:
        channel.send(*({"jsonrpc": "2.0", "id": i, "method": "initialize"} for i in range(3)))

        assert [channel.read()["id"] for _ in range(3)] == [0, 1, 2]


def test_a_driver_that_exits_is_reported_and_no_longer_written_to(fake_driver_argv: Argv) -> None:
    with _channel(fake_driver_argv()) as channel:
        channel.write(b"this is not json")  # the fake driver dies of it

        with pytest.raises(ChannelError, match="exited with code 1 without writing another line"):
            channel.read()
        with pytest.raises(ChannelError, match="no longer reads its stdin"):
            channel.write(b"{}")


def test_a_driver_that_writes_nothing_is_reported_after_the_time_out(fake_driver_argv: Argv) -> None:
    with (
        _channel(fake_driver_argv("silent"), timeout=0.3) as channel,
        pytest.raises(ChannelError, match=r"wrote nothing within 0\.3 s"),
    ):
        channel.request(1, "initialize", INITIALIZE)


def test_a_line_that_is_not_json_is_reported(fake_driver_argv: Argv) -> None:
    with _channel(fake_driver_argv()) as channel:
        channel.request(1, "initialize", INITIALIZE)

        with pytest.raises(ChannelError, match="wrote a line that is not JSON: 'this is not json'"):
            channel.request(2, "run.open", {"servers": [], "userMessage": "garbage"})


def test_a_command_that_cannot_run_is_a_start_error() -> None:
    with pytest.raises(SutStartError, match="cannot start driver"):
        _channel([sys.executable + "-no-such-interpreter"])
