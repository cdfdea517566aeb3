#!/usr/bin/env bash
# Certify an MCP host with the conformance suite, for any CI system (or a laptop).
#
#   CONFORMANCE_PACKAGE=SOURCE SUT_CMD="node driver.mjs" bash certify.sh [certify options...]
#
# Environment:
#   CONFORMANCE_PACKAGE   where pip installs the suite from (required); a source you control:
#                           a git URL pinned to a tag or commit of this repository or your fork:
#                             "mcp-adaptive-conformance @ git+https://github.com/YOUR-ORG/mcp-adaptive-conformance@v0.1.0"
#                           a checkout's path, or a wheel: dist/mcp_adaptive_conformance-0.1.0-py3-none-any.whl
#                           once published on a package index: "mcp-adaptive-conformance==0.1.0"
#   SUT_CMD               the command that starts your driver (required; "reference" certifies
#                         the bundled reference implementation)
#   CERTIFICATE_DIR       where the certificate goes (default: certificate)
#   VENV                  the virtual environment to create or reuse (default: .conformance-venv)
#   PYTHON                the interpreter that creates it (default: python3; 3.11 or newer)
# Arguments go to `mcp-conformance certify` (for instance --profile all, -n 2, --clause PRO-1,
# or --mode regression --expectations known.toml).
#
# Exit status is certify's: 0 conformant (or partial, or only SHOULD warnings), 1
# non-conformant, 2 the suite could not run. The certificate directory is written in every
# case: when the suite cannot be installed or certify writes no certificate, certificate.json
# has the verdict "error" and the reason (certificate.md says the same, and install.log or
# certify.log is beside them). The previous run's certificate files are removed first, so the
# directory always describes this run. Archive it as the build's artifact.
set -uo pipefail

CONFORMANCE_PACKAGE=${CONFORMANCE_PACKAGE:-}
SUT_CMD=${SUT_CMD:-}
CERTIFICATE_DIR=${CERTIFICATE_DIR:-certificate}
VENV=${VENV:-.conformance-venv}
PYTHON=${PYTHON:-python3}
stage=configure

work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
log="$work/$stage.log"

# $1 as a JSON string.
json_string() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\r'/\\r}
    s=${s//$'\t'/\\t}
    printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')"
}

# Summary of the certificate directory (and the job summary on GitHub Actions).
report() {
    echo
    echo "The certificate is in $CERTIFICATE_DIR/:"
    ls "$CERTIFICATE_DIR"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$CERTIFICATE_DIR/certificate.md" ]; then
        cat "$CERTIFICATE_DIR/certificate.md" >>"$GITHUB_STEP_SUMMARY"
    fi
}

# The suite could not run: write an `error` certificate with the reason, and exit 2.
fail() {
    local reason=$1 kept=null tail=""
    echo "certify.sh: $reason" >&2
    if ! mkdir -p "$CERTIFICATE_DIR"; then
        echo "certify.sh: cannot create the certificate directory $CERTIFICATE_DIR" >&2
        exit 2
    fi
    if [ -s "$log" ]; then
        cp "$log" "$CERTIFICATE_DIR/$stage.log"
        kept=$(json_string "$stage.log")
        tail=$(tail -n 20 "$log")
    fi
    cat >"$CERTIFICATE_DIR/certificate.json" <<EOF
{
  "format": "mcp-conformance-ci-error/1",
  "verdict": "error",
  "exit_code": 2,
  "why": [$(json_string "$reason")],
  "stage": $(json_string "$stage"),
  "package": $(json_string "$CONFORMANCE_PACKAGE"),
  "sut": $(json_string "--sut-cmd $SUT_CMD"),
  "timestamp": $(json_string "$(date -u +%Y-%m-%dT%H:%M:%SZ)"),
  "log": $kept
}
EOF
    {
        echo "# MCP conformance: error"
        echo
        echo "The conformance suite could not run (stage: $stage), so nothing was certified."
        echo
        echo "**Why:** $reason"
        if [ -n "$tail" ]; then
            echo
            echo "Last lines of \`$stage.log\`:"
            echo
            echo '```'
            echo "$tail"
            echo '```'
        fi
    } >"$CERTIFICATE_DIR/certificate.md"
    report
    exit 2
}

# The first line pip (or venv) flagged as an error, else the last line of the log.
first_error() {
    local line
    line=$(grep -m 1 -E '^(ERROR|error):' "$log" || true)
    [ -n "$line" ] || line=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 || true)
    printf '%s' "$line"
}

if [ -z "$CONFORMANCE_PACKAGE" ]; then
    fail "CONFORMANCE_PACKAGE is not set: give the source to install the suite from, a git URL (\"mcp-adaptive-conformance @ git+https://…@v0.1.0\"), a checkout's path or a wheel, or \"mcp-adaptive-conformance==0.1.0\" from a package index it is published on"
fi
if [ -z "$SUT_CMD" ]; then
    fail "SUT_CMD is not set: give the command that starts your driver"
fi

stage=install
log="$work/$stage.log"
if [ ! -x "$VENV/bin/python" ]; then
    echo "Creating the virtual environment $VENV with $PYTHON"
    if ! "$PYTHON" -m venv "$VENV" >>"$log" 2>&1; then
        fail "$PYTHON could not create the virtual environment $VENV: $(first_error)"
    fi
fi
echo "Installing the conformance suite from $CONFORMANCE_PACKAGE"
# An old pip may not read the package's metadata; a pip that cannot upgrade still may.
"$VENV/bin/python" -m pip install --quiet --upgrade pip >>"$log" 2>&1 || true
if ! "$VENV/bin/python" -m pip install "$CONFORMANCE_PACKAGE" >>"$log" 2>&1; then
    fail "pip could not install $CONFORMANCE_PACKAGE: $(first_error)"
fi
if [ ! -x "$VENV/bin/mcp-conformance" ]; then
    fail "$CONFORMANCE_PACKAGE installed no mcp-conformance command: it is not the conformance suite"
fi
"$VENV/bin/python" -c 'from importlib.metadata import version; print("Installed mcp-adaptive-conformance", version("mcp-adaptive-conformance"))' || true

stage=certify
log="$work/$stage.log"
mkdir -p "$CERTIFICATE_DIR" || fail "cannot create the certificate directory $CERTIFICATE_DIR"
rm -f "$CERTIFICATE_DIR"/certificate.json "$CERTIFICATE_DIR"/certificate.md \
    "$CERTIFICATE_DIR"/certificate.html "$CERTIFICATE_DIR"/badge.svg
"$VENV/bin/mcp-conformance" certify --sut-cmd "$SUT_CMD" --out "$CERTIFICATE_DIR" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ ! -f "$CERTIFICATE_DIR/certificate.json" ]; then
    fail "mcp-conformance certify exited with status $status and wrote no certificate: $(first_error)"
fi
echo
echo "mcp-conformance certify exited with status $status."
report
exit "$status"
