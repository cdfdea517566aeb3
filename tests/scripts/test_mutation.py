"""scripts/mutation: what its fingerprint of the suite may leave out, and the results it keeps."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    # By path: mypy checks scripts/mutation.py as a module of its own, not as scripts.mutation.
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MUTATION = _load()
CERTIFY_ONLY: tuple[str, ...] = MUTATION.CERTIFY_ONLY

# Collect the shipped suite with the plugin, as a mutant's run does, and name every module
# of the package that got imported.
PROBE = """
import sys, pytest

class Loaded:
    def pytest_sessionfinish(self):
        print("LOADED", *sorted(m for m in sys.modules if m.split(".")[0] == "conformance"))

pytest.main(["-p", "conformance.plugin", "-c", "conformance/suite/pytest.ini", "--sut", "reference",
             "--collect-only", "-q", "-p", "no:cacheprovider", "conformance/suite"], plugins=[Loaded()])
"""


def test_the_modules_the_fingerprint_leaves_out_exist() -> None:
    assert all((ROOT / "conformance" / name).is_file() for name in CERTIFY_ONLY)


@pytest.mark.e2e
def test_the_suite_imports_none_of_the_modules_the_fingerprint_leaves_out() -> None:
    """A verdict survives a change to these only while a mutant's run never meets them."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    loaded = next(line.split()[1:] for line in out.splitlines() if line.startswith("LOADED"))

    assert "conformance.suite._wire" in loaded  # the probe saw the suite
    assert not {f"conformance.{name.removesuffix('.py')}" for name in CERTIFY_ONLY} & set(loaded)


@pytest.mark.e2e
def test_a_pool_stopped_midway_kills_the_processes_it_started() -> None:
    """Each driver run leads a session of its own: stopping the script must not orphan them."""
    started: list[subprocess.Popen[bytes]] = []

    def start(slot: int, item: int) -> subprocess.Popen[bytes]:
        started.append(subprocess.Popen(["sleep", "60"], start_new_session=True))
        return started[-1]

    def budget(item: int) -> float:
        raise KeyboardInterrupt  # as Ctrl-C would, once both runs are under way

    with pytest.raises(KeyboardInterrupt):
        MUTATION._pool([1, 2], {}, 2, start, lambda *args: None, budget)

    assert len(started) == 2
    assert all(proc.poll() is not None for proc in started)


def test_the_results_a_checkout_lacks_come_back_from_the_store_as_they_were_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run takes hours and may stop anywhere: what one checkout established, another resumes from."""
    mutants = tmp_path / "mutants"
    monkeypatch.setattr(MUTATION, "MUTANTS", mutants)
    monkeypatch.setattr(MUTATION, "STORE", tmp_path / "mutation-results.json")
    files = {"extras": mutants / "extra-results.json", "driver": mutants / "driver-results.json"}
    monkeypatch.setattr(MUTATION, "_STORED_FILES", files)
    path = MUTATION.MODULES[0][0]
    meta = {
        "exit_code_by_key": {"m.x_f__mutmut_1": 1, "m.x_f__mutmut_2": 0, "m.x_f__mutmut_3": None},
        "hash_by_function_name": {"x_f": "abc"},
    }
    (mutants / path).parent.mkdir(parents=True)
    (mutants / f"{path}.meta").write_text(json.dumps({**meta, "durations_by_key": {"m.x_f__mutmut_1": 0.5}}))
    MUTATION.save_json(files["extras"], {"m.A__extra_1": {"status": "killed", "path": path}})
    MUTATION.save_json(files["driver"], {"m.x_f__mutmut_2": {"status": "survived"}})
    survivor = MUTATION.Survivor("m.x_f__mutmut_2", path, "`a + 1` → `a - 1`", unreached=False)

    MUTATION.save_results(MUTATION.Results(survivors=[survivor]))
    saved = {p: p.read_text() for p in (mutants / f"{path}.meta", *files.values())}
    shutil.rmtree(mutants)
    MUTATION.restore_results()

    restored = json.loads((mutants / f"{path}.meta").read_text())
    assert {k: restored[k] for k in meta} == meta
    # mutmut requires the keys it keeps timings in; the timings of another machine are not kept.
    assert restored["durations_by_key"] == {}
    assert all(p.read_text() == text for p, text in saved.items() if p.suffix == ".json")
    assert MUTATION._describe("m.x_f__mutmut_2", {}) == "`a + 1` → `a - 1`"


class _Prints:
    """Today's fingerprint of every mutant: one suite, one SPEC.md, one function."""

    def of(self, name: str) -> object:
        return MUTATION.Fingerprint("suite-now", "spec-now", "function-now")


NOW = {"suite": "suite-now", "spec": "spec-now", "function": "function-now"}
BEFORE = {**NOW, "suite": "suite-before"}


def _kept(*, process_runs: dict[str, object], equivalent: dict[str, object] | None = None) -> Any:
    return MUTATION.Kept(equivalent or {}, {}, {}, process_runs, _Prints())


def test_a_resumed_run_keeps_a_survival_established_against_todays_suite() -> None:
    """A run cut short in its driver phase resumes there, not with every in-process survivor."""
    kept = _kept(process_runs={"m.x_f__mutmut_1": NOW})

    assert not kept.rerun("m.x_f__mutmut_1", MUTATION.SURVIVED)


def test_a_resumed_run_establishes_again_a_survival_of_another_suite() -> None:
    kept = _kept(process_runs={"m.x_f__mutmut_1": BEFORE})

    assert kept.rerun("m.x_f__mutmut_1", MUTATION.SURVIVED)
    assert kept.rerun("m.x_f__mutmut_2", MUTATION.SURVIVED)  # no record of its run at all


def test_a_resumed_run_keeps_a_kill_and_establishes_a_time_out_again() -> None:
    kept = _kept(process_runs={"m.x_f__mutmut_1": BEFORE})

    assert not kept.rerun("m.x_f__mutmut_1", MUTATION.KILLED)
    assert kept.rerun("m.x_f__mutmut_1", MUTATION.TIMEOUT)


def test_a_survivor_judged_equivalent_runs_again_in_process_only_against_another_suite() -> None:
    """Its verdict is re-verified once its driver run is in too; the in-process run stands."""
    equivalent = {"m.x_f__mutmut_*": MUTATION.Verdict("same result")}
    kept = _kept(process_runs={"m.x_f__mutmut_1": NOW, "m.x_f__mutmut_2": BEFORE}, equivalent=equivalent)

    assert not kept.rerun("m.x_f__mutmut_1", MUTATION.SURVIVED)
    assert kept.rerun("m.x_f__mutmut_2", MUTATION.SURVIVED)


def test_a_run_stopped_during_mutmut_keeps_the_in_process_results_it_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MUTATION, "MUTANTS", tmp_path)
    monkeypatch.setattr(MUTATION, "PROCESS_RUNS", tmp_path / "process-runs.json")
    meta = tmp_path / f"{MUTATION.MODULES[0][0]}.meta"
    meta.parent.mkdir(parents=True)
    codes: dict[str, int | None] = {"m.x_f__mutmut_1": None, "m.x_f__mutmut_2": None}
    meta.write_text(json.dumps({"exit_code_by_key": codes}))

    MUTATION._note_process_runs(set(codes), _Prints(), before=True)
    # mutmut settles the first mutant, then the run is stopped.
    meta.write_text(json.dumps({"exit_code_by_key": {**codes, "m.x_f__mutmut_1": 0}}))
    kept = _kept(process_runs=MUTATION.load_json(tmp_path / "process-runs.json"))

    assert not kept.rerun("m.x_f__mutmut_1", MUTATION.SURVIVED)


def test_a_resumed_run_keeps_the_survival_of_a_mutant_of_a_constant_established_against_todays_suite() -> None:
    change = {"line": 3, "before": "LIMIT = 12", "after": "LIMIT = 11"}
    extras = {"m.LIMIT__extra_1": {**change, "status": "survived", "fingerprint": NOW}}
    kept = MUTATION.Kept({}, {}, extras, {}, _Prints())

    assert not kept.rerun("m.LIMIT__extra_1", MUTATION.SURVIVED)
    assert MUTATION.Kept({}, {}, {"m.LIMIT__extra_1": {**change, "fingerprint": BEFORE}}, {}, _Prints()).rerun(
        "m.LIMIT__extra_1", MUTATION.SURVIVED
    )


def test_a_verdict_judges_only_the_mutation_it_was_written_for() -> None:
    """mutmut numbers a changed function's mutants anew: the name alone may mean another change."""
    verdicts = MUTATION.load_verdicts(
        '[equivalent]\n"m.x_f__mutmut_1" = { reason = "same codec", mutation = "`utf-8` → `UTF-8`" }\n'
    )["equivalent"]

    assert MUTATION._verdict("m.x_f__mutmut_1", verdicts, "`utf-8` → `UTF-8`") == "m.x_f__mutmut_1"
    assert MUTATION._verdict("m.x_f__mutmut_1", verdicts, "`a >= b` → `a > b`") is None


def test_a_verdict_on_a_constant_still_judges_it_once_the_constant_moved_to_another_line() -> None:
    verdicts = MUTATION.load_verdicts(
        '[equivalent]\n"m.MAX__extra_1" = { reason = "any bound from 64", mutation = "line 30: `MAX = 1024` → `MAX = 1025`" }\n'
    )["equivalent"]

    assert MUTATION._verdict("m.MAX__extra_1", verdicts, "line 79: `MAX = 1024` → `MAX = 1025`") == "m.MAX__extra_1"
    assert MUTATION._verdict("m.MAX__extra_1", verdicts, "line 30: `MAX = 1024` → `MAX = 1023`") is None


def test_a_pattern_verdict_judges_every_mutant_of_its_function() -> None:
    verdicts = MUTATION.load_verdicts('[equivalent]\n"m.x_f__mutmut_*" = "only the trace reads it"\n')["equivalent"]

    assert MUTATION._verdict("m.x_f__mutmut_7", verdicts, "`a` → `b`") == "m.x_f__mutmut_*"
    assert MUTATION._verdict("m.x_g__mutmut_7", verdicts, "`a` → `b`") is None


def test_a_verdict_on_one_mutant_without_its_mutation_is_refused_by_name() -> None:
    with pytest.raises(SystemExit, match=r"'m\.x_f__mutmut_1' must map to"):
        MUTATION.load_verdicts('[equivalent]\n"m.x_f__mutmut_1" = "same codec"\n')


def test_the_verdicts_shipped_each_name_the_mutation_they_judged() -> None:
    MUTATION.load_verdicts(MUTATION.VERDICTS.read_text())


def test_a_resumed_run_with_no_mutant_of_a_constant_to_run_needs_no_map_of_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh checkout resuming a module whose results are all kept: mutmut runs nothing, so
    # it never maps which tests reach which function.
    monkeypatch.setattr(MUTATION, "MUTANTS", tmp_path)
    monkeypatch.setattr(MUTATION, "EXTRA_RESULTS", tmp_path / "extra-results.json")
    monkeypatch.setattr(MUTATION, "extra_mutants", list)  # their results all kept
    assert not (tmp_path / "mutmut-stats.json").exists()

    MUTATION.run_extras(1, lambda name, status: False, _Prints(), ["no.such.module.*"])


class _Passed:
    """A finished run of the suite that passed."""

    def wait(self) -> int:
        return 0


def test_the_progress_of_a_resumed_run_counts_the_mutants_of_constants_it_runs_not_those_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(MUTATION, "MUTANTS", tmp_path)
    monkeypatch.setattr(MUTATION, "EXTRA_RESULTS", tmp_path / "extra-results.json")
    kept = {f"m.K__extra_{i}": {"status": MUTATION.KILLED, "fingerprint": NOW} for i in range(5)}
    (tmp_path / "extra-results.json").write_text(json.dumps(kept))
    path = MUTATION.MODULES[0][0]
    to_run = [MUTATION.Extra(f"m.C__extra_{i}", path, "", 1, "C = 1", "C = 2") for i in (1, 2)]
    monkeypatch.setattr(MUTATION, "extra_mutants", lambda: to_run)
    monkeypatch.setattr(MUTATION, "suite_map", lambda: {"tests_by_mangled_function_name": {}, "duration_by_test": {}})
    # The unmutated module in the checkout, and the tree copy a mutant is written to.
    (tmp_path / "root" / path).parent.mkdir(parents=True)
    (tmp_path / "root" / path).write_text("C = 1\n")
    (tmp_path / "tree" / path).parent.mkdir(parents=True)
    monkeypatch.setattr(MUTATION, "ROOT", tmp_path / "root")
    monkeypatch.setattr(MUTATION, "_copy_tree", lambda target: tmp_path / "tree")
    monkeypatch.setattr(MUTATION, "_start", lambda tree, tests: _Passed())

    def survive_each(pending: list[Any], running: Any, jobs: int, start: Any, finish: Any, budget: Any) -> None:
        for extra in pending:
            finish(0, extra, MUTATION.SURVIVED, 1.0)

    monkeypatch.setattr(MUTATION, "_pool", survive_each)

    MUTATION.run_extras(1, lambda name, status: False, _Prints())

    out = capsys.readouterr().out
    assert "extra 1/2: m.C__extra_1 survived" in out and "extra 2/2: m.C__extra_2 survived" in out


def test_a_mutant_of_the_profile_claims_meets_the_profiles_checks_with_the_profiles_off() -> None:
    """A driver claiming eviction without it fails EVI checks only in a run that claims it."""
    name = "reference_impl.driver._session.xǁReferenceDriverǁinitialize__mutmut_39"
    stats: dict[str, Any] = {"tests_by_mangled_function_name": {}, "duration_by_test": {}}

    runs = {(job.tests, job.flags) for job in MUTATION.driver_jobs([name], stats)}

    assert (MUTATION.PROFILE_TESTS, ()) in runs
    assert (MUTATION.PROFILE_TESTS, MUTATION.PROFILE_FLAGS) in runs


def test_a_mutant_of_the_handshake_bound_meets_the_protocol_checks() -> None:
    """The bound on a server's handshake is the connection's, and only the protocol checks
    (which skip in process) open a run whose server never answers."""
    name = "reference_impl._connections.xǁConnectionǁrun__mutmut_17"
    stats: dict[str, Any] = {"tests_by_mangled_function_name": {}, "duration_by_test": {}}

    jobs = MUTATION.driver_jobs([name], stats)

    assert any(MUTATION.PROTOCOL_TESTS[0] in job.tests and not job.flags for job in jobs)


def test_the_wall_time_of_a_run_stopped_before_its_end_says_so() -> None:
    stopped = MUTATION._wall(125.0, 2, True, False)
    assert stopped.startswith("2 min with `--jobs 2`, a `--resume`") and stopped.endswith(", stopped before its end")
    assert "stopped" not in MUTATION._wall(125.0, 2, False, True)


def test_a_verdict_on_a_mutant_not_run_yet_is_not_listed_as_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a verdict whose mutant was killed or no longer exists is stale; one whose mutant
    a cut-short run never reached waits for that run."""
    monkeypatch.setattr(MUTATION, "MUTANTS", tmp_path)
    for name, file in (("EXTRA_RESULTS", "extra"), ("DRIVER_RESULTS", "driver"), ("VERIFIED", "verified")):
        monkeypatch.setattr(MUTATION, name, tmp_path / f"{file}.json")
    monkeypatch.setattr(MUTATION, "extra_mutants", list)  # mutmut's mutators live in the mutation venv alone
    meta = tmp_path / f"{MUTATION.MODULES[0][0]}.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {"m.x_f__mutmut_1": None, "m.x_g__mutmut_1": None}}))
    verdicts = {
        "equivalent": {
            "m.x_f__mutmut_1": MUTATION.Verdict("same result", "`a` → `b`"),
            "m.x_gone__mutmut_1": MUTATION.Verdict("same result", "`a` → `b`"),
        },
        "awaiting": {"m.x_g__mutmut_*": MUTATION.Verdict("a check is on its way")},
    }

    results = MUTATION.collect(verdicts, _Prints())

    assert {"m.x_f__mutmut_1", "m.x_g__mutmut_1"} <= set(results.missing)
    assert results.stale == ["m.x_gone__mutmut_1"]


def test_survivors_to_run_through_the_driver_before_mutmut_mapped_the_suite_stop_the_run_saying_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MUTATION, "MUTANTS", tmp_path)

    MUTATION.run_driver(2, [], _Prints())  # nothing to run needs no map
    with pytest.raises(SystemExit, match=r"mutmut-stats\.json is missing.*without --only"):
        MUTATION.run_driver(2, ["m.x_f__mutmut_1"], _Prints())
