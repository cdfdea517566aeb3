"""Realistic results for successful tool calls, made with Faker and seeded per call.

A result depends only on the server's seed, the tool's name and the call's arguments (and
on the installed Faker version): the same call gives the same result in any process, on
any transport, in any run. Its shape follows the tool:

- a tool with an ``outputSchema`` gets ``structuredContent`` that is an instance of it;
- a generated tool gets what its verb does to its entity: a page of issues for
  ``list_issues`` (as many as ``limit`` allows, matching the filters given), one record for
  ``get_issue``, the created record for ``create_issue``, ``{"deleted": true}`` for a delete;
- a fixed action (``run_sql_query``, ``query_logs``, ``browser_snapshot``…) gets its own shape;
- any other tool gets a record shaped by its name;
- a tool the vocabulary does not know (captured, or explicit in a spec) honours the arguments
  its input schema declares, as generated tools do: a ``limit`` (``max_results``,
  ``per_page``…) caps every list of records, and a filter (``status="open"``) holds for
  every record listed (`Listing`).

The text content is the same data as JSON, as many real servers send it. The catalog (names,
descriptions, schemas) never goes through Faker, so it does not change with Faker's version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from mock_servers._fakes import SchemaInstances, fake_value, identifier, timestamp
from mock_servers._spec import ServerSpec
from mock_servers._vocabulary import DOMAINS, VERBS, Domain, Entity
from mock_servers._wire import ListedTool

__all__ = ["ResultMaker", "call_seed"]

# What a verb leaves a record's status at.
_STATES = {
    "close": "closed",
    "reopen": "open",
    "archive": "archived",
    "publish": "published",
    "approve": "approved",
    "acknowledge": "acknowledged",
    "resolve": "resolved",
    "cancel": "cancelled",
    "start": "running",
    "stop": "stopped",
    "restart": "running",
    "rerun": "queued",
    "mute": "muted",
    "pin": "pinned",
    "schedule": "scheduled",
    "merge": "merged",
    "invite": "invited",
}
_LISTING = ("list", "search", "get_all", "export")
_CREATING = ("create", "add", "upload", "send")
_REMOVING = ("delete", "remove")
_PEOPLE = ("user", "contact", "member")


def call_seed(server_seed: int, tool: str, arguments: Mapping[str, Any]) -> int:
    """The seed of one call's result: stable across processes, platforms and runs."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    digest = hashlib.sha256(f"{server_seed}\0{tool}\0{canonical}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class ResultMaker:
    """Makes the result of each successful call to one server's tools."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.domain = DOMAINS[spec.domain]
        self._shapes = _shapes(spec.domain)
        self._faker: Any = None

    def _fake(self, seed: int) -> Any:
        if self._faker is None:
            # Faker loads on the first call, so a server that is only listed starts quicker.
            from faker import Faker

            self._faker = Faker("en_US")
        self._faker.seed_instance(seed)
        return self._faker

    def make(self, tool: ListedTool, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, bool]:
        """``(text, structuredContent, isError)`` for a call whose arguments are valid."""
        name = str(tool.get("name", ""))
        fake = self._fake(call_seed(self.spec.seed, name, arguments))
        schema = tool.get("outputSchema")
        listing = Listing.of(tool.get("inputSchema"), arguments)
        if isinstance(schema, Mapping):
            structured = SchemaInstances(fake, schema).instance()
            # Each step is kept only if the result still matches the schema.
            steps: tuple[Callable[[Any], Any], ...] = (lambda v: _echo(v, arguments), listing.bounded, listing.filtered)
            for step in steps:
                changed = step(structured)
                if changed is not structured and _first_error(schema, changed) is None:
                    structured = changed
            problem = _first_error(schema, structured)
            if problem is not None:
                return f"{self.spec.id}.{name}: no result matching the tool's output schema ({problem})", None, True
        else:
            structured = self._shaped(fake, name, dict(arguments), listing)
        if not isinstance(structured, dict):
            structured = {"result": structured}
        return json.dumps(structured, ensure_ascii=False), structured, False

    def _shaped(self, fake: Any, name: str, args: dict[str, Any], listing: Listing) -> dict[str, Any]:
        base = re.sub(r"_\d+$", "", name)
        shape = self._shapes.get(name) or self._shapes.get(base)
        if shape is None:
            made: dict[str, Any] = listing.filtered(listing.bounded(_by_name(fake, name, args, self.domain)))
            return made
        verb, entity, action = shape
        if action is not None:
            return action(fake, args)
        assert entity is not None
        return _entity_result(fake, verb, entity, args, self.domain, self.spec.id)


Shape = tuple[str, Entity | None, Callable[[Any, dict[str, Any]], dict[str, Any]] | None]


# ---------------------------------------------------------------------------------------------
# Tools the vocabulary does not know (captured, or explicit in a spec): what their arguments ask


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: Integer arguments that bound how many records a listing returns (compared without case or `_`).
_LIMITS = frozenset(
    {"limit", "maxresults", "maxitems", "maxrows", "maxcount", "perpage", "pagesize", "numresults", "top", "first"}
)
#: Arguments that page, sort or format a listing rather than filter its records.
_NOT_FILTERS = frozenset(
    {"cursor", "page", "pagetoken", "offset", "after", "before", "sort", "sortby", "order", "orderby", "direction"}
    | {"format", "outputformat", "responseformat", "fields", "include", "expand", "view", "mode", "verbosity"}
)


@dataclass(frozen=True, slots=True)
class Listing:
    """What a call's arguments ask of the records a result lists, read from the tool's input schema.

    Only arguments the schema declares count: a limit (``limit``, ``max_results``,
    ``per_page``…) caps every list of records, and a filter holds for every record listed,
    as for generated tools. A filter is a declared scalar argument; it is set on the records
    that have a field of its name, and on every record when the schema gives its values
    (``enum`` or ``const``: a status, a state, a kind).
    """

    limit: int | None = None
    filters: Mapping[str, Any] = field(default_factory=dict)
    enumerated: frozenset[str] = frozenset()

    @classmethod
    def of(cls, input_schema: Any, arguments: Mapping[str, Any]) -> Listing:
        properties = input_schema.get("properties") if isinstance(input_schema, Mapping) else None
        if not isinstance(properties, Mapping):
            return cls()
        limit, filters, enumerated = None, {}, set()
        for name, value in arguments.items():
            declared = properties.get(name)
            if not isinstance(declared, Mapping) or isinstance(value, dict | list) or value is None:
                continue
            key = _key(name)
            if key in _LIMITS:
                if isinstance(value, int) and not isinstance(value, bool):
                    limit = max(0, value)
            elif key not in _NOT_FILTERS:
                filters[name] = value
                if "enum" in declared or "const" in declared:
                    enumerated.add(name)
        return cls(limit, filters, frozenset(enumerated))

    def bounded(self, value: Any) -> Any:
        """``value`` with every list of records cut to the limit (the same object when nothing changes)."""
        if self.limit is None:
            return value
        limit = self.limit
        return _records_mapped(value, lambda records: records[:limit] if len(records) > limit else records)

    def filtered(self, value: Any) -> Any:
        """``value`` with the filters set on every record listed (the same object when nothing changes)."""
        if not self.filters:
            return value

        def apply(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            out = []
            for record in records:
                wanted = {k: v for k, v in self.filters.items() if k in record or k in self.enumerated}
                out.append(
                    {**record, **wanted} if any(record.get(k, _ABSENT) != v for k, v in wanted.items()) else record
                )
            return out if any(a is not b for a, b in zip(out, records, strict=True)) else records

        return _records_mapped(value, apply)


_ABSENT = object()


def _records_mapped(value: Any, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]], depth: int = 0) -> Any:
    """``value`` with ``change`` applied to each list of records in it (objects nested up to 3 deep)."""
    if isinstance(value, list):
        if value and all(isinstance(item, dict) for item in value):
            return change(value)
        return value
    if not isinstance(value, dict) or depth > 3:
        return value
    changed = {key: _records_mapped(item, change, depth + 1) for key, item in value.items()}
    return changed if any(changed[key] is not value[key] for key in value) else value


def _snake(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


@functools.cache
def _shapes(domain_name: str) -> Mapping[str, Shape]:
    """Tool name → (verb, entity, action), for every name the domain can generate: one table
    per domain, read by every server of it."""
    domain = DOMAINS[domain_name]
    out: dict[str, Shape] = {}
    for entity in domain.entities:
        for verb_key in entity.verbs:
            word = "get" if verb_key == "get_all" else verb_key
            noun = entity.many if VERBS[verb_key].plural else entity.one
            out.setdefault(f"{domain.prefix}{word}_{_snake(noun)}", (verb_key, entity, None))
    for action in domain.actions:
        maker = _ACTIONS.get(action.name)
        if maker is not None:
            out[action.name] = ("", None, maker)
    return out


def _echo(value: Any, arguments: Mapping[str, Any]) -> Any:
    """``value`` with the top-level fields named like an argument set to that argument (``get_ticket(id=5)`` → id 5)."""
    if not isinstance(value, dict) or not any(
        k in value and not isinstance(v, dict | list) for k, v in arguments.items()
    ):
        return value
    return {**value, **{k: v for k, v in arguments.items() if k in value and not isinstance(v, dict | list)}}


def _first_error(schema: Mapping[str, Any], value: Any) -> str | None:
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    except (jsonschema.SchemaError, TypeError, AttributeError) as exc:
        return f"the schema is unusable: {exc}"
    return None if error is None else error.message


# ---------------------------------------------------------------------------------------------
# Generated tools: an entity and a verb


def _record(fake: Any, entity: Entity, args: dict[str, Any], domain: Domain, server: str, own: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"id": own if isinstance(own, str) else identifier(fake, _initials(entity.one))}
    if entity.one in ("issue", "pull request") and domain.key == "code_hosting":
        record["number"] = int(fake.random_int(1, 4000))
    person = entity.one in _PEOPLE
    for param in entity.fields:
        record[param.name] = fake_value(fake, param.name, param.kind, param.values, person=person)
    if entity.parent:
        parent_key = f"{_snake(entity.parent)}_id"
        record[parent_key] = args.get(parent_key) or identifier(fake, _initials(entity.parent))
    for param in domain.context:
        if param.name in args:
            record[param.name] = args[param.name]
    if not person:
        record["created_by"] = fake.user_name()
    record["created_at"] = timestamp(fake)
    record["updated_at"] = max(record["created_at"], timestamp(fake))
    record.setdefault("url", f"https://{server}.example.com/{_snake(entity.many).replace('_', '-')}/{record['id']}")
    return record


def _initials(noun: str) -> str:
    words = noun.replace("-", " ").split()
    return "".join(w[0] for w in words) if len(words) > 1 else words[0][:3]


def _entity_result(
    fake: Any, verb: str, entity: Entity, args: dict[str, Any], domain: Domain, server: str
) -> dict[str, Any]:
    fields = {p.name for p in entity.fields}
    if verb in _LISTING:
        limit = args.get("limit")
        count = int(fake.random_int(2, 6))
        if isinstance(limit, int) and not isinstance(limit, bool):
            count = max(0, min(count, limit))
        records = [_record(fake, entity, args, domain, server, None) for _ in range(count)]
        for record in records:
            # The filters given hold for every record listed.
            record.update({k: v for k, v in args.items() if k in fields and not isinstance(v, list)})
        out: dict[str, Any] = {_snake(entity.many): records, "total_count": count + int(fake.random_int(0, 40))}
        if verb == "search" and "query" in args:
            out["query"] = args["query"]
        if verb == "export":
            out["format"] = args.get("format", "json")
        return out
    if verb == "count":
        return {"count": int(fake.random_int(0, 500))}
    record = _record(fake, entity, args, domain, server, args.get(f"{_snake(entity.one)}_id"))
    if verb in _REMOVING:
        return {"id": record["id"], "deleted": True}
    if verb == "download":
        payload = fake.paragraph(nb_sentences=3)
        return {"id": record["id"], "filename": fake.file_name(), "size_bytes": len(payload), "content": payload}
    if verb in _CREATING or verb == "update":
        record.update({k: v for k, v in args.items() if k in fields})
    for arg, target in (("assignee", "assignee"), ("new_name", "name"), ("target", "location"), ("email", "invited")):
        if arg in args:
            record[target] = args[arg]
    if verb in _STATES:
        record["status"] = _STATES[verb]
    if verb == "merge":
        record["merge_commit_sha"] = fake.sha1()
    return record


def _by_name(fake: Any, name: str, args: dict[str, Any], domain: Domain) -> dict[str, Any]:
    """A result for a tool the vocabulary does not know, from the words of its name."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # listTickets reads as list_tickets
    words = [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]
    verb = words[0] if words else ""
    noun = words[-1] if len(words) > 1 else "item"

    def item() -> dict[str, Any]:
        return {
            "id": identifier(fake, noun[:3]),
            "name": fake_value(fake, "name"),
            "description": fake.sentence(),
            "updated_at": timestamp(fake),
        }

    if verb in ("list", "search", "find", "query", "get") and noun.endswith("s"):
        items = [item() for _ in range(int(fake.random_int(2, 5)))]
        return {noun: items, "total_count": len(items)}
    if verb in _REMOVING:
        return {"deleted": True, **{k: v for k, v in args.items() if k.endswith("id")}}
    return {**item(), **{k: v for k, v in args.items() if isinstance(v, str | int | float | bool)}}


# ---------------------------------------------------------------------------------------------
# Fixed actions


def _rows(fake: Any, count: int) -> dict[str, Any]:
    columns = ["id", "name", "email", "country", "signed_up_at", "orders"]
    rows = [
        [
            int(fake.random_int(1000, 99999)),
            fake.name(),
            fake.email(),
            fake.country_code(),
            timestamp(fake),
            int(fake.random_int(0, 40)),
        ]
        for _ in range(count)
    ]
    return {"columns": columns, "rows": rows, "row_count": count}


def _limit(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    return max(0, min(int(value), 20)) if isinstance(value, int) and not isinstance(value, bool) else default


def _messages(fake: Any, count: int, channel: Any) -> dict[str, Any]:
    return {
        "channel": channel,
        "messages": [
            {
                "ts": f"{fake.random_int(1700000000, 1760000000)}.{fake.numerify('######')}",
                "user": fake.user_name(),
                "text": fake.sentence(nb_words=12),
            }
            for _ in range(count)
        ],
    }


def _page(fake: Any, args: dict[str, Any]) -> dict[str, Any]:
    return {"url": args.get("url") or fake.url(), "title": str(fake.sentence(nb_words=4)).rstrip(".")}


_ACTIONS: dict[str, Callable[[Any, dict[str, Any]], dict[str, Any]]] = {
    "run_sql_query": lambda f, a: {**_rows(f, _limit(a, "max_rows", 5)), "job_id": identifier(f, "job")},
    "get_query_results": lambda f, a: {**_rows(f, 5), "job_id": a.get("job_id"), "next_page_token": None},
    "preview_table_rows": lambda f, a: {"table": a.get("table"), **_rows(f, _limit(a, "rows", 5))},
    "explain_query": lambda f, a: {
        "plan": [
            {
                "step": i + 1,
                "operation": f.random_element(("Scan", "Filter", "Aggregate", "Join", "Sort")),
                "rows": int(f.random_int(10, 10**6)),
            }
            for i in range(int(f.random_int(2, 5)))
        ],
        "estimated_bytes": int(f.random_int(10**4, 10**9)),
    },
    "get_table_lineage": lambda f, a: {
        "table": a.get("table"),
        "upstream": [f"{f.word()}.{f.word()}" for _ in range(2)],
        "downstream": [f"{f.word()}.{f.word()}" for _ in range(int(f.random_int(0, 3)))],
    },
    "load_csv_into_table": lambda f, a: {"table": a.get("table"), "rows_loaded": int(f.random_int(10, 50_000))},
    "browser_navigate": lambda f, a: {**_page(f, a), "status": 200},
    "browser_snapshot": lambda f, a: {
        **_page(f, a),
        "snapshot": "\n".join(
            f'- {f.random_element(("button", "link", "textbox", "heading"))} "{f.word()}" [ref=e{i}]'
            for i in range(int(f.random_int(4, 9)))
        ),
    },
    "browser_get_page_text": lambda f, a: {**_page(f, a), "text": f.paragraph(nb_sentences=5)},
    "browser_get_url": lambda f, a: _page(f, a),
    "browser_take_screenshot": lambda f, a: {
        "type": a.get("type", "png"),
        "width": 1280,
        "height": 720,
        "path": f"/tmp/screenshot-{f.hexify('^^^^^^')}.{a.get('type', 'png')}",
    },
    "browser_evaluate": lambda f, a: {"result": f.word()},
    "get_channel_history": lambda f, a: _messages(f, _limit(a, "limit", 4), a.get("channel")),
    "get_thread_replies": lambda f, a: {
        **_messages(f, int(f.random_int(1, 4)), a.get("channel")),
        "thread_ts": a.get("thread_ts"),
    },
    "get_user_presence": lambda f, a: {"user": a.get("user"), "presence": f.random_element(("active", "away"))},
    "invoke_function": lambda f, a: {
        "function_name": a.get("function_name"),
        "status_code": 200,
        "response": {"ok": True, "request_id": str(f.uuid4())},
    },
    "get_function_logs": lambda f, a: {
        "function_name": a.get("function_name"),
        "lines": [
            f"{timestamp(f)} {f.random_element(('INFO', 'WARN', 'ERROR'))} {f.sentence(nb_words=7)}"
            for _ in range(int(f.random_int(3, 8)))
        ],
    },
    "get_billing_summary": lambda f, a: {
        "currency": "USD",
        "services": [
            {"service": s, "cost": round(f.pyfloat(min_value=1, max_value=5000, right_digits=2), 2)}
            for s in ("compute", "storage", "network", "database")
        ],
    },
    "query_logs": lambda f, a: {
        "query": a.get("query"),
        "lines": [
            {
                "timestamp": timestamp(f),
                "level": f.random_element(("info", "warn", "error")),
                "service": f.word(),
                "message": f.sentence(nb_words=8),
            }
            for _ in range(_limit(a, "limit", 5))
        ],
    },
    "query_metrics": lambda f, a: {
        "query": a.get("query"),
        "points": [[timestamp(f), round(f.pyfloat(min_value=0, max_value=100, right_digits=2), 2)] for _ in range(6)],
    },
    "get_current_on_call": lambda f, a: {
        "schedule_id": a.get("schedule_id"),
        "user": f.user_name(),
        "until": timestamp(f),
    },
    "page_on_call": lambda f, a: {
        "schedule_id": a.get("schedule_id"),
        "paged": f.user_name(),
        "incident_id": identifier(f, "inc"),
    },
    "find_free_slots": lambda f, a: {
        "slots": [{"start": timestamp(f), "minutes": a.get("duration_minutes", 30)} for _ in range(3)]
    },
    "get_free_busy": lambda f, a: {
        "busy": {e: [{"start": timestamp(f), "end": timestamp(f)}] for e in a.get("emails", []) if isinstance(e, str)}
    },
    "get_sales_forecast": lambda f, a: {
        "quarter": f"{timestamp(f)[:4]}-Q{f.random_int(1, 4)}",
        "forecast": int(f.random_int(10**5, 10**7)),
        "currency": "USD",
    },
    "query_database": lambda f, a: {
        "database_id": a.get("database_id"),
        "results": [
            {"id": identifier(f, "row"), "title": str(f.sentence(nb_words=4)).rstrip("."), "updated_at": timestamp(f)}
            for _ in range(_limit(a, "limit", 4))
        ],
    },
    "get_page_history": lambda f, a: {
        "page_id": a.get("page_id"),
        "revisions": [
            {"version": i + 1, "author": f.user_name(), "edited_at": timestamp(f)}
            for i in range(int(f.random_int(1, 5)))
        ],
    },
}
