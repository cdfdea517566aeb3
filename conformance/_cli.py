"""``mcp-conformance``: certify an implementation, replay a failure, baseline known failures,
keep the clause manifest.

``certify`` runs the shipped suite in a pytest of its own (:mod:`conformance._runner`),
shows progress by clause section, and writes ``certificate.json``, ``certificate.md``,
``certificate.html`` and ``badge.svg``. Its options are the plugin's, generated from the
one option table (:mod:`conformance._options`), and a few of its own (``--out``, ``-n``, …).
Exit codes: 0 conformant (SHOULD failures are warnings), a partial run that passed, or no
regressions; 1 non-conformant or a stale expectation; 2 the SUT did not start, the suite or
its options broke, the run was stopped or ran out of time, or a testable clause has no test
yet.

``replay`` runs chosen tests again exactly as a certificate's run did (same seed, saved
failing examples first) and shows pytest's own report. ``baseline`` prints the expectations
file that accepts every failure of a certificate. ``manifest`` prints (``--write``:
rewrites, ``--check``: compares) the clause manifest.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from conformance._errors import ConformanceError
from conformance._options import (
    BROKEN_AFTER,
    CLAUSE,
    DEFAULT_MAX_TIME,
    EXAMPLES,
    EXPECTATIONS,
    MAX_TIME,
    MODE,
    OPTIONS,
    PROFILE,
    SHRINK_TIME,
    SUT,
    SUT_CMD,
    SUT_TIMEOUT,
    THOROUGHNESS,
    WIND_DOWN,
    Command,
    Count,
    Mode,
    Option,
    OptionValueError,
    ProfileChoice,
    Thoroughness,
    ValueType,
)

if TYPE_CHECKING:
    from conformance._records import Records

__all__ = ["certify_parser", "main", "replay_parser"]

_T = TypeVar("_T")

PROG: Final = "mcp-conformance"
EXIT_BROKEN: Final = 2
#: The most processes certify starts when -n is not given.
MAX_DEFAULT_WORKERS: Final = 4
#: -n accepts at most this many processes per core: each starts its own SUT and fleet host.
WORKERS_PER_CORE: Final = 4
SEED: Final = Count(minimum=0, maximum=2**64 - 1)


class _Parser(argparse.ArgumentParser):
    """argparse, but every error is one line naming the command, and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_BROKEN)


def _checked(value: ValueType[object], name: str) -> Callable[[str], object]:
    """An argparse type from a validator of the option table."""

    def parse(text: str) -> object:
        try:
            return value.parse(name, text)
        except OptionValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _add_options(parser: argparse.ArgumentParser, command: Command) -> None:
    """The options of the plugin that ``command`` offers, under their certify names, from the one table."""
    target = parser.add_mutually_exclusive_group(required=True)
    for option in OPTIONS:
        if option.cli is None or command not in option.commands:
            continue
        where = target if option is SUT or option is SUT_CMD else parser
        common: dict[str, Any] = {
            "dest": option.dest,
            "metavar": option.metavar,
            "help": option.cli_help or option.help,
            "type": _checked(option.value, option.cli),
        }
        if option.repeatable:
            where.add_argument(option.cli, action="append", default=[], **common)
        else:
            where.add_argument(option.cli, default=option.cli_default, **common)
    parser.add_argument(
        "--seed",
        type=_checked(SEED, "--seed"),
        default=0,
        help="seed of the property tests: the same seed, the same examples (default 0)",
    )


def _value(args: argparse.Namespace, option: Option[_T]) -> _T | None:
    """What the command line gave for ``option``, checked by its validator (None: not given)."""
    value: _T | None = getattr(args, option.dest)
    return value


def _values(args: argparse.Namespace, option: Option[_T]) -> list[_T]:
    """What the command line gave for a repeatable ``option``, each checked."""
    values: list[_T] = getattr(args, option.dest)
    return values


def _profiles(args: argparse.Namespace) -> tuple[ProfileChoice, ...]:
    """The ``--profile`` values, in the order given, each once."""
    return tuple(dict.fromkeys(_values(args, PROFILE)))


def _max_workers() -> int:
    return WORKERS_PER_CORE * _cores()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _workers_option(text: str) -> str:
    if text.strip() == "auto":
        return "auto"
    most = _max_workers()
    try:
        Count(maximum=most).parse("-n", text)
    except OptionValueError:
        raise argparse.ArgumentTypeError(
            f"-n expects a number of processes from 1 to {most} ({WORKERS_PER_CORE} per core on this machine) "
            f"or 'auto', got {text!r}"
        ) from None
    return text.strip()


def certify_parser() -> argparse.ArgumentParser:
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
    _add_options(parser, "certify")
    parser.add_argument(
        "--out", default="certificate", metavar="DIR", help="where the certificate goes (default: %(default)s)"
    )
    parser.add_argument(
        "--write-expectations",
        metavar="FILE",
        help="also write an expectations file listing every failure of this run, each with a reason to edit "
        "(as the baseline command does); with --mode regression it holds the run in place",
    )
    parser.add_argument(
        "-n",
        dest="workers",
        type=_workers_option,
        metavar="N",
        help="run the suite in N processes (pytest-xdist); 1 runs it in this one; default: one per core, at most "
        f"{MAX_DEFAULT_WORKERS}; at most {WORKERS_PER_CORE} per core",
    )
    parser.add_argument(
        "--test",
        action="append",
        default=[],
        metavar="TEST",
        help="run only this test of the suite, as a certificate names it (repeatable)",
    )
    parser.add_argument(
        "--no-shrink", action="store_true", help="report a property's first failing example as found (--shrink-time 0)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's own output instead of progress")
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return EXIT_BROKEN


def _default_workers() -> str | None:
    """One worker per core, at most a few: each starts its own SUT and fleet host."""
    workers = min(_cores(), MAX_DEFAULT_WORKERS)
    return str(workers) if workers > 1 and importlib.util.find_spec("xdist") is not None else None


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

    sut_cmd = _value(args, SUT_CMD)
    if sut_cmd is not None:
        driver_argv(sut_cmd)  # a UsageError for badly quoted commands
        return SUT_CMD.flag, sut_cmd
    return SUT.flag, _value(args, SUT) or ""


def certify(argv: Sequence[str]) -> int:
    argv, extra = _split_extra(argv)
    args = certify_parser().parse_args(argv)

    from conformance._baseline import write_baseline
    from conformance._certificate import RunInfo, build_certificate
    from conformance._expectations import (
        Expectation,
        load_expectations,
        refuse_must_entries,
        refuse_unknown_tests,
    )
    from conformance._junit import add_stale_expectations
    from conformance._manifest import citations
    from conformance._progress import Progress
    from conformance._records import read_records
    from conformance._render import write_certificate
    from conformance._runner import SuiteOptions, supervise

    sut_option, sut_value = _sut(args)
    if args.workers not in (None, "1") and importlib.util.find_spec("xdist") is None:
        return _fail("-n needs pytest-xdist: pip install pytest-xdist")
    mode: Mode = _value(args, MODE) or "certify"
    expectations_file = _value(args, EXPECTATIONS)
    expectations: tuple[Expectation, ...] = ()
    if expectations_file is not None:
        expectations = load_expectations(expectations_file)
        if mode == "certify":
            refuse_must_entries(expectations_file, expectations)
        refuse_unknown_tests(expectations_file, expectations, [t for tests in citations().values() for t in tests])
    elif mode == "regression":
        return _fail(
            f"{MODE.cli} regression needs {EXPECTATIONS.cli} {EXPECTATIONS.metavar}: the known failures it accepts"
        )

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".run-", dir=out))
    except OSError as exc:
        return _fail(f"--out {args.out}: cannot prepare the output directory: {exc}")
    seed: int = args.seed
    thoroughness: Thoroughness = _value(args, THOROUGHNESS) or "default"
    sut_timeout = _value(args, SUT_TIMEOUT)
    timeout = None if sut_timeout is None else f"{sut_timeout:g}"
    max_time = _value(args, MAX_TIME) or DEFAULT_MAX_TIME
    shrink_time = 0.0 if args.no_shrink else _value(args, SHRINK_TIME)
    profiles = _profiles(args)
    options = SuiteOptions(
        sut_option=sut_option,
        sut_value=sut_value,
        work=work,
        report=work / "results.jsonl",
        examples=work / "examples",
        profiles=profiles,
        timeout=timeout,
        seed=seed,
        thoroughness=thoroughness,
        shrink_time=shrink_time,
        max_time=max_time,
        broken_after=_value(args, BROKEN_AFTER),
        clauses=_values(args, CLAUSE),
        tests=[_suite_test(test) for test in args.test],
        workers=_workers(args.workers),
        expectations=None if expectations_file is None else expectations_file.resolve(),
        mode=mode,
        extra=extra,
        quiet=not args.verbose,
    )
    try:
        progress = Progress(sys.stdout, enabled=not args.verbose)
        progress.say(
            f"certifying {sut_option} {shlex.quote(sut_value)} (seed {seed}, thoroughness {thoroughness}, "
            f"up to {max_time:g} s)"
        )
        with contextlib.ExitStack() as stack:
            log = None if args.verbose else stack.enter_context((work / "pytest.log").open("wb"))
            outcome = supervise(
                options,
                on_records=progress.update,
                on_tick=progress.tick,
                log=log,
                hard_limit=max_time + WIND_DOWN,
            )
        records = read_records(work.glob("results.jsonl*"))
        started = records.session is not None and records.session["implementation"] is not None
        if not records.tests and not (outcome.stopped and started):
            return _fail(_did_not_run(records, outcome.returncode, outcome.stopped, work / "pytest.log"))
        run = RunInfo(
            command=shlex.join([PROG, "certify", *argv, *(["--", *extra] if extra else [])]),
            sut_option=sut_option,
            sut_value=sut_value,
            mode=mode,
            examples_dir=out / "examples",
            cwd=Path.cwd(),
            timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            seed=seed,
            thoroughness=thoroughness,
            profiles=profiles,
            timeout=timeout,
            shrink_time=shrink_time,
            max_time=max_time,
            expectations_file=None if expectations_file is None else str(expectations_file),
            pytest_exit=outcome.returncode,
            stopped=outcome.stopped,
            seconds=outcome.seconds,
            leftovers=outcome.leftovers,
            tracked=outcome.tracked,
            untracked=outcome.untracked,
        )
        cert = build_certificate(run, records, expectations)
        try:
            paths = write_certificate(cert, out)
            _move_into(out, work)
        except OSError as exc:
            return _fail(f"cannot write the certificate into {out}: {exc}")
        report = _junit_path(extra)
        if report is not None:
            add_stale_expectations(report, cert)
        progress.summary(cert, paths)
        if args.write_expectations is not None:
            written = write_baseline(cert, Path(args.write_expectations), source=str(paths[0]))
            sys.stdout.write(f"{PROG}: {written}\n")
        return cert["exit_code"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _junit_path(extra: Sequence[str]) -> Path | None:
    """The JUnit report the arguments for pytest ask for, if any."""
    for index, arg in enumerate(extra):
        for flag in ("--junitxml", "--junit-xml"):
            if arg.startswith(flag + "="):
                return Path(arg.split("=", 1)[1])
            if arg == flag and index + 1 < len(extra):
                return Path(extra[index + 1])
    return None


def _did_not_run(records: Records, returncode: int | None, stopped: str, log: Path) -> str:
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


def replay_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} replay",
        description="Run tests of the suite again exactly as a certification ran them, with pytest's own report.",
        epilog="Arguments after -- go to pytest unchanged. The exit code is pytest's.",
    )
    _add_options(parser, "replay")
    parser.add_argument("tests", nargs="+", metavar="TEST", help="a test id as the certificate prints it")
    return parser


def replay(argv: Sequence[str]) -> int:
    argv, extra = _split_extra(argv)
    args = replay_parser().parse_args(argv)
    from conformance._runner import SuiteOptions, supervise

    sut_option, sut_value = _sut(args)
    examples = _value(args, EXAMPLES)
    if examples is not None and not examples.is_dir():
        # Searching afresh would hide that the saved failing examples were not found.
        return _fail(
            f"{EXAMPLES.cli} {examples}: no such folder (from {Path.cwd()}); give the examples folder a "
            "certification saved, certificate/examples"
        )
    sut_timeout = _value(args, SUT_TIMEOUT)
    thoroughness: Thoroughness = _value(args, THOROUGHNESS) or "default"
    tests = [_suite_test(test) for test in args.tests]
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-replay-") as tmp:
        work = Path(tmp)
        options = SuiteOptions(
            sut_option=sut_option,
            sut_value=sut_value,
            work=work,
            report=work / "results.jsonl",
            examples=examples.resolve() if examples is not None else work / "examples",
            profiles=_profiles(args),
            timeout=None if sut_timeout is None else f"{sut_timeout:g}",
            seed=args.seed,
            thoroughness=thoroughness,
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


def baseline_command(argv: Sequence[str]) -> int:
    parser = _Parser(
        prog=f"{PROG} baseline",
        description="Print an expectations file that lists every failure of a certificate as a known failure, "
        "each with a reason to edit: certify in regression mode with it, at the same seed and thoroughness, "
        "and the run passes until something changes.",
        epilog="Exit codes: 0 every failure is listed; 1 the file is printed, but some failures cannot be listed in "
        "an expectations file (findings about the driver protocol, processes left running, tests that could not "
        "run to the end): they are named in it and on stderr; 2 the certificate cannot be read.",
    )
    parser.add_argument(
        "certificate", metavar="CERTIFICATE", help="a certificate folder (certificate/) or its certificate.json"
    )
    parser.add_argument(
        "--by",
        choices=("test", "clause"),
        default="test",
        help="one entry per clause and test that failed (test, the default), or per clause whatever the test",
    )
    args = parser.parse_args(list(argv))
    from conformance._baseline import baseline, read_certificate
    from conformance._progress import first_line

    path = Path(args.certificate)
    written = baseline(read_certificate(path), by=args.by, source=str(path))
    sys.stdout.write(written.text)
    if written.unlisted:
        sys.stderr.write(
            f"{PROG}: {len(written.unlisted)} failure(s) or error(s) of {path} cannot be listed in an expectations "
            "file; a regression run fails until they are fixed:\n"
        )
        sys.stderr.writelines(f"{PROG}:   {first_line(line)}\n" for line in written.unlisted)
        return 1
    return 0


def _protocol_command(argv: Sequence[str]) -> int:
    from conformance._protocol import command

    return command(argv)


USAGE: Final = f"""usage: {PROG} COMMAND [OPTIONS]

commands:
  certify   run the suite against an implementation and write its certificate
            ({PROG} certify --help)
  replay    run tests again exactly as a certification ran them ({PROG} replay --help)
  baseline  print an expectations file listing a certificate's failures ({PROG} baseline --help)
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
        "baseline": baseline_command,
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
