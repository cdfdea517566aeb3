"""``python -m tests.conformance.vectors [--check]``: regenerate ``conformance/vectors/lexical.json``."""

from __future__ import annotations

import argparse
import sys

from tests.conformance.vectors._generate import VECTORS_PATH, document, render, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.vectors", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file is out of date")
    args = parser.parse_args(argv)
    if args.check:
        current = VECTORS_PATH.read_text(encoding="utf-8") if VECTORS_PATH.exists() else ""
        if current != render(document()):
            sys.stderr.write(f"{VECTORS_PATH} is out of date: run python -m tests.conformance.vectors\n")
            return 1
        return 0
    changed = write()
    cases = sum(len(group["cases"]) for group in document()["groups"])
    sys.stdout.write(f"{VECTORS_PATH}: {cases} cases, {'rewritten' if changed else 'unchanged'}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
