"""Certification cost: `mcp-conformance certify` against conformant, broken, hanging and crashing hosts.

Each row is one `certify -n 2` run with the default seed, thoroughness and time budget, the
way a team certifies its host. The broken hosts are the reference driver with one registered
defect (``python -m tests.conformance.defects NAME``); the hanging and crashing ones are the
suite's own fake driver. The "first version" column holds the figures measured on the first
release of the suite for the same kind of host, which had no bounded shrinking, no
broken-driver cut-off and no time budget.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ._report import Table, children_cpu, commit, fmt_seconds, ratio
from ._tree_cpu import sample_tree

ROOT = Path(__file__).resolve().parent.parent
FAKE_DRIVER = ROOT / "tests" / "conformance" / "fake_driver.py"


@dataclass(frozen=True, slots=True)
class Host:
    label: str
    args: tuple[str, ...]
    before: str
    goal: float | None
    #: Certified also with an earlier checkout, when one is given (``--baseline``).
    beside_earlier: bool = False


def _hosts(python: str) -> tuple[Host, ...]:
    defective = f"{python} -m tests.conformance.defects"
    return (
        Host("conformant, in process (`--sut reference`)", ("--sut", "reference"), "–", None),
        Host("conformant, through its driver", ("--sut-cmd", f"{python} -m reference_impl.driver"), "49 s", 20.0, True),
        Host(
            "broken: one policy sentence (`missing_annotation_is_read_only`)",
            ("--sut-cmd", f"{defective} missing_annotation_is_read_only"),
            "11½ min",
            120.0,
        ),
        Host(
            "broken: every qualified name (`qualified_with_one_underscore`)",
            ("--sut-cmd", f"{defective} qualified_with_one_underscore"),
            "13 min",
            120.0,
        ),
        Host(
            "driver hangs on every `run.open`",
            ("--sut-cmd", f"{python} {FAKE_DRIVER} hang-on-open"),
            "> 15 min, unfinished",
            None,
        ),
        Host(
            "driver crashes on every `run.open`",
            ("--sut-cmd", f"{python} {FAKE_DRIVER} crash-on-open"),
            "6 min",
            None,
        ),
    )


#: The cores a certification runs on (`certify -n 2`, one worker per core).
CORES = 2

#: Who a process of a certification works for, told by its command line, in the split's order.
HOST, SUITE, FLEET = "the host under test", "the suite", "the fleet"
KINDS = (HOST, SUITE, FLEET)


def kind_of(argv: str) -> str:
    """The fleet's processes (hosts, fork server, the stdio servers it forks, the suite's own
    server scripts) run ``mock_servers`` or a file of the suite; the suite's run
    ``conformance._cli``, pytest or an xdist worker (``exec(eval(…))`` on its stdin); every
    other process is the host's driver or one it started (a server given as ``python -c`` counts
    here: a few such servers that the error checks start, and that end at once)."""
    if "conformance._cli" in argv or "pytest" in argv or "exec(eval(" in argv:
        return SUITE
    if "mock_servers" in argv or "conformance/suite/" in argv:
        return FLEET
    return HOST


@dataclass(frozen=True, slots=True)
class Timed:
    wall: float
    #: User and system time of every process of the run (the suite, its workers, drivers, servers).
    cpu: float
    certificate: dict[str, object]
    #: CPU seconds by `kind_of` of the processes sampled while the run went on.
    seen: dict[str, float]


def _certify(host: Host, out: Path, checkout: Path = ROOT) -> Timed:
    """One ``certify -n 2`` of ``host`` with the suite of ``checkout`` (this one, or an earlier one installed)."""
    python = sys.executable if checkout == ROOT else str(checkout / ".venv" / "bin" / "python")
    args = tuple(arg.replace(sys.executable, python) for arg in host.args)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE", "COVERAGE_"))}
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{checkout}{os.pathsep}{env.get('PYTHONPATH', '')}"
    before = children_cpu()
    start = time.perf_counter()
    with sample_tree(os.getpid()) as sampled:
        subprocess.run(
            [python, "-m", "conformance._cli", "certify", "-n", str(CORES), "--out", str(out), *args],
            cwd=checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    wall = time.perf_counter() - start
    cpu = children_cpu() - before
    try:
        certificate: dict[str, object] = json.loads((out / "certificate.json").read_text())
    except (OSError, ValueError):
        certificate = {}
    return Timed(wall, cpu, certificate, sampled.by_kind(kind_of))


def _outcome(certificate: dict[str, object]) -> str:
    if not certificate:
        return "no certificate"
    summary = certificate.get("summary")
    failures = certificate.get("failures")
    counts = summary if isinstance(summary, dict) else {}
    parts = [f"{n} {status}" for status, n in counts.items() if n and status in {"pass", "fail", "not-run"}]
    found = len(failures) if isinstance(failures, list) else 0
    return f"`{certificate.get('verdict')}`: {found} finding(s); clauses {', '.join(parts)}"


def run_suite_cost(baseline: Path | None = None) -> list[Table]:
    """Certify each host once; with ``baseline`` (an earlier checkout with its ``.venv``), the
    conformant driver also with that checkout's suite and reference, right after today's."""
    table = Table(
        "Certification cost: `certify -n 2` on two cores",
        [
            "host",
            "first version",
            "earlier checkout",
            "now",
            "now ÷ earlier",
            "CPU now",
            f"CPU ÷ {CORES} cores",
            "goal",
            "certificate",
        ],
    )
    split = Table(
        "Where the CPU of a certification goes",
        ["host", "CPU in all", HOST, SUITE, FLEET, "not seen"],
    )
    earlier = baseline if baseline is not None and (baseline / ".venv" / "bin" / "python").exists() else None
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as scratch:
        for number, host in enumerate(_hosts(sys.executable)):
            sys.stderr.write(f"  suite-cost: {host.label}\n")
            now = _certify(host, Path(scratch) / str(number))
            then = (
                _certify(host, Path(scratch) / f"{number}-earlier", earlier)
                if earlier is not None and host.beside_earlier
                else None
            )
            goal = (
                "–"
                if host.goal is None
                else f"≤ {fmt_seconds(host.goal)}: {'met' if now.wall <= host.goal else 'not met'}"
            )
            table.rows.append(
                [
                    host.label,
                    host.before,
                    fmt_seconds(then.wall) if then else "–",
                    fmt_seconds(now.wall),
                    ratio(now.wall, then.wall) if then else "–",
                    fmt_seconds(now.cpu),
                    fmt_seconds(now.cpu / CORES),
                    goal,
                    _outcome(now.certificate),
                ]
            )
            split.rows.append([host.label, fmt_seconds(now.cpu), *_shares(now)])
            if host.goal is not None and now.cpu / CORES > host.goal:
                table.notes.append(_out_of_reach(host.label, host.goal, now))
            if then is not None and earlier is not None:
                table.notes.append(
                    f"The earlier checkout is commit {commit(earlier)}: its suite certified its reference driver "
                    f"right after today's ({fmt_seconds(then.cpu)} of CPU; {_outcome(then.certificate)})."
                )
    table.notes += [
        "One run each, wall time of the whole `python -m conformance certify` process: suite start, "
        "every worker's fleet host and driver, shrinking, and writing the certificate.",
        "Broken hosts shrink with the default bound per property; a driver that hangs or crashes is "
        "declared broken after consecutive time-outs or exits, with one protocol finding and the "
        "remaining clauses `not-run`.",
        "The first-version figures were measured once on another two-core machine against comparable "
        "hosts (a broken host built from the TypeScript skeleton among them); they show the order of "
        "magnitude, not a side-by-side ratio.",
        f"CPU: user and system time of every process of the run; CPU ÷ {CORES} cores is the least wall "
        "time that CPU allows, with both cores busy all the time. Through its driver, most of a run is work "
        "rather than waiting: what costs is work per "
        "example (each `run.open` connects the driver to a few HTTP servers of the fleet host with the MCP "
        "SDK's client, and lists their pages) and the two workers' checks. The stdio servers that the "
        "checks of process lifetime start are forked by a fork server that has imported the MCP SDK once "
        "(`mock_servers.ForkServer`), and the reference driver loads the SDK with its first run, so the "
        "protocol checks that start a driver of their own pay no import. Protocol checks that pass hand "
        "their driver process on, and every reply and request is checked against the protocol schemas by "
        "a compiled validator first.",
        "A hanging driver costs three consecutive request time-outs (30 s each, `--sut-timeout`) before it "
        "is declared broken.",
    ]
    split.notes += [
        "Each process below the run, sampled from /proc five times a second, counted for the one it "
        f"works for: {HOST} (its driver and what that starts; an in-process host runs inside the "
        f"suite's workers, and counts as {SUITE}), {SUITE} (certify, pytest and its workers), "
        f"{FLEET} (the fleet hosts, the fork server and the stdio servers). A process that lives "
        "between two samples is not seen: its time is in the last column.",
    ]
    return [table, split]


def _out_of_reach(label: str, goal: float, now: Timed) -> str:
    """Why a goal below the run's CPU bound cannot be met by waiting less: only less work can meet it."""
    suite = sum(now.seen.get(kind, 0.0) for kind in (SUITE, FLEET))
    return (
        f"{label}: the goal ({fmt_seconds(goal)}) is below what {CORES} cores allow for the "
        f"CPU this run took ({fmt_seconds(now.cpu)} ÷ {CORES} = {fmt_seconds(now.cpu / CORES)}), so no "
        f"overlap of its waits can meet it; only less work can. The host under test took "
        f"{fmt_seconds(now.seen.get(HOST, 0.0))} of it, the suite and its fleet {fmt_seconds(suite)} (next table)."
    )


def _shares(timed: Timed) -> list[str]:
    """Each kind's CPU seconds and share of the run's, then what no sample saw."""
    total = timed.cpu or 1.0
    cells = [f"{fmt_seconds(timed.seen.get(kind, 0.0))} ({timed.seen.get(kind, 0.0) / total:.0%})" for kind in KINDS]
    unseen = max(0.0, timed.cpu - sum(timed.seen.values()))
    return [*cells, f"{fmt_seconds(unseen)} ({unseen / total:.0%})"]
