"""Result values: schema instances that validate, and field values that depend on the seed alone."""

from __future__ import annotations

from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from faker import Faker

from mock_servers._fakes import SchemaInstances, fake_value

SCHEMAS: dict[str, dict[str, Any]] = {
    "nested records": {
        "type": "object",
        "properties": {
            "issues": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer", "minimum": 1, "maximum": 9},
                        "title": {"type": "string", "minLength": 3, "maxLength": 40},
                        "state": {"enum": ["open", "closed"]},
                        "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                        "draft": {"type": "boolean"},
                        "closed_at": {"type": ["string", "null"], "format": "date-time"},
                    },
                    "required": ["id", "title", "state"],
                },
            },
            "total": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "kind": {"const": "page"},
            "cursor": {"type": "null"},
        },
        "required": ["issues", "total", "kind"],
    },
    "references and combinations": {
        "$defs": {"user": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}},
        "type": "object",
        "properties": {
            "owner": {"$ref": "#/$defs/user"},
            "either": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]},
            "one": {"oneOf": [{"type": "string", "format": "uuid"}]},
            "both": {"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"required": ["b"]}]},
            "untyped_list": {"items": {"format": "ipv4"}},
            "untyped_record": {"properties": {"host": {"format": "hostname"}}},
            "at": {"type": "string", "format": "date"},
            "clock": {"type": "string", "format": "time"},
            "home": {"type": "string", "format": "uri"},
            "v6": {"type": "string", "format": "ipv6"},
            "below": {"type": "integer", "maximum": 3},
            "ratio": {"type": "number"},
            "anything": True,
        },
        "required": ["both", "at"],
    },
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_instance_drawn_validates_against_its_schema(name: str) -> None:
    schema = SCHEMAS[name]
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for seed in range(25):
        fake = Faker()
        fake.seed_instance(seed)
        instance = SchemaInstances(fake, schema).instance()
        errors = [error.message for error in validator.iter_errors(instance)]
        assert not errors, (seed, instance, errors)


def test_a_schema_that_is_false_or_not_a_schema_gives_null_or_an_empty_object() -> None:
    instances = SchemaInstances(Faker(), {})

    assert instances.instance(False) is None
    assert instances.instance(["not", "a", "schema"]) == {}


FIELDS = [
    ("labels", "strings"),
    ("enabled", "boolean"),
    ("created", "date"),
    ("count", "integer"),
    ("score", "number"),
    ("metadata", "object"),
    ("file_path", "string"),
    ("base", "string"),
    ("colour", "string"),
    ("phone", "string"),
    ("organization", "string"),
    ("industry", "string"),
    ("hostname", "string"),
    ("ip_address", "string"),
    ("region", "string"),
    ("emoji", "string"),
    ("first_name", "string"),
    ("name", "string"),
    ("city", "string"),
    ("key", "string"),
    ("status", "string"),
    ("month", "string"),
    ("due", "string"),
]


def test_a_field_value_depends_on_the_seed_and_the_fields_name_alone() -> None:
    def draw(seed: int) -> list[Any]:
        fake = Faker()
        fake.seed_instance(seed)
        return [fake_value(fake, name, kind) for name, kind in FIELDS] + [fake_value(fake, "x", "enum", ["a", "b"])]

    first = draw(7)

    assert first == draw(7)
    assert first != draw(8)
    assert first[-1] in ("a", "b")
    assert isinstance(first[1], bool) and isinstance(first[3], int) and isinstance(first[5], dict)
