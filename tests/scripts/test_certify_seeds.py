"""scripts/certify-seeds: seeds, kept runs, and the report of what must hold."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scripts import certify_seeds
from scripts.certify_seeds import IMPLEMENTATIONS, Outcome, Verdicts, parse_args, parse_seeds, render


def test_seeds_are_ranges_and_lists() -> None:
    assert parse_seeds("1-3,7, 9-10,2") == [1, 2, 3, 7, 9, 10]
    assert parse_seeds("0") == [0]


@pytest.mark.parametrize("text", ["", "a-3", "5-2", "-1", "1-"])
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="--seeds"):
        parse_seeds(text)


def test_an_unknown_implementation_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--only", "reference,nope"])

    assert "unknown implementation(s) ['nope']" in capsys.readouterr().err


def outcome(name: str, seed: int, verdict: str, **extra: Any) -> Outcome:
    return Outcome(name, seed, verdict, 2 if verdict == "error" else 0, 60.0, extra.get("errors", []), [], [])


def test_the_report_says_whether_each_implementation_met_what_it_must() -> None:
    results = [
        Verdicts(IMPLEMENTATIONS["reference"], [outcome("reference", s, "conformant") for s in (1, 2, 3, 5)]),
        Verdicts(
            IMPLEMENTATIONS["typescript-driver"],
            [outcome("typescript-driver", 1, "non-conformant"), outcome("typescript-driver", 2, "error", errors=["t"])],
        ),
    ]

    text = render(results, parse_args(["--seeds", "1-3,5"]), "scripts/certify-seeds --seeds 1-3,5")

    assert "| reference | 1-3, 5 | conformant × 4 | 0 | yes | yes | 60, 60 |" in text
    assert "| typescript-driver | 1-2 | error × 1, non-conformant × 1 | 1 | no | **no** | 60, 60 |" in text
    assert "| 2 | error | 2 | 0 | - | t | 60 |" in text
    assert [r.met for r in results] == [True, False]


def test_the_report_names_the_commits_the_runs_were_made_at() -> None:
    made = [dataclasses.replace(outcome("reference", s, "conformant"), commit=c) for s, c in ((1, "abc"), (2, "abc"))]
    older = outcome("reference", 3, "conformant")

    text = render([Verdicts(IMPLEMENTATIONS["reference"], [*made, older])], parse_args([]), "scripts/certify-seeds")

    assert "the runs below were made at commit `abc` × 2, not recorded × 1." in text


def test_each_run_records_the_commit_the_checkout_was_at_when_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = parse_args(["--out", str(tmp_path), "--seeds", "4,5"])
    # The checkout moves between the two runs, as it does when commits land during a long run.
    commits = iter(["0123456789ab+", "ba9876543210"])
    monkeypatch.setattr(certify_seeds, "checkout_commit", lambda: next(commits))

    def certify(argv: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        out = Path(argv[argv.index("--out") + 1])
        (out / "certificate.json").write_text(json.dumps({"verdict": "conformant", "exit_code": 0, "clauses": []}))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", certify)
    for seed in (4, 5):
        certify_seeds.certify_one(IMPLEMENTATIONS["reference"], seed, args, lambda _line: None)

    kept = [certify_seeds.kept(IMPLEMENTATIONS["reference"], seed, args) for seed in (4, 5)]
    assert [k.commit if k else None for k in kept] == ["0123456789ab+", "ba9876543210"]


@pytest.mark.e2e
def test_the_checkout_commit_is_the_head_of_this_repository() -> None:
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=False)
    if head.returncode != 0:
        pytest.skip("not a git checkout")

    assert (certify_seeds.checkout_commit() or "").rstrip("+") == head.stdout.strip()


def test_a_kept_run_is_read_back_not_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse_args(["--out", str(tmp_path), "--seeds", "4"])
    folder = tmp_path / "reference" / "seed-4"
    folder.mkdir(parents=True)
    cert = {"verdict": "conformant", "exit_code": 0, "errors": [], "clauses": []}
    (folder / "certificate.json").write_text(json.dumps(cert))
    (folder / "run.json").write_text(json.dumps({"options": certify_seeds.run_options(args), "seconds": 12.5}))

    def never(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a kept run was run again")

    monkeypatch.setattr(subprocess, "run", never)

    got = certify_seeds.certify_one(IMPLEMENTATIONS["reference"], 4, args, lambda _line: None)

    assert (got.verdict, got.seconds) == ("conformant", 12.5)


def test_a_run_with_other_options_is_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse_args(["--out", str(tmp_path), "--thoroughness", "quick"])
    folder = tmp_path / "reference" / "seed-4"
    folder.mkdir(parents=True)
    (folder / "certificate.json").write_text(json.dumps({"verdict": "conformant"}))
    (folder / "run.json").write_text(json.dumps({"options": {"thoroughness": "default"}, "seconds": 1}))
    calls: list[list[str]] = []

    def certify(argv: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        cert = {"verdict": "error", "exit_code": 2, "errors": [{"test": "t"}], "clauses": []}
        (folder / "certificate.json").write_text(json.dumps(cert))
        return subprocess.CompletedProcess(argv, 2)

    monkeypatch.setattr(subprocess, "run", certify)
    monkeypatch.setattr(certify_seeds, "checkout_commit", lambda: None)

    got = certify_seeds.certify_one(IMPLEMENTATIONS["reference"], 4, args, lambda _line: None)

    assert got.verdict == "error" and got.errors == ["t"]
    assert calls and calls[0][calls[0].index("--thoroughness") + 1] == "quick"
    assert json.loads((folder / "run.json").read_text())["options"] == certify_seeds.run_options(args)


def test_the_script_writes_the_report_and_fails_when_a_requirement_is_not_met(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdicts = {1: "conformant", 2: "non-conformant"}

    def fake(impl: Any, seed: int, _args: Any, _say: Any) -> Outcome:
        return outcome(impl.name, seed, verdicts[seed])

    monkeypatch.setattr(certify_seeds, "certify_one", fake)
    monkeypatch.setattr(certify_seeds, "checkout_commit", lambda: "feedface")
    report = tmp_path / "CERTIFY-SEEDS.md"

    code = certify_seeds.main(
        ["--only", "reference", "--seeds", "1-2", "--no-build", "--out", str(tmp_path), "--report", str(report)]
    )

    assert code == 1
    assert "| reference | 1-2 | conformant × 1, non-conformant × 1 | 0 | no | **no** |" in report.read_text()


def test_the_report_covers_the_runs_kept_from_other_seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse_args(["--out", str(tmp_path)])
    folder = tmp_path / "reference" / "seed-9"
    folder.mkdir(parents=True)
    (folder / "certificate.json").write_text(json.dumps({"verdict": "conformant", "exit_code": 0, "clauses": []}))
    (folder / "run.json").write_text(json.dumps({"options": certify_seeds.run_options(args), "seconds": 30}))
    monkeypatch.setattr(certify_seeds, "certify_one", lambda impl, seed, *_: outcome(impl.name, seed, "conformant"))
    monkeypatch.setattr(certify_seeds, "checkout_commit", lambda: "feedface")
    report = tmp_path / "CERTIFY-SEEDS.md"

    code = certify_seeds.main(
        ["--only", "reference", "--seeds", "1", "--no-build", "--out", str(tmp_path), "--report", str(report)]
    )

    assert code == 0
    assert "| reference | 1, 9 | conformant × 2 | 0 | yes | yes | 45, 60 |" in report.read_text()
