"""Certificates built from made-up records: a small specification, a session, tests and findings.

Shared by the tests of deciding a certificate (``test_certificate.py``) and of writing it
out (``test_render.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance._certificate import Certificate, RunInfo, build_certificate
from conformance._clauses import parse_spec
from conformance._expectations import Expectation
from conformance._records import FindingRecord, Kind, Records, ResultRecord, SessionRecord

__all__ = ["CLAUSES", "SPEC", "UNTESTED", "certificate", "finding", "record", "run_info", "session", "statuses"]

SPEC = """
## Things

### A-1 · MUST · core
1. Hosts keep things.
2. (SHOULD) They keep them well.
Sources: F1.

### A-2 · SHOULD · core
1. Hosts tidy things.
Sources: F2.

### A-3 · MAY · core
1. Hosts may paint things.
Sources: F3.

### L-1 · MUST · lexical
1. Scores are exact.
Sources: R1.
"""
CLAUSES = parse_spec(SPEC)
UNTESTED = {"A-3.1": "a permission"}


def session(**changes: Any) -> SessionRecord:
    base = SessionRecord(
        record="session",
        sut="--sut-cmd 'node d.js'",
        implementation={"name": "acme", "version": "1.2", "profiles": ["core"]},
        problem="",
        profiles_under_test=["core"],
        profile_options=[],
        timeout=30.0,
        seed="0",
        thoroughness="default",
        shrink_time=20.0,
    )
    return SessionRecord(**{**base, **changes})  # type: ignore[typeddict-item]


def run_info(tmp_path: Path, **changes: Any) -> RunInfo:
    values: dict[str, Any] = {
        "command": "mcp-conformance certify --sut-cmd 'node d.js'",
        "sut_option": "--sut-cmd",
        "sut_value": "node d.js",
        "mode": "certify",
        "examples_dir": tmp_path / "out" / "examples",
        "cwd": tmp_path,
        "timestamp": "2026-01-01T00:00:00+00:00",
        "seed": 7,
    }
    values.update(changes)
    return RunInfo(**values)


def record(test: str, clauses: list[str], kind: Kind = "pass", **extra: Any) -> ResultRecord:
    return ResultRecord(
        record="test",
        nodeid=f"test_x.py::{test}",
        module="test_x.py",
        name=test,
        clauses=clauses,
        cites=extra.pop("cites", clauses),
        kind=kind,
        when=extra.pop("when", "call"),
        duration=0.1,
        message=extra.pop("message", ""),
        findings=extra.pop("findings", []),
        property=extra.pop("property", None),
        inconclusive_because=extra.pop("inconclusive_because", ""),
    )


def finding(clauses: list[str], message: str = "broke it", *, protocol: bool = False) -> FindingRecord:
    return FindingRecord(
        clauses=clauses,
        protocol=protocol,
        message=message,
        expected=["a"],
        observed=["<script>alert(1)</script>"],
        case={"fleet": {"seed": 3}, "policies": {"s0": {"mode": "auto"}}},
        example="Falsifying example: test_one(seed=3)",
        stderr_tail="",
    )


def certificate(
    tmp_path: Path, tests: list[ResultRecord], expectations: tuple[Expectation, ...] = (), **changes: Any
) -> Certificate:
    records = Records(session=changes.pop("session", session()), tests=tests)
    pending = changes.pop("pending", frozenset())
    return build_certificate(
        run_info(tmp_path, **changes), records, expectations, clauses=CLAUSES, untested=UNTESTED, pending=pending
    )


def statuses(cert: Certificate) -> dict[str, str]:
    return {row["clause"]: row["status"] for row in cert["clauses"]}
