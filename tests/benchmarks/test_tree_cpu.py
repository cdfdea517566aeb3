"""The CPU split of a certification: every process below the run is seen with its command line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks._suite import FLEET, HOST, SUITE, kind_of
from benchmarks._tree_cpu import sample_tree

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6:\n    pass\n"


@pytest.mark.e2e
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_child_and_a_grandchild_that_burn_cpu_are_seen_with_their_command_lines() -> None:
    grandchild = f"{BURN}# grandchild"
    child = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {grandchild!r}])\n{BURN}# child"

    with sample_tree(os.getpid(), every=0.05) as sampled:
        subprocess.run([sys.executable, "-c", child], check=True)

    seen = sampled.by_kind(lambda argv: argv.rsplit("# ", 1)[-1] if "# " in argv else "other")
    # Each burns 0.6 s; the last sample before it ends is at most one interval (and a tick) late.
    assert seen["child"] >= 0.4 and seen["grandchild"] >= 0.4


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        ("/venv/bin/python -m mock_servers host --port 0 --forkserver /tmp/f/fork.sock", FLEET),
        ("/venv/bin/python -m mock_servers forkserver /tmp/f", FLEET),
        ("/venv/bin/python /x/conformance/suite/_paged_server.py", FLEET),
        ("/venv/bin/python -m conformance._cli certify -n 2 --sut-cmd reference", SUITE),
        ("/venv/bin/python -m pytest -c /x/conformance/suite/pytest.ini", SUITE),
        ("/venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))", SUITE),
        ("/venv/bin/python -m reference_impl.driver --eviction lru", HOST),
        ("node examples/typescript-host/dist/driver.js", HOST),
    ],
)
def test_each_process_counts_for_the_one_it_works_for(argv: str, kind: str) -> None:
    assert kind_of(argv) == kind
