from __future__ import annotations

import pytest

import conformance


def test_every_public_name_is_exported_and_resolves() -> None:
    for name in conformance.__all__:
        assert getattr(conformance, name) is not None


def test_no_private_module_leaks_into_the_public_surface() -> None:
    assert all(not name.startswith("_") for name in conformance.__all__)
    assert len(set(conformance.__all__)) == len(conformance.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        conformance.NoSuchThing  # noqa: B018
