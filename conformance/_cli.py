"""``mcp-conformance``: certify an implementation, and keep the clause manifest.

``mcp-conformance certify`` runs the shipped suite under pytest (its own output is the
progress), collects a structured result per test through the plugin's
``--conformance-report`` option, and writes ``certificate.json``, ``certificate.md`` and
``certificate.html``. Exit codes: 0 every clause of the profiles under test passes (SHOULD
failures are warnings), 1 non-conformant or a stale expectation, 2 the suite or its
configuration broke, nothing ran, or a testable clause has no test yet.

``mcp-conformance manifest`` prints (``--write``: rewrites, ``--check``: compares)
``conformance/manifest.json``, the clause manifest generated from SPEC.md and the suite.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from conformance._errors import ConformanceError

__all__ = ["main"]

PROG: Final = "mcp-conformance"
EXIT_BROKEN: Final = 2
PYTEST_EXITS: Final = {
    2: "interrupted",
    3: "internal error",
    4: "usage error, or the system under test did not start (see the message above)",
    5: "no test was collected",
}
NO_SHRINK_ENV: Final = "MCP_CONFORMANCE_NO_SHRINK"


class _Parser(argparse.ArgumentParser):
    """argparse, but every error is one line naming the command, and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_BROKEN)


def _certify_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} certify",
        description="Run the conformance suite against an implementation and write its certificate.",
        epilog=(
            "Arguments after -- go to pytest unchanged, e.g. -- --junitxml=report.xml -k first_round. "
            "Exit codes: 0 conformant (SHOULD failures are warnings) or a partial run that passed; "
            "1 non-conformant or a stale expectation; 2 the suite or configuration broke, nothing ran, "
            "or a testable clause has no test yet."
        ),
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--sut", metavar="SPEC", help="MODULE:FACTORY of a Python adapter, or 'reference'")
    target.add_argument("--sut-cmd", metavar="COMMAND", help="the command that starts your driver, or 'reference'")
    parser.add_argument(
        "--profile", choices=("core", "lexical", "all"), help="profiles to test (default: those the SUT claims)"
    )
    parser.add_argument(
        "--out", default="certificate", metavar="DIR", help="where the certificate goes (default: %(default)s)"
    )
    parser.add_argument(
        "--expectations", metavar="FILE", help="TOML file of known failures by clause, each with a reason"
    )
    parser.add_argument(
        "--mode",
        choices=("certify", "regression"),
        default="certify",
        help="certify (default): no expected failure on a MUST clause is accepted; "
        "regression: listed failures are accepted and listed failures that pass fail the run",
    )
    parser.add_argument("-n", dest="workers", metavar="N", help="run the suite in N processes (pytest-xdist)")
    parser.add_argument("--sut-timeout", metavar="SECONDS", help="seconds each call to the SUT may take")
    parser.add_argument(
        "--clause", action="append", default=[], metavar="ID", help="run only the tests citing this clause (repeatable)"
    )
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="report the first failing example of a property without shrinking it (faster, larger cases)",
    )
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return EXIT_BROKEN


def certify(argv: Sequence[str]) -> int:
    argv = list(argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    args = _certify_parser().parse_args(argv)

    from conformance._certificate import RunInfo, build_certificate, read_results, write_certificate
    from conformance._expectations import Expectation, load_expectations, refuse_must_entries
    from conformance._loading import driver_argv

    if args.sut_cmd is not None:
        driver_argv(args.sut_cmd)  # a UsageError for empty or badly quoted commands
    elif not args.sut.strip():
        return _fail("--sut is empty; give MODULE:FACTORY or 'reference'")
    if args.sut_timeout is not None:
        try:
            timeout = float(args.sut_timeout)
        except ValueError:
            timeout = math.nan
        if not (math.isfinite(timeout) and timeout > 0):
            return _fail(f"--sut-timeout must be a positive number of seconds, got {args.sut_timeout!r}")
    if args.workers is not None:
        if importlib.util.find_spec("xdist") is None:
            return _fail("-n needs pytest-xdist: pip install pytest-xdist")
        if args.workers != "auto" and not (args.workers.isdigit() and int(args.workers) > 0):
            return _fail(f"-n expects a number of processes or 'auto', got {args.workers!r}")
    expectations: tuple[Expectation, ...] = ()
    if args.expectations is not None:
        path = Path(args.expectations)
        expectations = load_expectations(path)
        if args.mode == "certify":
            refuse_must_entries(path, expectations)

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for stale in [*out.glob("certificate.*"), *out.glob("results.jsonl*")]:
            stale.unlink()
    except OSError as exc:
        return _fail(f"--out {args.out}: cannot prepare the output directory: {exc}")
    report = out / "results.jsonl"
    examples = out / "examples"

    sut_option, sut_value = ("--sut", args.sut) if args.sut is not None else ("--sut-cmd", args.sut_cmd)
    # Option values go as --option=value: pytest picks its rootdir (and so the ini file and
    # the node ids) from any argument that names an existing path, option values included.
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"{sut_option}={sut_value}"]
    if args.profile:
        command.append(f"--profile={args.profile}")
    if args.sut_timeout:
        command.append(f"--sut-timeout={args.sut_timeout}")
    if args.workers:
        command += ["-p", "xdist", f"--numprocesses={args.workers}"]
    command += [f"--clause={clause_id}" for clause_id in args.clause]
    command += [f"--conformance-report={report}", f"--conformance-examples={examples}", *extra]
    extra_env = {NO_SHRINK_ENV: "1"} if args.no_shrink else {}

    sys.stdout.write(f"{PROG}: running the suite: {shlex.join(command)}\n")
    sys.stdout.flush()
    try:
        completed = subprocess.run(command, check=False, stdin=subprocess.DEVNULL, env={**os.environ, **extra_env})
    except KeyboardInterrupt:
        return _fail("interrupted; no certificate written")
    except OSError as exc:
        return _fail(f"cannot run pytest: {exc}")

    session, tests = read_results(out.glob("results.jsonl*"))
    if completed.returncode not in (0, 1) and not tests:
        what = PYTEST_EXITS.get(completed.returncode, f"exit code {completed.returncode}")
        return _fail(f"the suite did not run (pytest: {what}); no certificate written")

    run = RunInfo(
        command=shlex.join([PROG, "certify", *argv, *(["--", *extra] if extra else [])]),
        pytest_argv=command,
        pytest_exit=completed.returncode,
        sut_option=sut_option,
        sut_value=sut_value,
        profile=args.profile,
        timeout=args.sut_timeout,
        mode=args.mode,
        expectations_file=args.expectations,
        examples_dir=examples,
        cwd=Path.cwd(),
        timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        python=sys.executable,
        extra_env=extra_env,
    )
    cert = build_certificate(run, session, tests, expectations)
    if completed.returncode not in (0, 1) and cert["exit_code"] != 1:
        what = PYTEST_EXITS.get(completed.returncode, f"exit code {completed.returncode}")
        cert["verdict"], cert["exit_code"] = "error", EXIT_BROKEN
        cert["why"] = [f"the run broke off (pytest: {what})", *cert["why"]]
    try:
        paths = write_certificate(cert, out)
    except OSError as exc:
        return _fail(f"cannot write the certificate into {out}: {exc}")
    _summary(cert, paths)
    return int(cert["exit_code"])


def _summary(cert: dict[str, object], paths: Sequence[Path]) -> None:
    lines = [f"{PROG}: verdict: {cert['verdict']} (exit {cert['exit_code']})"]
    why = cert.get("why")
    if isinstance(why, list):
        lines += [f"{PROG}:   {line}" for line in why]
    failures = cert.get("failures")
    if isinstance(failures, list):
        for failure in failures[:10]:
            clauses = ", ".join(failure["clauses"]) or "driver protocol"
            mark = " (expected)" if failure["expected_failure"] else ""
            lines.append(f"{PROG}:   {clauses}{mark}: {failure['message']}")
            lines.append(f"{PROG}:     replay: {failure['replay']}")
    lines.append(f"{PROG}: certificate: {', '.join(str(p) for p in paths)}")
    sys.stdout.write("\n".join(lines) + "\n")


def manifest_command(argv: Sequence[str]) -> int:
    parser = _Parser(
        prog=f"{PROG} manifest",
        description="Print the clause manifest generated from SPEC.md and the suite.",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="rewrite conformance/manifest.json")
    action.add_argument("--check", action="store_true", help="exit 1 when conformance/manifest.json is out of date")
    args = parser.parse_args(list(argv))
    from conformance._manifest import MANIFEST_PATH, render_manifest

    text = render_manifest()
    if args.write:
        MANIFEST_PATH.write_text(text, encoding="utf-8")
        sys.stdout.write(f"{PROG}: wrote {MANIFEST_PATH}\n")
        return 0
    if args.check:
        current = MANIFEST_PATH.read_text(encoding="utf-8") if MANIFEST_PATH.exists() else ""
        if current != text:
            sys.stderr.write(f"{PROG}: {MANIFEST_PATH} is out of date; run: {PROG} manifest --write\n")
            return 1
        sys.stdout.write(f"{PROG}: {MANIFEST_PATH} is up to date\n")
        return 0
    sys.stdout.write(text)
    return 0


def _protocol_command(argv: Sequence[str]) -> int:
    from conformance._protocol import command

    return command(argv)


USAGE: Final = f"""usage: {PROG} COMMAND [OPTIONS]

commands:
  certify   run the suite against an implementation and write its certificate
            ({PROG} certify --help)
  manifest  print, --write or --check conformance/manifest.json
  protocol  where the driver protocol is written; --schema [METHOD] prints its JSON Schemas
"""


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        raise SystemExit(0)
    commands = {"certify": certify, "manifest": manifest_command, "protocol": _protocol_command}
    if not args or args[0] not in commands:
        sys.stderr.write(USAGE)
        if args:
            sys.stderr.write(f"{PROG}: error: unknown command {args[0]!r}\n")
        raise SystemExit(EXIT_BROKEN)
    try:
        code = commands[args[0]](args[1:])
    except ConformanceError as exc:
        code = _fail(str(exc))
    raise SystemExit(code)


if __name__ == "__main__":
    main()
