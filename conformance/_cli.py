"""``mcp-conformance``: certify an implementation, replay a failure, keep the clause manifest.

``certify`` runs the shipped suite in a pytest of its own (:mod:`conformance._runner`),
shows progress by clause section, and writes ``certificate.json``, ``certificate.md``,
``certificate.html`` and ``badge.svg``. Exit codes: 0 conformant (SHOULD failures are
warnings), a partial run that passed, or no regressions; 1 non-conformant or a stale
expectation; 2 the SUT did not start, the suite or its options broke, the run was
stopped or ran out of time, or a testable clause has no test yet.

``replay`` runs chosen tests again exactly as a certificate's run did (same seed, saved
failing examples first) and shows pytest's own report. ``manifest`` prints
(``--write``: rewrites, ``--check``: compares) the clause manifest.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import math
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from conformance._errors import ConformanceError

__all__ = ["main"]

PROG: Final = "mcp-conformance"
EXIT_BROKEN: Final = 2
DEFAULT_MAX_TIME: Final = 300.0
#: The most processes certify starts when -n is not given.
MAX_DEFAULT_WORKERS: Final = 4
#: Seconds past --max-time a run may take to wind down before it is stopped.
WIND_DOWN: Final = 30.0


class _Parser(argparse.ArgumentParser):
    """argparse, but every error is one line naming the command, and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_BROKEN)


def _seconds(name: str, *, zero: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
            what = "a number of seconds, 0 or more" if zero else "a positive number of seconds"
            raise argparse.ArgumentTypeError(f"{name} must be {what}, got {text!r}")
        return value

    return parse


def _count(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, 1 or more, got {text!r}")
        return int(text)

    return parse


def _seed(text: str) -> int:
    if not text.isdigit() or len(text) > 30:
        raise argparse.ArgumentTypeError(f"--seed must be a whole number of at most 30 digits, got {text!r}")
    return int(text)


def _target_options(parser: argparse.ArgumentParser) -> None:
    """The options certify and replay share: which SUT, which examples, how hard to look."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--sut", metavar="SPEC", help="MODULE:FACTORY of a Python adapter, or 'reference'")
    target.add_argument("--sut-cmd", metavar="COMMAND", help="the command that starts your driver, or 'reference'")
    parser.add_argument(
        "--profile",
        choices=("core", "lexical", "eviction", "refresh", "all"),
        help="profiles to test (default: those the SUT claims)",
    )
    parser.add_argument(
        "--seed", type=_seed, default=0, help="seed of the property tests: the same seed, the same examples (default 0)"
    )
    parser.add_argument(
        "--thoroughness",
        choices=("quick", "default", "deep"),
        default="default",
        help="how many examples each property draws: quick (half), default, deep (four times)",
    )
    parser.add_argument(
        "--sut-timeout", type=_seconds("--sut-timeout"), metavar="SECONDS", help="seconds each call to the SUT may take"
    )


def _certify_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} certify",
        description="Run the conformance suite against an implementation and write its certificate.",
        epilog=(
            "Arguments after -- go to pytest unchanged, e.g. -- --junitxml=report.xml. "
            "Exit codes: 0 conformant (SHOULD failures are warnings), a partial run that passed, or no regressions; "
            "1 non-conformant or a stale expectation; 2 the SUT did not start, the run broke, was stopped or ran "
            "out of time, or a testable clause has no test yet."
        ),
    )
    _target_options(parser)
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
    parser.add_argument(
        "-n",
        dest="workers",
        metavar="N",
        help="run the suite in N processes (pytest-xdist); 1 runs it in this one; default: one per core, at most "
        f"{MAX_DEFAULT_WORKERS}",
    )
    parser.add_argument(
        "--clause",
        action="append",
        default=[],
        metavar="ID",
        help="run only the tests citing this clause or sentence (repeatable)",
    )
    parser.add_argument(
        "--test",
        action="append",
        default=[],
        metavar="TEST",
        help="run only this test of the suite, as a certificate names it (repeatable)",
    )
    parser.add_argument(
        "--max-time",
        type=_seconds("--max-time"),
        default=DEFAULT_MAX_TIME,
        metavar="SECONDS",
        help="time budget: no test starts after it, and the run is stopped "
        f"{WIND_DOWN:g} s later; the verdict is then 'incomplete' (default %(default)g)",
    )
    parser.add_argument(
        "--shrink-time",
        type=_seconds("--shrink-time", zero=True),
        default=None,
        metavar="SECONDS",
        help="seconds a failing property may spend shrinking its counterexample (default 20)",
    )
    parser.add_argument(
        "--no-shrink", action="store_true", help="report a property's first failing example as found (--shrink-time 0)"
    )
    parser.add_argument(
        "--broken-after",
        type=_count("--broken-after"),
        default=None,
        metavar="N",
        help="declare the SUT broken after N crashes or hangs in a row; the rest is not run (default 3)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's own output instead of progress")
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return EXIT_BROKEN


def _default_workers() -> str | None:
    """One worker per core, at most a few: each starts its own SUT and fleet host."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = min(cores, MAX_DEFAULT_WORKERS)
    return str(workers) if workers > 1 and importlib.util.find_spec("xdist") is not None else None


def _check_workers(workers: str | None) -> str | None:
    if workers is None or workers == "1":
        return None
    if importlib.util.find_spec("xdist") is None:
        return "-n needs pytest-xdist: pip install pytest-xdist"
    if workers != "auto" and not (workers.isdigit() and int(workers) > 0):
        return f"-n expects a number of processes or 'auto', got {workers!r}"
    return None


def _workers(option: str | None) -> str | None:
    if option is None:
        return _default_workers()
    return None if option == "1" else option


def _split_extra(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def _sut(args: argparse.Namespace) -> tuple[str, str]:
    from conformance._loading import driver_argv

    if args.sut_cmd is not None:
        driver_argv(args.sut_cmd)  # a UsageError for empty or badly quoted commands
        return "--sut-cmd", str(args.sut_cmd)
    if not args.sut.strip():
        raise ConformanceError("--sut is empty; give MODULE:FACTORY or 'reference'")
    return "--sut", str(args.sut)


def certify(argv: Sequence[str]) -> int:
    argv, extra = _split_extra(argv)
    args = _certify_parser().parse_args(argv)

    from conformance._certificate import RunInfo, build_certificate
    from conformance._expectations import (
        Expectation,
        load_expectations,
        refuse_must_entries,
        refuse_unknown_tests,
    )
    from conformance._manifest import citations
    from conformance._progress import Progress
    from conformance._records import read_records
    from conformance._render import write_certificate
    from conformance._runner import SuiteOptions, supervise

    sut_option, sut_value = _sut(args)
    problem = _check_workers(args.workers)
    if problem:
        return _fail(problem)
    expectations: tuple[Expectation, ...] = ()
    if args.expectations is not None:
        path = Path(args.expectations)
        expectations = load_expectations(path)
        if args.mode == "certify":
            refuse_must_entries(path, expectations)
        refuse_unknown_tests(path, expectations, [t for tests in citations().values() for t in tests])
    elif args.mode == "regression":
        return _fail("--mode regression needs --expectations FILE: the known failures it accepts")

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".run-", dir=out))
    except OSError as exc:
        return _fail(f"--out {args.out}: cannot prepare the output directory: {exc}")
    shrink_time = 0.0 if args.no_shrink else args.shrink_time
    options = SuiteOptions(
        sut_option=sut_option,
        sut_value=sut_value,
        work=work,
        report=work / "results.jsonl",
        examples=work / "examples",
        profile=args.profile,
        timeout=None if args.sut_timeout is None else f"{args.sut_timeout:g}",
        seed=args.seed,
        thoroughness=args.thoroughness,
        shrink_time=shrink_time,
        max_time=args.max_time,
        broken_after=args.broken_after,
        clauses=args.clause,
        tests=[_suite_test(test) for test in args.test],
        workers=_workers(args.workers),
        expectations=None if args.expectations is None else Path(args.expectations).resolve(),
        mode=args.mode,
        extra=extra,
        quiet=not args.verbose,
    )
    try:
        progress = Progress(sys.stdout, enabled=not args.verbose)
        progress.say(
            f"certifying {sut_option} {shlex.quote(sut_value)} (seed {args.seed}, thoroughness {args.thoroughness}, "
            f"up to {args.max_time:g} s)"
        )
        with contextlib.ExitStack() as stack:
            log = None if args.verbose else stack.enter_context((work / "pytest.log").open("wb"))
            outcome = supervise(
                options,
                on_records=progress.update,
                on_tick=progress.tick,
                log=log,
                hard_limit=args.max_time + WIND_DOWN,
            )
        records = read_records(work.glob("results.jsonl*"))
        started = records.session is not None and records.session["implementation"] is not None
        if not records.tests and not (outcome.stopped and started):
            return _fail(_did_not_run(records, outcome.returncode, outcome.stopped, work / "pytest.log"))
        run = RunInfo(
            command=shlex.join([PROG, "certify", *argv, *(["--", *extra] if extra else [])]),
            sut_option=sut_option,
            sut_value=sut_value,
            mode=args.mode,
            examples_dir=out / "examples",
            cwd=Path.cwd(),
            timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            seed=args.seed,
            thoroughness=args.thoroughness,
            profile=args.profile,
            timeout=options.timeout,
            shrink_time=shrink_time,
            max_time=args.max_time,
            expectations_file=args.expectations,
            pytest_exit=outcome.returncode,
            stopped=outcome.stopped,
            seconds=outcome.seconds,
            leftovers=outcome.leftovers,
            tracked=outcome.tracked,
        )
        cert = build_certificate(run, records, expectations)
        if outcome.returncode not in (0, 1) and not outcome.stopped and cert["exit_code"] == 0:
            cert["verdict"], cert["exit_code"] = "error", EXIT_BROKEN
            cert["why"] = [f"the suite's pytest ended with exit code {outcome.returncode} (see pytest.log)"]
        try:
            paths = write_certificate(cert, out)
            _move_into(out, work)
        except OSError as exc:
            return _fail(f"cannot write the certificate into {out}: {exc}")
        progress.summary(cert, paths)
        return cert["exit_code"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _did_not_run(records: object, returncode: int | None, stopped: str, log: Path) -> str:
    from conformance._records import Records

    assert isinstance(records, Records)
    if stopped:
        reason = {"time": "the time budget ran out"}.get(stopped, f"it was interrupted ({stopped})")
        return f"the suite did not start any test: {reason}; no certificate written (the previous one is kept)"
    session = records.session
    if session is not None and session["problem"]:
        return (
            f"the implementation did not start: {session['problem']}; no certificate written (the previous one is kept)"
        )
    tail = ""
    with contextlib.suppress(OSError):
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        tail = "\n".join(lines[-15:])
    return (
        f"the suite did not run (pytest exit code {returncode}); no certificate written (the previous one is kept)"
        + (f"\n{tail}" if tail else "")
    )


def _move_into(out: Path, work: Path) -> None:
    """Move the run's log, records and saved examples beside the certificate, replacing the old ones."""
    for stale in out.glob("results.jsonl*"):
        stale.unlink()
    for item in [*work.glob("results.jsonl*"), work / "pytest.log"]:
        if item.exists():
            item.replace(out / item.name)
    examples = work / "examples"
    if examples.exists():
        shutil.rmtree(out / "examples", ignore_errors=True)
        examples.replace(out / "examples")


def _replay_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} replay",
        description="Run tests of the suite again exactly as a certification ran them, with pytest's own report.",
        epilog="Arguments after -- go to pytest unchanged. The exit code is pytest's.",
    )
    _target_options(parser)
    parser.add_argument(
        "--examples",
        metavar="DIR",
        help="the examples a certification saved (certificate/examples): replayed first, so a failure "
        "found once comes back at once",
    )
    parser.add_argument("tests", nargs="+", metavar="TEST", help="a test id as the certificate prints it")
    return parser


def replay(argv: Sequence[str]) -> int:
    argv, extra = _split_extra(argv)
    args = _replay_parser().parse_args(argv)
    from conformance._runner import SuiteOptions, supervise

    sut_option, sut_value = _sut(args)
    tests = [_suite_test(test) for test in args.tests]
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-replay-") as tmp:
        work = Path(tmp)
        options = SuiteOptions(
            sut_option=sut_option,
            sut_value=sut_value,
            work=work,
            report=work / "results.jsonl",
            examples=Path(args.examples) if args.examples else work / "examples",
            profile=args.profile,
            timeout=None if args.sut_timeout is None else f"{args.sut_timeout:g}",
            seed=args.seed,
            thoroughness=args.thoroughness,
            tests=tests,
            extra=extra,
            quiet=False,
        )
        outcome = supervise(options)
    return outcome.returncode if outcome.returncode is not None else EXIT_BROKEN


def _suite_test(test: str) -> str:
    """A test id relative to the suite's folder, from any id a certificate or pytest printed."""
    path, sep, rest = test.partition("::")
    return path.rsplit("/", 1)[-1] + sep + rest


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
  replay    run tests again exactly as a certification ran them ({PROG} replay --help)
  manifest  print, --write or --check conformance/manifest.json
  protocol  where the driver protocol is written; --schema [METHOD] prints its JSON Schemas
"""


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        raise SystemExit(0)
    commands: dict[str, Callable[[Sequence[str]], int]] = {
        "certify": certify,
        "replay": replay,
        "manifest": manifest_command,
        "protocol": _protocol_command,
    }
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
