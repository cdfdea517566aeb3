"""Drive MCP client libraries nobody here wrote against the mock fleet, and report from its ledger.

    python examples/real-hosts/run.py [--clients fastmcp,langchain,mcp-use,typescript]
                                      [--presets seed-example,adversarial] [--transports http,stdio]
                                      [--scenarios presets,list-changed]

Each library gets its own virtual environment (or npm project) under the cache directory
(``$XDG_CACHE_HOME/mcp-fleet-real-hosts``, or ``--cache DIR``), created on the first run
(a few minutes) and reused afterwards. For every library, preset and transport a fresh
fleet is served (the ``mcp_fleet`` machinery: one fleet host for HTTP, stdio servers
spawned by the library itself), a small script in ``clients/`` visits each server the way
the library's documentation does (connect, list the tools, call the last tool of the
catalog with valid arguments, close), one server at a time with a deadline per server, and
the ledger tells what really reached the servers: which ``tools/list`` pages were asked
for, which sessions were closed, which calls arrived, which faults fired. The results are
printed as Markdown tables (``--out FILE`` also writes them to a file).

The ``list-changed`` scenario serves one live catalog: as it answers its first call the
server removes ``gone``, adds ``fresh`` and sends ``notifications/tools/list_changed``. Each
library lists the tools, calls ``keep``, is left two seconds to act on the notification,
then calls ``gone`` as it offers it; the ledger tells whether the notification was sent on an
open connection or stream, whether the library listed the tools again, and
whether the call of the removed tool reached the server.

Needs ``mock_servers`` importable by this interpreter (``pip install -e .`` at the root of
the repository), ``python3.11`` or newer for the client environments, and Node 20 with npm
for the TypeScript SDK.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mock_servers import (
    CatalogChange,
    FleetFactory,
    FleetHost,
    FleetSpec,
    ServedFleet,
    ServerSpec,
    ToolSpec,
    example_arguments,
    preset,
    wait_for_exits,
)

HERE = Path(__file__).resolve().parent
CLIENTS_DIR = HERE / "clients"


@dataclass(frozen=True)
class Library:
    key: str
    package: str  # what pip or npm installs, pinned so that the results can be reproduced
    script: str
    node: bool = False


LIBRARIES = {
    lib.key: lib
    for lib in (
        Library("fastmcp", "fastmcp==4.2.3", "fastmcp_client.py"),
        Library("langchain", "langchain-mcp-adapters==0.3.2", "langchain_client.py"),
        Library("mcp-use", "mcp-use==1.7.1", "mcp_use_client.py"),
        Library("typescript", "@modelcontextprotocol/sdk@1.32.2", "typescript_client.mjs", node=True),
    )
}


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Environments


def environment(lib: Library, cache: Path, python: str) -> list[str]:
    """The command that runs the library's client script, installing the library first if needed."""
    if lib.node:
        project = cache / "node-typescript"
        project.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json", lib.script):
            shutil.copy(CLIENTS_DIR / name, project / name)
        if not (project / "node_modules" / "@modelcontextprotocol" / "sdk").exists():
            say(f"installing {lib.package} with npm into {project} ...")
            npm = shutil.which("npm") or "npm"
            subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=project, check=True)
        return [shutil.which("node") or "node", str(project / lib.script)]
    name = lib.package.split("==")[0]
    venv = cache / f"venv-{name}"
    interpreter = venv / "bin" / "python"
    installed = (
        subprocess.run([str(interpreter), "-m", "pip", "show", name], capture_output=True, text=True, check=False)
        if interpreter.exists()
        else None
    )
    if installed is None or f"Version: {lib.package.split('==')[1]}" not in installed.stdout:
        say(f"installing {lib.package} into {venv} (a few minutes the first time) ...")
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(interpreter), "-m", "pip", "install", "--quiet", lib.package], check=True)
    return [str(interpreter), str(CLIENTS_DIR / lib.script)]


# ---------------------------------------------------------------------------------------------
# One run: a library against a fleet


def plan_for(fleet: ServedFleet, timeout: float) -> dict[str, Any]:
    calls = {}
    for server_id, tools in fleet.tools.items():
        named = [t for t in tools if isinstance(t.get("name"), str) and t["name"]]
        if named:
            # The last tool sits on the last page: a client that read one page cannot call it.
            calls[server_id] = {"tool": named[-1]["name"], "arguments": example_arguments(named[-1])}
    return {"servers": fleet.servers, "calls": calls, "timeout": timeout}


def run_client(
    command: list[str], plan: dict[str, Any], workdir: Path, limit: float
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Run a client script; returns (library line, server lines, what went wrong with the process)."""
    plan_path = workdir / "plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    env = {**os.environ, "MCP_USE_ANONYMIZED_TELEMETRY": "false"}
    process = subprocess.Popen(
        [*command, str(plan_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    problem = ""
    try:
        out, err = process.communicate(timeout=limit)
        if process.returncode != 0:
            problem = f"exited with status {process.returncode}: {err.strip().splitlines()[-1] if err.strip() else ''}"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        problem = f"hung: killed after {limit:g} s"
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    head = lines[0] if lines and "library" in lines[0] else {"library": command[-1], "version": "?"}
    return head, [line for line in lines if "server" in line], problem


@dataclass
class Row:
    library: str
    preset: str
    transport: str
    process: str
    servers: list[dict[str, Any]]  # one per server: what the client said and what the ledger saw


def observe(fleet: ServedFleet, said: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join what the client reported with what the ledger recorded, server by server."""
    if fleet.transport == "stdio":
        wait_for_exits(fleet.ledger_path, 5.0)
    view = fleet.ledger
    by_server = {entry["server"]: entry for entry in said}
    out = []
    for server in fleet.spec.servers:
        sid = server.id
        tools = fleet.tools[sid]
        opened = view.of("session_opened", sid)
        out.append(
            {
                "server": sid,
                "faults": sorted({e["fault"] for e in view.faults(sid)}),
                "served": len(tools),
                "hints": {
                    t["name"]: t.get("annotations", {}).get("readOnlyHint") for t in reversed(tools) if "name" in t
                },
                "pages": fleet.page_count(sid),
                "pages_listed": sorted(set(view.listed_pages(sid))),
                "sessions": len(opened),
                "left_open": len(fleet.sessions_left_open(sid)),
                "killed": sum(e.get("reason") in ("SIGTERM", "SIGKILL") for e in view.of("process_exit", sid)),
                "calls": len(view.calls(sid)),
                "said": by_server.get(sid),
            }
        )
    return out


def one_run(lib: Library, command: list[str], preset_name: str, transport: str, host: FleetHost, timeout: float) -> Row:
    with tempfile.TemporaryDirectory(prefix="real-hosts-") as tmp:
        workdir = Path(tmp)
        factory = FleetFactory(workdir, lambda: host)
        fleet = factory(preset_name, transport=transport)  # type: ignore[arg-type]
        plan = plan_for(fleet, timeout)
        say(f"{lib.key} × {preset_name} over {transport}: {len(fleet.servers)} servers ...")
        head, said, problem = run_client(command, plan, workdir, limit=timeout * len(fleet.servers) + 120)
        servers = observe(fleet, said)
        factory.close()  # stops whatever the library left running
    name = f"{head['library']} {head['version']}"
    return Row(name, preset_name, transport, problem or "finished", servers)


# ---------------------------------------------------------------------------------------------
# The list-changed scenario: a live catalog


def _tool(name: str, description: str) -> ToolSpec:
    return ToolSpec(name=name, description=description, annotations={"readOnlyHint": True})


LIVE = FleetSpec(
    servers=(
        ServerSpec(
            id="docs",
            tool_count=0,
            list_changed=True,
            tools=(
                _tool("keep", "A tool that stays."),
                _tool("gone", "A tool the server removes after its first call."),
            ),
            changes=(CatalogChange(after_calls=1, remove=("gone",), add=(_tool("fresh", "A tool the server adds."),)),),
        ),
    )
)
#: Seconds a library is left to act on the notification before the removed tool is called.
SETTLE = 2.0


@dataclass
class LiveRow:
    library: str
    transport: str
    process: str
    seen: dict[str, Any]


def observe_live(fleet: ServedFleet, said: list[dict[str, Any]]) -> dict[str, Any]:
    """What the ledger shows of one library against the live catalog."""
    if fleet.transport == "stdio":
        wait_for_exits(fleet.ledger_path, 5.0)
    view = fleet.ledger
    sent = view.notifications("docs")
    removed = view.calls("docs", "gone")
    before = removed[0]["ts"] if removed else float("inf")
    relisted = [e for e in view.of("tools_listed", "docs") if e.get("catalog", 0) >= 1 and e["ts"] < before]
    entry = said[0] if said else {}
    return {
        "heard": sum(e.get("connections", 0) + e.get("streams", 0) for e in sent),
        "sent": len(sent),
        "relisted": len(relisted),
        "removed_calls": [{"unknown": bool(e.get("unknown")), "isError": e.get("isError")} for e in removed],
        "processes": len(view.of("process_started", "docs")),
        "sessions": len(view.of("session_opened", "docs")),
        "listed": entry.get("listed"),
        "outcome": (entry.get("call") or {}).get("outcome") or entry.get("error") or "-",
        # The order of what happened, for the JSON report: what each listing followed.
        "trace": [
            " ".join(str(x) for x in (e["event"], e.get("name") or e.get("catalog") or "") if x != "")
            for e in view
            if e["server"] == "docs" and e["event"] in ("tool_called", "tools_listed", "list_changed", "session_opened")
        ],
    }


def one_live_run(lib: Library, command: list[str], transport: str, host: FleetHost, timeout: float) -> LiveRow:
    with tempfile.TemporaryDirectory(prefix="real-hosts-") as tmp:
        workdir = Path(tmp)
        factory = FleetFactory(workdir, lambda: host)
        fleet = factory(LIVE, transport=transport)  # type: ignore[arg-type]
        plan = {
            "scenario": "list-changed",
            "servers": fleet.servers,
            "keep": "keep",
            "gone": "gone",
            "settle": SETTLE,
            # Starting a stdio server and a library's first session take seconds on a busy machine.
            "timeout": 3 * timeout + SETTLE,
        }
        say(f"{lib.key} × list-changed over {transport} ...")
        head, said, problem = run_client(command, plan, workdir, limit=3 * timeout + SETTLE + 120)
        seen = observe_live(fleet, said)
        factory.close()
    return LiveRow(f"{head['library']} {head['version']}", transport, problem or "finished", seen)


def live_table(rows: Sequence[LiveRow]) -> list[str]:
    lines = [
        "| library | transport | notification sent to | listed again before calling `gone` | the call of the removed tool "
        "| what the library returned | sessions / processes | process |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seen = row.seen
        reached = (
            f"{seen['heard']} connection(s) or stream(s)" if seen["heard"] else "no connection or stream to send it to"
        )
        again = f"yes, {seen['relisted']} page(s)" if seen["relisted"] else "no"
        calls = seen["removed_calls"]
        if not calls:
            removed = "never reached the server"
        elif all(c["unknown"] for c in calls):
            removed = "reached the server, which no longer has it"
        else:
            removed = "ran: a new server process, whose catalog had not changed"
        outcome = str(seen["outcome"]).replace("|", "\\|")[:90]
        lines.append(
            f"| {row.library} | {row.transport} | {reached} | {again} | {removed} | {outcome} "
            f"| {seen['sessions']} / {seen['processes']} | {row.process} |"
        )
    return lines


# ---------------------------------------------------------------------------------------------
# Report


def lenient(seen: dict[str, Any]) -> list[str]:
    """Tools the library took as read-only although their ``readOnlyHint`` is not the JSON ``true``."""
    said = seen["said"] or {}
    return [name for name in said.get("read_only") or [] if seen["hints"].get(name) is not True]


def summary_table(rows: Sequence[Row]) -> list[str]:
    lines = [
        "| library | preset | transport | tools listed / served | servers fully paged | sessions closed / opened "
        "| calls reaching the servers | servers with faults fired | servers given up on (error or timeout) "
        "| read-only by a non-boolean hint | process |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        servers = row.servers
        listed = sum((s["said"] or {}).get("listed") or 0 for s in servers)
        served = sum(s["served"] for s in servers)
        multi = [s for s in servers if s["pages"] > 1]
        paged = sum(s["pages_listed"] == list(range(s["pages"])) for s in multi)
        opened = sum(s["sessions"] for s in servers)
        left = sum(s["left_open"] for s in servers)
        faults = sum(bool(s["faults"]) for s in servers)
        failed = sum(bool((s["said"] or {}).get("error")) or s["said"] is None for s in servers)
        sessions = f"{opened - left} / {opened}" if opened else "no session trace"
        coerced = sum(len(lenient(s)) for s in servers)
        lines.append(
            f"| {row.library} | {row.preset} | {row.transport} | {listed} / {served} | {paged} of {len(multi)} "
            f"| {sessions} | {sum(s['calls'] for s in servers)} | {faults} | {failed} of {len(servers)} | {coerced} "
            f"| {row.process} |"
        )
    return lines


def detail_table(rows: Sequence[Row], preset_name: str, transport: str) -> list[str]:
    chosen = [r for r in rows if r.preset == preset_name and r.transport == transport]
    if not chosen:
        return []
    lines = [
        f"What each library did with each server of `{preset_name}` over {transport} "
        "(tools listed / served; the planned call; the error it reported):",
        "",
        "| server | faults fired | " + " | ".join(r.library for r in chosen) + " |",
        "|---|---|" + "---|" * len(chosen),
    ]
    for index, server in enumerate(chosen[0].servers):
        cells = []
        for row in chosen:
            seen = row.servers[index]
            said = seen["said"] or {}
            call = (said.get("call") or {}).get("outcome", "-")
            error = said.get("error")
            listed = said.get("listed")
            cell = f"{listed if listed is not None else '-'}/{seen['served']}, call: {call}"
            if lenient(seen):
                cell += f", {len(lenient(seen))} taken as read-only on a non-boolean hint"
            if error:
                # Paths of this checkout say nothing about the library, and differ on every machine.
                error = error.replace(f"{HERE.parents[1]}/", "")
                cell += f", error: {error[:90]}"
            elif not said:
                cell += ", never reached"
            cells.append(cell.replace("|", "\\|"))
        lines.append(f"| {server['server']} | {', '.join(server['faults']) or '-'} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default=",".join(LIBRARIES), help=f"comma-separated, of {', '.join(LIBRARIES)}")
    parser.add_argument("--presets", default="seed-example,adversarial")
    parser.add_argument("--transports", default="http,stdio")
    parser.add_argument("--scenarios", default="presets,list-changed", help="presets, list-changed, or both")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a library gets per server (default 10)")
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    parser.add_argument("--cache", type=Path, default=cache_home / "mcp-fleet-real-hosts")
    parser.add_argument("--python", default=shutil.which("python3.11") or sys.executable, help="creates the venvs")
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    args = parser.parse_args(argv)
    chosen = [LIBRARIES[key] for key in args.clients.split(",")]
    presets = args.presets.split(",")
    transports = args.transports.split(",")
    for name in presets:
        preset(name)  # an unknown preset fails here, before any install
    scenarios = args.scenarios.split(",")
    commands = {lib.key: environment(lib, args.cache, args.python) for lib in chosen}
    rows: list[Row] = []
    live: list[LiveRow] = []
    with FleetHost.start() as host:
        for lib in chosen:
            for transport in transports:
                if "presets" in scenarios:
                    for preset_name in presets:
                        rows.append(one_run(lib, commands[lib.key], preset_name, transport, host, args.timeout))
                if "list-changed" in scenarios:
                    live.append(one_live_run(lib, commands[lib.key], transport, host, args.timeout))
    report = summary_table(rows) if rows else []
    for preset_name in presets if rows else ():
        for transport in transports:
            if preset_name != "seed-example":
                report += ["", *detail_table(rows, preset_name, transport)]
    if live:
        report += ["", "A live catalog (`list-changed`): after the first call the server removes `gone`:", ""]
        report += live_table(live)
    text = "\n".join(report) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        records = [r.__dict__ for r in rows] + [r.__dict__ for r in live]
        (args.out.with_suffix(".json")).write_text(json.dumps(records, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
