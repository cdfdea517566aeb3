"""``mcp-conformance``: run the suite against an implementation and write a certificate.

Exit codes: 0 every clause of the profiles under test passes, 1 non-conformant, 2 the
suite or its configuration broke, or nothing ran.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance._clauses import load_clauses
from conformance._manifest import manifest

__all__ = ["main"]

PASS, FAIL, NOT_APPLICABLE, UNTESTED = "pass", "fail", "not-applicable", "untested"


@dataclass(frozen=True, slots=True)
class TestOutcome:
    test: str
    outcome: str
    message: str


@dataclass(frozen=True, slots=True)
class ClauseResult:
    clause: str
    level: str
    profile: str
    status: str
    tests: list[TestOutcome]


def _outcomes(junit: Path) -> dict[str, list[TestOutcome]]:
    """Suite test ``module::function`` -> outcomes of its cases (parametrized cases merged)."""
    results: dict[str, list[TestOutcome]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        name = case.get("name", "").split("[", 1)[0]
        outcome, message = PASS, ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = FAIL if child.tag == "failure" else "error"
                message = (child.get("message") or child.text or "")[:2000]
            elif child.tag == "skipped":
                outcome, message = NOT_APPLICABLE, child.get("message") or ""
        results.setdefault(f"{module}::{name}", []).append(TestOutcome(case.get("name", ""), outcome, message))
    return results


def _clause_results(outcomes: dict[str, list[TestOutcome]]) -> list[ClauseResult]:
    results = []
    for entry in manifest():
        tests = [o for test in entry.tests for o in outcomes.get(test, [])]
        kinds = {t.outcome for t in tests}
        if not tests:
            status = UNTESTED
        elif kinds & {FAIL, "error"}:
            status = FAIL
        elif kinds == {NOT_APPLICABLE}:
            status = NOT_APPLICABLE
        else:
            status = PASS
        results.append(ClauseResult(entry.clause, entry.level, entry.profile, status, tests))
    return results


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Conformance certificate: {report['implementation']}",
        "",
        f"- SUT: `{report['sut']}`",
        f"- Verdict: **{report['verdict']}**",
        "",
        "| clause | level | profile | status |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c['clause']} | {c['level']} | {c['profile']} | {c['status']} |" for c in report["clauses"]]
    failures = [c for c in report["clauses"] if c["status"] == FAIL]
    if failures:
        lines += ["", "## Failures", ""]
        for clause in failures:
            title = load_clauses()[clause["clause"]].text.split(". ")[0]
            lines.append(f"### {clause['clause']}: {title}")
            for test in clause["tests"]:
                if test["outcome"] in (FAIL, "error"):
                    lines += ["", f"`{test['test']}`", "", "```", test["message"], "```"]
    return "\n".join(lines) + "\n"


def certify(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="mcp-conformance certify")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--sut", help="MODULE:FACTORY of a Python adapter, or 'reference'")
    target.add_argument("--sut-cmd", help="a driver command line, or 'reference'")
    parser.add_argument("--profile", choices=("core", "lexical", "all"))
    parser.add_argument("--out", default="certificate", help="directory for certificate.json and certificate.md")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    junit = out / "junit.xml"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}"]
    command += ["--sut", args.sut] if args.sut else ["--sut-cmd", args.sut_cmd]
    if args.profile:
        command += ["--profile", args.profile]
    command += list(args.pytest_args)
    completed = subprocess.run(command, check=False)
    if completed.returncode not in (0, 1) or not junit.exists():
        sys.stderr.write(f"mcp-conformance: the suite did not run (pytest exit {completed.returncode})\n")
        return 2
    clauses = _clause_results(_outcomes(junit))
    ran = [c for c in clauses if c.status in (PASS, FAIL)]
    if not ran:
        sys.stderr.write("mcp-conformance: no clause was tested\n")
        return 2
    failed = [c for c in clauses if c.status == FAIL and c.level == "MUST"]
    reasons = {entry.clause: entry.untested_reason for entry in manifest()}
    gaps = [c.clause for c in clauses if c.status == UNTESTED and reasons.get(c.clause) is None]
    verdict = "non-conformant" if failed else ("incomplete" if gaps else "conformant")
    report = {
        "implementation": args.sut or args.sut_cmd,
        "sut": " ".join(command[command.index("--sut" if args.sut else "--sut-cmd") :][:2]),
        "verdict": verdict,
        "untested_without_reason": gaps,
        "clauses": [asdict(c) for c in clauses],
    }
    (out / "certificate.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    (out / "certificate.md").write_text(_markdown(report))
    print(f"certificate written to {out}/certificate.md ({verdict})")
    if gaps and not failed:
        sys.stderr.write(f"mcp-conformance: the suite has no test for {gaps}; no certificate verdict\n")
        return 2
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "certify":
        sys.stderr.write("usage: mcp-conformance certify (--sut SPEC | --sut-cmd COMMAND) [--profile P] [--out DIR]\n")
        raise SystemExit(2)
    raise SystemExit(certify(argv[1:]))
