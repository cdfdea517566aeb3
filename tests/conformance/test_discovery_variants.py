"""A permitted variant is no finding and no error: a reference driver whose discovery
activates only what DSC-5.8 demands (DSC-5.6 lets it activate fewer, even none) is
certified conformant on the whole suite, at more than one seed. Properties that count on
discovery activating something (the gate, isolation, definitions) ask for a tool by its
qualified name instead of filtering out what activated nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conformance.certifying import WHOLE_SUITE, WHOLE_SUITE_TIMEOUT, certify

pytestmark = pytest.mark.e2e

VARIANT = [sys.executable, "-m", "tests.conformance.defects", "activates_only_what_it_must"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 7])
def test_a_discovery_that_activates_only_what_it_must_is_conformant(seed: int, tmp_path: Path) -> None:
    code, cert, output = certify(
        VARIANT, [], tmp_path, extra=[*WHOLE_SUITE, "--seed", str(seed)], timeout=WHOLE_SUITE_TIMEOUT
    )

    assert not cert["errors"], output
    assert (cert["verdict"], code) == ("conformant", 0), f"{cert['why']}\n{output}"
    assert cert["profiles_under_test"] == ["core"]
