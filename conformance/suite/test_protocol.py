"""Protocol smoke checks: the SUT answers at all, before any clause is tested."""

from __future__ import annotations

import pytest

from conformance import Sut, clause

pytestmark = pytest.mark.asyncio


@clause("RNK-9")
async def test_initialize_claims_the_core_profile(sut: Sut) -> None:
    implementation = await sut.initialize()

    assert "core" in implementation.profiles, (
        f"{implementation.name} {implementation.version} claims {list(implementation.profiles)}; "
        "every implementation claims the 'core' profile"
    )
