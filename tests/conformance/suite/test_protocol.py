"""The protocol checks' driver processes: a check that passes hands its process on only while it is in step."""

from __future__ import annotations

import sys

import pytest

from conformance._channel import RawChannel
from conformance.suite.test_protocol import _Spare

pytestmark = pytest.mark.e2e

# Answers every request once; after the request numbered STRAY, writes one line more.
_ANSWERS = """
import json, sys
for n, line in enumerate(sys.stdin):
    request = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}), flush=True)
    if n == STRAY:
        print(json.dumps({"jsonrpc": "2.0", "id": "stray", "result": {}}), flush=True)
"""


def _driver(stray: int) -> RawChannel:
    return RawChannel([sys.executable, "-c", _ANSWERS.replace("STRAY", str(stray))], env=None, timeout=10, grace=5)


def test_a_driver_in_step_is_handed_to_the_next_check() -> None:
    spare = _Spare()
    channel = _driver(stray=-1)
    channel.request(1, "initialize", {})

    spare.keep(channel)

    assert spare.take() is channel
    assert channel.request(2, "initialize", {})["id"] == 2
    channel.close()


def test_a_driver_that_wrote_a_line_nobody_read_is_ended_not_handed_on() -> None:
    spare = _Spare()
    channel = _driver(stray=0)
    channel.request(1, "initialize", {})  # the stray line follows its reply, unread

    spare.keep(channel)

    assert spare.take() is None
    assert channel.exit_code(5) is not None


def test_closing_the_spare_ends_the_driver_it_holds() -> None:
    spare = _Spare()
    channel = _driver(stray=-1)
    spare.keep(channel)

    spare.close()

    assert spare.take() is None
    assert channel.exit_code(5) is not None
