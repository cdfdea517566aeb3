"""examples/typescript-host: a second implementation, written from SPEC.md and PROTOCOL.md alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.examples._node import EXAMPLES, build, certify, clause_statuses, npm_test

#: The clauses where the host reads the design otherwise than the reference: its README's
#: table (ID-9 in POL-7 and DEF-1, ID-10 in SEL-1, ID-11 in DSC-2 and DSC-5, ID-13 in DSC-7)
#: and a malformed tool left out of its server's listing (ID-4 in ERR-8 and ERR-9). The test
#: command shows end to end that SPEC accepts each of them.
READINGS = ("POL-7", "DEF-1", "SEL-1", "DSC-2", "DSC-5", "DSC-7", "ERR-8", "ERR-9")


def _driver_cmd(driver: Path) -> str:
    return f"node {driver.relative_to(EXAMPLES.parent)}"


@pytest.mark.slow
@pytest.mark.e2e
def test_the_typescript_host_builds_passes_its_own_tests_and_passes_the_clauses_it_reads_otherwise(
    tmp_path: Path,
) -> None:
    driver = build("typescript-host")
    # The protocol shell's unit tests and the linter (one npm test: the folder is installed once).
    own = npm_test("typescript-host")
    assert own.returncode == 0, own.stdout[-5000:] + own.stderr[-3000:]
    clauses = [arg for clause_id in READINGS for arg in ("--clause", clause_id)]
    result = certify("-n", "1", "--sut-cmd", _driver_cmd(driver), *clauses, "--out", str(tmp_path), timeout=900)
    certificate = json.loads((tmp_path / "certificate.json").read_text())
    assert (result.returncode, certificate["verdict"]) == (0, "partial"), result.stdout[-5000:] + result.stderr[-3000:]
    assert {clause_id: clause_statuses(certificate)[clause_id] for clause_id in READINGS} == dict.fromkeys(
        READINGS, "pass"
    )


@pytest.mark.e2e
@pytest.mark.slow  # the whole suite through a Node driver: two minutes of both cores
def test_the_typescript_host_certifies_conformant_for_the_profiles_it_claims(tmp_path: Path) -> None:
    driver = build("typescript-host")
    # On a loaded machine past certify's default budget of 300 s.
    result = certify(
        "-n", "2", "--max-time", "1500", "--sut-cmd", _driver_cmd(driver), "--out", str(tmp_path), timeout=1800
    )
    certificate = json.loads((tmp_path / "certificate.json").read_text())
    assert (result.returncode, certificate["verdict"]) == (0, "conformant"), (
        result.stdout[-5000:] + result.stderr[-3000:]
    )
    assert certificate["profiles_under_test"] == ["core", "eviction", "lexical"]
    assert "not-run" not in clause_statuses(certificate).values()


def test_the_skeleton_and_the_host_share_one_protocol_shell_file_for_file() -> None:
    # Two copies so that each example stands alone; this keeps them one piece of code, with
    # one set of unit tests and one lint configuration.
    shared = ("src/protocol", "test/protocol")
    for folder in shared:
        assert sorted(p.name for p in (EXAMPLES / "typescript-host" / folder).iterdir()) == sorted(
            p.name for p in (EXAMPLES / "typescript-driver" / folder).iterdir()
        ), folder
    files = [
        str(p.relative_to(EXAMPLES / "typescript-host"))
        for f in shared
        for p in (EXAMPLES / "typescript-host" / f).iterdir()
    ]
    for name in (*files, "scripts/bundle-protocol.mjs", "tsconfig.json", "tsconfig.test.json", "biome.json"):
        host = (EXAMPLES / "typescript-host" / name).read_text()
        skeleton = (EXAMPLES / "typescript-driver" / name).read_text()
        assert host == skeleton, f"examples/typescript-driver/{name} differs from the host's"
