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
3. ``MUTATION.md`` is written from the results and from ``scripts/mutation-verdicts.toml``:
   the survivors judged equivalent (with the reason) and those awaiting a check.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
VERDICTS = ROOT / "scripts" / "mutation-verdicts.toml"
REPORT = ROOT / "MUTATION.md"
EXTRA_RESULTS = MUTANTS / "extra-results.json"
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

KILLED, SURVIVED, TIMEOUT, NOT_RUN = "killed", "survived", "timed out", "not run"
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


def run_mutmut(jobs: int, log: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(MUTANTS)}
    env.pop("MUTANT_UNDER_TEST", None)
    cmd = [sys.executable, __file__, "--as-mutmut", "run", "--max-children", str(jobs)]
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
    parts = []
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


def run_extras(jobs: int, equivalent: dict[str, str]) -> None:
    """Run every extra mutant in a copy of the tree of its own, ``jobs`` at a time."""
    stats = json.loads((MUTANTS / "mutmut-stats.json").read_text())
    durations: dict[str, float] = stats["duration_by_test"]
    reaching = set().union(*map(set, stats["tests_by_mangled_function_name"].values()))
    tests = sorted(reaching, key=lambda t: durations.get(t, 0.0))
    budget = 15 * (sum(durations.get(t, 0.0) for t in tests) + 1)
    # On --resume, a mutant killed before stays killed: checks are only ever added.
    results: dict[str, dict[str, Any]] = json.loads(EXTRA_RESULTS.read_text()) if EXTRA_RESULTS.exists() else {}
    results = {
        name: r for name, r in results.items() if r["status"] != SURVIVED or _verdict(name, equivalent) is not None
    }
    # The core modules' numbers first: the lexical weights are many, and a run cut short
    # should still have judged the budgets.
    section = dict(MODULES)
    extras = sorted((e for e in extra_mutants() if e.name not in results), key=lambda e: section[e.path] == "lexical")
    say(f"extra mutants: {len(extras)} (module constants and @property bodies), {len(tests)} tests each at most")
    trees = [_copy_tree(MUTANTS / "extra" / f"tree-{i}") for i in range(jobs)]
    clean = _start(trees[0], tests[:3])
    if clean.wait() != 0:
        sys.exit(f"the suite does not pass on an unmutated copy of the tree ({trees[0]})")
    pending = list(extras)
    running: dict[int, tuple[Extra, subprocess.Popen[bytes], float]] = {}
    while pending or running:
        while pending and len(running) < jobs:
            slot = next(i for i in range(jobs) if i not in running)
            extra = pending.pop(0)
            (trees[slot] / extra.path).write_text(extra.source)
            running[slot] = (extra, _start(trees[slot], tests), time.monotonic())
        time.sleep(0.5)
        for slot, (extra, proc, started) in list(running.items()):
            elapsed = time.monotonic() - started
            if proc.poll() is None and elapsed < budget:
                continue
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                status = TIMEOUT
            else:
                status = SURVIVED if proc.returncode == 0 else KILLED
            shutil.copy2(ROOT / extra.path, trees[slot] / extra.path)
            del running[slot]
            results[extra.name] = {
                "path": extra.path,
                "status": status,
                "line": extra.line,
                "before": extra.before,
                "after": extra.after,
                "seconds": round(elapsed, 1),
            }
            EXTRA_RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False))
            done = len(results)
            if status != KILLED or done % 10 == 0:
                say(f"extra {done}/{len(extras)}: {extra.name} {status} ({elapsed:.0f} s)")


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


# --- the report ----------------------------------------------------------------------


@dataclass
class Row:
    module: str
    section: str
    generated: int = 0
    killed: int = 0
    timed_out: int = 0
    survived: int = 0
    equivalent: int = 0
    awaiting: int = 0
    not_run: int = 0

    def add(self, other: Row) -> None:
        for name in ("generated", "killed", "timed_out", "survived", "equivalent", "awaiting", "not_run"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def judged(self) -> int:
        """Mutants that ran and are not judged equivalent: what the score is out of."""
        return self.generated - self.equivalent - self.not_run

    @property
    def score(self) -> float:
        return 100.0 if self.judged == 0 else 100.0 * (self.killed + self.timed_out) / self.judged

    @property
    def score_text(self) -> str:
        return "–" if self.judged == 0 and self.not_run else f"{self.score:.1f}%"

    def cells(self) -> str:
        return (
            f"| {self.module} | {self.generated} | {self.killed} | {self.survived} | {self.timed_out} "
            f"| {self.equivalent} | {self.awaiting} | {self.not_run} | {self.score_text} |"
        )


@dataclass
class Survivor:
    name: str
    module: str
    line: str
    unreached: bool
    verdict: str = ""
    reason: str = ""


@dataclass
class Results:
    rows: list[Row] = field(default_factory=list)
    survivors: list[Survivor] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def collect(verdicts: dict[str, dict[str, str]]) -> Results:
    equivalent, awaiting = verdicts.get("equivalent", {}), verdicts.get("awaiting", {})
    extras = json.loads(EXTRA_RESULTS.read_text()) if EXTRA_RESULTS.exists() else {}
    # Extra mutants a cut-short run never reached count as not run, not as absent.
    unrun_extras = [e for e in extra_mutants() if e.name not in extras]
    results = Results()
    used: set[str] = set()
    for path, section in MODULES:
        row = Row(f"`{path.removeprefix('reference_impl/')}`", section)
        codes = mutmut_results(path)
        statuses = {name: _STATUS.get(code, KILLED) if code is not None else NOT_RUN for name, code in codes.items()}
        statuses |= {name: e["status"] for name, e in extras.items() if e["path"] == path}
        statuses |= {e.name: NOT_RUN for e in unrun_extras if e.path == path}
        for name, status in sorted(statuses.items()):
            row.generated += 1
            if status == NOT_RUN:
                row.not_run += 1
                results.missing.append(name)
            elif status == KILLED:
                row.killed += 1
            elif status == TIMEOUT:
                row.timed_out += 1
            else:
                row.survived += 1
                survivor = Survivor(name, path, _describe(name, extras), unreached=codes.get(name) == 33)
                if (key := _verdict(name, equivalent)) is not None:
                    row.equivalent += 1
                    survivor.verdict, survivor.reason = "equivalent", equivalent[key]
                    used.add(key)
                elif (key := _verdict(name, awaiting)) is not None:
                    row.awaiting += 1
                    survivor.verdict, survivor.reason = "awaiting a check", awaiting[key]
                    used.add(key)
                results.survivors.append(survivor)
        results.rows.append(row)
    results.stale = sorted((set(equivalent) | set(awaiting)) - used)
    return results


def _verdict(name: str, verdicts: dict[str, str]) -> str | None:
    """The key of ``verdicts`` that judges ``name``: the name itself, or a pattern with ``*``
    for a whole function whose mutants share one reason."""
    if name in verdicts:
        return name
    return next((key for key in verdicts if "*" in key and fnmatch.fnmatchcase(name, key)), None)


def _describe(name: str, extras: dict[str, dict[str, Any]]) -> str:
    if name in extras:
        e = extras[name]
        return f"line {e['line']}: `{e['before']}` → `{e['after']}`"
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
        "`scripts/mutation-verdicts.toml`). Each mutant is a small change to one module of",
        "`reference_impl`; the shipped suite (`conformance/suite`, in process against the reference,",
        "`--hypothesis-seed 0 --conformance-thoroughness quick`) is the only killer. Score: killed",
        "(timed out included) ÷ mutants run and not judged equivalent.",
        "",
        "| module | mutants | killed | survived | timed out | judged equivalent | awaiting a check | not run | score |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
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
    out += ["", f"Wall time of the last run: {wall}.", ""]
    if results.missing:
        out += [
            f"**{len(results.missing)} mutants were not run**: the run was cut short, so the scores cover only the "
            "mutants that ran and a goal marked met is not yet established for the rest. "
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
            reached = " (no suite test reaches its function)" if s.unreached else ""
            out.append(f"- `{s.name}`{reached}: {s.line}" + (f"  \n  {s.reason}" if s.reason else ""))
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
        "- Left out: the replaceable rankers (`_bm25.py`, `_semantic.py`, `_analysis.py`, `_registry.py`: no",
        "  clause names them, RNK-9), the stdio shell `driver/__main__.py` (the in-process suite",
        "  does not run it; the protocol checks that need it skip in process) and `_trace.py`",
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


def main() -> None:
    if sys.argv[1:2] == ["--as-mutmut"]:
        mutmut_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(prog="scripts/mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the results in mutants/; run the mutants not run yet and the survivors not judged equivalent",
    )
    parser.add_argument("--report", action="store_true", help="only write MUTATION.md from the results in mutants/")
    args = parser.parse_args()
    verdicts = tomllib.loads(VERDICTS.read_text())
    started = time.monotonic()
    if not args.report:
        if not args.resume:
            shutil.rmtree(MUTANTS, ignore_errors=True)
        # mutmut puts mutants/ on sys.path; it must exist before the interpreter starts.
        LOGS.mkdir(parents=True, exist_ok=True)
        say(f"mutmut on {len(MODULES)} modules, {args.jobs} at a time")
        equivalent = verdicts.get("equivalent", {})
        if args.resume:
            _forget_survivors(equivalent)
        _sync_sources()
        run_mutmut(args.jobs, LOGS / "mutmut.log")
        run_extras(args.jobs, equivalent)
        wall = f"{(time.monotonic() - started) / 60:.0f} min with `--jobs {args.jobs}`" + (
            ", a `--resume` that ran only the mutants still open (a run from scratch takes hours)"
            if args.resume
            else ""
        )
        (MUTANTS / "wall-time.txt").write_text(wall)
    wall_file = MUTANTS / "wall-time.txt"
    wall = wall_file.read_text() if wall_file.exists() else "unknown"
    results = collect(verdicts)
    REPORT.write_text(render(results, wall))
    counts = Counter(s.verdict or "no verdict" for s in results.survivors)
    say(f"wrote {REPORT.name}: survivors {dict(counts)}; stale verdicts {len(results.stale)}")


def _forget_survivors(equivalent: dict[str, str]) -> None:
    """Mark every survivor not judged equivalent as not run, so that mutmut runs it again
    against the checks added since."""
    for path, _ in MODULES:
        meta = MUTANTS / f"{path}.meta"
        if meta.exists():
            data = json.loads(meta.read_text())
            data["exit_code_by_key"] = {
                k: (None if _STATUS.get(v, KILLED) == SURVIVED and _verdict(k, equivalent) is None else v)
                for k, v in data["exit_code_by_key"].items()
            }
            meta.write_text(json.dumps(data))


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
