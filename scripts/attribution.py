"""Which clauses each defect of the catalog marks failed, when the whole suite runs against it.

``tests/conformance/test_defects.py`` checks that the suite catches every defect on the
clause of the sentence it breaks, in a run restricted to that clause. This script runs the
whole suite against each defective reference driver (``python -m tests.conformance.defects
NAME``), reads the certificate, and records every clause marked failed: a finding should
name the sentence that broke and leave the others passing. It writes
``tests/conformance/defects/SUMMARY.md``: the share of defects that mark only their own
clause failed, and every defect that marks more, with the clauses.

    .venv/bin/python scripts/attribution.py                     every defect, two at a time
    .venv/bin/python scripts/attribution.py --section ranking   the defects of one module
    .venv/bin/python scripts/attribution.py --defect NAME       one defect (repeatable)
    .venv/bin/python scripts/attribution.py --resume            keep what earlier runs measured
    .venv/bin/python scripts/attribution.py --report            only rewrite SUMMARY.md

Each run takes as long as a certification (half a minute to a few on a loaded machine); the
whole catalog takes hours on two cores, so run it under ``nice`` when the machine is quiet.
Results accumulate in ``tests/conformance/defects/attribution.json`` (each run's certificate
and log in ``attribution/``); the summary covers every defect measured there that the catalog
still holds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance._clauses import CLAUSES  # noqa: E402
from tests.conformance.defects import DEFECTS  # noqa: E402

WORK = ROOT / "attribution"
#: Kept with the sources, beside the summary written from it: the whole catalog takes hours,
#: so a run may stop anywhere, and a fresh checkout goes on where the last run stopped.
RESULTS = ROOT / "tests" / "conformance" / "defects" / "attribution.json"
SUMMARY = ROOT / "tests" / "conformance" / "defects" / "SUMMARY.md"
#: A run that takes longer than this is stopped by certify and recorded as incomplete.
MAX_TIME = 1800


@dataclass(frozen=True, slots=True)
class Measured:
    """What one defect's certificate says."""

    defect: str
    section: str
    sentence: str
    clause: str
    verdict: str
    failed: list[str]
    #: Clauses neither passing nor failing because a test citing them broke or never ended.
    unsettled: list[str]
    errors: int
    seconds: float
    #: How many examples each property drew (``certify --thoroughness``).
    thoroughness: str = "default"

    @property
    def alone(self) -> bool:
        return self.failed == [self.clause]

    @property
    def extra(self) -> list[str]:
        return [c for c in self.failed if c != self.clause]


def section_of(name: str) -> str:
    """The section of SPEC.md the defect's sentence is in, in lower case (``ranking``)."""
    return CLAUSES[DEFECTS[name].clause].section.lower()


def measure(name: str, jobs_dir: Path, thoroughness: str) -> Measured:
    """Certify the defective driver ``name`` on the whole suite."""
    defect = DEFECTS[name]
    out = jobs_dir / name
    driver = [sys.executable, "-m", "tests.conformance.defects", name]
    argv = [sys.executable, "-m", "conformance._cli", "certify", "-n", "1", "--sut-cmd", shlex.join(driver)]
    argv += ["--no-shrink", "--thoroughness", thoroughness, "--max-time", str(MAX_TIME), "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    started = time.monotonic()
    with (jobs_dir / f"{name}.log").open("w") as log:
        subprocess.run(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    seconds = round(time.monotonic() - started, 1)
    certificate = out / "certificate.json"
    if not certificate.exists():
        return Measured(
            name, section_of(name), defect.sentence, defect.clause, "no certificate", [], [], 0, seconds, thoroughness
        )
    document = json.loads(certificate.read_text())
    rows = document["clauses"]
    return Measured(
        defect=name,
        section=section_of(name),
        sentence=defect.sentence,
        clause=defect.clause,
        verdict=document["verdict"],
        failed=[r["clause"] for r in rows if r["status"] == "fail"],
        unsettled=[r["clause"] for r in rows if r["status"] in ("error", "not-run", "inconclusive")],
        errors=len(document["errors"]),
        seconds=seconds,
        thoroughness=thoroughness,
    )


def load() -> dict[str, Measured]:
    if not RESULTS.exists():
        return {}
    return {name: Measured(**entry) for name, entry in json.loads(RESULTS.read_text()).items()}


def save(results: Mapping[str, Measured]) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    # One defect a line, so that a resumed run's change reads as a diff of the defects it measured.
    lines = [f" {json.dumps(name)}: {json.dumps(asdict(results[name]))}" for name in sorted(results)]
    RESULTS.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def run(names: Sequence[str], jobs: int, thoroughness: str, results: dict[str, Measured]) -> None:
    jobs_dir = WORK / "runs"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        pending = {pool.submit(measure, name, jobs_dir, thoroughness): name for name in names}
        for done, future in enumerate(as_completed(pending), start=1):
            found = future.result()
            results[found.defect] = found
            save(results)
            mark = "alone" if found.alone else f"also {', '.join(found.extra) or 'nothing'}"
            sys.stdout.write(f"[{done}/{len(names)}] {found.defect} ({found.clause}): {mark} [{found.seconds:.0f} s]\n")
            sys.stdout.flush()


def _rows(results: Iterable[Measured]) -> list[str]:
    return [
        f"| `{m.defect}` | {m.sentence} | {', '.join(m.extra) or '—'} | "
        f"{'yes' if m.clause in m.failed else '**no**'} | {m.verdict} |"
        for m in results
    ]


def report(results: Mapping[str, Measured]) -> str:
    """SUMMARY.md from the defects measured that the catalog holds."""
    measured = [results[name] for name in sorted(results) if name in DEFECTS]
    alone = [m for m in measured if m.alone]
    more = [m for m in measured if not m.alone]
    share = 100 * len(alone) / len(measured) if measured else 0.0
    sections: dict[str, list[Measured]] = {}
    for m in measured:
        sections.setdefault(m.section, []).append(m)
    unmeasured = sorted(set(DEFECTS) - set(results))
    lines = [
        "# Which clauses each defect marks failed",
        "",
        "Written by `scripts/attribution.py` from a certification of the whole suite against each",
        "defective reference driver of this folder (`python -m tests.conformance.defects NAME`,",
        "`certify -n 1 --no-shrink`). A defect breaks one sentence; its findings should mark that",
        "sentence's clause failed and leave every other clause passing. `test_defects.py` checks",
        "that each defect is caught on its own clause; this measures what else it marks.",
        "",
        f"**{len(alone)} of {len(measured)} defects ({share:.1f}%) mark only the clause of their own sentence failed.**",
        "",
        "| section | defects | own clause only | more |",
        "|---|---:|---:|---:|",
    ]
    for section in sorted(sections):
        group = sections[section]
        lines.append(
            f"| {section} | {len(group)} | {sum(m.alone for m in group)} | {sum(not m.alone for m in group)} |"
        )
    quick = [m.defect for m in measured if m.thoroughness != "default"]
    lines += ["", f"Measured: {len(measured)} of the catalog's {len(DEFECTS)} defects."]
    if quick:
        lines.append(
            f"Measured with another thoroughness than the default ({len(quick)}): "
            + ", ".join(f"`{n}` ({results[n].thoroughness})" for n in quick)
            + "."
        )
    if len(unmeasured) > 20:
        # A sample: the names of the rest would drown the findings (``--resume`` measures them).
        lines.append(f"Not measured yet: {len(unmeasured)} (`scripts/attribution.py --resume` measures them).")
    elif unmeasured:
        lines.append(f"Not measured yet: {', '.join(f'`{n}`' for n in unmeasured)}.")
    lines += [
        "",
        "## Defects that mark more than their own clause",
        "",
        "| defect | sentence | other clauses failed | own clause failed | verdict |",
        "|---|---|---|---|---|",
        *_rows(more),
    ]
    if not more:
        lines.append("| — | | | | |")
    broken = [m for m in measured if m.errors or m.unsettled]
    if broken:
        lines += [
            "",
            "## Runs with clauses not settled",
            "",
            "Clauses neither passing nor failing (a test citing them broke, was cut short or could",
            "not establish them) do not count as failed above.",
            "",
            "| defect | clauses not settled | errors |",
            "|---|---|---:|",
            *[f"| `{m.defect}` | {', '.join(m.unsettled) or '—'} | {m.errors} |" for m in broken],
        ]
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    total = sum(m.seconds for m in measured)
    lines += ["", f"Last written {stamp}; the runs took {total / 60:.0f} minutes of wall time in all.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--section", action="append", default=[], help="a section of SPEC.md, as `ranking` (repeatable)"
    )
    parser.add_argument("--defect", action="append", default=[], help="one defect (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="defects certified at once (default 2)")
    parser.add_argument(
        "--thoroughness",
        choices=("quick", "default", "deep"),
        default="default",
        help="examples each property draws, as certify takes it (default: default)",
    )
    parser.add_argument("--resume", action="store_true", help="skip the defects measured already")
    parser.add_argument("--report", action="store_true", help="only rewrite SUMMARY.md")
    args = parser.parse_args(argv)
    unknown = [n for n in args.defect if n not in DEFECTS]
    if unknown:
        parser.error(f"unknown defects: {', '.join(unknown)}")
    results = load()
    if not args.report:
        names = list(args.defect) or [n for n in DEFECTS if not args.section or section_of(n) in args.section]
        if args.resume:
            names = [n for n in names if n not in results]
        run(names, args.jobs, args.thoroughness, results)
    SUMMARY.write_text(report(results))
    sys.stdout.write(f"{SUMMARY.relative_to(ROOT)} written\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
