"""Believable values for result fields, chosen by the field's name, and instances of JSON Schemas.

Everything is drawn from one seeded `Faker`, so a value depends only on the seed it was
drawn under (and on the Faker version). Nothing here looks at the clock: dates fall in a
fixed window, so a result made today and one made next year are the same.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mock_servers._wire import JsonSchema

__all__ = ["SchemaInstances", "fake_value", "identifier", "timestamp"]

_WINDOW = (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), dt.datetime(2025, 12, 31, tzinfo=dt.UTC))
_REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1")
_EMOJI = ("tada", "eyes", "rocket", "white_check_mark", "thumbsup", "fire", "bug")
_PEOPLE = ("author", "assignee", "lead", "commander", "owner", "user", "login", "reviewer", "creator", "member")
_TEXTS = ("body", "description", "content", "text", "message", "comment", "summary", "topic", "note", "prompt")


def timestamp(fake: Any) -> str:
    """An ISO 8601 UTC time inside the fixed window."""
    moment = fake.date_time_between_dates(*_WINDOW, tzinfo=dt.UTC)
    return str(moment.replace(microsecond=0).isoformat().replace("+00:00", "Z"))


def identifier(fake: Any, prefix: str) -> str:
    """An opaque id such as ``is_4f9c2a7b1e``."""
    return f"{prefix}_{fake.hexify('^' * 10)}"


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if w]


def fake_value(fake: Any, name: str, kind: str = "string", values: Sequence[str] = (), *, person: bool = False) -> Any:
    """A value for a field called ``name``.

    ``kind`` is a vocabulary kind (string, integer, boolean, date, enum, strings) or a JSON
    type (number, array, object); ``values`` are an enum's choices; ``person`` says the
    record is about a person (so ``name`` is a person's name, not a thing's).
    """
    words = _words(name)
    last = words[-1] if words else ""
    if values:
        return fake.random_element(list(values))
    if kind == "boolean":
        return bool(fake.pybool())
    if kind == "date":
        return timestamp(fake)
    if kind == "integer":
        return _integer(fake, words)
    if kind == "number":
        return round(fake.pyfloat(min_value=0, max_value=1000, right_digits=2), 2)
    if kind in ("strings", "array"):
        return fake.words(nb=fake.random_int(1, 3), unique=False)
    if kind == "object":
        return {}
    return _string(fake, words, last, person)


def _integer(fake: Any, words: list[str]) -> int:
    if {"amount", "total", "price", "cost"} & set(words):
        return int(fake.random_int(500, 250_000))
    if {"mb", "gb", "bytes", "size"} & set(words):
        return int(fake.random_element([128, 256, 512, 1024, 2048, 4096]))
    if {"ms", "duration", "minutes", "seconds"} & set(words):
        return int(fake.random_int(5, 900))
    if {"percent", "target", "threshold", "capacity"} & set(words):
        return int(fake.random_int(1, 100))
    return int(fake.random_int(1, 500))


def _string(fake: Any, words: list[str], last: str, person: bool) -> str:
    text: str
    if last == "email" or "emails" in words:
        text = fake.email()
    elif {"url", "uri", "link", "href", "website"} & set(words):
        text = fake.url()
    elif last == "id" or last == "ts" or last == "token":
        text = identifier(fake, words[0][:3] if len(words) > 1 else "id")
    elif last in ("sha", "hash", "digest"):
        text = fake.sha1()
    elif last in ("path", "file", "filename", "paths"):
        text = fake.file_path(depth=2) if last == "path" else fake.file_name()
    elif last in ("head", "base", "branch", "ref"):
        text = fake.random_element(("main", "develop", f"feature/{fake.word()}-{fake.word()}", f"fix/{fake.word()}"))
    elif last in ("color", "colour"):
        text = fake.hex_color().lstrip("#")
    elif last in ("phone", "mobile"):
        text = fake.phone_number()
    elif last in ("company", "organization", "org"):
        text = fake.company()
    elif last == "industry":
        text = fake.bs().split()[-1].capitalize()
    elif last in ("domain", "host", "hostname"):
        text = fake.domain_name()
    elif last in ("ip", "address") and "ip" in words:
        text = fake.ipv4()
    elif last == "region":
        text = fake.random_element(_REGIONS)
    elif last == "emoji":
        text = fake.random_element(_EMOJI)
    elif last in ("version", "tag") or words[-2:] == ["tag", "name"]:
        text = fake.numerify("v%.#.#")
    elif last in ("sql", "query", "filter"):
        text = f"SELECT {fake.word()}, {fake.word()} FROM {fake.word()}s WHERE {fake.word()} = '{fake.word()}'"
    elif last in ("title", "subject", "headline"):
        text = str(fake.sentence(nb_words=5)).rstrip(".")
    elif last in _TEXTS:
        text = fake.paragraph(nb_sentences=2)
    elif last in _PEOPLE or last == "handle":
        text = fake.user_name()
    elif last in ("first", "last") or words[:1] in (["first"], ["last"]):
        text = fake.first_name() if "first" in words else fake.last_name()
    elif last == "name":
        text = fake.name() if person else "-".join(fake.words(nb=2, unique=False))
    elif last in ("zone", "location", "city"):
        text = fake.city()
    elif last in ("key", "code"):
        text = fake.lexify("???").upper()
    elif last in ("status", "state"):
        text = fake.random_element(("open", "closed", "active"))
    elif last in ("month",):
        text = timestamp(fake)[:7]
    elif last in ("time", "date", "at", "since", "start", "end", "due", "created", "updated"):
        text = timestamp(fake)
    else:
        text = fake.word()
    return text


# ---------------------------------------------------------------------------------------------
# JSON Schema instances


class SchemaInstances:
    """Instances of a JSON Schema (an ``outputSchema``), with field values chosen by name.

    Handles the keywords output schemas use in practice: ``type`` (also a list), ``properties``,
    ``required``, ``items``, ``enum``, ``const``, ``default``, ``anyOf``/``oneOf`` (the first
    branch that is not null), ``allOf`` (merged), local ``$ref``, string ``format``s, length
    and numeric bounds. ``pattern`` and ``patternProperties`` are not honoured; the caller
    validates what it gets.
    """

    max_depth = 8

    def __init__(self, fake: Any, root: JsonSchema) -> None:
        self.fake = fake
        self.root = root

    def instance(self, schema: Any = None, name: str = "", depth: int = 0) -> Any:
        schema = self.root if schema is None else schema
        if not isinstance(schema, Mapping):
            return None if schema is False else {}
        schema = self._resolve(schema)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.fake.random_element(schema["enum"])
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                usable = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
                return self.instance(usable[0] if usable else branches[0], name, depth + 1)
        if isinstance(schema.get("allOf"), list):
            return self.instance(_merge(schema, [self._resolve(s) for s in schema["allOf"]]), name, depth + 1)
        kind = _kind(schema)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, name, depth)
        if kind == "null":
            return None
        if kind in ("integer", "number"):
            return self._number(schema, name, kind)
        if kind == "boolean":
            return bool(self.fake.pybool())
        return self._string(schema, name)

    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#") and seen < 32:
            target: Any = self.root
            for part in schema["$ref"].lstrip("#").strip("/").split("/"):
                if part:
                    target = (
                        target.get(part.replace("~1", "/").replace("~0", "~"), {})
                        if isinstance(target, Mapping)
                        else {}
                    )
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**(target if isinstance(target, Mapping) else {}), **rest}
            seen += 1
        return schema

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = [r for r in schema.get("required", []) if isinstance(r, str)]
        out: dict[str, Any] = {}
        for key, sub in properties.items():
            if key in required or (depth < self.max_depth and self.fake.random_int(0, 9) < 8):
                out[key] = self.instance(sub, key, depth + 1) if depth < self.max_depth else _minimal(sub)
        for key in required:
            if key not in out:
                out[key] = fake_value(self.fake, key)
        return out

    def _array(self, schema: Mapping[str, Any], name: str, depth: int) -> list[Any]:
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", max(low, 3)))
        count = self.fake.random_int(max(low, min(1, high)), max(low, min(high, low + 3)))
        if depth >= self.max_depth:
            count = low
        items = schema.get("items", {})
        singular = name[:-1] if name.endswith("s") else name
        return [self.instance(items, singular, depth + 1) for _ in range(count)]

    def _number(self, schema: Mapping[str, Any], name: str, kind: str) -> int | float:
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        if low is None and high is None:
            value = fake_value(self.fake, name, kind)
            return int(value) if kind == "integer" else float(value)
        lo = float(low) if low is not None else float(high) - 1000
        hi = float(high) if high is not None else lo + 1000
        if "exclusiveMinimum" in schema and "minimum" not in schema:
            lo += 1 if kind == "integer" else 1e-6
        if "exclusiveMaximum" in schema and "maximum" not in schema:
            hi -= 1 if kind == "integer" else 1e-6
        if kind == "integer":
            return int(self.fake.random_int(int(-(-lo // 1)), max(int(-(-lo // 1)), int(hi // 1))))
        return round(lo + (hi - lo) * float(self.fake.random_int(0, 1000)) / 1000, 6)

    def _string(self, schema: Mapping[str, Any], name: str) -> str:
        fmt = schema.get("format")
        fake = self.fake
        formats = {
            "date-time": lambda: timestamp(fake),
            "date": lambda: timestamp(fake)[:10],
            "time": lambda: timestamp(fake)[11:],
            "email": fake.email,
            "uri": fake.url,
            "url": fake.url,
            "uuid": lambda: str(fake.uuid4()),
            "ipv4": fake.ipv4,
            "ipv6": fake.ipv6,
            "hostname": fake.domain_name,
        }
        text = str(formats[fmt]()) if fmt in formats else str(fake_value(fake, name or "value"))
        low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
        while len(text) < low:
            text += " " + str(fake.word())
        return text[: int(high)] if high is not None else text


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or ["null"]
        kind = kinds[0]
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _merge(schema: Mapping[str, Any], parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def _minimal(schema: Any) -> Any:
    kind = _kind(schema) if isinstance(schema, Mapping) else "null"
    return {"object": {}, "array": [], "integer": 0, "number": 0, "boolean": False, "null": None}.get(kind, "")
