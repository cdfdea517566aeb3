"""An expectations file from a certificate: every failure it lists, as a known failure.

``mcp-conformance baseline certificate/ > expected.toml`` (or ``certify --write-expectations
FILE``) writes one ``[[expected_failure]]`` entry per clause and test that failed, each with a
reason to edit, so that a regression run against the same implementation, seed and
thoroughness passes with no stale and no unexpected entry. A failure that was already expected
keeps the entry that accepted it, an entry the run did not check is kept, and a stale one is
dropped, so writing over the file a regression run used updates it. What no expectations file
can accept is named instead of
listed: findings about the driver protocol, processes left running, tests that could not run
to the end.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, cast

from conformance._certificate import AFTER_THE_SUITE, FORMAT, UNCHECKED, Certificate
from conformance._errors import UsageError

__all__ = ["PLACEHOLDER", "Baseline", "By", "baseline", "read_certificate", "write_baseline"]

#: The reason every new entry carries until a team writes its own.
PLACEHOLDER: Final = "TODO: say why this failure is accepted, and when it will be fixed"
#: One entry per clause and test function (precise), or per clause (any test).
By = Literal["test", "clause"]
_COMMENT_WIDTH: Final = 100


class CertificateError(UsageError):
    """A file that is not a certificate this suite wrote; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class _Entry:
    clause: str
    reason: str
    test: str | None
    note: str


@dataclass(frozen=True, slots=True)
class Baseline:
    """The expectations file's text, and what it could not list."""

    text: str
    entries: int
    unlisted: list[str] = field(default_factory=list)


def _function(nodeid: str) -> str:
    """``test_x.py::test_y[http]`` -> ``test_x.py::test_y``: an entry covers every case of its test."""
    return nodeid.split("[", 1)[0]


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    """One line of a TOML comment: no line breaks or control characters, cut to a readable width."""
    line = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return line if len(line) <= _COMMENT_WIDTH else line[: _COMMENT_WIDTH - 1] + "…"


def baseline(cert: Certificate, *, by: By = "test", source: str = "") -> Baseline:
    """The expectations file that accepts every failure of ``cert`` that a file can accept.

    A failure an entry already accepted keeps that entry (its reason and its scope); an entry
    the run did not check is kept as it was; a stale entry is dropped.
    """
    entries: dict[tuple[str, str | None], _Entry] = {}

    def add(clause: str, test: str | None, reason: str, note: str) -> None:
        entries.setdefault((clause, test), _Entry(clause, reason, test, note))

    unlisted: list[str] = []
    for failure in cert["failures"]:
        if failure["protocol"] or failure["test"] == AFTER_THE_SUITE or not failure["clauses"]:
            unlisted.append(f"{failure['label']}: {failure['message']}")
            continue
        note = f"{failure['label']} ({failure['level']}): {failure['message']}"
        for clause in failure["clauses"]:
            kept = [e for e in failure["expected_failure"] or () if e["clause"] == clause]
            for entry in kept:
                add(clause, entry["test"], entry["reason"], note)
            if not kept:
                add(clause, _function(failure["test"]) if by == "test" else None, PLACEHOLDER, note)
    for row in cert["expectations"]["entries"]:
        if row["status"] == UNCHECKED:
            add(row["clause"], row["test"], row["reason"], f"{row['clause']} ({row['level']}): not checked by this run")
    unlisted += [f"{error['test']} could not run to the end: {error['message']}" for error in cert["errors"]]
    order = {row["clause"]: i for i, row in enumerate(cert["clauses"])}
    ordered = sorted(entries.values(), key=lambda e: (order.get(e.clause, len(order)), e.test or ""))
    return Baseline(_render(cert, ordered, unlisted, source), len(ordered), unlisted)


def _render(cert: Certificate, entries: Sequence[_Entry], unlisted: Sequence[str], source: str) -> str:
    impl = cert["implementation"]
    name = f"{impl['name'] or 'unknown'} {impl['version'] or ''}".strip()
    again = shlex.join(["--seed", str(cert["seed"]), "--thoroughness", cert["thoroughness"]])
    lines = [
        f"# Known failures of {name}, from {source or 'its certificate'}",
        f"# ({cert['timestamp']}, verdict {cert['verdict']}, seed {cert['seed']}, thoroughness {cert['thoroughness']}).",
        "# Give each entry its reason, then hold the implementation to it with",
        f"#   mcp-conformance certify {cert['sut']} {again} --mode regression --expectations THIS_FILE",
        "# A listed failure that passes is then a stale expectation: remove it. Certification proper",
        "# (--mode certify) refuses entries on MUST clauses.",
    ]
    if unlisted:
        lines.append(f"# Not listable here ({len(unlisted)}; a regression run fails until they are fixed):")
        lines += [f"#   {_comment(text)}" for text in unlisted]
    for entry in entries:
        lines += ["", f"# {_comment(entry.note)}", "[[expected_failure]]", f"clause = {_toml_string(entry.clause)}"]
        lines.append(f"reason = {_toml_string(entry.reason)}")
        if entry.test is not None:
            lines.append(f"test = {_toml_string(entry.test)}")
    return "\n".join(lines) + "\n"


def read_certificate(path: Path) -> Certificate:
    """The certificate in ``path`` (a ``certificate.json``, or the folder holding one).

    Raises:
        CertificateError: the file cannot be read, is not JSON, or is not a certificate of this
            format; the fields a baseline reads are checked.
    """
    file = path / "certificate.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CertificateError(f"{file}: cannot read the certificate: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CertificateError(f"{file}: not a JSON file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise CertificateError(f"{file}: format: expected {FORMAT!r}, got {got!r}")
    fields: tuple[tuple[str, type], ...] = (
        ("failures", list),
        ("errors", list),
        ("implementation", dict),
        ("sut", str),
        ("verdict", str),
        ("timestamp", str),
        ("seed", int),
        ("thoroughness", str),
        ("expectations", dict),
    )
    fields += (("clauses", list),)
    for key, kind in fields:
        if not isinstance(data.get(key), kind):
            raise CertificateError(f"{file}: {key}: expected a {kind.__name__}, got {data.get(key)!r:.80}")
    entries = data["expectations"].get("entries")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("clause"), str) and isinstance(e.get("status"), str) for e in entries
    ):
        raise CertificateError(f"{file}: expectations.entries: expected a list of entries with a clause and a status")
    for index, error in enumerate(data["errors"]):
        if not (
            isinstance(error, dict) and isinstance(error.get("test"), str) and isinstance(error.get("message"), str)
        ):
            raise CertificateError(f"{file}: errors[{index}]: expected an object with a test and a message")
    for index, failure in enumerate(data["failures"]):
        where = f"{file}: failures[{index}]"
        if not isinstance(failure, dict):
            raise CertificateError(f"{where}: expected an object")
        for key, kind in (("clauses", list), ("test", str), ("label", str), ("message", str), ("protocol", bool)):
            if not isinstance(failure.get(key), kind):
                raise CertificateError(f"{where}.{key}: expected a {kind.__name__}, got {failure.get(key)!r:.80}")
        if not isinstance(failure.get("expected_failure"), list | None):
            raise CertificateError(f"{where}.expected_failure: expected a list or null")
    return cast(Certificate, data)


def write_baseline(cert: Certificate, target: Path, *, source: str = "", by: By = "test") -> str:
    """Write the baseline of ``cert`` to ``target`` (replaced whole); says what was written.

    Raises:
        UsageError: the file cannot be written.
    """
    written = baseline(cert, by=by, source=source)
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_text(written.text, encoding="utf-8")
        os.replace(partial, target)
    except OSError as exc:
        raise UsageError(f"--write-expectations {target}: cannot write the expectations file: {exc}") from None
    told = f"expectations: {written.entries} known failure(s) written to {target}"
    if written.unlisted:
        told += f"; {len(written.unlisted)} failure(s) or error(s) no expectations file can accept (listed in it)"
    return told
