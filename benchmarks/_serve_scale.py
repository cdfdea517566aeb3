"""How far one ``mcp-fleet serve`` goes: servers × tools, start time and memory, in one process and spread over two.

Each configuration is a generated fleet (the ten domains in turn) served by ``mcp-fleet
serve SPEC --processes N``. Start time runs from spawning the command until it has printed
its endpoint list and the last server of every process has answered a ``tools/list``;
memory is the resident set of the whole process tree at that point (the command and its
hosts), and the cost per tool is that less the same command serving one server with one
tool per process, divided by the tools served.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._catalogs import DOMAINS
from ._report import Sample, Table, fmt_seconds

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 15.0
GOAL_BYTES = 1 << 30
GOAL = (1000, 50, 2)  # servers, tools per server, processes


@dataclass(frozen=True, slots=True)
class Config:
    servers: int
    tools: int
    processes: int

    @property
    def label(self) -> str:
        return f"{self.servers:,} × {self.tools}, {_processes(self.processes)}"


def _processes(count: int) -> str:
    return f"{count} process{'es' if count > 1 else ''}"


FULL = (
    Config(100, 100, 1),
    Config(1000, 50, 1),
    Config(5000, 10, 1),
    Config(1000, 100, 1),
    Config(1000, 50, 2),
    Config(1000, 100, 2),
)
SMOKE = (Config(6, 5, 1),)


def _spec(servers: int, tools: int) -> dict[str, Any]:
    return {
        "seed": 7,
        "servers": [{"id": f"s{i}", "domain": DOMAINS[i % len(DOMAINS)], "tool_count": tools} for i in range(servers)],
    }


def _rss(pid: int) -> int:
    """Resident bytes of one process (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


async def _list_first_page(url: str) -> None:
    from mcp import Client

    async with Client(url, read_timeout_seconds=120) as client:
        await client.list_tools()


def _start(config: Config, folder: Path) -> tuple[float, int]:
    """Seconds until the fleet is served, and the tree's resident bytes then."""
    import anyio

    from mock_servers import ProcessGroup
    from mock_servers._serve import partition

    path = folder / f"fleet-{config.servers}x{config.tools}.json"
    path.write_text(json.dumps(_spec(config.servers, config.tools)), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    argv = [sys.executable, "-m", "mock_servers", "serve", str(path), "--processes", str(config.processes)]
    started = time.perf_counter()
    with ProcessGroup.start(argv, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as group:
        assert group.popen.stdout is not None
        line = group.popen.stdout.readline()
        if not line:
            raise RuntimeError(f"mcp-fleet serve exited ({group.popen.poll()}) before printing its endpoints")
        first = json.loads(line)
        threading.Thread(target=group.popen.stdout.read, daemon=True).start()  # never let its output block it
        from mock_servers import load_spec

        last_of_each = [part.servers[-1].id for part in partition(load_spec(path), config.processes)]
        for server_id in last_of_each:
            anyio.run(_list_first_page, first["servers"][server_id])
        elapsed = time.perf_counter() - started
        memory = sum(_rss(pid) for pid in first["pids"])
        group.signal(signal.SIGINT)  # as Ctrl-C
        group.wait_group(30)
    return elapsed, memory


def run_serve_scale(smoke: bool = False) -> list[Table]:
    configs = SMOKE if smoke else FULL
    repeats = 1 if smoke else 2
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        folder = Path(tmp)
        # One one-tool server per process: what serving costs before any tool.
        baseline = {p: _start(Config(p, 1, p), folder)[1] for p in sorted({c.processes for c in configs})}
        results: dict[Config, tuple[Sample, int]] = {}
        for config in configs:
            print(f"  {config.label} …", flush=True)
            runs = [_start(config, folder) for _ in range(repeats)]
            results[config] = (Sample(tuple(r[0] for r in runs)), max(r[1] for r in runs))
    return [_table(results, baseline, repeats, smoke)]


def _table(results: dict[Config, tuple[Sample, int]], baseline: dict[int, int], repeats: int, smoke: bool) -> Table:
    table = Table(
        "One `mcp-fleet serve`: servers × tools, start time and memory",
        ["fleet", "tools", "start until served", "memory of the process tree", "memory per tool"],
    )
    for config, (start, memory) in results.items():
        tools = config.servers * config.tools
        per_tool = (memory - baseline[config.processes]) / tools
        table.rows.append(
            [config.label, f"{tools:,}", start.show(), f"{memory / 2**20:,.0f} MiB", f"{per_tool / 1024:.1f} KiB"]
        )
    servers, tools, processes = GOAL
    goal = results.get(Config(servers, tools, processes))
    if goal is not None:
        start, memory = goal
        met = start.median <= GOAL_SECONDS and memory <= GOAL_BYTES
        table.notes.append(
            f"Goal: {servers:,} servers × {tools} tools from one command on two cores (`--processes {processes}`), "
            f"started in ≤ {GOAL_SECONDS:.0f} s and under 1 GiB in all: {'met' if met else 'not met'} "
            f"({fmt_seconds(start.median)}, {memory / 2**20:,.0f} MiB)."
        )
    elif smoke:
        table.notes.append("Smoke run: small fleets only; the goal row is measured by the full run.")
    table.notes.append(
        f"{repeats} repeat{'s' if repeats > 1 else ''} per fleet; memory is the largest resident set seen. "
        "Start time runs from spawning `mcp-fleet serve SPEC --processes N` until its endpoint list is printed and "
        "the last server of each process has answered `tools/list`; it is mostly generating every catalog and "
        "building each server's SDK models, which `--processes` spreads over the cores. Memory is the resident set "
        "of the command and its hosts at that point, and the cost per tool subtracts the same command serving a "
        f"one-tool server per process ({', '.join(_processes(p) + f': {b / 2**20:.0f} MiB' for p, b in baseline.items())}). "
        "The largest fleet a spec may describe is the limit of 100,000 tools (`mock_servers.LIMITS`)."
    )
    return table
