"""Hostile spec files: every problem is a `SpecError` naming the file and field, and all of them are reported."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mock_servers import (
    LIMITS,
    Faults,
    FleetArgumentError,
    FleetSpec,
    ServerSpec,
    SpecError,
    _documents,
    load_spec,
    spec_from_dict,
)


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def refused(path: Path) -> SpecError:
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)
    return caught.value


def test_a_file_that_is_not_utf8_names_the_line_and_the_byte(tmp_path: Path) -> None:
    error = refused(write(tmp_path, "fleet.toml", b'seed = 1\n[[servers]]\nid = "caf\xe9"\n'))
    assert (error.field, error.expected, error.got) == ("line 3", "UTF-8 text", "byte 0xe9")


@pytest.mark.parametrize("bom", [True, False])
def test_a_utf16_file_is_recognised_and_refused(tmp_path: Path, bom: bool) -> None:
    text = '{"servers": [{"id": "a"}]}'
    data = text.encode("utf-16") if bom else text.encode("utf-16-le")
    error = refused(write(tmp_path, "fleet.json", data))
    assert error.expected == "UTF-8 text"
    assert "UTF-16" in error.got


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, "fleet.json", b"\xef\xbb\xbf" + b'{"servers": [{"id": "a"}]}'))
    assert spec.servers[0].id == "a"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "fleet.json",
            '{"servers": [{"id": "a", "tools": [{"name": "t", "input_schema": ' + "[" * 2000 + "]" * 2000 + "}]}]}",
        ),
        ("fleet.toml", "seed = 1\nx = " + "[" * 2000 + "]" * 2000 + "\n"),
        (
            "fleet.json",
            '{"servers": [{"id": "a", "tools": [{"name": "t", "input_schema": ' + "[" * 100 + "]" * 100 + "}]}]}",
        ),
    ],
    ids=["json-2000", "toml-2000", "json-100"],
)
def test_deep_nesting_is_refused_before_anything_recurses(tmp_path: Path, name: str, text: str) -> None:
    error = refused(write(tmp_path, name, text))
    assert error.expected == f"a document nested at most {LIMITS.nesting} deep"


@pytest.mark.parametrize("name", ["fleet.json", "fleet.toml"])
def test_a_seed_too_long_for_python_to_read_is_refused(tmp_path: Path, name: str) -> None:
    seed = "9" * 4400
    text = (
        f'{{"seed": {seed}, "servers": [{{"id": "a"}}]}}'
        if name.endswith("json")
        else f'seed = {seed}\n[[servers]]\nid = "a"\n'
    )
    error = refused(write(tmp_path, name, text))
    assert error.expected == "numbers Python can read"


def test_a_large_seed_is_refused_by_its_bound_with_a_short_message() -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_dict({"seed": 10**5000, "servers": [{"id": "a"}]})
    assert caught.value.field == "seed"
    assert caught.value.got == "an integer of over 4,300 digits"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("input_schema = { type = 'object', default = 1979-05-27 }", "servers[0].tools[0].input_schema.default"),
        ("annotations = { title = 07:32:00 }", "servers[0].tools[0].annotations.title"),
    ],
)
def test_toml_dates_inside_free_form_json_are_refused(tmp_path: Path, line: str, field: str) -> None:
    text = f'[[servers]]\nid = "a"\nraw = true\n[[servers.tools]]\nname = "t"\n{line}\n'
    error = refused(write(tmp_path, "fleet.toml", text))
    assert error.field == field
    assert "TOML dates and times are not JSON" in error.expected


def test_nan_in_json_and_in_toml_is_refused(tmp_path: Path) -> None:
    assert "NaN" in refused(write(tmp_path, "fleet.json", '{"servers": [{"id": "a", "seed": NaN}]}')).expected
    toml = '[[servers]]\nid = "a"\n[[servers.tools]]\nname = "t"\ninput_schema = { type = "object", minimum = nan }\n'
    assert refused(write(tmp_path, "fleet.toml", toml)).field == "servers[0].tools[0].input_schema.minimum"


def test_a_lone_surrogate_in_a_name_is_refused(tmp_path: Path) -> None:
    error = refused(write(tmp_path, "fleet.json", '{"servers": [{"id": "a", "tools": [{"name": "x\\ud800"}]}]}'))
    assert (error.field, error.expected) == ("servers[0].tools[0].name", "UTF-8 text")


def test_a_fault_naming_no_tool_of_the_server_is_refused_with_examples_of_its_tools() -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_dict(
            {"servers": [{"id": "a", "tool_count": 5, "faults": {"tool_call_error": ["*", "no_such_tool"]}}]}
        )
    assert caught.value.field == "servers[0].faults.tool_call_error[1]"
    assert caught.value.got == "'no_such_tool'"
    assert caught.value.expected.startswith('"*" or a tool of this server (')


def test_a_fault_naming_an_explicit_tool_is_accepted() -> None:
    spec = spec_from_dict(
        {"servers": [{"id": "a", "tool_count": 0, "tools": [{"name": "t"}], "faults": {"drop_mid_call": ["t"]}}]}
    )
    assert spec.servers[0].faults.drop_mid_call == ("t",)


@pytest.mark.parametrize("server_id", [".", ".."])
def test_ids_a_url_cannot_carry_are_refused(server_id: str) -> None:
    with pytest.raises(SpecError, match="a URL cannot carry them") as caught:
        spec_from_dict({"servers": [{"id": server_id}]})
    assert caught.value.field == "servers[0].id"


def test_every_problem_of_a_file_is_reported_each_with_its_field(tmp_path: Path) -> None:
    text = json.dumps(
        {
            "seed": -1,
            "servers": [
                {"id": "a", "tool_count": "many", "domain": "knitting"},
                {"id": "b", "page_size": 0, "faults": {"slow": "yes", "bad_names": ["ugly"]}},
                {"id": "a"},
            ],
        }
    )
    error = refused(write(tmp_path, "fleet.json", text))
    assert [p.field for p in error.problems] == [
        "seed",
        "servers[0].domain",
        "servers[0].tool_count",
        "servers[1].page_size",
        "servers[1].faults.bad_names[0]",
        "servers[1].faults.slow",
        "servers[2].id",
    ]
    lines = str(error).splitlines()
    assert len(lines) == 7
    assert all(line.startswith(f"{tmp_path / 'fleet.json'}: servers") or "seed" in line for line in lines)


def test_past_a_hundred_problems_the_rest_are_counted() -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_dict({"servers": [{"id": "a", "tool_count": "x"}] * 150})
    assert len(caught.value.problems) == 100
    assert caught.value.total == 150 + 149  # every bad tool_count, and every repeated id
    assert str(caught.value).splitlines()[-1] == "<dict>: … and 199 more problems"


def test_a_fleet_over_the_total_tool_limit_is_refused_without_reading_further() -> None:
    servers = [{"id": f"s{i}", "tool_count": LIMITS.tools_per_server} for i in range(12)]
    with pytest.raises(SpecError) as caught:
        spec_from_dict({"servers": servers})
    assert caught.value.field == "servers[10]"
    assert caught.value.expected == f"at most {LIMITS.fleet_tools:,} tools in the whole fleet"


def test_descriptions_are_bounded_one_by_one_and_for_the_whole_fleet() -> None:
    over = LIMITS.description_chars + 1
    with pytest.raises(SpecError) as one:
        spec_from_dict({"servers": [{"id": "a", "faults": {"huge_descriptions": 1, "huge_description_chars": over}}]})
    assert one.value.field == "servers[0].faults.huge_description_chars"
    huge = {"huge_descriptions": 1000, "huge_description_chars": LIMITS.description_chars}
    with pytest.raises(SpecError) as fleet:
        spec_from_dict({"servers": [{"id": "a", "tool_count": 5, "faults": huge}]})
    assert "characters of descriptions in the whole fleet" in fleet.value.expected


def test_specs_built_in_python_obey_the_same_limits() -> None:
    with pytest.raises(FleetArgumentError, match="tool_count"):
        ServerSpec(id="a", tool_count=LIMITS.tools_per_server + 1)
    with pytest.raises(FleetArgumentError, match="huge_description_chars"):
        Faults(huge_description_chars=10_000_000)
    with pytest.raises(FleetArgumentError, match="the number of tools"):
        FleetSpec(servers=tuple(ServerSpec(id=f"s{i}", tool_count=LIMITS.tools_per_server) for i in range(11)))


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_documents, "LIMITS", dataclasses.replace(LIMITS, spec_bytes=100))
    error = refused(write(tmp_path, "fleet.json", json.dumps({"servers": [{"id": f"s{i}"} for i in range(20)]})))
    assert error.expected == "a spec of at most 100 bytes"


def test_a_number_too_large_for_a_float_is_refused_cleanly() -> None:
    with pytest.raises(SpecError) as caught:
        spec_from_dict({"servers": [{"id": "a", "faults": {"slow": 10**400}}]})
    assert (caught.value.field, caught.value.expected) == ("servers[0].faults.slow", "a number")
