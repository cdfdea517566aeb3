"""Writing a certificate out: JSON, Markdown, a self-contained HTML page and an SVG badge.

Both documents open with the verdict and a summary table, then a table of contents; clauses
are listed by section, and failures grouped by the clause they break, each with its case
and the one command that replays it. Every value from the run is escaped; files are
replaced atomically, so a reader never sees half a certificate.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal, assert_never

from conformance._certificate import (
    PROTOCOL_LABEL,
    STATUSES,
    Certificate,
    ClauseRow,
    ExitCode,
    FailureRow,
    InconclusiveRow,
    PropertyRow,
)
from conformance._records import Kind

__all__ = ["counted", "outcome", "render_badge", "render_html", "render_markdown", "write_certificate"]

FILES: Final = ("certificate.json", "certificate.md", "certificate.html", "badge.svg")
Tone = Literal["good", "bad", "unsure"]
#: How a verdict looks, from its exit code: nothing blocks, something is wrong, no verdict.
TONES: Final[Mapping[ExitCode, Tone]] = {0: "good", 1: "bad", 2: "unsure"}


def _json_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _anchor(label: str) -> str:
    return "clause-" + "".join(ch if ch.isalnum() else "-" for ch in label.lower()).strip("-")


def _name(cert: Certificate) -> str:
    impl = cert["implementation"]
    return f"{impl['name'] or 'unknown'} {impl['version'] or ''}".strip()


def _groups(cert: Certificate) -> list[tuple[str, list[FailureRow]]]:
    """Failures grouped by the first clause they break (protocol failures first), in order."""
    groups: dict[str, list[FailureRow]] = {}
    for failure in cert["failures"]:
        key = failure["clauses"][0] if failure["clauses"] else PROTOCOL_LABEL
        groups.setdefault(key, []).append(failure)
    return list(groups.items())


def _sections(cert: Certificate) -> list[tuple[str, list[ClauseRow]]]:
    sections: dict[str, list[ClauseRow]] = {}
    for row in cert["clauses"]:
        sections.setdefault(row["section"], []).append(row)
    return list(sections.items())


def _facts(cert: Certificate) -> list[tuple[str, str]]:
    impl = cert["implementation"]
    suite = cert["suite"]
    return [
        ("implementation", _name(cert)),
        ("profiles claimed", ", ".join(impl["profiles_claimed"]) or "-"),
        ("profiles under test", f"{', '.join(cert['profiles_under_test']) or '-'} ({cert['profile_source']})"),
        ("system under test", cert["sut"]),
        ("mode", cert["mode"]),
        ("seed", f"{cert['seed']} (thoroughness {cert['thoroughness']})"),
        ("suite", f"{suite['package']} {suite['version']}, SPEC.md sha256 {suite['spec_sha256']}"),
        ("date", cert["timestamp"]),
        ("duration", f"{cert['seconds']:g} s"),
        ("command", cert["command"]),
    ]


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: "1 test", "2 tests"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def outcome(kind: Kind) -> str:
    """How a test's kind reads in a sentence; a kind added to the records must be named here."""
    if kind == "pass":
        return "passed"
    if kind == "finding":
        return "with findings"
    if kind == "error":
        return "broke"
    if kind == "skip":
        return "skipped"
    if kind == "not-run":
        return "not run"
    if kind == "inconclusive":
        return "inconclusive"
    assert_never(kind)


#: What an inconclusive test means for the clauses it cites.
INCONCLUSIVE: Final = (
    "These tests ran and could not establish what they check. One that found nothing to check (the "
    "implementation's choices left none) leaves the clauses it cites to their other tests; one that could "
    "not judge because another sentence broke first leaves them inconclusive."
)


def _why(row: InconclusiveRow) -> str:
    if row["because"] and row["because"] not in row["message"]:
        return f"{row['message']} (broke first: {row['because']})"
    return row["message"]


def _test_counts(cert: Certificate) -> str:
    counts = cert["tests"]
    total = sum(counts.values())
    parts = [f"{n} {outcome(kind)}" for kind, n in counts.items() if n]
    return f"{counted(total, 'test')}: {', '.join(parts)}" if total else "no test ran"


# -- Markdown


def _cell(text: object) -> str:
    return _text(text).replace("|", "\\|").replace("\n", " ")


def _text(text: object) -> str:
    """Text from the run, outside code blocks: no HTML of its own reaches the page."""
    return html.escape(str(text), quote=False)


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def _details(summary: str, text: str) -> list[str]:
    return ["<details>", f"<summary>{html.escape(summary)}</summary>", "", _fence(text), "", "</details>", ""]


def render_markdown(cert: Certificate) -> str:
    lines = [
        f"# Conformance certificate: {_name(cert)}",
        "",
        f"> **Verdict: {cert['verdict']}** (exit code {cert['exit_code']})",
    ]
    lines += [f"> - {why}" for why in cert["why"]]
    lines += ["", "| status | " + " | ".join(STATUSES) + " |", "|---|" + "---|" * len(STATUSES)]
    lines.append("| clauses | " + " | ".join(str(cert["summary"][s]) for s in STATUSES) + " |")
    lines += ["", _test_counts(cert) + ".", ""]
    groups = _groups(cert)
    lines += ["## Contents", "", "- [Run](#run)", "- [Clauses](#clauses)"]
    if groups:
        lines.append("- [Failures](#failures): " + ", ".join(f"[{k}](#{_anchor(k)})" for k, _ in groups))
    if cert["errors"]:
        lines.append("- [Errors](#errors)")
    if cert["inconclusive"]:
        lines.append("- [Inconclusive tests](#inconclusive-tests)")
    lines += ["- [Properties](#properties)", "- [Expectations](#expectations)", ""]
    lines += ["## Run", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {_cell(value)} |" for key, value in _facts(cert)]
    lines += [f"| note | {_cell(note)} |" for note in cert["notes"]]
    lines += ["", "## Clauses", ""]
    for section, rows in _sections(cert):
        lines += [f"### {section}", "", "| clause | level | profile | status | note |", "|---|---|---|---|---|"]
        for row in rows:
            note = row["reason"] or row["title"]
            status: str = row["status"]
            if row["failures"]:
                status = f"[{status}](#{_anchor(row['clause'])})"
            lines.append(f"| {row['clause']} | {row['level']} | {row['profile']} | {status} | {_cell(note)} |")
        lines.append("")
    if groups:
        lines += ["## Failures", ""]
        for key, failures in groups:
            lines += [f'<a name="{_anchor(key)}"></a>', "", f"### {key}", ""]
            for failure in failures:
                lines += _markdown_failure(failure)
    if cert["errors"]:
        lines += ["## Errors", "", "The suite could not finish these tests; they give no verdict.", ""]
        for error in cert["errors"]:
            lines += [f"- `{error['test']}` ({error['when']})", ""]
            lines += _details("what broke", error["message"])
    if cert["inconclusive"]:
        lines += ["## Inconclusive tests", "", INCONCLUSIVE, ""]
        lines += [
            f"- `{row['test']}` ({', '.join(row['clauses'])}): {_text(_why(row))}" for row in cert["inconclusive"]
        ]
        lines.append("")
    lines += ["## Properties", "", "| test | examples | shrink steps | shrinking |", "|---|---|---|---|"]
    for prop in cert["properties"]:
        drawn = f"{prop['examples']} of {prop['max_examples']}" + (" (cut short)" if prop["cut_short"] else "")
        lines.append(f"| `{_cell(prop['test'])}` | {drawn} | {prop['shrink_steps']} | {_shrinking(prop)} |")
    lines += ["", "## Expectations", ""]
    exp = cert["expectations"]
    if exp["file"]:
        lines.append(f"`{exp['file']}`:")
        lines.append("")
        for entry in exp["entries"]:
            test = f" (test `{entry['test']}`)" if entry["test"] else ""
            lines.append(f"- {entry['clause']} ({entry['level']}){test}: {_text(entry['reason'])} — {entry['status']}")
    else:
        lines.append("None: every failure counts.")
    return "\n".join(lines).rstrip() + "\n"


def _shrinking(prop: PropertyRow) -> str:
    if prop["examples"] == 0 or (not prop["shrink_steps"] and not prop["shrink_stopped"]):
        return "-"
    stopped = {
        "time": "stopped at the time bound",
        "misbehaviour": "not shrunk: the SUT misbehaved",
        "broken": "stopped: the SUT was declared broken",
        "deadline": "stopped: the time budget ran out",
    }.get(prop["shrink_stopped"], "finished")
    return f"{stopped} after {prop['shrink_seconds']:g} s"


def _markdown_failure(failure: FailureRow) -> list[str]:
    tag = " (expected, see the expectations file)" if failure["expected_failure"] else ""
    lines = [f'<a name="{failure["id"]}"></a>', "", f"#### {failure['label']} ({failure['level']}){tag}", ""]
    lines += [_text(failure["message"]), ""]
    tests = failure["tests"]
    if len(tests) > 1:
        lines += [f"Tests ({len(tests)}): " + ", ".join(f"`{t}`" for t in tests), ""]
    elif tests:
        lines += [f"Test: `{tests[0]}`", ""]
    for title, value in (("Expected", failure["expected"]), ("Observed", failure["observed"])):
        if value is not None:
            text = _json_text(value)
            lines += [f"{title}:", "", _fence(text), ""] if text.count("\n") < 12 else _details(title, text)
    if failure["case"]:
        lines += _details("Case (the inputs that replay it)", _json_text(failure["case"]))
    if failure["falsifying_example"]:
        lines += _details("Falsifying example", failure["falsifying_example"])
    if failure["stderr_tail"]:
        lines += _details("Driver stderr (last lines)", failure["stderr_tail"])
    if failure["replay"]:
        lines += ["Replay:", "", _fence(failure["replay"]), ""]
    return lines


# -- HTML

_CSS: Final = """
body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
.banner{padding:1rem 1.25rem;border-radius:.4rem;margin:1rem 0;font-size:1.2rem}
.banner.good{background:#e3f4e5;border:1px solid #186a1f}.banner.bad{background:#fbe4e4;border:1px solid #a4161a}
.banner.unsure{background:#fff4db;border:1px solid #8a5a00}
.pass{color:#186a1f}.fail,.error{color:#a4161a;font-weight:bold}.expected-fail,.inconclusive,.not-run{color:#8a5a00}
details{margin:.5rem 0}summary{cursor:pointer}
"""


def _banner_class(cert: Certificate) -> Tone:
    return TONES[cert["exit_code"]]


def render_html(cert: Certificate) -> str:
    """A self-contained page; every value from the run is escaped."""
    e = html.escape
    name = _name(cert)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Conformance certificate: {e(name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Conformance certificate: {e(name)}</h1>",
        f'<div class="banner {_banner_class(cert)}">Verdict: <strong>{e(cert["verdict"])}</strong> '
        f"(exit code {cert['exit_code']})",
    ]
    if cert["why"]:
        parts.append("<ul>" + "".join(f"<li>{e(w)}</li>" for w in cert["why"]) + "</ul>")
    parts.append("</div>")
    parts.append(
        "<table><tr><th>status</th>"
        + "".join(f'<th class="{s}">{s}</th>' for s in STATUSES)
        + "</tr><tr><th>clauses</th>"
        + "".join(f"<td>{cert['summary'][s]}</td>" for s in STATUSES)
        + "</tr></table>"
    )
    parts.append(f"<p>{e(_test_counts(cert))}.</p>")
    groups = _groups(cert)
    toc = ['<li><a href="#run">Run</a></li>', '<li><a href="#clauses">Clauses</a></li>']
    if groups:
        links = ", ".join(f'<a href="#{_anchor(k)}">{e(k)}</a>' for k, _ in groups)
        toc.append(f'<li><a href="#failures">Failures</a>: {links}</li>')
    if cert["errors"]:
        toc.append('<li><a href="#errors">Errors</a></li>')
    if cert["inconclusive"]:
        toc.append('<li><a href="#inconclusive-tests">Inconclusive tests</a></li>')
    toc += ['<li><a href="#properties">Properties</a></li>', '<li><a href="#expectations">Expectations</a></li>']
    parts.append("<h2>Contents</h2><ul>" + "".join(toc) + "</ul>")
    facts = [*_facts(cert), *(("note", n) for n in cert["notes"])]
    parts.append(
        '<h2 id="run">Run</h2><table>'
        + "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in facts)
        + "</table>"
    )
    parts.append('<h2 id="clauses">Clauses</h2>')
    for section, rows in _sections(cert):
        parts.append(
            f"<h3>{e(section)}</h3><table><tr><th>clause</th><th>level</th><th>profile</th>"
            "<th>status</th><th>note</th></tr>"
        )
        for row in rows:
            status = e(row["status"])
            if row["failures"]:
                status = f'<a href="#{_anchor(row["clause"])}">{status}</a>'
            parts.append(
                f"<tr><td>{e(row['clause'])}</td><td>{e(row['level'])}</td><td>{e(row['profile'])}</td>"
                f'<td class="{e(row["status"])}">{status}</td><td>{e(str(row["reason"] or row["title"]))}</td></tr>'
            )
        parts.append("</table>")
    if groups:
        parts.append('<h2 id="failures">Failures</h2>')
        for key, failures in groups:
            parts.append(f'<h3 id="{_anchor(key)}">{e(key)}</h3>')
            for failure in failures:
                parts += _html_failure(failure)
    if cert["errors"]:
        parts.append('<h2 id="errors">Errors</h2><p>The suite could not finish these tests; they give no verdict.</p>')
        for error in cert["errors"]:
            parts.append(
                f"<p><code>{e(error['test'])}</code> ({e(str(error['when']))})</p>"
                f"<details><summary>what broke</summary><pre>{e(error['message'])}</pre></details>"
            )
    if cert["inconclusive"]:
        parts.append(f'<h2 id="inconclusive-tests">Inconclusive tests</h2><p>{e(INCONCLUSIVE)}</p><ul>')
        parts += [
            f"<li><code>{e(row['test'])}</code> ({e(', '.join(row['clauses']))}): {e(_why(row))}</li>"
            for row in cert["inconclusive"]
        ]
        parts.append("</ul>")
    parts.append(
        '<h2 id="properties">Properties</h2><table><tr><th>test</th><th>examples</th>'
        "<th>shrink steps</th><th>shrinking</th></tr>"
    )
    for prop in cert["properties"]:
        drawn = f"{prop['examples']} of {prop['max_examples']}" + (" (cut short)" if prop["cut_short"] else "")
        parts.append(
            f"<tr><td><code>{e(prop['test'])}</code></td><td>{drawn}</td>"
            f"<td>{prop['shrink_steps']}</td><td>{e(_shrinking(prop))}</td></tr>"
        )
    parts.append('</table><h2 id="expectations">Expectations</h2>')
    exp = cert["expectations"]
    if exp["file"]:
        parts.append(f"<p><code>{e(exp['file'])}</code></p><ul>")
        for x in exp["entries"]:
            test = f" (test <code>{e(x['test'])}</code>)" if x["test"] else ""
            parts.append(f"<li>{e(x['clause'])} ({e(x['level'])}){test}: {e(x['reason'])} — {e(x['status'])}</li>")
        parts.append("</ul>")
    else:
        parts.append("<p>None: every failure counts.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_failure(failure: FailureRow) -> list[str]:
    e = html.escape
    tag = " (expected)" if failure["expected_failure"] else ""
    parts = [f'<h4 id="{e(failure["id"])}">{e(failure["label"])} ({e(failure["level"])}){e(tag)}</h4>']
    parts.append(f"<p>{e(failure['message'])}</p>")
    tests = failure["tests"]
    if tests:
        parts.append(
            "<p>Test"
            + ("s" if len(tests) > 1 else "")
            + ": "
            + ", ".join(f"<code>{e(t)}</code>" for t in tests)
            + "</p>"
        )
    for title, value in (
        ("Expected", failure["expected"]),
        ("Observed", failure["observed"]),
        ("Case", failure["case"]),
    ):
        if value not in (None, {}, ""):
            parts.append(f"<details><summary>{title}</summary><pre>{e(_json_text(value))}</pre></details>")
    for title, text in (
        ("Falsifying example", failure["falsifying_example"]),
        ("Driver stderr", failure["stderr_tail"]),
    ):
        if text:
            parts.append(f"<details><summary>{title}</summary><pre>{e(text)}</pre></details>")
    if failure["replay"]:
        parts.append(f"<p>Replay:</p><pre>{e(failure['replay'])}</pre>")
    return parts


# -- Badge


_BADGE_COLORS: Final[Mapping[Tone, str]] = {"good": "#2e7d32", "bad": "#c62828", "unsure": "#b26a00"}


def render_badge(cert: Certificate) -> str:
    """A flat SVG badge: the verdict, the profiles under test and the suite's version."""
    left = "MCP toolset"
    profiles = "+".join(cert["profiles_under_test"]) or "none"
    right = f"{cert['verdict']} · {profiles} · suite {cert['suite']['version']}"
    color = _BADGE_COLORS[_banner_class(cert)]
    # Widths from a flat per-character estimate: good enough for a badge, no font files needed.
    lw, rw = 10 + 7 * len(left), 10 + 7 * len(right)
    e = html.escape
    label = e(f"{left}: {right}")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{lw + rw}" height="20" role="img" aria-label="{label}">'
        f"<title>{label}</title>"
        f'<rect width="{lw}" height="20" fill="#555"/><rect x="{lw}" width="{rw}" height="20" fill="{color}"/>'
        '<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{lw / 2:g}" y="14" text-anchor="middle">{e(left)}</text>'
        f'<text x="{lw + rw / 2:g}" y="14" text-anchor="middle">{e(right)}</text>'
        "</g></svg>\n"
    )


def write_certificate(cert: Certificate, out: Path) -> list[Path]:
    """Write the certificate's files into ``out``, each replaced atomically."""
    texts = {
        "certificate.json": json.dumps(cert, indent=2, ensure_ascii=False) + "\n",
        "certificate.md": render_markdown(cert),
        "certificate.html": render_html(cert),
        "badge.svg": render_badge(cert),
    }
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in FILES:
        target = out / name
        partial = out / f".{name}.partial"
        # A lone surrogate a driver echoed is written as its escape (in JSON, it reads back as itself).
        partial.write_text(texts[name], encoding="utf-8", errors="backslashreplace")
        os.replace(partial, target)
        paths.append(target)
    return paths
