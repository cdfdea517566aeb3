"""``mcp-fleet``: show, serve and inspect mock MCP fleets.

Exit status: 0 on success (``serve`` stopped by SIGINT or SIGTERM included), 2 for an
invalid spec, command line or port, 1 for other failures, 130 when interrupted before
serving began, and 141 when the reader of the output went away (``… | head``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from importlib import resources
from typing import Any

import anyio

from mock_servers._control import SESSION_IDLE_SECONDS
from mock_servers._errors import FleetArgumentError, FleetError, LedgerError, SpecError
from mock_servers._generate import generate_tools
from mock_servers._ledger import read_ledger
from mock_servers._spec import FleetSpec
from mock_servers._spec_reader import preset_names, resolve_spec, spec_from_text

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
    serve.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1, for stable URLs (default: any free port)"
    )
    serve.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="spread the servers over N processes (with --port P, process i listens on P+i)",
    )
    _session_idle_option(serve)

    stdio = sub.add_parser("stdio", help="serve one server of a fleet on stdin/stdout")
    stdio.add_argument("spec", metavar="SPEC|PRESET", help=spec_help)
    server = stdio.add_mutually_exclusive_group(required=True)
    server.add_argument("--server-id", dest="server", metavar="ID", help="the server id")
    server.add_argument("--server", dest="server", metavar="ID", help="the same (mcp-inspector takes --server)")
    stdio.add_argument("--ledger", metavar="PATH", help="append events to this JSON-lines file")

    ledger = sub.add_parser("ledger", help="summarise a ledger file")
    ledger.add_argument("file", metavar="FILE")
    ledger.add_argument("--events", action="store_true", help="also print every event")

    sub.add_parser("schema", help="print the JSON Schema of fleet spec files")

    from mock_servers._clients import CLIENTS, DEFAULT_PORT, INSPECTOR

    config = sub.add_parser("config", help="print a client's configuration for a fleet (VS Code, Claude, …)")
    config.add_argument("spec", metavar="SPEC|PRESET", help=spec_help)
    config.add_argument(
        "--for",
        dest="client",
        required=True,
        choices=CLIENTS,
        help=f"the client; inspector is the MCP Inspector 2.0 or later ({INSPECTOR}; older ones cannot read its HTTP entries)",
    )
    config.add_argument("--transport", choices=("http", "stdio"), help="default: http, stdio for claude")
    config.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port of `serve --port` (default {DEFAULT_PORT})"
    )
    config.add_argument("--processes", type=int, default=1, metavar="N", help="as given to `serve --processes`")
    config.add_argument("--ledger", metavar="PATH", help="stdio: where the servers record")

    host = sub.add_parser("host", help="a long-lived fleet host driven over HTTP (used by FleetHost)")
    host.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    host.add_argument("--forkserver", metavar="PATH", help="also fork a fork server for stdio servers, on this socket")
    forkserver = sub.add_parser(
        "forkserver", help="a fork server for stdio servers on a Unix socket (used by ForkServer)"
    )
    forkserver.add_argument("path", metavar="PATH", help="the socket to listen on")
    _session_idle_option(host)
    from mock_servers._capture import add_parser as add_capture_parser

    add_capture_parser(sub)
    return parser


def _session_idle_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session-idle",
        type=float,
        default=SESSION_IDLE_SECONDS,
        metavar="SECONDS",
        help=f"close legacy-era HTTP sessions idle this long (default {SESSION_IDLE_SECONDS:g})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`mcp-fleet show … | head`): stop quietly, as cat and grep do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
        return exc.code if isinstance(exc.code, int) else 2


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    command = f"mcp-fleet {args.command}"
    try:
        if args.command == "show":
            return _show(_load(args.spec), tools=args.tools, as_json=args.json)
        if args.command == "serve":
            return _serve(args)
        if args.command == "stdio":
            return _stdio(_load(args.spec), args.server, args.ledger)
        if args.command == "ledger":
            return _ledger(args.file, events=args.events)
        if args.command == "capture":
            from mock_servers._capture import capture_command

            return capture_command(args)
        if args.command == "schema":
            print(resources.files("mock_servers").joinpath("fleet-spec.schema.json").read_text(encoding="utf-8"))
            return 0
        if args.command == "config":
            return _config(args)
        if args.command == "forkserver":
            from mock_servers._forkserver import serve

            serve(args.path, main)
            return 0
        from mock_servers._http import host_main

        _check_idle(args.session_idle)
        if args.forkserver is None:
            anyio.run(host_main, args.port, args.session_idle)
            return 0
        from mock_servers._forkserver import end_beside, fork_beside

        # Forked before the event loop runs, with the SDK already imported for the host.
        forkserver = fork_beside(args.forkserver, main)
        try:
            anyio.run(host_main, args.port, args.session_idle, forkserver[0])
        finally:
            end_beside(*forkserver)
        return 0
    except SpecError as exc:
        for line in str(exc).splitlines():
            print(f"mcp-fleet: invalid spec: {line}", file=sys.stderr)
        return 2
    except (FleetArgumentError, LedgerError) as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    except FleetError as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _load(source: str) -> FleetSpec:
    if source.lstrip().startswith("{"):
        return spec_from_text(source, source="<inline>")
    return resolve_spec(source)


def _check_idle(seconds: float) -> None:
    if not 0 < seconds < float("inf"):
        raise FleetArgumentError(f"--session-idle must be a positive number of seconds, got {seconds!r}")


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


def _serve(args: argparse.Namespace) -> int:
    from mock_servers._serve import serve, stop_on_signals

    source = args.preset or args.spec
    if not source:
        print("mcp-fleet serve: give a SPEC or --preset NAME", file=sys.stderr)
        return 2
    if args.preset is not None and args.preset not in preset_names():
        raise FleetArgumentError(f"--preset: no preset named {args.preset!r:.80}; presets: {', '.join(preset_names())}")
    _check_idle(args.session_idle)
    with stop_on_signals():  # a signal while the spec is read still ends the process cleanly
        spec = _load(source)
    serve(
        spec,
        ledger_path=args.ledger,
        port=args.port,
        processes=args.processes,
        session_idle_seconds=args.session_idle,
        out=sys.stdout,
    )
    return 0


def _stdio(spec: FleetSpec, server_id: str, ledger_path: str | None) -> int:
    from mock_servers._stdio import run_stdio

    try:
        server = spec.server(server_id)
    except KeyError:
        known = ", ".join(s.id for s in spec.servers)
        print(f"mcp-fleet stdio: no server {server_id!r} in this fleet (servers: {known})", file=sys.stderr)
        return 2
    run_stdio(server, ledger_path)


def _config(args: argparse.Namespace) -> int:
    from mock_servers._clients import client_config, usage_notes

    spec = _load(args.spec)
    source = None if args.spec.lstrip().startswith("{") else args.spec
    config = client_config(
        args.client,
        spec,
        source=source,
        transport=args.transport,
        port=args.port,
        processes=args.processes,
        ledger_path=args.ledger,
    )
    print(json.dumps(config, indent=2, ensure_ascii=False))
    if args.transport != "stdio" and args.client != "claude":
        processes = f" --processes {args.processes}" if args.processes > 1 else ""
        print(f"# start the servers with: mcp-fleet serve {args.spec} --port {args.port}{processes}", file=sys.stderr)
    for line in usage_notes(args.client, spec, file=f"{args.client}.json"):
        print(f"# {line}", file=sys.stderr)
    return 0


def _ledger(path: str, *, events: bool) -> int:
    if os.path.isdir(path):
        print(f"mcp-fleet ledger: {path} is a folder; give the ledger file in it", file=sys.stderr)
        return 2
    if not os.path.exists(path):
        print(f"mcp-fleet ledger: no such file: {path}", file=sys.stderr)
        return 2
    if not os.path.isfile(path):
        print(f"mcp-fleet ledger: {path} is not a regular file", file=sys.stderr)
        return 2
    try:
        view = read_ledger(path)
    except OSError as exc:
        print(f"mcp-fleet ledger: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 2
    for problem in view.problems:
        print(f"mcp-fleet ledger: {path}: skipped {problem}", file=sys.stderr)
    if view.skipped > len(view.problems):
        print(f"mcp-fleet ledger: {path}: skipped {view.skipped - len(view.problems)} more lines", file=sys.stderr)
    if view.skipped and not len(view):
        print(f"mcp-fleet ledger: {path} is not a ledger: no line of it is a ledger event", file=sys.stderr)
        return 2
    summary = view.summary()
    kinds = sorted({k for counts in summary.values() for k in counts})
    rows = [["server", *kinds]] + [[server, *(str(c.get(k, 0)) for k in kinds)] for server, c in summary.items()]
    if len(rows) > 1:
        _table(rows)
    print(f"\n{len(view)} events" + (f" ({view.skipped} lines skipped)" if view.skipped else ""))
    still_open = view.sessions_open()
    print(f"sessions still open: {len(still_open)}")
    alive = view.processes_alive()
    print(
        f"processes still alive: {len(alive)}" + (f" (pids {', '.join(str(e['pid']) for e in alive)})" if alive else "")
    )
    faults = view.faults()
    if faults:
        fired: dict[str, int] = {}
        for fault in faults:
            key = f"{fault['server']}:{fault.get('fault')}"
            fired[key] = fired.get(key, 0) + 1
        print("faults fired: " + ", ".join(f"{k} ×{n}" for k, n in fired.items()))
    if events:
        for e in view:
            extra: dict[str, Any] = {k: v for k, v in e.items() if k not in ("seq", "ts", "server", "pid", "event")}
            print(
                f"{e['pid']:>7} {e['server'] or '-':12} {e['event']:16} {json.dumps(extra, ensure_ascii=False)[:100]}"
            )
    return 0
