"""The keys under which the plugin keeps its state on pytest objects.

Kept apart so that the plugin's light module and its session module share them without
importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from conformance._session import SutSession

__all__ = ["CLAUSES_KEY", "SESSION_KEY"]

#: The SUT of this pytest process, set when a SUT is named.
SESSION_KEY: Final[pytest.StashKey[SutSession]] = pytest.StashKey()
#: The clause ids an item cites, set at collection.
CLAUSES_KEY: Final[pytest.StashKey[tuple[str, ...]]] = pytest.StashKey()
