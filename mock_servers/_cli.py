"""``mcp-fleet``: show, serve and inspect mock MCP fleets.

Exit status: 0 on success, 2 for an invalid spec or command line, 1 for other failures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from mock_servers._errors import FleetError, SpecError
from mock_servers._generate import generate_tools
from mock_servers._ledger import Ledger, read_ledger
from mock_servers._spec import FleetSpec, preset_names, resolve_spec

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-fleet",
        description="Generated mock MCP servers over stdio and Streamable HTTP, with faults and a ledger.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    spec_help = f"a spec file (.json or .toml) or a preset: {', '.join(preset_names())}"

    show = sub.add_parser("show", help="print the servers and tools of a fleet")
    show.add_argument("spec", metavar="SPEC|PRESET", help=spec_help)
    show.add_argument("--tools", action="store_true", help="also list every tool")
    show.add_argument("--json", action="store_true", help="print the generated catalog as JSON")

    serve = sub.add_parser("serve", help="serve a fleet over Streamable HTTP until Ctrl-C or SIGTERM")
    serve.add_argument("spec", nargs="?", metavar="SPEC|PRESET", help=spec_help)
    serve.add_argument("--preset", help="a preset name (instead of SPEC)")
    serve.add_argument("--ledger", metavar="PATH", help="append events to this JSON-lines file")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")

    stdio = sub.add_parser("stdio", help="serve one server of a fleet on stdin/stdout")
    stdio.add_argument("spec", metavar="SPEC|PRESET", help=spec_help)
    stdio.add_argument("--server", required=True, metavar="ID", help="the server id")
    stdio.add_argument("--ledger", metavar="PATH", help="append events to this JSON-lines file")

    ledger = sub.add_parser("ledger", help="summarise a ledger file")
    ledger.add_argument("file", metavar="FILE")
    ledger.add_argument("--events", action="store_true", help="also print every event")

    sub.add_parser("host", help="a long-lived fleet host driven over HTTP (used by FleetHost)")
    from mock_servers._capture import add_parser as add_capture_parser

    add_capture_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "show":
            return _show(_load(args.spec), tools=args.tools, as_json=args.json)
        if args.command == "serve":
            source = args.preset or args.spec
            if not source:
                print("mcp-fleet serve: give a SPEC or --preset NAME", file=sys.stderr)
                return 2
            return _serve(_load(source), args.ledger, args.port)
        if args.command == "stdio":
            return _stdio(_load(args.spec), args.server, args.ledger)
        if args.command == "ledger":
            return _ledger(args.file, events=args.events)
        if args.command == "capture":
            from mock_servers._capture import capture_command

            return capture_command(args)
        from mock_servers._http import host_main

        anyio.run(host_main)
        return 0
    except SpecError as exc:
        print(f"mcp-fleet: invalid spec: {exc}", file=sys.stderr)
        return 2
    except FleetError as exc:
        print(f"mcp-fleet: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _load(source: str) -> FleetSpec:
    if source.lstrip().startswith("{"):
        from mock_servers._spec import spec_from_dict

        try:
            data = json.loads(source)
        except json.JSONDecodeError as exc:
            raise SpecError("<inline>", f"column {exc.colno}", "valid JSON", exc.msg) from None
        return spec_from_dict(data, source="<inline>")
    return resolve_spec(source)


def _show(spec: FleetSpec, *, tools: bool, as_json: bool) -> int:
    if as_json:
        catalogs = {s.id: generate_tools(s) for s in spec.servers}
        print(json.dumps(catalogs, indent=2, ensure_ascii=False))
        return 0
    rows = [("server", "domain", "tools", "pages", "readOnly", "writable", "none", "faults")]
    total = 0
    for server in spec.servers:
        catalog = generate_tools(server)
        total += len(catalog)
        marks = [
            t.get("annotations", {}).get("readOnlyHint", None) if "annotations" in t else "absent" for t in catalog
        ]
        pages = -(-len(catalog) // server.page_size) or 1
        faults = ",".join(server.faults.active()) + (" (raw)" if server.raw else "")
        rows.append(
            (
                server.id,
                server.domain,
                str(len(catalog)),
                f"{pages}×{server.page_size}",
                str(sum(m is True for m in marks)),
                str(sum(m is False for m in marks)),
                str(sum(m == "absent" for m in marks)),
                faults or "-",
            )
        )
    _table(rows)
    print(f"\n{len(spec.servers)} servers, {total} tools, seed {spec.seed}")
    if tools:
        for server in spec.servers:
            print(f"\n{server.id}:")
            for tool in generate_tools(server):
                ann = tool.get("annotations")
                mark = "-" if ann is None else f"readOnly={json.dumps(ann.get('readOnlyHint'))}"
                print(f"  {tool.get('name', '<no name>')!s:40.40} {mark:16} {tool.get('description', '')[:60]}")
    return 0


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _serve(spec: FleetSpec, ledger_path: str | None, port: int) -> int:
    anyio.run(_serve_async, spec, ledger_path, port)
    return 0


async def _serve_async(spec: FleetSpec, ledger_path: str | None, port: int) -> None:
    from mock_servers._http import run_host

    ledger = Ledger(ledger_path, transport="http")
    ledger.record("process_started", None, argv=["serve"])
    reason = "stopped"
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with run_host(port) as app:
            urls = await app.add_fleet(spec, ledger, name="fleet")
            print(json.dumps({"fleet": urls.fleet, "pid": os.getpid(), "servers": dict(urls)}), flush=True)
            print(f"Serving {len(urls)} MCP servers over Streamable HTTP (Ctrl-C to stop):")
            width = max(len(s) for s in urls)
            for server_id, url in urls.items():
                print(f"  {server_id.ljust(width)}  {url}")
            sys.stdout.flush()
            async for signum in signals:
                reason = signal.Signals(signum).name
                break
    ledger.record("process_exit", None, code=0, reason=reason)


def _stdio(spec: FleetSpec, server_id: str, ledger_path: str | None) -> int:
    from mock_servers._stdio import run_stdio

    try:
        server = spec.server(server_id)
    except KeyError:
        known = ", ".join(s.id for s in spec.servers)
        print(f"mcp-fleet stdio: no server {server_id!r} in this fleet (servers: {known})", file=sys.stderr)
        return 2
    run_stdio(server, ledger_path)


def _ledger(path: str, *, events: bool) -> int:
    if not os.path.exists(path):
        print(f"mcp-fleet ledger: no such file: {path}", file=sys.stderr)
        return 2
    view = read_ledger(path)
    summary = view.summary()
    kinds = sorted({k for counts in summary.values() for k in counts})
    rows = [["server", *kinds]] + [[server, *(str(c.get(k, 0)) for k in kinds)] for server, c in summary.items()]
    if len(rows) > 1:
        _table(rows)
    print(f"\n{len(view)} events")
    still_open = view.sessions_open()
    print(f"sessions still open: {len(still_open)}")
    alive = view.processes_alive()
    print(
        f"processes still alive: {len(alive)}" + (f" (pids {', '.join(str(e['pid']) for e in alive)})" if alive else "")
    )
    faults = view.faults()
    if faults:
        fired: dict[str, int] = {}
        for e in faults:
            key = f"{e['server']}:{e['fault']}"
            fired[key] = fired.get(key, 0) + 1
        print("faults fired: " + ", ".join(f"{k} ×{n}" for k, n in fired.items()))
    if events:
        for e in view:
            extra: dict[str, Any] = {k: v for k, v in e.items() if k not in ("seq", "ts", "server", "pid", "event")}
            print(
                f"{e['pid']:>7} {e['server'] or '-':12} {e['event']:16} {json.dumps(extra, ensure_ascii=False)[:100]}"
            )
    return 0
