"""Implementation-defined choices of the errors section: the other choice is certified too.

Each variant is the reference driver making a choice SPEC.md leaves open (ID-4: a
malformed tool definition left out rather than failing the run), certified on the clause
that judges it: no check may fail it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance._clauses import clause_id_of
from tests.conformance.certifying import certify
from tests.conformance.defects.errors import VARIANTS

pytestmark = pytest.mark.e2e


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_variant_on_an_implementation_defined_point_is_conformant(name: str, tmp_path: Path) -> None:
    sentence, _patch = VARIANTS[name]
    command = [sys.executable, "-c", f"from tests.conformance.defects.errors import run_variant; run_variant({name!r})"]

    code, cert, output = certify(command, [clause_id_of(sentence)], tmp_path)

    assert code == 0 and not cert["failures"] and not cert["errors"], output
    assert next(r for r in cert["clauses"] if r["clause"] == clause_id_of(sentence))["status"] == "pass"
