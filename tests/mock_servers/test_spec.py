from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mock_servers import (
    FleetSpec,
    ServerSpec,
    SpecError,
    load_spec,
    preset,
    preset_names,
    spec_from_dict,
    spec_to_dict,
)


def test_every_preset_loads_by_name() -> None:
    assert set(preset_names()) == {"seed-example", "realistic", "large", "adversarial"}
    sizes = {name: len(preset(name).servers) for name in preset_names()}
    assert sizes["seed-example"] == 4
    assert 6 <= sizes["realistic"] <= 8
    assert sizes["large"] == 100


def test_a_spec_survives_a_round_trip_through_plain_data() -> None:
    for name in preset_names():
        spec = preset(name)
        assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec


def test_a_toml_file_and_a_json_file_give_the_same_spec(tmp_path: Path) -> None:
    (tmp_path / "fleet.toml").write_text('seed = 3\n[[servers]]\nid = "github"\ntool_count = 5\n')
    (tmp_path / "fleet.json").write_text(json.dumps({"seed": 3, "servers": [{"id": "github", "tool_count": 5}]}))
    assert load_spec(tmp_path / "fleet.toml") == load_spec(tmp_path / "fleet.json")


def test_server_seeds_derive_from_the_fleet_seed_and_the_id() -> None:
    a = spec_from_dict({"seed": 1, "servers": [{"id": "a"}, {"id": "b"}]})
    again = spec_from_dict({"seed": 1, "servers": [{"id": "a"}, {"id": "b"}]})
    other = spec_from_dict({"seed": 2, "servers": [{"id": "a"}, {"id": "b"}]})
    assert a == again
    assert a.servers[0].seed != a.servers[1].seed
    assert a.servers[0].seed != other.servers[0].seed


def test_a_wrong_field_in_a_toml_file_names_the_file_the_field_and_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('[[servers]]\nid = "a"\n[[servers]]\nid = "b"\n[[servers]]\nid = "c"\ntool_count = "many"\n')
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)
    assert caught.value.field == "servers[2].tool_count"
    assert caught.value.expected == "an integer"
    assert caught.value.got == "'many'"
    assert str(caught.value) == f"{path}: servers[2].tool_count: expected an integer, got 'many'"


def test_a_wrong_field_in_a_json_file_names_the_file_the_field_and_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"servers": [{"id": "a", "annotations": {"read_only": 0.9, "writable": 0.9}}]}))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert (caught.value.source, caught.value.field) == (str(path), "servers[0].annotations")
    assert "read_only + writable + none = 1" in caught.value.expected


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"servers": []}, "servers"),
        ({"servers": [{"id": "a b"}]}, "servers[0].id"),
        ({"servers": [{"id": "a"}, {"id": "a"}]}, "servers[1].id"),
        ({"servers": [{"id": "a", "domain": "knitting"}]}, "servers[0].domain"),
        ({"servers": [{"id": "a", "page_size": 0}]}, "servers[0].page_size"),
        ({"servers": [{"id": "a", "tool_cuont": 3}]}, "servers[0].tool_cuont"),
        ({"servers": [{"id": "a", "faults": {"bad_names": ["ugly"]}}]}, "servers[0].faults.bad_names[0]"),
        ({"servers": [{"id": "a", "faults": {"missing_name": 1}}]}, "servers[0].raw"),
        (
            {"servers": [{"id": "a", "tools": [{"name": "t", "annotations": {"readOnlyHint": "true"}}]}]},
            "servers[0].tools[0].annotations.readOnlyHint",
        ),
        (
            {"servers": [{"id": "a", "tools": [{"name": "t", "input_schema": {"type": "string"}}]}]},
            "servers[0].tools[0].input_schema",
        ),
    ],
)
def test_invalid_specs_are_refused_with_the_path_of_the_offending_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_dict(data, source="fleet.json")
    assert caught.value.field == field
    assert str(caught.value).startswith(f"fleet.json: {field}: expected ")


def test_a_raw_server_may_carry_annotations_that_are_not_booleans() -> None:
    spec = spec_from_dict(
        {"servers": [{"id": "a", "raw": True, "tools": [{"name": "t", "annotations": {"readOnlyHint": "true"}}]}]}
    )
    assert spec.servers[0].tools[0].annotations == {"readOnlyHint": "true"}


def test_a_file_that_is_not_valid_toml_or_is_missing_is_a_spec_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("servers = [")
    with pytest.raises(SpecError, match=re.escape("broken.toml: expected valid TOML")):
        load_spec(broken)
    with pytest.raises(SpecError, match="expected a readable spec file"):
        load_spec(tmp_path / "absent.json")
    (tmp_path / "fleet.yaml").write_text("servers: []")
    with pytest.raises(SpecError, match=re.escape("expected a file ending in .json or .toml")):
        load_spec(tmp_path / "fleet.yaml")


def test_an_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(SpecError, match="seed-example"):
        preset("huge")


def test_a_fleet_finds_its_servers_by_id() -> None:
    spec = FleetSpec(servers=(ServerSpec(id="github"),))
    assert spec.server("github").id == "github"
    with pytest.raises(KeyError):
        spec.server("gitlab")
