"""examples/typescript-host: a second implementation, written from SPEC.md and PROTOCOL.md alone."""

from __future__ import annotations

import json
from pathlib import Path

from tests.examples._node import EXAMPLES, build, certify, clause_statuses


def test_the_typescript_host_builds_and_certifies_conformant_for_the_profiles_it_claims(tmp_path: Path) -> None:
    driver = build("typescript-host")

    result = certify("-n", "2", "--sut-cmd", f"node {driver.relative_to(EXAMPLES.parent)}", "--out", str(tmp_path))

    certificate = json.loads((tmp_path / "certificate.json").read_text())
    assert (result.returncode, certificate["verdict"]) == (0, "conformant"), (
        result.stdout[-5000:] + result.stderr[-3000:]
    )
    assert certificate["profiles_under_test"] == ["core", "eviction", "lexical"]
    assert "not-run" not in clause_statuses(certificate).values()


def test_the_skeleton_and_the_host_share_one_protocol_shell_file_for_file() -> None:
    # Two copies so that each example stands alone; this keeps them one piece of code.
    shell = ("src/protocol/jsonrpc.ts", "src/protocol/methods.ts", "src/protocol/schemas.ts", "src/protocol/server.ts")
    for name in (*shell, "scripts/bundle-protocol.mjs", "tsconfig.json"):
        host = (EXAMPLES / "typescript-host" / name).read_text()
        skeleton = (EXAMPLES / "typescript-driver" / name).read_text()
        assert host == skeleton, f"examples/typescript-driver/{name} differs from the host's"
    assert sorted(p.name for p in (EXAMPLES / "typescript-host/src/protocol").iterdir()) == sorted(
        p.name for p in (EXAMPLES / "typescript-driver/src/protocol").iterdir()
    )
