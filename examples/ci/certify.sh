#!/usr/bin/env bash
# Certify an MCP host with the conformance suite, for any CI system (or a laptop).
#
#   SUT_CMD="node driver.mjs" bash examples/ci/certify.sh [certify options...]
#
# Environment:
#   SUT_CMD               the command that starts your driver (required; "reference" certifies
#                         the bundled reference implementation)
#   CONFORMANCE_PACKAGE   what pip installs (default: mcp-adaptive-conformance; a path, a
#                         wheel or "mcp-adaptive-conformance @ git+https://…" work too)
#   CERTIFICATE_DIR       where the certificate goes (default: certificate)
#   VENV                  the virtual environment to create or reuse (default: .conformance-venv)
#   PYTHON                the interpreter that creates it (default: python3; 3.11 or newer)
# Extra arguments go to `mcp-conformance certify` (for instance --profile all, or
# --mode regression --expectations known.toml).
#
# Exit status is certify's: 0 conformant (or only SHOULD warnings), 1 non-conformant,
# 2 the suite or its configuration broke. The certificate directory is written in every
# case; archive it as the build's artifact.
set -euo pipefail

: "${SUT_CMD:?set SUT_CMD to the command that starts your driver}"
CONFORMANCE_PACKAGE=${CONFORMANCE_PACKAGE:-mcp-adaptive-conformance}
CERTIFICATE_DIR=${CERTIFICATE_DIR:-certificate}
VENV=${VENV:-.conformance-venv}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "$CONFORMANCE_PACKAGE" pytest-xdist

status=0
"$VENV/bin/mcp-conformance" certify --sut-cmd "$SUT_CMD" --out "$CERTIFICATE_DIR" -n 2 "$@" || status=$?

echo
echo "mcp-conformance exited with status $status; the certificate is in $CERTIFICATE_DIR/:"
ls "$CERTIFICATE_DIR" 2>/dev/null || echo "(nothing was written)"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$CERTIFICATE_DIR/certificate.md" ]; then
    cat "$CERTIFICATE_DIR/certificate.md" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
