"""The suite's worth: every deliberately defective implementation is caught on its clause.

Each case certifies a reference driver with one defect (``python -m
tests.conformance.defects NAME``), restricted with ``--clause`` to the tests that cite the
clause the defect breaks, and reads the certificate the run wrote (built from the
suite's own records, not from any report text): the run is non-conformant, every failure
is a finding about the implementation (no error of the suite, no protocol breakage), and
a failure names the expected clause. A control run shows that the same tests pass against
the plain reference driver. A sample of the defects runs by default; ``--full`` runs all.

A variant makes another choice the specification allows (an implementation-defined point,
a permission): certified on the clauses its reading touches (by default those that name
the few tests their reading touches, every one with ``--full``), and on the whole suite with
``--full``, and must pass with no finding but the warnings it declares.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance._clauses import SENTENCES
from tests.conformance.certifying import ROOT, WHOLE_SUITE, WHOLE_SUITE_TIMEOUT, certify
from tests.conformance.defects import DEFECTS, SAMPLE, VARIANT_SAMPLE, VARIANTS


def defect_cmd(name: str) -> list[str]:
    return [sys.executable, "-m", "tests.conformance.defects", name]


def _predicted(twin: str) -> list[str]:
    """The lexical-vector checks that the model of a wrong ranker predicts to fail on its
    clause (the first two, those of the cases that isolate a sentence first)."""
    from conformance.suite import test_ranking
    from conformance.suite._probes import PROBES
    from tests.conformance.vectors._defective import DEFECTIVE, findings

    model = DEFECTIVE[twin]
    named = findings(PROBES, model)
    caught = [p for p in PROBES if p.id in named and {s.split(".")[0] for s in named[p.id]} == {model.clause}]
    assert caught, f"the lexical vectors do not catch {twin} on {model.clause}"
    caught.sort(key=lambda probe: not probe.isolates)
    return [test_ranking.check_id(probe) for probe in caught[:2]]


def check_caught(name: str, tmp_path: Path) -> None:
    defect = DEFECTS[name]
    tests = _predicted(defect.twin) if defect.twin else ()
    code, cert, output = certify(defect_cmd(name), [defect.clause], tmp_path, tests)

    assert not cert["errors"], f"{name}: the suite broke instead of reporting a finding: {cert['errors']}\n{output}"
    protocol = [f["message"] for f in cert["failures"] if f["protocol"]]
    assert not protocol, f"{name}: the driver broke the protocol instead of failing a check: {protocol}"
    # A broken SHOULD sentence is a warning: the run is not non-conformant, with the clause
    # failing. It is incomplete (exit 2) when the check that found it could not go on to the
    # MUST sentences it also cites (a hang the host should have bounded leaves what the
    # servers left behind unknown).
    blocking = SENTENCES[defect.sentence].level == "MUST"
    assert cert["failures"], f"{name} ({defect.summary}) passed every test citing {defect.clause}"
    assert code == 1 if blocking else code in (0, 2), (
        f"{name}: exit {code} for a broken {SENTENCES[defect.sentence].level}"
    )
    on_clause = [f for f in cert["failures"] if defect.clause in f["clauses"]]
    assert on_clause, f"{name}: caught, but not on {defect.clause}: {[f['label'] for f in cert['failures']]}"
    row = next(r for r in cert["clauses"] if r["clause"] == defect.clause)
    assert row["status"] == "fail"


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_a_sample_of_defects_is_caught_on_its_clause(name: str, tmp_path: Path) -> None:
    check_caught(name, tmp_path)


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(DEFECTS) - set(SAMPLE)))
def test_every_other_defect_is_caught_on_its_clause(name: str, tmp_path: Path) -> None:
    check_caught(name, tmp_path)


# Checks that look a tool up by the name the host showed: a host that names tools otherwise
# (CAT-3.1 broken, and failed by its own checks) leaves them inconclusive, naming CAT-3.1,
# where they once broke with a KeyError or an IndexError, an error of the suite.
LOOKUPS = (
    "test_discovery.py::test_discovery_never_activates_a_tool_its_policy_excludes",
    "test_gate.py::test_gate_refuses_every_name_that_is_not_active",
    "test_isolation.py::test_runs_never_see_each_others_activations",
)


@pytest.mark.slow
@pytest.mark.e2e
def test_checks_that_look_tools_up_by_name_are_inconclusive_on_a_host_that_names_them_otherwise(
    tmp_path: Path,
) -> None:
    code, cert, output = certify(defect_cmd("qualified_with_one_underscore"), [], tmp_path, LOOKUPS)

    assert not cert["errors"], output
    assert (code, cert["verdict"]) == (2, "incomplete") and not cert["failures"], output
    inconclusive = [row for row in cert["clauses"] if row["status"] == "inconclusive"]
    assert inconclusive and all(row["inconclusive_because"] == ["CAT-3"] for row in inconclusive), inconclusive


# Attribution: a defect of one rule that changes how many tools a run requires is blamed on
# that rule, not on the caps or the budget the refused run then seems to break. Like the
# defects outside the sample, these run with --full.
@pytest.mark.e2e
@pytest.mark.slow
def test_a_run_refused_because_read_only_let_writes_in_is_not_blamed_on_the_budget(tmp_path: Path) -> None:
    """Treating harmless writes as read-only makes more tools required, and the run is
    refused as too large: read-only handling broke first, not the first request's budget."""
    code, cert, output = certify(defect_cmd("harmless_writes_are_read_only"), ["BUD-1"], tmp_path)

    assert not cert["errors"] and not cert["failures"], output
    assert (code, cert["verdict"]) == (2, "incomplete"), output
    row = next(r for r in cert["clauses"] if r["clause"] == "BUD-1")
    assert (row["status"], row["inconclusive_because"]) == ("inconclusive", ["POL-5"]), row


@pytest.mark.e2e
@pytest.mark.slow
def test_an_allowlist_misread_is_not_blamed_on_the_required_tools(tmp_path: Path) -> None:
    """Matching allowlist entries as prefixes admits more tools, which ``all`` mode then
    requires: the allowlist (POL-3) broke first, not the sentences on required tools."""
    code, cert, output = certify(defect_cmd("allowlist_matches_prefixes"), ["POL-3", "POL-6", "POL-7"], tmp_path)

    assert code == 1 and not cert["errors"], output
    # Not POL-1 either: the host holds the tool eligible, so the allowlist is what it misread.
    assert {c for f in cert["failures"] for c in f["clauses"]} == {"POL-3"}, output
    # The checks of required tools that relied on the allowlist could not judge: their
    # clauses are not established, and name what broke first.
    rows = {r["clause"]: (r["status"], r["inconclusive_because"]) for r in cert["clauses"]}
    assert rows["POL-6"] == rows["POL-7"] == ("inconclusive", ["POL-3"]), output


@pytest.mark.e2e
@pytest.mark.slow
def test_a_pin_that_beats_its_denial_is_blamed_on_denial_alone(tmp_path: Path) -> None:
    """A host that lets a pin beat its denial requires more tools and refuses runs that fit:
    denial broke (POL-2.2), not the sentences on pins (POL-7: with room for every pin, the
    run opens with the denied pin active, which no reading of them explains), the first
    round's caps or budget, nor the general rule (POL-1): the host holds the denied pin
    eligible."""
    clauses = ["POL-2", "POL-7", "SEL-2", "SEL-3", "BUD-1"]
    code, cert, output = certify(defect_cmd("pinned_beats_deny"), clauses, tmp_path)

    assert code == 1 and not cert["errors"], output
    assert {c for f in cert["failures"] for c in f["clauses"]} == {"POL-2"}, output


# A broken budget, required tools, isolation, small-room discovery or policy rule, or an
# under-reporting discovery result, show in many checks:
# those of other sentences end inconclusive naming the sentence (the watermark guard of
# conformance._sut, the required-tools checks of the first round, the catalog and the
# vectors, the vectors' rerun over fresh servers), and only its own clause fails.
GUARDED = [
    pytest.param(
        "first_round_97", ["BUD-1", "SEL-2", "SEL-5", "DSC-10", "BUD-4", "ERR-2"], "BUD-1", id="first-round-past-96"
    ),
    pytest.param("required_capped_at_twelve", ["POL-6", "CAT-2", "DSC-10"], "POL-6", id="required-tools-left-out"),
    # Runs that carry activations over: the vectors check a difference over servers served
    # anew, and the checks that compare runs serve each its own servers.
    pytest.param(
        "activations_pinned_for_later_runs",
        ["ISO-2", "RNK-1", "RNK-5", "SEL-5", "POL-9", "DSC-5", "DSC-10"],
        "ISO-2",
        id="activations-carried-over",
    ),
    # Discovery that activates nothing when the room left is below the limit stops short of
    # the watermark: the budget's checks check a named call in a small room first.
    pytest.param("nothing_when_room_below_limit", ["DSC-5", "BUD-2"], "DSC-5", id="small-room-left-empty"),
    # A misread policy rule: every finding and precondition asks the policy diagnosis first
    # (suite/_eligibility), which opens one server under one rule at a time.
    pytest.param(
        "allow_excludes_destructive",
        ["POL-5", "CAT-1", "CAT-2", "POL-4", "POL-6", "SEL-2", "ERR-1", "ERR-2"],
        "POL-5",
        id="allow-misread",
    ),
    pytest.param("all_mode_honours_allowed_tools", ["POL-4", "POL-6", "SEL-2"], "POL-4", id="all-mode-misread"),
    pytest.param(
        "denied_only_in_auto",
        ["POL-2", "CAT-3", "POL-7", "SEL-2", "DSC-1", "DEF-1", "DEF-4", "BUD-1"],
        "POL-2",
        id="deny-misread",
    ),
    pytest.param(
        "empty_allowlist_admits_all",
        ["POL-3", "CAT-3", "CAT-4", "POL-6", "SEL-2", "SEL-3", "DSC-1", "DEF-1", "BUD-1", "BUD-4", "ERR-1"],
        "POL-3",
        id="empty-allowlist-misread",
    ),
    # A run refused for the pins its policy excludes, without naming them: the checks that
    # expected it open are inconclusive once it opens without them.
    pytest.param(
        "excluded_pin_refused_without_naming_it",
        ["POL-7", "CAT-3", "CAT-4", "SEL-3", "DSC-6", "DSC-9", "DEF-1", "BUD-2", "BUD-3"],
        "POL-7",
        id="pins-refused-unnamed",
    ),
    # A discovery result that under-reports what it activated: the checks that read the
    # report ask the definitions and the gate what was activated.
    pytest.param("activated_lists_only_the_first", ["DSC-6", "DSC-9", "DEF-1"], "DSC-6", id="under-reported"),
]


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize(("name", "clauses", "own"), GUARDED)
def test_a_defect_other_checks_run_into_is_blamed_on_its_own_clause_alone(
    name: str, clauses: list[str], own: str, tmp_path: Path
) -> None:
    code, cert, output = certify(defect_cmd(name), clauses, tmp_path)

    assert code == 1 and not cert["errors"], output
    assert {c for f in cert["failures"] for c in f["clauses"]} == {own}, output


# The test command certifies the reference driver on the whole suite already; this run
# repeats it on the defects' clauses, in the shape the defect runs use.
@pytest.mark.e2e
@pytest.mark.slow
def test_the_reference_driver_passes_the_tests_the_defects_are_caught_by(tmp_path: Path) -> None:
    clauses = sorted({defect.clause for defect in DEFECTS.values()})
    # The optional profiles on, as the defects of eviction and refresh turn them on.
    driver = [sys.executable, "-m", "reference_impl.driver", "--eviction", "lru", "--refresh"]

    code, cert, output = certify(driver, clauses, tmp_path)

    assert code == 0 and not cert["failures"] and not cert["errors"], output
    assert {r["clause"]: r["status"] for r in cert["clauses"] if r["clause"] in clauses} == dict.fromkeys(
        clauses, "pass"
    )


def check_passes(name: str, clauses: list[str], tmp_path: Path) -> dict[str, Any]:
    """Certify variant ``name`` on the tests citing ``clauses`` (all tests, in one process and
    without certify's time budget, when empty): no error, no finding but on the SHOULD
    sentences it declares, and those do show."""
    variant = VARIANTS[name]
    tests = variant.tests if clauses else ()
    whole: dict[str, Any] = {} if clauses else {"extra": WHOLE_SUITE, "timeout": WHOLE_SUITE_TIMEOUT}
    code, cert, output = certify(defect_cmd(name), clauses, tmp_path, tests, **whole)

    warned = {s["id"] for f in cert["failures"] for s in f["sentences"]}
    other = [
        f"{f['label']}: {f['message']}"
        for f in cert["failures"]
        if not f["sentences"] or not {s["id"] for s in f["sentences"]} <= set(variant.warns)
    ]
    assert code == 0 and not other and not cert["errors"], f"{name} ({variant.choice}): {other}\n{output}"
    assert warned == set(variant.warns), f"{name}: declares warnings on {variant.warns}, got {sorted(warned)}"
    return cert


# A sample of the variants that name the few tests their reading touches runs every time;
# the others (some run the whole of their clauses' tests, certifications of minutes each)
# run with --full.
VARIANT_RUNS = [
    pytest.param(name, marks=() if name in VARIANT_SAMPLE else pytest.mark.slow) for name in sorted(VARIANTS)
]


@pytest.mark.e2e
@pytest.mark.parametrize("name", VARIANT_RUNS)
def test_a_variant_passes_the_checks_of_the_clauses_its_reading_touches(name: str, tmp_path: Path) -> None:
    check_passes(name, list(VARIANTS[name].clauses), tmp_path)


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_variant_is_certified_on_the_whole_suite(name: str, tmp_path: Path) -> None:
    cert = check_passes(name, [], tmp_path)

    expected = "conformant with warnings" if VARIANTS[name].warns else "conformant"
    assert cert["verdict"] == expected, f"{name}: verdict {cert['verdict']!r}"


# Defects that break what other clauses' checks rely on (a policy applied, the cap of 12):
# certified on the whole suite, each fails its own clause and no other; the checks that
# rely on it are inconclusive, naming it. The whole suite in one process takes minutes (3
# on two idle cores, 10 on loaded ones): its time budget is the run's, not the default 300 s.
RELIED_ON = ("read_only_ignored", "no_fairness_cap")


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("name", RELIED_ON)
def test_a_defect_other_checks_rely_on_fails_its_own_clause_alone(name: str, tmp_path: Path) -> None:
    defect = DEFECTS[name]

    code, cert, output = certify(defect_cmd(name), [], tmp_path, extra=WHOLE_SUITE, timeout=WHOLE_SUITE_TIMEOUT)

    assert not cert["errors"], f"{name}: the suite broke: {cert['errors']}\n{output}"
    failing = {f"{f['label']} ({f['test']})": f["clauses"] for f in cert["failures"]}
    assert {c for clauses in failing.values() for c in clauses} == {defect.clause}, failing
    rows = {row["clause"]: row for row in cert["clauses"]}
    assert rows[defect.clause]["status"] == "fail" and code == 1
    for clause_id, row in rows.items():
        if row["status"] == "inconclusive":
            assert row["inconclusive_because"] == [defect.clause], f"{clause_id} is inconclusive: {row['reason']}"
        elif clause_id != defect.clause:
            assert row["status"] in ("pass", "untested", "not-applicable"), (clause_id, row["reason"])


def _must_sentences() -> list[str]:
    from conformance._clauses import CLAUSES

    return [s.id for c in CLAUSES.values() for s in c.sentences if s.level == "MUST"]


def test_every_must_sentence_has_a_defect_the_suite_must_catch() -> None:
    covered = {d.sentence for d in DEFECTS.values()}

    missing = [s for s in _must_sentences() if s not in covered]

    assert missing == [], f"MUST sentences with no defect in tests/conformance/defects: {missing}"


@pytest.mark.e2e
def test_the_defective_driver_refuses_an_unknown_defect() -> None:
    proc = subprocess.run(
        [*defect_cmd("no_such_defect")], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2
    assert "first_round_97" in proc.stderr


def test_the_samples_the_gate_runs_name_defects_and_variants_of_the_catalog() -> None:
    assert DEFECTS.keys() >= SAMPLE
    # A variant sample certifies only the tests its reading touches: it must name them.
    assert VARIANTS.keys() >= VARIANT_SAMPLE and all(VARIANTS[name].tests for name in VARIANT_SAMPLE)
