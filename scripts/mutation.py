"""Mutation testing of the reference implementation, with the shipped suite as the only killer.

Run through ``scripts/mutation``, which prepares the virtual environment this file runs in
(mutmut and the project's dependencies, without the project itself, so that every import
of ``reference_impl`` finds the mutated copy in ``mutants/``). Steps:

1. mutmut mutates the function and method bodies of the modules in ``MODULES`` and kills
   each mutant with the suite tests that reach the mutated function, in process against
   the reference (``--sut reference``), fastest first, stopping at the first failure.
2. What mutmut leaves alone (module constants and ``@property`` bodies, where SPEC's
   numbers and the lexical formula live) is mutated here with mutmut's own operators, plus
   ``n - 1`` for every integer, and each such mutant is run against every suite test that
   reaches the reference.
3. Every mutant that survives in process runs again through the driver (``--sut-cmd``, the
   stdio shell in a process of its own that inherits the mutant): the protocol checks,
   which skip in process, and the tests that reach its function, with replies crossing
   the wire and checked against the protocol's schemas. The driver's profile claims are
   also run with a ranker that is not lexical, and the survivors of the modules holding the
   optional profiles' code (eviction, live catalogs) with both profiles turned on, against
   their checks: in process, the reference runs neither.
4. ``MUTATION.md`` is written from the results and from ``scripts/mutation-verdicts.toml``:
   the survivors judged equivalent (with the reason) and those awaiting a check. A verdict
   holds for the suite, SPEC.md and mutated function it was judged against:
   ``scripts/mutation-verified.json`` records, for each survivor judged equivalent, the
   fingerprints of the three when the mutant last survived them, and ``--resume`` runs
   again every mutant whose record is stale.

Every result is also kept in ``scripts/mutation-results.json``, which a fresh checkout's
``--resume`` and ``--report`` start from: a run from scratch takes many hours, and may stop
anywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import fnmatch
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

_T = TypeVar("_T")

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
VERDICTS = ROOT / "scripts" / "mutation-verdicts.toml"
REPORT = ROOT / "MUTATION.md"
VERIFIED = ROOT / "scripts" / "mutation-verified.json"
#: Every result of the last run, kept with the sources: ``mutants/`` is a working directory
#: that a fresh checkout lacks, and a run from scratch takes many hours. A run or a
#: report restores what ``mutants/`` lacks from here, and writes here what it established.
STORE = ROOT / "scripts" / "mutation-results.json"
EXTRA_RESULTS = MUTANTS / "extra-results.json"
DRIVER_RESULTS = MUTANTS / "driver-results.json"
#: When each in-process result was established: the fingerprints it was run against.
PROCESS_RUNS = MUTANTS / "process-runs.json"
LOGS = MUTANTS / "logs"

#: The modules behind SPEC.md's clauses, in the order the report lists them; the section
#: tells which goal a module counts towards (`lexical` for the ranking, `core` otherwise).
MODULES: tuple[tuple[str, str], ...] = (
    ("reference_impl/_config.py", "core"),
    ("reference_impl/_connections.py", "core"),
    ("reference_impl/_catalog.py", "core"),
    ("reference_impl/_policy.py", "core"),
    ("reference_impl/_ranking.py", "lexical"),
    ("reference_impl/_selection.py", "core"),
    ("reference_impl/_discovery.py", "core"),
    ("reference_impl/_toolset.py", "core"),
    ("reference_impl/_budgets.py", "core"),
    ("reference_impl/_loop.py", "core"),
    ("reference_impl/driver/_session.py", "core"),
)
GOALS = {"core": 95.0, "lexical": 98.0}

#: What the suite is run with, for mutmut's runs and for the extra mutants alike.
SUITE_ARGS = (
    "-p", "conformance.plugin", "-c", "conformance/suite/pytest.ini",
    "--sut", "reference", "--hypothesis-seed", "0",
    "--conformance-thoroughness", "quick", "--conformance-shrink-time", "0",
)  # fmt: skip

#: The same suite through the stdio driver; the command is completed with the job's flags.
DRIVER_ARGS = (
    "-p", "conformance.plugin", "-c", "conformance/suite/pytest.ini",
    "--hypothesis-seed", "0", "--conformance-thoroughness", "quick", "--conformance-shrink-time", "0",
)  # fmt: skip
#: The checks of the driver protocol itself, which skip in process.
PROTOCOL_TESTS = ("conformance/suite/test_protocol.py",)
#: Where a driver makes its profile claims, which depend on the ranker and the profiles it
#: runs with: mutants of these functions are also run with a ranker that is not lexical,
#: against the checks of the lexical profile, and with the optional profiles off, against
#: theirs.
CLAIM_DEPENDENT = ("reference_impl.driver._session.xǁReferenceDriverǁinitialize__mutmut_*",)
LEXICAL_TESTS = (
    "conformance/suite/test_ranking.py",
    # RNK-9.1: whatever the ranker, the claims include `core`.
    "conformance/suite/test_protocol.py::test_initialize_claims_the_core_profile",
)
#: The optional profiles (`eviction`, `refresh`) are off in the reference the suite runs in
#: process, so no in-process test reaches their code: every in-process survivor of the
#: modules that hold it also runs through a driver with both profiles on, against their checks.
PROFILE_FLAGS = ("--eviction", "lru", "--refresh")
PROFILE_TESTS = ("conformance/suite/test_eviction.py", "conformance/suite/test_refresh.py")
PROFILE_MODULES = ("reference_impl/_toolset.py", "reference_impl/_connections.py", "reference_impl/driver/_session.py")
#: The modules whose mutants the protocol checks are run against: the driver session, where
#: params are checked and outcomes become replies, and the code every `run.open` and
#: `run.close` of those checks goes through, which holds what no in-process test reaches:
#: the bound on a server's start-up and handshake (PRO-9) is the connection's, and the
#: toolset passes it on. The other modules run the same code in process and through the
#: driver.
PROTOCOL_MODULES = (
    "reference_impl/driver/_session.py",
    "reference_impl/_connections.py",
    "reference_impl/_toolset.py",
)
#: In-process seconds of the tests reaching a mutant's function that its driver run takes
#: on, fastest first (at least one): the in-process run has run them all already; through
#: the driver they add the wire (framing, reply schemas, the stdio shell).
DRIVER_TEST_SECONDS = 60.0
#: A driver run past this many times its expected seconds (the protocol checks as the clean
#: run took them, plus its tests at in-process speed), and past a minute more, is stopped.
#: That is the suite being slow, not the mutant hanging (a hang fails the suite's per-request
#: time-out, a kill): its result is "over budget", left for `--resume`.
DRIVER_SLACK = 4.0

KILLED, SURVIVED, TIMEOUT, NOT_RUN = "killed", "survived", "timed out", "not run"
OVER_BUDGET = "over budget"
#: mutmut's exit codes: 33 means no suite test reaches the function (a survivor); the
#: signals are its CPU and wall-time limits.
_STATUS = {0: SURVIVED, 1: KILLED, 3: KILLED, 33: SURVIVED, 36: TIMEOUT, 24: TIMEOUT, -24: TIMEOUT}
_STATUS |= {152: TIMEOUT, 255: TIMEOUT, -9: TIMEOUT}


# --- running mutmut ------------------------------------------------------------------


def mutmut_main(argv: Sequence[str]) -> None:
    """mutmut's command line, with the two adjustments this suite needs."""
    # The SDK binds its stdio client's `errlog` to sys.stderr at import; imported inside a
    # pytest run it would keep pytest's capture file, closed once that run ends.
    import mcp.client.stdio  # noqa: F401
    from mutmut.mutation import mutators
    from mutmut.mutation.trampoline import get_mutant_under_test
    from mutmut.runners import harness

    mutators.mutation_operators[:] = [
        (kind, _skip_prose(op) if op is mutators.operator_string else op) for kind, op in mutators.mutation_operators
    ]
    execute = harness.PytestRunner.execute_pytest

    def execute_pytest(self: Any, params: list[str], **kwargs: Any) -> int:
        # A mutant that breaks the reference before the first test (the SUT fails to start)
        # makes pytest exit with a usage error: the suite caught it. Without a mutant
        # (statistics, clean run) the same exit stays fatal.
        try:
            return int(execute(self, params, **kwargs))
        except harness.BadTestExecutionCommandsException:
            name = get_mutant_under_test()
            if name == "fail" or "__mutmut_" in name:
                return 1
            raise

    harness.PytestRunner.execute_pytest = execute_pytest
    from mutmut.__main__ import cli

    sys.argv = ["mutmut", *argv]
    cli()


def _skip_prose(operator: Any) -> Any:
    """Leave strings with a space alone: prose (messages, descriptions) whose wording SPEC
    does not fix; identifiers, keys and modes have no space and are still mutated."""

    def operator_string(node: Any) -> Any:
        if " " in getattr(node, "value", ""):
            return iter(())
        return operator(node)

    return operator_string


def run_mutmut(jobs: int, log: Path, only: Sequence[str] = ()) -> None:
    """mutmut on every mutant, or on those whose names match a pattern of ``only``."""
    env = os.environ | {"PYTHONPATH": str(MUTANTS)}
    env.pop("MUTANT_UNDER_TEST", None)
    cmd = [sys.executable, __file__, "--as-mutmut", "run", "--max-children", str(jobs), *only]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            last = ""
            while proc.poll() is None:
                time.sleep(30)
                line = progress_line()
                if line != last:
                    say(line)
                    last = line
        except BaseException:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            raise
    if proc.returncode != 0:
        sys.exit(f"mutmut failed (exit {proc.returncode}); see {log}")


def progress_line() -> str:
    parts: list[str] = []
    for path, _ in MODULES:
        codes = mutmut_results(path)
        done = sum(1 for c in codes.values() if c is not None)
        alive = sum(1 for c in codes.values() if c is not None and _STATUS.get(c) == SURVIVED)
        if codes:
            parts.append(f"{Path(path).stem} {done}/{len(codes)} ({alive} alive)")
    return "mutmut: " + ", ".join(parts)


def mutmut_results(path: str) -> dict[str, int | None]:
    meta = MUTANTS / f"{path}.meta"
    if not meta.exists():
        return {}
    return dict(json.loads(meta.read_text())["exit_code_by_key"])


# --- the mutants mutmut leaves alone -------------------------------------------------


@dataclass(frozen=True)
class Extra:
    name: str
    path: str
    source: str
    line: int
    before: str
    after: str


def extra_mutants() -> list[Extra]:
    """Mutants of module-level assignments and ``@property`` bodies, with mutmut's operators."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
    from mutmut.mutation import mutators

    operators = [
        (kind, _skip_prose(op) if op is mutators.operator_string else op) for kind, op in mutators.mutation_operators
    ]
    found: list[Extra] = []
    for path, _ in MODULES:
        code = (ROOT / path).read_text()
        wrapper = MetadataWrapper(cst.parse_module(code))
        module = wrapper.module
        positions = wrapper.resolve(PositionProvider)
        module_name = path[: -len(".py")].replace("/", ".")
        for owner, root in _unmutated_regions(module):
            counter = 0
            for node in _walk(root):
                candidates = [m for kind, op in operators if isinstance(node, kind) for m in op(node)]
                if isinstance(node, cst.Integer):
                    candidates.append(node.with_changes(value=repr(int(node.evaluated_value) - 1)))
                for mutated in candidates:
                    source = module.deep_replace(node, mutated).code
                    if source == code:
                        continue
                    counter += 1
                    line = positions[node].start.line
                    before = code.splitlines()[line - 1].strip()
                    after = _changed_line(code, source) or before
                    found.append(Extra(f"{module_name}.{owner}__extra_{counter}", path, source, line, before, after))
    return found


def _unmutated_regions(module: Any) -> Iterator[tuple[str, Any]]:
    import libcst as cst

    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign | cst.AnnAssign):
                    targets = small.targets if isinstance(small, cst.Assign) else [small]
                    names = [t.target.value for t in targets if isinstance(t.target, cst.Name)]
                    # Constants only: CamelCase names are type aliases, with no behaviour.
                    if names and names[0].lstrip("_").isupper() and small.value is not None:
                        yield names[0], small
        elif isinstance(statement, cst.ClassDef):
            for item in statement.body.body:
                if isinstance(item, cst.FunctionDef) and any(
                    isinstance(d.decorator, cst.Name) and d.decorator.value == "property" for d in item.decorators
                ):
                    yield f"x\u01c1{statement.name.value}\u01c1{item.name.value}", item.body


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _changed_line(before: str, after: str) -> str | None:
    added = [line[1:].strip() for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:2] == "+ "]
    return " ".join(added) if added else None


def run_extras(jobs: int, rerun: Any, prints: Fingerprints, only: Sequence[str] = ()) -> None:
    """Run every extra mutant (or those matching ``only``) in a copy of the tree of its own,
    ``jobs`` at a time.

    ``rerun(name, status)`` tells whether a result from an earlier run must be run again.
    """
    results: dict[str, dict[str, Any]] = load_json(EXTRA_RESULTS)
    results = {name: r for name, r in results.items() if not rerun(name, r["status"])}
    # The core modules' numbers first: the lexical weights are many, and a run cut short
    # should still have judged the budgets.
    section = dict(MODULES)
    extras = sorted(
        (e for e in extra_mutants() if e.name not in results and selected(e.name, only)),
        key=lambda e: section[e.path] == "lexical",
    )
    if not extras:
        say("extra mutants: none to run (module constants and @property bodies)")
        return
    stats = suite_map()
    durations: dict[str, float] = stats["duration_by_test"]
    reaching = set().union(*map(set, stats["tests_by_mangled_function_name"].values()))
    tests = sorted(reaching, key=lambda t: durations.get(t, 0.0))
    budget = 15 * (sum(durations.get(t, 0.0) for t in tests) + 1)
    say(f"extra mutants: {len(extras)} (module constants and @property bodies), {len(tests)} tests each at most")
    trees = [_copy_tree(MUTANTS / "extra" / f"tree-{i}") for i in range(jobs)]
    clean = _start(trees[0], tests[:3])
    if clean.wait() != 0:
        sys.exit(f"the suite does not pass on an unmutated copy of the tree ({trees[0]})")

    def start(slot: int, extra: Extra) -> subprocess.Popen[bytes]:
        (trees[slot] / extra.path).write_text(extra.source)
        return _start(trees[slot], tests)

    def finish(slot: int, extra: Extra, status: str, elapsed: float) -> None:
        shutil.copy2(ROOT / extra.path, trees[slot] / extra.path)
        results[extra.name] = {
            "path": extra.path,
            "status": status,
            "line": extra.line,
            "before": extra.before,
            "after": extra.after,
            "seconds": round(elapsed, 1),
            "fingerprint": prints.of(extra.name).as_dict(),
        }
        save_json(EXTRA_RESULTS, results)
        # Counted over this run's extras: results also holds what earlier runs settled.
        done = sum(e.name in results for e in extras)
        if status != KILLED or done % 10 == 0:
            say(f"extra {done}/{len(extras)}: {extra.name} {status} ({elapsed:.0f} s)")

    _pool(list(extras), {}, jobs, start, finish, lambda _extra: budget)


def _copy_tree(target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    for package in ("reference_impl", "conformance", "mock_servers"):
        shutil.copytree(ROOT / package, target / package, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _start(tree: Path, tests: Sequence[str]) -> subprocess.Popen[bytes]:
    env = os.environ | {"PYTHONPATH": str(tree)}
    env.pop("MUTANT_UNDER_TEST", None)
    cmd = [sys.executable, "-m", "pytest", "--rootdir=.", "-x", "-q", "-p", "no:cacheprovider", *SUITE_ARGS, *tests]
    return subprocess.Popen(
        cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


# --- what a result was established against ------------------------------------------


@dataclass(frozen=True)
class Fingerprint:
    """What a mutant's result depends on: the suite, the specification, the mutated code."""

    suite: str
    spec: str
    function: str

    def as_dict(self) -> dict[str, str]:
        return {"suite": self.suite, "spec": self.spec, "function": self.function}


def _digest(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


#: Files of ``conformance`` that only ``mcp-conformance certify`` reads, around pytest: the
#: suite's pytest never imports them, so a change to them cannot change what a mutant's run
#: decides, and leaves the verdicts standing. (tests/scripts/test_mutation.py checks that
#: the plugin and the suite import none of them.) The manifest is among them: it follows the
#: reference's lines (`implemented_by`), so any edit of the reference would otherwise make
#: every verdict stale.
CERTIFY_ONLY = (
    "_baseline.py",
    "_certificate.py",
    "_cli.py",
    "_junit.py",
    "_manifest.py",
    "manifest.json",
    "_progress.py",
    "_reaper.py",
    "_render.py",
    "_runner.py",
)


def suite_digest() -> str:
    """The killer: everything in ``conformance`` that runs or is read during a run, the
    fleets it runs on (``mock_servers``: a fault or a listing served differently may kill a
    mutant), and how this script chooses what runs (a driver run given more tests may kill
    more)."""
    package = ROOT / "conformance"
    files = [
        p
        for p in (*package.rglob("*"), *(ROOT / "mock_servers").rglob("*"))
        if p.is_file()
        and p.suffix in {".py", ".json", ".ini", ".toml"}
        and "__pycache__" not in p.parts
        and not (p.parent == package and p.name in CERTIFY_ONLY)
    ]
    choices = (
        SUITE_ARGS,
        DRIVER_ARGS,
        PROTOCOL_TESTS,
        PROTOCOL_MODULES,
        CLAIM_DEPENDENT,
        LEXICAL_TESTS,
        PROFILE_FLAGS,
        PROFILE_TESTS,
        PROFILE_MODULES,
    )
    h = hashlib.sha256(_digest(files).encode())
    h.update(repr((*choices, DRIVER_TEST_SECONDS)).encode())
    return h.hexdigest()[:12]


def spec_digest() -> str:
    return _digest([ROOT / "conformance" / "SPEC.md", ROOT / "conformance" / "PROTOCOL.md"])


def owner_of(name: str) -> tuple[str, str]:
    """The module file of a mutant and the name of what it mutates in it (a function, a
    method ``Class.method``, a property, or a module constant)."""
    stem = name.rsplit("__mutmut_", 1)[0] if "__mutmut_" in name else name.rsplit("__extra_", 1)[0]
    module, _, mangled = stem.rpartition(".")
    if "\u01c1" in mangled:  # mutmut's x«Class«method
        _, cls, method = mangled.split("\u01c1")
        target = f"{cls}.{method}"
    elif mangled.startswith("x_") and "__mutmut_" in name:
        target = mangled[2:]
    else:
        target = mangled
    return module.replace(".", "/") + ".py", target


def source_of(path: str, target: str) -> str:
    """The source text of ``target`` in the unmutated module, or "" when it is gone."""
    import ast

    code = (ROOT / path).read_text()
    tree = ast.parse(code)
    scopes: list[ast.AST] = [tree]
    *outer, last = target.split(".")
    for part in outer:
        found = [
            n for scope in scopes for n in ast.iter_child_nodes(scope) if isinstance(n, ast.ClassDef) and n.name == part
        ]
        if not found:
            return ""
        scopes = list(found)
    for scope in scopes:
        for node in ast.iter_child_nodes(scope):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == last:
                return ast.get_source_segment(code, node) or ""
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == last for t in targets):
                    return ast.get_source_segment(code, node) or ""
    return ""


class Fingerprints:
    """The current fingerprint of any mutant, computed once per mutated function."""

    def __init__(self) -> None:
        self.suite, self.spec = suite_digest(), spec_digest()
        self._functions: dict[tuple[str, str], str] = {}

    def of(self, name: str) -> Fingerprint:
        key = owner_of(name)
        if key not in self._functions:
            path, target = key
            source = source_of(path, target) if (ROOT / path).exists() else ""
            self._functions[key] = hashlib.sha256(source.encode()).hexdigest()[:12]
        return Fingerprint(self.suite, self.spec, self._functions[key])


def selected(name: str, only: Sequence[str]) -> bool:
    """Whether ``--only`` lets this mutant run: no pattern given, or one that matches it."""
    return not only or any(fnmatch.fnmatchcase(name, pattern) for pattern in only)


def load_json(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text())) if path.exists() else {}


def save_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


def verified_now(name: str, mutation: str, verified: dict[str, Any], prints: Fingerprints) -> bool:
    """A judged-equivalent survivor whose record matches today's suite, SPEC.md, function
    and mutation: its verdict was last confirmed against what is here now."""
    record = verified.get(name)
    return (
        record is not None
        and {k: record.get(k) for k in ("suite", "spec", "function")} == prints.of(name).as_dict()
        and same_mutation(record.get("mutation"), mutation)
    )


@dataclass(frozen=True)
class Kept:
    """What an earlier run established, and which of its results a resumed run must
    establish again."""

    equivalent: dict[str, Verdict]
    verified: dict[str, Any]
    extras: dict[str, Any]
    #: The fingerprints each in-process result was established against.
    process_runs: dict[str, Any]
    prints: Fingerprints

    def rerun(self, name: str, status: str) -> bool:
        if status == KILLED:
            return False  # killed stays killed: checks are only ever added
        if status == TIMEOUT:
            # A run resumed again and again meets machines of other speeds and loads:
            # a time-out may have been the machine, so it is established again.
            return True
        # A survival established against today's suite, SPEC.md and function would only be
        # established again (the run is seeded): a run stopped midway resumes where it was,
        # and a verdict is re-verified once its driver run is in too (record_verified).
        established = self.extras[name].get("fingerprint") if name in self.extras else self.process_runs.get(name)
        if established == self.prints.of(name).as_dict():
            return False
        mutation = _describe(name, self.extras)  # a diff read from mutants/: only when needed
        return _verdict(name, self.equivalent, mutation) is None or not verified_now(
            name, mutation, self.verified, self.prints
        )


# --- through the driver --------------------------------------------------------------


@dataclass(frozen=True)
class DriverJob:
    name: str
    tests: tuple[str, ...]
    #: Options of the driver command (a ranker, profiles turned on).
    flags: tuple[str, ...]
    #: In-process seconds of ``tests`` (the protocol checks not counted: they skip in process).
    seconds: float


def driver_jobs(names: Sequence[str], stats: dict[str, Any]) -> list[DriverJob]:
    """For each in-process survivor, the driver runs that could kill it."""
    reaching: dict[str, list[str]] = stats.get("tests_by_mangled_function_name", {})
    durations: dict[str, float] = stats.get("duration_by_test", {})
    jobs: list[DriverJob] = []
    for name in names:
        if "__mutmut_" in name:
            candidates = set(reaching.get(name.rsplit("__mutmut_", 1)[0], ()))
        else:
            # A module constant or a property: whatever reaches the reference may see it.
            candidates = set().union(*map(set, reaching.values()))
        tests: list[str] = []
        took = 0.0
        for test in sorted(candidates, key=lambda t: (durations.get(t, 0.0), t)):
            if tests and took + durations.get(test, 0.0) > DRIVER_TEST_SECONDS:
                break
            tests.append(test)
            took += durations.get(test, 0.0)
        protocol = PROTOCOL_TESTS if owner_of(name)[0] in PROTOCOL_MODULES else ()
        if protocol or tests:
            jobs.append(DriverJob(name, (*protocol, *tests), (), took))
        claims = any(fnmatch.fnmatchcase(name, pattern) for pattern in CLAIM_DEPENDENT)
        if claims:
            lexical = sum(d for t, d in durations.items() if t.startswith(LEXICAL_TESTS))
            jobs.append(DriverJob(name, LEXICAL_TESTS, ("--ranker", "bm25"), lexical))
        if owner_of(name)[0] in PROFILE_MODULES:
            # Their in-process seconds say nothing (they skip there): the budget adds the
            # time a clean run of them took.
            jobs.append(DriverJob(name, PROFILE_TESTS, PROFILE_FLAGS, 0.0))
        if claims:
            # With the profiles off, a driver claiming one it lacks meets that profile's
            # checks, which a certification runs for what is claimed (P18).
            jobs.append(DriverJob(name, PROFILE_TESTS, (), 0.0))
    return jobs


def suite_map() -> dict[str, Any]:
    """mutmut's map of the suite: which tests reach each function, and how long each takes.

    mutmut makes it before its first mutant, so a resumed run that gave mutmut nothing to
    run (a fresh checkout whose in-process results all came from the store, under --only)
    does not have it yet.
    """
    stats_file = MUTANTS / "mutmut-stats.json"
    if not stats_file.exists():
        raise SystemExit(
            f"{stats_file} is missing: mutmut has not mapped the suite in this mutants/ yet; "
            "run without --only (or with a pattern that matches a mutant mutmut runs) first"
        )
    result: dict[str, Any] = json.loads(stats_file.read_text())
    return result


def run_driver(jobs: int, survivors: list[str], prints: Fingerprints) -> None:
    """Run the in-process survivors through the stdio driver, ``jobs`` at a time."""
    if not survivors:
        return
    stats = suite_map()
    results = load_json(DRIVER_RESULTS)
    current = {
        n
        for n, r in results.items()
        if r.get("status") != OVER_BUDGET and r.get("fingerprint") == prints.of(n).as_dict()
    }
    todo = driver_jobs([n for n in survivors if n not in current], stats)
    runs = Counter(job.name for job in todo)
    # A survivor no test reaches and that the protocol checks do not concern has nothing to
    # run: through the driver as in process, nothing would reach it.
    for name in survivors:
        if name not in current and name not in runs:
            results[name] = {"status": SURVIVED, "fingerprint": prints.of(name).as_dict(), "seconds": 0, "runs": 0}
    save_json(DRIVER_RESULTS, results)
    extras = {e.name: e for e in extra_mutants()}
    say(f"through the driver: {len(runs)} in-process survivors, {len(todo)} runs")
    if not todo:
        return
    trees = [_copy_tree(MUTANTS / "extra" / f"driver-{i}") for i in range(jobs)]
    started = time.monotonic()
    clean = _start_driver(trees[0], PROTOCOL_TESTS, mutant=None, flags=())
    if clean.wait() != 0:
        sys.exit(f"the protocol checks do not pass through an unmutated driver ({trees[0]})")
    protocol_seconds = time.monotonic() - started
    say(f"the protocol checks took {protocol_seconds:.0f} s through an unmutated driver")
    profile_seconds = 0.0
    if any(job.tests == PROFILE_TESTS for job in todo):
        started = time.monotonic()
        clean = _start_driver(trees[0], PROFILE_TESTS, mutant=None, flags=PROFILE_FLAGS)
        if clean.wait() != 0:
            sys.exit(f"the profiles' checks do not pass through an unmutated driver with them on ({trees[0]})")
        profile_seconds = time.monotonic() - started
        say(f"the profiles' checks took {profile_seconds:.0f} s through an unmutated driver")

    def budget(job: DriverJob) -> float:
        expected = job.seconds + (protocol_seconds if PROTOCOL_TESTS[0] in job.tests else 0.0)
        expected += profile_seconds if job.tests == PROFILE_TESTS else 0.0
        return DRIVER_SLACK * expected + 60.0

    outcome: dict[str, str] = {}
    seconds: dict[str, float] = {}

    def start(slot: int, job: DriverJob) -> subprocess.Popen[bytes]:
        extra = extras.get(job.name)
        if extra is not None:
            (trees[slot] / extra.path).write_text(extra.source)
            return _start_driver(trees[slot], job.tests, mutant=None, flags=job.flags)
        return _start_driver(MUTANTS, job.tests, mutant=job.name, flags=job.flags)

    def finish(slot: int, job: DriverJob, status: str, elapsed: float) -> None:
        extra = extras.get(job.name)
        if extra is not None:
            shutil.copy2(ROOT / extra.path, trees[slot] / extra.path)
        if status == TIMEOUT:
            status = OVER_BUDGET
        # A mutant is killed through the driver when any of its runs kills it; it survived
        # only when every run finished and survived.
        if outcome.get(job.name) in (None, SURVIVED) or status == KILLED:
            outcome[job.name] = status
        seconds[job.name] = seconds.get(job.name, 0.0) + elapsed
        if all(j.name != job.name for j in pending) and job.name not in running_names():
            results[job.name] = {
                "status": outcome[job.name],
                "fingerprint": prints.of(job.name).as_dict(),
                "seconds": round(seconds[job.name], 1),
                "runs": runs[job.name],
            }
            save_json(DRIVER_RESULTS, results)
            say(f"driver: {job.name} {outcome[job.name]} ({seconds[job.name]:.0f} s)")

    # Cheapest mutants first, each one's runs together: a run cut short has then settled the
    # most mutants it could, and left none half-run.
    cost: dict[str, float] = {}
    for job in todo:
        cost[job.name] = cost.get(job.name, 0.0) + budget(job)
    pending = sorted(todo, key=lambda job: (cost[job.name], job.name))
    running: dict[int, tuple[DriverJob, subprocess.Popen[bytes], float]] = {}

    def running_names() -> set[str]:
        return {job.name for job, _, _ in running.values()}

    _pool(pending, running, jobs, start, finish, budget)
    counts = Counter(outcome.values())
    say(
        f"through the driver: {counts[KILLED]} of {len(outcome)} killed"
        + (f", {counts[OVER_BUDGET]} over budget (left for --resume)" if counts[OVER_BUDGET] else "")
    )


def _start_driver(
    cwd: Path, tests: Sequence[str], *, mutant: str | None, flags: Sequence[str]
) -> subprocess.Popen[bytes]:
    env = os.environ | {"PYTHONPATH": str(cwd)}
    env.pop("MUTANT_UNDER_TEST", None)
    if mutant is not None:
        # mutmut's trampolines read the mutant from the environment at every call, so the
        # driver process the suite starts runs the same mutant.
        env["MUTANT_UNDER_TEST"] = mutant
    driver = shlex.join([sys.executable, "-m", "reference_impl.driver", *flags])
    cmd = [
        sys.executable, "-m", "pytest", "--rootdir=.", "-x", "-q", "-p", "no:cacheprovider",
        *DRIVER_ARGS, "--sut-cmd", driver, *tests,
    ]  # fmt: skip
    return subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _pool(
    pending: list[Any],
    running: dict[int, tuple[Any, subprocess.Popen[bytes], float]],
    jobs: int,
    start: Any,
    finish: Any,
    budget: Callable[[Any], float],
) -> None:
    """Run ``pending`` items ``jobs`` at a time: ``start(slot, item)`` gives the process,
    ``finish(slot, item, status, seconds)`` is told how it ended (a process past
    ``budget(item)`` seconds is killed and counts as timed out). Stopped itself (Ctrl-C,
    SIGTERM), it stops what it started: each process leads a session of its own."""
    try:
        while pending or running:
            while pending and len(running) < jobs:
                slot = next(i for i in range(jobs) if i not in running)
                item = pending.pop(0)
                running[slot] = (item, start(slot, item), time.monotonic())
            time.sleep(0.5)
            for slot, (item, proc, started) in list(running.items()):
                elapsed = time.monotonic() - started
                if proc.poll() is None and elapsed < budget(item):
                    continue
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    status = TIMEOUT
                else:
                    status = SURVIVED if proc.returncode == 0 else KILLED
                del running[slot]
                finish(slot, item, status, elapsed)
    except BaseException:
        for _item, proc, _started in running.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise


# --- the report ----------------------------------------------------------------------


@dataclass
class Row:
    module: str
    section: str
    generated: int = 0
    killed: int = 0
    killed_by_driver: int = 0
    timed_out: int = 0
    survived: int = 0
    equivalent: int = 0
    reverified: int = 0
    awaiting: int = 0
    not_run: int = 0

    def add(self, other: Row) -> None:
        for name in (
            "generated", "killed", "killed_by_driver", "timed_out", "survived",
            "equivalent", "reverified", "awaiting", "not_run",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def judged(self) -> int:
        """Mutants that ran and are not judged equivalent: what the score is out of."""
        return self.generated - self.equivalent - self.not_run

    @property
    def score(self) -> float:
        killed = self.killed + self.killed_by_driver + self.timed_out
        return 100.0 if self.judged == 0 else 100.0 * killed / self.judged

    @property
    def score_in_process(self) -> float:
        return 100.0 if self.judged == 0 else 100.0 * (self.killed + self.timed_out) / self.judged

    @property
    def score_text(self) -> str:
        return "–" if self.judged == 0 and self.not_run else f"{self.score:.1f}%"

    def cells(self) -> str:
        return (
            f"| {self.module} | {self.generated} | {self.killed} | {self.killed_by_driver} | {self.timed_out} "
            f"| {self.survived} | {self.equivalent} | {self.reverified} | {self.awaiting} | {self.not_run} "
            f"| {self.score_text} |"
        )


@dataclass
class Survivor:
    name: str
    module: str
    line: str
    unreached: bool
    verdict: str = ""
    reason: str = ""
    reverified: bool = False


@dataclass
class Results:
    rows: list[Row] = field(default_factory=list)
    survivors: list[Survivor] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    contradicted: list[str] = field(default_factory=list)
    #: Survivors whose name has a verdict written for another mutation (renumbered by mutmut).
    misdirected: list[tuple[Survivor, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    through_driver: int = 0
    #: In-process survivors with no settled driver result (a run cut short, or over budget).
    driver_pending: list[str] = field(default_factory=list)


def statuses_of(path: str, extras: dict[str, Any], unrun: set[str]) -> dict[str, str]:
    """Each mutant of one module and how the in-process run ended for it."""
    codes = mutmut_results(path)
    statuses = {name: _STATUS.get(code, KILLED) if code is not None else NOT_RUN for name, code in codes.items()}
    statuses |= {name: e["status"] for name, e in extras.items() if e["path"] == path}
    statuses |= {name: NOT_RUN for name in unrun if owner_of(name)[0] == path}
    return statuses


def collect(verdicts: dict[str, dict[str, Verdict]], prints: Fingerprints) -> Results:
    equivalent, awaiting = verdicts.get("equivalent", {}), verdicts.get("awaiting", {})
    extras = load_json(EXTRA_RESULTS)
    driver = load_json(DRIVER_RESULTS)
    verified = load_json(VERIFIED)
    # Extra mutants a cut-short run never reached count as not run, not as absent.
    unrun = {e.name for e in extra_mutants() if e.name not in extras}
    results = Results()
    used: set[str] = set()
    for path, section in MODULES:
        row = Row(f"`{path.removeprefix('reference_impl/')}`", section)
        codes = mutmut_results(path)
        for name, status in sorted(statuses_of(path, extras, unrun).items()):
            row.generated += 1
            by_driver = driver.get(name, {}).get("status")
            if status == SURVIVED and by_driver in (KILLED, TIMEOUT, SURVIVED) and driver[name].get("runs", 1):
                results.through_driver += 1
            elif status == SURVIVED and by_driver not in (KILLED, TIMEOUT, SURVIVED):
                results.driver_pending.append(name)
            if status == SURVIVED and by_driver in (KILLED, TIMEOUT):
                row.killed_by_driver += 1
                if _verdict(name, equivalent, _describe(name, extras)) is not None:
                    results.contradicted.append(name)
            elif status == NOT_RUN:
                row.not_run += 1
                results.missing.append(name)
                # A verdict on a mutant not run yet waits for its run: not stale, whatever
                # mutation the run then finds under the name.
                for table in (equivalent, awaiting):
                    key = name if name in table else _verdict(name, table, "")
                    if key is not None:
                        used.add(key)
            elif status == KILLED:
                row.killed += 1
            elif status == TIMEOUT:
                row.timed_out += 1
            else:
                row.survived += 1
                mutation = _describe(name, extras)
                survivor = Survivor(name, path, mutation, unreached=codes.get(name) == 33)
                written = equivalent.get(name) or awaiting.get(name)
                if written is not None and not same_mutation(written.mutation, mutation):
                    results.misdirected.append((survivor, written.mutation or ""))
                if (key := _verdict(name, equivalent, mutation)) is not None:
                    row.equivalent += 1
                    survivor.verdict, survivor.reason = "equivalent", equivalent[key].reason
                    survivor.reverified = verified_now(name, mutation, verified, prints)
                    row.reverified += survivor.reverified
                    used.add(key)
                elif (key := _verdict(name, awaiting, mutation)) is not None:
                    row.awaiting += 1
                    survivor.verdict, survivor.reason = "awaiting a check", awaiting[key].reason
                    used.add(key)
                results.survivors.append(survivor)
        results.rows.append(row)
    results.stale = sorted((set(equivalent) | set(awaiting)) - used - {s.name for s, _ in results.misdirected})
    return results


def record_verified(results: Results, prints: Fingerprints) -> bool:
    """Record, for every survivor judged equivalent whose in-process and driver runs both
    happened against today's fingerprints, what its verdict now holds for; whether that
    changed the record."""
    process_runs = load_json(PROCESS_RUNS)
    extras = load_json(EXTRA_RESULTS)
    driver = load_json(DRIVER_RESULTS)
    verified = load_json(VERIFIED)
    names = {s.name for s in results.survivors}
    verified = {name: record for name, record in verified.items() if name in names}
    for survivor in results.survivors:
        if survivor.verdict != "equivalent":
            continue
        now = prints.of(survivor.name).as_dict()
        ran = extras.get(survivor.name, {}).get("fingerprint") or process_runs.get(survivor.name)
        through = driver.get(survivor.name, {})
        if ran == now and through.get("status") == SURVIVED and through.get("fingerprint") == now:
            verified[survivor.name] = {**now, "mutation": survivor.line}
            survivor.reverified = True
    changed = verified != load_json(VERIFIED)
    save_json(VERIFIED, verified)
    return changed


@dataclass(frozen=True)
class Verdict:
    reason: str
    #: The change the verdict was written for: mutmut numbers a function's mutants anew
    #: when the function changes, so a name alone may come to mean another mutation. None
    #: for a pattern, which judges every mutant of a function alike.
    mutation: str | None = None


def load_verdicts(text: str) -> dict[str, dict[str, Verdict]]:
    """The sections of ``scripts/mutation-verdicts.toml``: a pattern with ``*`` maps to its
    reason; a mutant's name to ``{ reason = "...", mutation = "..." }``, the change it judged."""
    sections: dict[str, dict[str, Verdict]] = {}
    for section, entries in tomllib.loads(text).items():
        sections[section] = {}
        for key, value in entries.items():
            if "*" in key and isinstance(value, str):
                sections[section][key] = Verdict(value)
            elif (
                "*" not in key
                and isinstance(value, dict)
                and set(value) == {"reason", "mutation"}
                and all(isinstance(v, str) for v in value.values())
            ):
                sections[section][key] = Verdict(value["reason"], value["mutation"])
            else:
                want = "a reason" if "*" in key else "{ reason = ..., mutation = ... }"
                sys.exit(f"{VERDICTS.name}: [{section}] {key!r} must map to {want}, got {value!r}")
    return sections


#: How an extra mutant's description starts: the line of its constant, which moves with every
#: edit above it.
_LINE = re.compile(r"^line \d+: ")


def same_mutation(a: str | None, b: str | None) -> bool:
    """Whether two descriptions name one change; a constant's line number is no part of it."""
    return a is not None and b is not None and _LINE.sub("", a) == _LINE.sub("", b)


def _verdict(name: str, verdicts: dict[str, Verdict], mutation: str) -> str | None:
    """The key of ``verdicts`` that judges ``name``: the name itself when the verdict was
    written for this mutation, or a pattern with ``*`` for a whole function whose mutants
    share one reason."""
    if name in verdicts and same_mutation(verdicts[name].mutation, mutation):
        return name
    return next((key for key in verdicts if "*" in key and fnmatch.fnmatchcase(name, key)), None)


@functools.cache
def _stored_survivors(store: Path) -> dict[str, str]:
    """The change each survivor makes, as the store keeps it: read once, not once a survivor."""
    return dict(json.loads(store.read_text())["survivors"])


def _describe(name: str, extras: dict[str, dict[str, Any]]) -> str:
    if name in extras:
        e = extras[name]
        return f"line {e['line']}: `{e['before']}` → `{e['after']}`"
    if not (MUTANTS / owner_of(name)[0]).exists() and STORE.exists():
        return _stored_survivors(STORE).get(name, "")
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    with contextlib.chdir(ROOT):
        diff = get_diff_for_mutant(name)
    removed = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return f"`{' '.join(removed)}` → `{' '.join(added)}`"


def render(results: Results, wall: str) -> str:
    out = [
        "# Mutation testing",
        "",
        "Generated by `scripts/mutation` (never edit by hand; verdicts on survivors live in",
        "`scripts/mutation-verdicts.toml`, and what each verdict was last confirmed against in",
        "`scripts/mutation-verified.json`). Each mutant is a small change to one module of",
        "`reference_impl`; the shipped suite (`conformance/suite`, `--hypothesis-seed 0",
        "--conformance-thoroughness quick`) is the only killer: first in process against the",
        "reference, then, for every mutant that survives there, through the stdio driver. Score:",
        "killed (timed out included, in process or through the driver) ÷ mutants run and not",
        "judged equivalent.",
        "",
        "| module | mutants | killed in process | killed through the driver | timed out | survived "
        "| judged equivalent | equivalent, re-verified against this suite | awaiting a check | not run | score |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = Row("total", "")
    groups = {section: Row(section, section) for section in GOALS}
    for row in results.rows:
        out.append(row.cells())
        total.add(row)
        groups[row.section].add(row)
    out.append(total.cells().replace("| total |", "| **total** |"))
    out += ["", "Goals: " + "; ".join(
        f"{'met' if groups[s].score >= goal else 'NOT met'}{' so far' if groups[s].not_run else ''}: "
        f"{groups[s].score:.1f}% of the {s} modules' "
        f"non-equivalent mutants killed (goal ≥ {goal:g}%)"
        + (f", {groups[s].not_run} not run" if groups[s].not_run else "") for s, goal in GOALS.items()
    ) + "."]  # fmt: skip
    held = "were run again and survived against this suite, SPEC.md and their function as they are now"
    equivalent = (
        f" All {total.equivalent} survivors judged equivalent {held}."
        if total.reverified == total.equivalent
        else f" Of the {total.equivalent} survivors judged equivalent, {total.reverified} {held}; the others' "
        "verdicts are stale until `scripts/mutation --resume` runs them."
    )
    out += [
        "",
        f"In process alone the suite kills {total.score_in_process:.1f}% of the {total.judged} mutants it is "
        f"scored on ({total.killed + total.timed_out}); {results.through_driver} in-process survivors ran "
        f"again through the driver, which killed {total.killed_by_driver} more, for {total.score:.1f}% in all."
        + equivalent,
        "",
        f"Wall time of the last run: {wall}.",
        "",
    ]
    if results.missing:
        out += [
            f"**{len(results.missing)} mutants were not run**: the run was cut short, so the scores cover only the "
            "mutants that ran and a goal marked met is not yet established for the rest. "
            "`scripts/mutation --resume` runs them.",
            "",
        ]
    if results.driver_pending:
        out += [
            f"**{len(results.driver_pending)} in-process survivors have not been run through the driver**: the run "
            "was cut short or their driver run went over its budget, so they count as survivors for now. "
            "`scripts/mutation --resume` runs them.",
            "",
        ]
    out += _method()
    for verdict, title in (
        ("", "Survivors without a verdict"),
        ("awaiting a check", "Survivors awaiting a check"),
        ("equivalent", "Survivors judged equivalent"),
    ):
        chosen = [s for s in results.survivors if s.verdict == verdict]
        out += [f"## {title} ({len(chosen)})", ""]
        if not chosen:
            out += ["None.", ""]
            continue
        for s in chosen:
            notes = [" (no suite test reaches its function in process)" if s.unreached else ""]
            if s.verdict == "equivalent" and not s.reverified:
                notes.append(" (stale: not run against this suite yet)")
            out.append(f"- `{s.name}`{''.join(notes)}: {s.line}" + (f"  \n  {s.reason}" if s.reason else ""))
        out.append("")
    if results.contradicted:
        out += [
            "## Verdicts the driver contradicts",
            "",
            "Judged equivalent, yet killed through the driver: the verdict is wrong and goes.",
            "",
        ]
        out += [f"- `{name}`" for name in results.contradicted] + [""]
    if results.misdirected:
        out += [
            "## Verdicts written for another mutation",
            "",
            "mutmut numbered these functions' mutants anew after they changed: the verdict under each",
            "name judged another change, so the survivor now named so counts as without a verdict until",
            "it is judged again.",
            "",
        ]
        out += [f"- `{s.name}`: judged {judged}; now {s.line}" for s, judged in results.misdirected]
        out.append("")
    if results.stale:
        out += ["## Stale verdicts", "", "Verdicts on mutants that were killed or no longer exist:", ""]
        out += [f"- `{name}`" for name in results.stale] + [""]
    return "\n".join(out)


def _method() -> list[str]:
    return [
        "## How",
        "",
        "- mutmut 3.8 mutates every function and method body of the modules above, then runs, for",
        "  each mutant, the suite tests that reach the mutated function (fastest first, stopping at",
        "  the first failure). Strings containing a space (messages, descriptions: prose whose",
        "  wording SPEC does not fix) are not mutated; every other string, number, operator,",
        "  argument and keyword is. A mutant that stops the reference from starting counts as",
        "  killed: certification reports it. A survivor marked `x_…__mutmut_N` is mutmut's.",
        "- mutmut leaves module constants and `@property` bodies alone, and those hold SPEC's",
        "  numbers (96, 112, 128, 12, 24, 6) and parts of the lexical formula: the script mutates",
        "  them with mutmut's own operators plus `n - 1` for every integer (`…__extra_N`), and",
        "  runs each against every suite test that reaches the reference.",
        "- Every mutant that survives in process runs again through the driver: the suite starts",
        "  `python -m reference_impl.driver` in a process of its own, which inherits the mutant,",
        "  and runs the tests that reach the mutated function (the fastest, up to a minute of",
        "  their in-process time: in process they all ran already), and for mutants of the driver",
        "  session (`driver/_session.py`) and of the code its `run.open` and `run.close` go through",
        "  (`_connections.py`, `_toolset.py`) the protocol checks too (`test_protocol.py`, which skip",
        "  in process), so that what only the wire shows (invalid params, parse errors, reply",
        "  schemas, the stdio shell's defaults, the bound on a handshake) is judged by a check, not",
        "  by a verdict. Mutants of the driver's profile claims also run with `--ranker bm25`",
        "  against the lexical profile's checks: a driver that claims `lexical` for another ranker",
        "  fails them. The in-process",
        "  reference runs neither optional profile, so the survivors of `_toolset.py`,",
        "  `_connections.py` and `driver/_session.py`, which hold their code, also run through a",
        "  driver with both on (`--eviction lru --refresh`) against their checks",
        "  (`test_eviction.py`, `test_refresh.py`). A driver run far",
        "  slower than expected is stopped and left for `--resume` (a mutant that hangs the driver",
        "  fails the suite's own per-request time-out instead, and is killed).",
        "- A verdict of equivalence holds for what it was judged against. The script fingerprints",
        "  the suite (everything in `conformance/` that runs or is read; not the modules only",
        "  `certify` runs around pytest, such as the certificate's), SPEC.md with PROTOCOL.md,",
        "  and the mutated function's source; a survivor judged equivalent counts as re-verified",
        "  when it survived, in process and through the driver, against today's three, and its",
        "  mutation is the one the verdict was written for. `--resume` runs every other one again.",
        "- A verdict on one mutant names the change it judged (`mutation` in",
        "  `scripts/mutation-verdicts.toml`): mutmut numbers a function's mutants anew when the",
        "  function changes, so a name may come to mean another change, and the verdict then",
        '  does not apply to it (listed under "Verdicts written for another mutation"). A verdict',
        "  with `*` judges every mutant of one function alike.",
        "- Left out: the replaceable rankers (`_bm25.py`, `_semantic.py`, `_analysis.py`,",
        "  `_registry.py`: no clause names them, RNK-9), the stdio shell `driver/__main__.py` (its own tests cover it;",
        "  through the driver every mutant of the modules above meets it) and `_trace.py`",
        "  (ISO-3, a MAY).",
        "- Why mutmut: cosmic-ray 8.7 was tried on `_discovery.py` first. It made 47 mutants and runs",
        "  the whole test command for each (a survivor costs the whole suite, about two minutes",
        "  here); 6 had finished after five minutes, so the eleven modules would take many hours.",
        "  mutmut runs only the tests that reach the mutated function, fastest first, stops at",
        "  the first failure, and forks from a process that has imported everything already.",
        "",
    ]


# --- the command ---------------------------------------------------------------------


def say(message: str) -> None:
    sys.stdout.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stdout.flush()


def _exit_on_signal(signum: int, frame: object) -> None:
    # An exception, unlike the default action, lets the cleanup of what this run started run.
    sys.exit(128 + signum)


def _run(args: argparse.Namespace, equivalent: dict[str, Verdict]) -> None:
    """Run the mutants ``args`` selects: in process, the extra mutants, then the survivors through the driver."""
    if not args.resume:
        shutil.rmtree(MUTANTS, ignore_errors=True)
    # mutmut puts mutants/ on sys.path; it must exist before the interpreter starts.
    LOGS.mkdir(parents=True, exist_ok=True)
    _sync_sources()
    prints = Fingerprints()
    verified = load_json(VERIFIED)
    extras_before = load_json(EXTRA_RESULTS)

    kept = Kept(equivalent, verified, extras_before, load_json(PROCESS_RUNS), prints)

    only: list[str] = args.only

    def rerun_selected(name: str, status: str) -> bool:
        return selected(name, only) and kept.rerun(name, status)

    if args.resume:
        _forget(rerun_selected)
    results_now = {name: code for path, _ in MODULES for name, code in mutmut_results(path).items()}
    pending = {name for name, code in results_now.items() if code is None and selected(name, only)}
    # mutmut runs a mutant it is given by name again, result or not: once the mutants
    # exist, --only names just the selected ones without a result; before, its patterns.
    targets = sorted(pending) if only and results_now else list(only)
    # Recorded before mutmut starts, so that a run stopped midway keeps, with the
    # fingerprints they were established against, the results it did reach.
    _note_process_runs(pending, prints, before=True)
    if targets or not only:
        say(f"mutmut on {len(MODULES)} modules, {args.jobs} at a time" + (f", {len(targets)} names" if only else ""))
        run_mutmut(args.jobs, LOGS / "mutmut.log", targets)
    _note_process_runs(pending, prints)
    run_extras(args.jobs, rerun_selected, prints, only)
    extras = load_json(EXTRA_RESULTS)
    unrun = {e.name for e in extra_mutants() if e.name not in extras}
    survivors = [
        name
        for path, _ in MODULES
        for name, status in statuses_of(path, extras, unrun).items()
        if status == SURVIVED and selected(name, only)
    ]
    run_driver(args.jobs, survivors, prints)


def _wall(seconds: float, jobs: int, resume: bool, finished: bool) -> str:
    """The wall time of a run, as the report gives it."""
    return (
        f"{seconds / 60:.0f} min with `--jobs {jobs}`"
        + (
            ", a `--resume` that ran only the mutants still open or stale (a run from scratch takes hours)"
            if resume
            else ""
        )
        + ("" if finished else ", stopped before its end")
    )


def main() -> None:
    if sys.argv[1:2] == ["--as-mutmut"]:
        mutmut_main(sys.argv[2:])
        return
    signal.signal(signal.SIGTERM, _exit_on_signal)
    signal.signal(signal.SIGHUP, _exit_on_signal)
    parser = argparse.ArgumentParser(prog="scripts/mutation", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the results in mutants/; run the mutants not run yet, the survivors established against another "
        "suite, SPEC.md or function, and the survivors whose verdict of equivalence is stale",
    )
    parser.add_argument("--report", action="store_true", help="only write MUTATION.md from the results in mutants/")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="run only the mutants whose names match (repeatable; e.g. 'reference_impl.driver._session.*'); "
        "mutmut still collects which tests reach which function from the whole suite, and the others count as "
        "not run (or keep their results under --resume)",
    )
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    verdicts = load_verdicts(VERDICTS.read_text())
    equivalent = verdicts.get("equivalent", {})
    started = time.monotonic()
    if args.report or args.resume:
        restore_results()
    if not args.report:
        finished = False
        try:
            _run(args, equivalent)
            finished = True
        finally:
            # Also for a run stopped midway (SIGTERM, ^C): the report says how long the last run
            # took, and a stopped one keeps what it reached.
            (MUTANTS / "wall-time.txt").write_text(_wall(time.monotonic() - started, args.jobs, args.resume, finished))
    prints = Fingerprints()
    wall_file = MUTANTS / "wall-time.txt"
    wall = wall_file.read_text().strip() if wall_file.exists() else "unknown"  # written by hand too
    results = _while_settled(lambda: collect(verdicts, prints))
    # Also for --report: the results of a run stopped before its end still
    # re-verify the verdicts whose runs it finished against today's fingerprints.
    if record_verified(results, prints):
        results = _while_settled(lambda: collect(verdicts, prints))  # counted with what was just verified
    REPORT.write_text(render(results, wall))
    _while_settled(lambda: save_results(results))
    counts = Counter(s.verdict or "no verdict" for s in results.survivors)
    say(
        f"wrote {REPORT.name}: survivors {dict(counts)}; stale verdicts {len(results.stale)}; "
        f"contradicted by the driver {len(results.contradicted)}"
    )


def _while_settled(read: Callable[[], _T]) -> _T:
    """``read()``, again if it met a half-written ``.meta``: mutmut rewrites a module's file in
    place after each mutant, so a report taken while a run goes on may read one mid-write."""
    for _ in range(20):
        try:
            return read()
        except json.JSONDecodeError:
            time.sleep(0.25)
    return read()


def _forget(rerun: Any) -> None:
    """Mark as not run every in-process result that must be established again, and drop
    its driver result, so that this run judges it against the suite as it is now."""
    driver = load_json(DRIVER_RESULTS)
    for path, _ in MODULES:
        meta = MUTANTS / f"{path}.meta"
        if meta.exists():
            data = json.loads(meta.read_text())
            codes = data["exit_code_by_key"]
            for name, code in codes.items():
                if code is not None and rerun(name, _STATUS.get(code, KILLED)):
                    codes[name] = None
                    driver.pop(name, None)
            meta.write_text(json.dumps(data))
    save_json(DRIVER_RESULTS, driver)


def restore_results() -> None:
    """Put back in ``mutants/`` every result of the store that it lacks. mutmut keeps a
    result it finds in a module's ``.meta`` for as long as the function it mutates keeps
    the hash recorded beside it, and marks the others not run."""
    if not STORE.exists():
        return
    store = json.loads(STORE.read_text())
    for path, meta in store["meta"].items():
        target = MUTANTS / f"{path}.meta"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps({**meta, "durations_by_key": {}, "estimated_durations_by_key": {}}))
    for key, target in _STORED_FILES.items():
        if key in store and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            save_json(target, store[key])
    if "wall" in store and not (MUTANTS / "wall-time.txt").exists():
        (MUTANTS / "wall-time.txt").write_text(store["wall"])


def save_results(results: Results) -> None:
    """Write every result in ``mutants/`` to the store, one line per module or file, with
    the change each survivor makes (read from a mutated module a fresh checkout lacks)."""
    meta: dict[str, Any] = {}
    for path, _ in MODULES:
        source = MUTANTS / f"{path}.meta"
        if source.exists():
            data = json.loads(source.read_text())
            meta[path] = {key: data.get(key, {}) for key in ("exit_code_by_key", "hash_by_function_name")}
    store: dict[str, Any] = {"meta": meta, "survivors": {s.name: s.line for s in results.survivors}}
    store |= {key: load_json(target) for key, target in _STORED_FILES.items()}
    wall = MUTANTS / "wall-time.txt"
    if wall.exists():
        store["wall"] = wall.read_text()
    # One entry a line keeps a resumed run's change to the store readable in a diff.
    lines = [
        f" {json.dumps(key)}: {json.dumps(value, sort_keys=True, ensure_ascii=False)}" for key, value in store.items()
    ]
    STORE.write_text("{\n" + ",\n".join(lines) + "\n}\n")


_STORED_FILES = {"extras": EXTRA_RESULTS, "driver": DRIVER_RESULTS, "process_runs": PROCESS_RUNS}


def _note_process_runs(pending: set[str], prints: Fingerprints, *, before: bool = False) -> None:
    """Record the fingerprints the mutants mutmut runs are judged against: ``before`` it
    starts, those of every mutant it is about to run (one without a result yet is not run
    whatever its record says); after, those of any result that still lacks one."""
    runs = load_json(PROCESS_RUNS)
    for path, _ in MODULES:
        for name, code in mutmut_results(path).items():
            if (name in pending) if before else (code is not None and name not in runs):
                runs[name] = prints.of(name).as_dict()
    save_json(PROCESS_RUNS, runs)


def _sync_sources() -> None:
    """Bring mutants/ up to date with every file that is not mutated: mutmut copies a file
    only when mutants/ lacks it, so a resumed run would otherwise judge mutants with the
    suite, SPEC.md and vectors of the first run."""
    mutated = {ROOT / path for path, _ in MODULES}
    for package in ("reference_impl", "conformance", "mock_servers"):
        for source in (ROOT / package).rglob("*"):
            if source.is_dir() or source in mutated or {"__pycache__", ".pytest_cache"} & set(source.parts):
                continue
            target = MUTANTS / source.relative_to(ROOT)
            if not target.exists() or target.read_bytes() != source.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


if __name__ == "__main__":
    main()
