"""``python -m tests.conformance.defects NAME [DRIVER OPTIONS]``: a defective reference driver."""

from __future__ import annotations

import sys

from tests.conformance.defects import DEFECTS, VARIANTS, apply


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in DEFECTS and args[0] not in VARIANTS):
        sys.stderr.write(
            "usage: python -m tests.conformance.defects NAME [DRIVER OPTIONS]; "
            f"NAME in {sorted(DEFECTS)} or, for a variant, {sorted(VARIANTS)}\n"
        )
        raise SystemExit(2)
    apply(args[0])
    if args[0] in DEFECTS:
        sys.stderr.write(f"defective reference driver: {args[0]} ({DEFECTS[args[0]].summary})\n")
    else:
        sys.stderr.write(f"reference driver, variant {args[0]} ({VARIANTS[args[0]].summary})\n")
    from reference_impl.driver.__main__ import main as driver_main

    driver_main(args[1:])


if __name__ == "__main__":
    main()
