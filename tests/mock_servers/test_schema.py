"""The JSON Schema of fleet spec files and the spec reader agree."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings

from mock_servers import FleetSpec, SpecError, preset, preset_names, spec_from_dict, spec_to_dict
from mock_servers.strategies import fleet_specs
from tests.mock_servers.spec_documents import documents

SCHEMA = json.loads(resources.files("mock_servers").joinpath("fleet-spec.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def schema_accepts(document: Any) -> bool:
    return bool(VALIDATOR.is_valid(document))


def reader_accepts(document: Any) -> bool:
    try:
        spec_from_dict(document)
    except SpecError:
        return False
    return True


def test_the_schema_is_a_valid_draft_2020_12_schema_shipped_in_the_package() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_is_valid_under_the_schema(name: str) -> None:
    VALIDATOR.validate(spec_to_dict(preset(name)))


@settings(max_examples=30, deadline=None)
@given(fleet_specs(max_servers=4, max_tools=30, explicit_tools=True, faults=True))
def test_generated_specs_serialise_to_documents_the_schema_accepts(spec: FleetSpec) -> None:
    VALIDATOR.validate(json.loads(json.dumps(spec_to_dict(spec))))


@settings(max_examples=20, deadline=None)
@given(fleet_specs(max_servers=3, max_tools=12, explicit_tools=True, faults=True, raw=True))
def test_generated_raw_specs_serialise_to_documents_the_schema_accepts(spec: FleetSpec) -> None:
    VALIDATOR.validate(json.loads(json.dumps(spec_to_dict(spec))))


@settings(max_examples=20, deadline=None)
@given(fleet_specs(max_servers=3, max_tools=12, explicit_tools=True, live=True))
def test_generated_live_specs_serialise_to_documents_the_schema_accepts(spec: FleetSpec) -> None:
    VALIDATOR.validate(json.loads(json.dumps(spec_to_dict(spec))))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_whatever_the_reader_accepts_the_schema_accepts(document: Any) -> None:
    try:
        plain = json.loads(json.dumps(document, allow_nan=False))
    except (ValueError, TypeError):  # NaN, dates: not JSON, so nothing a schema validator sees
        return
    if reader_accepts(plain):
        assert schema_accepts(plain), list(VALIDATOR.iter_errors(plain))[:1]


# Documents both must refuse; the rules a schema cannot say (shares summing to 1, unique
# ids, tool names that exist, fleet-wide totals) are left to the reader.
INVALID = {
    "no servers": {"seed": 1},
    "empty servers": {"servers": []},
    "unknown top key": {"servers": [{"id": "a"}], "sead": 1},
    "negative seed": {"seed": -1, "servers": [{"id": "a"}]},
    "seed past the limit": {"seed": 2**63, "servers": [{"id": "a"}]},
    "server without id": {"servers": [{"domain": "crm"}]},
    "id with a space": {"servers": [{"id": "a b"}]},
    "id '..'": {"servers": [{"id": ".."}]},
    "unknown domain": {"servers": [{"id": "a", "domain": "knitting"}]},
    "tool_count past the limit": {"servers": [{"id": "a", "tool_count": 10_001}]},
    "page_size 0": {"servers": [{"id": "a", "page_size": 0}]},
    "unknown server key": {"servers": [{"id": "a", "tool_cuont": 3}]},
    "share above 1": {"servers": [{"id": "a", "annotations": {"read_only": 1.5}}]},
    "string flag": {"servers": [{"id": "a", "raw": "yes"}]},
    "unknown bad-name kind": {"servers": [{"id": "a", "faults": {"bad_names": ["ugly"]}}]},
    "slow past the limit": {"servers": [{"id": "a", "faults": {"slow": 601}}]},
    "huge description past the limit": {"servers": [{"id": "a", "faults": {"huge_description_chars": 1_000_001}}]},
    "raw-only fault without raw": {"servers": [{"id": "a", "faults": {"missing_name": 1}}]},
    "tool without name": {"servers": [{"id": "a", "tools": [{"description": "x"}]}]},
    "non-object input schema": {"servers": [{"id": "a", "tools": [{"name": "t", "input_schema": {"type": "array"}}]}]},
    "string hint on an SDK server": {
        "servers": [{"id": "a", "tools": [{"name": "t", "annotations": {"readOnlyHint": "true"}}]}]
    },
    "unknown annotation": {"servers": [{"id": "a", "tools": [{"name": "t", "annotations": {"readonly": True}}]}]},
    "change without a trigger": {"servers": [{"id": "a", "changes": [{"notify": 2}]}]},
    "change with two triggers": {"servers": [{"id": "a", "changes": [{"after_calls": 1, "after_seconds": 2}]}]},
    "change after 0 calls": {"servers": [{"id": "a", "changes": [{"after_calls": 0}]}]},
    "unknown change key": {"servers": [{"id": "a", "changes": [{"after_calls": 1, "delete": ["t"]}]}]},
    "rename without a new name": {"servers": [{"id": "a", "changes": [{"after_calls": 1, "rename": [{"from": "t"}]}]}]},
    "raw server with a live catalog": {"servers": [{"id": "a", "raw": True, "list_changed": True}]},
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_the_schema_and_the_reader_both_refuse(name: str) -> None:
    document = INVALID[name]
    assert not reader_accepts(document)
    assert not schema_accepts(document)


def test_a_raw_server_may_send_what_an_sdk_server_may_not_under_both() -> None:
    document = {
        "servers": [
            {
                "id": "a",
                "raw": True,
                "faults": {"missing_name": 1},
                "tools": [{"name": "t", "input_schema": {"type": "array"}, "annotations": {"readOnlyHint": 1}}],
            }
        ]
    }
    assert reader_accepts(document)
    assert schema_accepts(document)
