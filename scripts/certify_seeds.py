"""Certify implementations at many seeds, and write what came out to CERTIFY-SEEDS.md.

A verdict that changes with the seed, or an ``error`` a host's team cannot act on, makes
the suite useless as a CI gate. This runs ``mcp-conformance certify`` once per
implementation and seed (at default thoroughness, whole suite) and checks two things:

- no run ends in ``error`` (the suite's own fault, whatever the implementation does);
- the implementations that are conformant (the reference, the TypeScript host) get the
  same verdict at every seed.

Each run keeps its certificate under ``--out`` (``build/certify-seeds/<name>/seed-<n>``); a
run whose certificate is there, for the same suite and options, is not run again, so an
interrupted or extended run (more seeds, another implementation) costs only what is new,
and the report covers every kept run of the implementations asked for.
The TypeScript examples are built first as their README says (``npm ci``, ``npm run
build``). Run it under ``nice`` on a shared machine: every process it starts inherits it.

    scripts/certify-seeds --seeds 1-12 --only reference
    scripts/certify-seeds --seeds 1-50 --jobs 2
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
REPORT: Final = ROOT / "CERTIFY-SEEDS.md"
#: Options of every run, recorded with it: a certificate made otherwise is not reused.
FORMAT: Final = 1


@dataclasses.dataclass(frozen=True)
class Implementation:
    """One implementation to certify."""

    name: str
    what: str
    #: The ``--sut-cmd`` of certify.
    command: str
    #: The one verdict it must get at every seed, or None when only ``error`` is ruled out.
    expected: str | None
    #: The example folder to build first (``npm ci``, ``npm run build``), if any.
    build: str | None = None


IMPLEMENTATIONS: Final = {
    impl.name: impl
    for impl in (
        Implementation("reference", "the reference, through its stdio driver", "reference", "conformant"),
        Implementation(
            "reference-every-profile",
            "the reference claiming the optional profiles too (`eviction`, `refresh`), through its stdio driver",
            f"{shlex.quote(sys.executable)} -m reference_impl.driver --eviction lru --refresh",
            "conformant",
        ),
        Implementation(
            "typescript-host",
            "the complete TypeScript host (`examples/typescript-host`)",
            "node examples/typescript-host/dist/driver.js",
            "conformant",
            build="typescript-host",
        ),
        Implementation(
            "typescript-driver",
            "the TypeScript skeleton (`examples/typescript-driver`)",
            "node examples/typescript-driver/dist/driver.js",
            "non-conformant",
            build="typescript-driver",
        ),
        Implementation(
            "exact-discovery",
            "the reference whose discovery activates only a tool named by its qualified name (DSC-5.6)",
            f"{shlex.quote(sys.executable)} -m tests.conformance.defects activates_only_what_it_must",
            "conformant",
        ),
    )
}
DEFAULT_IMPLEMENTATIONS: Final = ("reference", "reference-every-profile", "typescript-host", "typescript-driver")


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one certification gave."""

    implementation: str
    seed: int
    verdict: str
    exit_code: int
    seconds: float
    #: Tests that could not run to the end, and the MUST clauses left inconclusive.
    errors: list[str]
    inconclusive: list[str]
    failing: list[str]
    #: The commit of the checkout the run was made in (``+`` when it had local changes), if recorded.
    commit: str | None = None

    @classmethod
    def of(
        cls, implementation: str, seed: int, cert: dict[str, Any], seconds: float, commit: str | None = None
    ) -> Outcome:
        rows = cert.get("clauses", [])
        return cls(
            implementation=implementation,
            seed=seed,
            verdict=str(cert.get("verdict", "none")),
            exit_code=int(cert.get("exit_code", 2)),
            seconds=round(seconds, 1),
            errors=[str(e.get("test", "")) for e in cert.get("errors", [])],
            inconclusive=[r["clause"] for r in rows if r["status"] == "inconclusive" and r["level"] == "MUST"],
            failing=[r["clause"] for r in rows if r["status"] == "fail"],
            commit=commit,
        )


def parse_seeds(text: str) -> list[int]:
    """``"1-12"``, ``"3,7,8"`` or both (``"1-5,9"``) as a sorted list of distinct seeds.

    Raises:
        argparse.ArgumentTypeError: anything else, or a negative seed.
    """
    seeds: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last if dash else first)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--seeds: expected N, N-M or a comma list of them, got {text!r}"
            ) from None
        if low < 0 or high < low:
            raise argparse.ArgumentTypeError(f"--seeds: {part.strip()!r} is no range of seeds 0 or more")
        seeds.update(range(low, high + 1))
    return sorted(seeds)


def checkout_commit() -> str | None:
    """The commit the checkout is at, ``+`` added when tracked files differ from it; None outside git.

    Runs are reused while SPEC.md stays the same, so the report says which code made them.
    """
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!CERTIFY-SEEDS.md"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if changed else "")


def suite_digest() -> str:
    """The SPEC.md digest the certificates carry: a new suite never reuses an old run."""
    import hashlib

    return hashlib.sha256((ROOT / "conformance" / "SPEC.md").read_bytes()).hexdigest()


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """What makes two runs of one implementation and seed the same run."""
    return {"format": FORMAT, "thoroughness": args.thoroughness, "max_time": args.max_time, "spec": suite_digest()}


def certify_argv(impl: Implementation, seed: int, out: Path, args: argparse.Namespace) -> list[str]:
    return [
        sys.executable,
        "-m",
        "conformance._cli",
        "certify",
        "--sut-cmd",
        impl.command,
        "--seed",
        str(seed),
        "--thoroughness",
        args.thoroughness,
        "--max-time",
        str(args.max_time),
        "-n",
        "1",
        "--out",
        str(out),
    ]


def kept(impl: Implementation, seed: int, args: argparse.Namespace) -> Outcome | None:
    """The run of ``impl`` at ``seed`` kept from before with the same options, if any."""
    folder = args.out / impl.name / f"seed-{seed}"
    stamp, certificate = folder / "run.json", folder / "certificate.json"
    if not stamp.is_file() or not certificate.is_file():
        return None
    run = json.loads(stamp.read_text())
    if run.get("options") != run_options(args):
        return None
    return Outcome.of(
        impl.name, seed, json.loads(certificate.read_text()), float(run.get("seconds", 0.0)), run.get("commit")
    )


def kept_seeds(impl: Implementation, args: argparse.Namespace) -> list[int]:
    """Every seed ``impl`` has a kept run for, with the same options."""
    seeds = []
    for folder in (args.out / impl.name).glob("seed-*"):
        seed = folder.name.removeprefix("seed-")
        if seed.isdigit() and kept(impl, int(seed), args) is not None:
            seeds.append(int(seed))
    return sorted(seeds)


def certify_one(impl: Implementation, seed: int, args: argparse.Namespace, say: Callable[[str], None]) -> Outcome:
    """Certify ``impl`` at ``seed``, or read the run kept from before."""
    folder = args.out / impl.name / f"seed-{seed}"
    stamp = folder / "run.json"
    options = run_options(args)
    before = None if args.fresh else kept(impl, seed, args)
    if before is not None:
        return before
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # Asked as each run starts: the checkout may move while runs go on for an hour.
    commit = checkout_commit()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    started = time.monotonic()
    with (folder / "certify.log").open("w") as log:
        proc = subprocess.run(
            certify_argv(impl, seed, folder, args),
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    seconds = time.monotonic() - started
    certificate = folder / "certificate.json"
    if certificate.is_file():
        cert = json.loads(certificate.read_text())
    else:  # certify refused to start: that is an error of the run, like any other
        cert = {"verdict": "error", "exit_code": proc.returncode, "errors": [{"test": "(no certificate written)"}]}
    if not any(signal in why for why in cert.get("why", []) for signal in ("SIGINT", "SIGTERM")):
        # A run stopped from outside is run again next time; any other is kept.
        stamp.write_text(json.dumps({"options": options, "seconds": round(seconds, 1), "commit": commit}) + "\n")
    outcome = Outcome.of(impl.name, seed, cert, seconds, commit)
    say(f"{impl.name} seed {seed}: {outcome.verdict} (exit {outcome.exit_code}, {seconds:.0f} s)")
    return outcome


def build(example: str, say: Callable[[str], None]) -> None:
    """``npm ci`` and ``npm run build`` in ``examples/<example>``, as its README says.

    Raises:
        SystemExit: node or npm is missing, or either step fails.
    """
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise SystemExit(f"certify-seeds: examples/{example} needs node and npm on PATH")
    folder = ROOT / "examples" / example
    for step in (["ci", "--prefer-offline", "--no-audit", "--no-fund"], ["run", "build"]):
        say(f"examples/{example}: npm {' '.join(step)}")
        done = subprocess.run([npm, *step], cwd=folder, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"certify-seeds: npm {step[0]} failed in examples/{example}:\n{done.stderr[-2000:]}")


@dataclasses.dataclass(frozen=True)
class Verdicts:
    """The outcomes of one implementation, and whether they meet what it must."""

    impl: Implementation
    outcomes: list[Outcome]

    @property
    def counts(self) -> Counter[str]:
        return Counter(o.verdict for o in self.outcomes)

    @property
    def errors(self) -> int:
        return self.counts["error"]

    @property
    def met(self) -> bool:
        """No error, and the expected verdict at every seed."""
        if self.errors:
            return False
        return self.impl.expected is None or set(self.counts) <= {self.impl.expected}


def render(results: Sequence[Verdicts], args: argparse.Namespace, command: str) -> str:
    """CERTIFY-SEEDS.md."""
    lines = [
        "# Certifying at many seeds",
        "",
        "Generated by `scripts/certify-seeds`; do not edit. Each implementation is certified with",
        f"`mcp-conformance certify` at each seed (thoroughness `{args.thoroughness}`, the whole suite, one",
        f"process, time budget {args.max_time:g} s), SPEC.md sha256 `{suite_digest()[:16]}`. Last written",
        f"on {datetime.date.today().isoformat()} by `{command}`, from every run kept for these implementations.",
        "Seconds are the wall-clock time of one run on the machine that made it, two at a time on",
        "two shared cores: they say how long a run may take there, not how fast the suite is.",
        "A kept run is reused while SPEC.md stays the same; "
        + _commits(o for result in results for o in result.outcomes),
        "",
        "What must hold: no `error` verdict at any seed, and the same verdict at every seed for",
        "each implementation that has one (`conformant` for the reference, with or without the",
        "optional profiles, and the TypeScript host, `non-conformant` for the skeleton, whose",
        "placeholders break clauses on purpose).",
        "",
        "| implementation | seeds | verdicts | errors | same verdict at every seed | met | seconds per run (mean, max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        seconds = [o.seconds for o in result.outcomes]
        verdicts = ", ".join(f"{v} × {n}" for v, n in sorted(result.counts.items()))
        same = "yes" if len(result.counts) == 1 else "no"
        mean = sum(seconds) / len(seconds) if seconds else 0.0
        lines.append(
            f"| {result.impl.name} | {_ranges(o.seed for o in result.outcomes)} | {verdicts} | {result.errors} | "
            f"{same} | {'yes' if result.met else '**no**'} | {mean:.0f}, {max(seconds, default=0):.0f} |"
        )
    for result in results:
        lines += [
            "",
            f"## {result.impl.name}",
            "",
            f"{result.impl.what}: `--sut-cmd {result.impl.command}`"
            + (f"; expected `{result.impl.expected}` at every seed." if result.impl.expected else "."),
            "",
            "| seed | verdict | exit | failing clauses | MUST clauses inconclusive | tests in error | seconds |",
            "|---|---|---|---|---|---|---|",
        ]
        for o in result.outcomes:
            lines.append(
                f"| {o.seed} | {o.verdict} | {o.exit_code} | {len(o.failing)} | "
                f"{', '.join(o.inconclusive) or '-'} | {', '.join(o.errors) or '-'} | {o.seconds:.0f} |"
            )
    return "\n".join(lines) + "\n"


def _commits(outcomes: Iterable[Outcome]) -> str:
    """Which commits the runs were made at (``+``: with local changes), for the report's header."""
    made = Counter(f"`{o.commit}`" if o.commit else "not recorded" for o in outcomes)
    listed = ", ".join(f"{commit} × {n}" for commit, n in sorted(made.items()))
    return f"the runs below were made at commit {listed}." if made else "no run is kept."


def _ranges(seeds: Iterable[int]) -> str:
    """``1-12, 20`` for the seeds 1 to 12 and 20."""
    parts: list[str] = []
    for seed in sorted(seeds):
        if parts and parts[-1].split("-")[-1] == str(seed - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{seed}"
        else:
            parts.append(str(seed))
    return ", ".join(parts)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/certify-seeds", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-50"), help="N, N-M or a list (1-50)")
    parser.add_argument(
        "--only",
        default=",".join(DEFAULT_IMPLEMENTATIONS),
        help=f"implementations, comma-separated, of {', '.join(IMPLEMENTATIONS)} (default: %(default)s)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="certifications at once (default 1)")
    parser.add_argument("--thoroughness", choices=("quick", "default", "deep"), default="default")
    parser.add_argument(
        "--max-time", type=float, default=1800.0, help="time budget of one run, in seconds (default 1800)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "certify-seeds", help="where runs are kept")
    parser.add_argument("--report", type=Path, default=REPORT, help="the document written (CERTIFY-SEEDS.md)")
    parser.add_argument("--fresh", action="store_true", help="run again what was run before")
    parser.add_argument("--no-build", action="store_true", help="use the TypeScript examples as they are built")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in IMPLEMENTATIONS]
    if unknown or not names:
        parser.error(f"--only: unknown implementation(s) {unknown}; known: {', '.join(IMPLEMENTATIONS)}")
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, got {args.jobs}")
    args.implementations = [IMPLEMENTATIONS[name] for name in names]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Certify, write the report; 0 when every implementation met what it must, else 1."""
    args = parse_args(argv)

    def say(line: str) -> None:
        sys.stdout.write(f"certify-seeds: {line}\n")
        sys.stdout.flush()

    if not args.no_build:
        for example in dict.fromkeys(impl.build for impl in args.implementations if impl.build):
            assert example is not None
            build(example, say)
    work = [(impl, seed) for impl in args.implementations for seed in args.seeds]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda job: certify_one(job[0], job[1], args, say), work))
    # The report covers every kept run, so that runs made at other seeds add up.
    for impl in args.implementations:
        for seed in sorted(set(kept_seeds(impl, args)) - set(args.seeds)):
            earlier = kept(impl, seed, args)
            if earlier is not None:
                outcomes.append(earlier)
    outcomes.sort(key=lambda o: o.seed)
    results = [Verdicts(impl, [o for o in outcomes if o.implementation == impl.name]) for impl in args.implementations]
    command = shlex.join(["scripts/certify-seeds", *(sys.argv[1:] if argv is None else argv)])
    args.report.write_text(render(results, args, command))
    for result in results:
        say(f"{result.impl.name}: {dict(result.counts)}{'' if result.met else ' -- NOT MET'}")
    say(f"wrote {args.report}")
    return 0 if all(result.met for result in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
