"""The test command's own cost: the quick loop and the gate, and the gate of an earlier checkout beside it.

``scripts/test --quick`` runs a few times after a warm-up (which fills mypy's cache, as the
loop of an edit has it); the gate runs once, and with ``--baseline DIR`` the gate of the
checkout in DIR runs in turn with it, each as its own ``scripts/test`` does it (an earlier one
reinstalls the environment every time). Wall time is the whole command; CPU time is the user
and system time of every process it waited for. The slowest tests are pytest's own
``--durations`` of the measured gate.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ._report import Sample, Table, children_cpu, commit, fmt_seconds, ratio

ROOT = Path(__file__).resolve().parent.parent
QUICK_REPEATS = 3
#: The goals, in seconds of wall time on two quiet cores.
QUICK_GOAL = 60.0
GATE_GOAL = 240.0
SLOWEST = 15
_DURATION = re.compile(r"^(\d+\.\d+)s (call|setup|teardown)\s+(\S+)")


@dataclass(frozen=True, slots=True)
class Timed:
    wall: float
    cpu: float
    #: The command's exit status: a gate that fails on a busy machine still took this long.
    code: int


def _run(command: list[str], cwd: Path, log: Path) -> Timed:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE", "COVERAGE_"))}
    before = children_cpu()
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False
        ).returncode
    wall = time.perf_counter() - start
    return Timed(wall, children_cpu() - before, code)


def _failed(timed: Timed, log: Path) -> list[str]:
    """The tests a failing run names, for the notes."""
    if timed.code == 0:
        return []
    names = [line.split()[1] for line in log.read_text(errors="replace").splitlines() if line.startswith("FAILED ")]
    return names or [f"exit {timed.code}"]


def _slowest(log: Path) -> list[tuple[float, str]]:
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if match := _DURATION.match(line):
            found.append((float(match[1]), f"{match[3]} ({match[2]})"))
    return sorted(found, reverse=True)[:SLOWEST]


def _load() -> str:
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def run_test_cost(baseline: Path | None) -> list[Table]:
    loads = [_load()]
    with tempfile.TemporaryDirectory(prefix="test-cost-") as scratch:
        logs = Path(scratch)
        quick = ["bash", "scripts/test", "--quick"]
        _run(quick, ROOT, logs / "warm-up.log")
        quicks = [_run(quick, ROOT, logs / f"quick-{n}.log") for n in range(QUICK_REPEATS)]
        gate = _run(["bash", "scripts/test", f"--durations={SLOWEST}"], ROOT, logs / "gate.log")
        before = _run(["bash", "scripts/test"], baseline, logs / "baseline.log") if baseline is not None else None
        slowest = _slowest(logs / "gate.log")
        failed = {
            "the quick loop": [name for n, q in enumerate(quicks) for name in _failed(q, logs / f"quick-{n}.log")],
            "the gate": _failed(gate, logs / "gate.log"),
            "the earlier gate": _failed(before, logs / "baseline.log") if before is not None else [],
        }
    loads.append(_load())

    table = Table(
        "Test command on this machine",
        ["command", "runs", "wall", "CPU (user + system)", "earlier gate, wall", "wall now / earlier"],
    )
    walls, cpus = Sample(tuple(q.wall for q in quicks)), Sample(tuple(q.cpu for q in quicks))
    table.rows.append(["`scripts/test --quick`", str(len(quicks)), walls.show(), fmt_seconds(cpus.median), "–", "–"])
    table.rows.append(
        [
            "`scripts/test` (the gate)",
            "1",
            fmt_seconds(gate.wall),
            fmt_seconds(gate.cpu),
            fmt_seconds(before.wall) if before else "–",
            ratio(gate.wall, before.wall) if before else "–",
        ]
    )
    table.notes.append(
        f"Goals: the quick loop under {fmt_seconds(QUICK_GOAL)}: {_met(walls.median <= QUICK_GOAL)}; "
        f"the gate under {fmt_seconds(GATE_GOAL)}: {_met(gate.wall <= GATE_GOAL)}."
    )
    if baseline is not None and before is not None:
        table.notes.append(
            f"The earlier gate is `scripts/test` of commit {commit(baseline)}, run right after today's "
            f"({fmt_seconds(before.cpu)} of CPU)."
        )
    table.notes += [
        f"Failed in {what} (the time is still the command's): {', '.join(f'`{name}`' for name in names)}."
        for what, names in failed.items()
        if names
    ]
    table.notes += [
        f"Load average (1, 5, 15 min) at the start: {loads[0]}; at the end: {loads[1]}. On a machine "
        "others share the wall times stretch; CPU time stretches much less.",
        "The quick loop runs after a warm-up run, with mypy's cache filled as in the loop of an edit.",
    ]
    durations = Table("Slowest tests of the measured gate (pytest --durations)", ["seconds", "test"])
    durations.rows += [[f"{seconds:.1f}", f"`{name}`"] for seconds, name in slowest]
    return [table, durations]


def _met(met: bool) -> str:
    return "met" if met else "not met"
