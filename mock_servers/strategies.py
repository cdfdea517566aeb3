"""Hypothesis strategies for fleet specs, changes of live catalogs and per-server tool policies.

Every strategy validates its arguments when called (a `FleetArgumentError` naming the
argument and showing its value) and shrinks towards small, readable examples: few
servers with ids ``s0``, ``s1``…, few tools, the first domain (code hosting), the default
annotation mix, one page, no faults, no changes, and policies with few keys.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, cast

from hypothesis import strategies as st

from mock_servers._errors import FleetArgumentError
from mock_servers._generate import generate_tools
from mock_servers._limits import LIMITS
from mock_servers._spec import (
    AnnotationMix,
    CatalogChange,
    Faults,
    FleetSpec,
    Rename,
    SchemaShapes,
    ServerSpec,
    ToolSpec,
    ToolUpdate,
)
from mock_servers._spec_changes import edit_problems
from mock_servers._vocabulary import DOMAINS
from mock_servers._wire import ToolPolicy

__all__ = ["catalog_changes", "fleet_specs", "server_specs", "tool_policies", "tool_specs"]

_ID = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")  # letters, digits, '-', single inner '_'
_PAGE_SIZES = (50, 1, 2, 3, 5, 10, 20)
_WORDS = (
    "issue",
    "pull",
    "request",
    "search",
    "list",
    "create",
    "deploy",
    "report",
    "message",
    "table",
    "query",
    "page",
    "event",
    "alert",
    "user",
    "file",
    "comment",
    "review",
    "log",
    "metric",
)


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FleetArgumentError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise FleetArgumentError(f"{name} must be {bounds}, got {value!r}")
    return value


def _check_domains(domains: Sequence[str] | None) -> tuple[str, ...]:
    if domains is None:
        return tuple(DOMAINS)
    if isinstance(domains, str) or not domains or any(d not in DOMAINS for d in domains):
        raise FleetArgumentError(f"domains must be a non-empty list of {', '.join(DOMAINS)}; got {domains!r}")
    return tuple(domains)


def tool_specs(*, raw: bool = False) -> st.SearchStrategy[ToolSpec]:
    """Explicit tools: snake_case names, a sentence of domain words, a small object schema.

    With ``raw``, annotations may also carry the non-boolean ``readOnlyHint`` values
    (``"true"``, ``1``) that only a raw server can send. Shrinks to a tool named ``a``
    with an empty schema and no annotations.
    """
    if not isinstance(raw, bool):
        raise FleetArgumentError(f"raw must be True or False, got {raw!r}")
    names = st.from_regex(re.compile(r"\A[a-z]{1,8}(_[a-z]{1,8}){0,2}\Z"))
    description = st.lists(st.sampled_from(_WORDS), max_size=8).map(lambda ws: " ".join(ws).capitalize())
    prop = st.sampled_from(({"type": "string"}, {"type": "integer"}, {"type": "boolean"}))
    properties = st.dictionaries(st.sampled_from(("query", "id", "limit", "name", "text")), prop, max_size=3)
    schema = properties.flatmap(
        lambda props: (
            st.lists(st.sampled_from(sorted(props)), unique=True).map(
                lambda req: {"type": "object", "properties": props, **({"required": req} if req else {})}
            )
            if props
            else st.just({"type": "object"})
        )
    )
    hint_values: list[Any] = [True, False] + (["true", 1] if raw else [])
    annotations = st.none() | st.fixed_dictionaries(
        {}, optional={"readOnlyHint": st.sampled_from(hint_values), "destructiveHint": st.booleans()}
    )
    return st.builds(
        ToolSpec, name=names, description=description, input_schema=schema, annotations=annotations, title=st.none()
    )


def _mixes() -> st.SearchStrategy[AnnotationMix]:
    tenths = st.integers(0, 10).flatmap(lambda ro: st.tuples(st.just(ro), st.integers(0, 10 - ro)))
    return st.just(AnnotationMix()) | st.builds(
        lambda rw, follow: AnnotationMix(
            read_only=rw[0] / 10, writable=rw[1] / 10, none=(10 - rw[0] - rw[1]) / 10, follow_names=follow
        ),
        tenths,
        st.booleans(),
    )


def _faults(raw: bool) -> st.SearchStrategy[Faults]:
    single = st.one_of(
        st.builds(Faults, error_on_list=st.integers(0, 2)),
        st.builds(Faults, hang_on_list=st.integers(0, 2)),
        st.builds(Faults, crash_on_list=st.integers(0, 2)),
        st.builds(Faults, tool_call_error=st.just(("*",))),
        st.builds(Faults, error_on_call=st.just(("*",))),
        st.builds(Faults, drop_mid_call=st.just(("*",))),
        st.builds(Faults, duplicate_names=st.integers(1, 3)),
        st.builds(
            Faults,
            bad_names=st.lists(
                st.sampled_from(("double_underscore", "dot", "space")), min_size=1, max_size=3, unique=True
            ).map(tuple),
        ),
        st.builds(Faults, fail_to_start=st.just(True)),
    )
    if raw:
        single = (
            single
            | st.builds(Faults, read_only_hint_string=st.integers(1, 2))
            | st.builds(Faults, read_only_hint_number=st.integers(1, 2))
        )
    return st.just(Faults()) | single


@st.composite
def _change(draw: st.DrawFn, names: list[str], trigger: str | None, max_notify: int) -> CatalogChange:
    """One change that applies to a server listing ``names``."""
    removed: list[str] = draw(st.lists(st.sampled_from(names), unique=True, max_size=2)) if names else []
    after = [n for n in names if n not in removed]
    renamed: list[Rename] = []
    rename: bool = draw(st.booleans())
    if after and rename:
        old = draw(st.sampled_from(after))
        new = next(f"{old}_v{i}" for i in range(2, len(after) + 3) if f"{old}_v{i}" not in after)
        renamed.append(Rename(old, new))
        after[after.index(old)] = new
    updated = []
    update: bool = draw(st.booleans())
    if after and update:
        updated.append(
            ToolUpdate(
                name=draw(st.sampled_from(after)),
                description=draw(st.none() | st.sampled_from(("Changed.", "Now read-only."))),
                annotations=draw(st.none() | st.sampled_from(({}, {"readOnlyHint": True}, {"readOnlyHint": False}))),
            )
        )
    added = draw(st.lists(tool_specs(), max_size=2, unique_by=lambda t: t.name))
    added = [t for t in added if t.name not in after]
    change = CatalogChange(
        after_calls=draw(st.integers(1, 3)) if trigger == "after_calls" else None,
        after_seconds=draw(st.sampled_from((0.0, 0.1, 0.5))) if trigger == "after_seconds" else None,
        remove=tuple(removed),
        rename=tuple(renamed),
        update=tuple(updated),
        add=tuple(added),
        notify=draw(st.integers(0, max_notify) | st.just(1)),
        list_error=draw(st.none() | st.booleans()),
    )
    assert not edit_problems(names, change)[1], (names, change)
    return change


def catalog_changes(server: ServerSpec, *, max_notify: int = 3) -> st.SearchStrategy[CatalogChange]:
    """A change made on demand (no trigger) that applies to ``server``'s tools as generated.

    It removes, renames and updates tools the server lists, adds new ones, and sends up to
    ``max_notify`` notifications; it shrinks to a change that only sends one.
    """
    if not isinstance(server, ServerSpec):
        raise FleetArgumentError(f"server must be a ServerSpec, got {server!r}")
    _check_int("max_notify", max_notify, 0, LIMITS.notifications_per_change)
    names = [t["name"] for t in generate_tools(server) if isinstance(t.get("name"), str)]
    return _change(names, None, max_notify)


@st.composite
def _schedule(draw: st.DrawFn, server: ServerSpec) -> ServerSpec:
    names = [t["name"] for t in generate_tools(server) if isinstance(t.get("name"), str)]
    changes = []
    for _ in range(draw(st.integers(0, 2))):
        change = draw(_change(names, draw(st.sampled_from(("after_calls", "after_seconds"))), 3))
        names = edit_problems(names, change)[0]
        changes.append(change)
    return dataclasses.replace(server, changes=tuple(changes), list_changed=bool(changes) or draw(st.booleans()))


def server_specs(
    *,
    server_id: str | st.SearchStrategy[str] = "s0",
    min_tools: int = 0,
    max_tools: int = 20,
    domains: Sequence[str] | None = None,
    explicit_tools: bool = False,
    faults: bool = False,
    raw: bool = False,
    live: bool = False,
) -> st.SearchStrategy[ServerSpec]:
    """One server. ``faults`` adds at most one fault (shrinking to none); ``raw`` makes
    raw JSON-RPC servers, whose faults may include non-boolean read-only hints; ``live``
    gives SDK servers a live catalog (``list_changed``) with up to two scheduled changes."""
    _check_int("min_tools", min_tools, 0)
    _check_int("max_tools", max_tools, min_tools, LIMITS.tools_per_server)
    chosen_domains = _check_domains(domains)
    for name, flag in (("explicit_tools", explicit_tools), ("faults", faults), ("raw", raw), ("live", live)):
        if not isinstance(flag, bool):
            raise FleetArgumentError(f"{name} must be True or False, got {flag!r}")
    if raw and live:
        raise FleetArgumentError("raw and live cannot both be True: a raw server cannot serve a live catalog")
    if isinstance(server_id, str) and not _ID.fullmatch(server_id):
        raise FleetArgumentError(
            f"server_id must be ASCII letters, digits, '-' and single inner '_', got {server_id!r}"
        )
    ids = st.just(server_id) if isinstance(server_id, str) else server_id
    tools = (
        st.lists(tool_specs(raw=raw), max_size=3, unique_by=lambda t: t.name).map(tuple)
        if explicit_tools
        else st.just(())
    )
    servers = st.builds(
        ServerSpec,
        id=ids,
        domain=st.sampled_from(chosen_domains),
        tool_count=st.integers(min_tools, max_tools),
        annotations=_mixes(),
        schema=st.just(SchemaShapes()),
        page_size=st.sampled_from(_PAGE_SIZES),
        seed=st.integers(0, 2**16),
        faults=_faults(raw) if faults else st.just(Faults()),
        tools=tools,
        raw=st.just(raw),
    )
    return servers.flatmap(_schedule) if live else servers


def fleet_specs(
    *,
    min_servers: int = 1,
    max_servers: int = 4,
    min_tools: int = 0,
    max_tools: int = 20,
    domains: Sequence[str] | None = None,
    explicit_tools: bool = False,
    faults: bool = False,
    raw: bool = False,
    live: bool = False,
) -> st.SearchStrategy[FleetSpec]:
    """Whole fleets of ``min_servers``..``max_servers`` servers with ids ``s0``, ``s1``…

    Ids satisfy every host's rules (no ``__``, no trailing ``_``), so qualified names
    never collide unless explicit tools are drawn that make them.
    """
    _check_int("min_servers", min_servers, 0)
    _check_int("max_servers", max_servers, max(min_servers, 1), 200)
    _check_int("min_tools", min_tools, 0)
    _check_int("max_tools", max_tools, min_tools, LIMITS.tools_per_server)
    _check_domains(domains)
    # Explicit tools (up to 3), duplicate_names (up to 3) and tools added by changes (up to 4)
    # come on top of max_tools.
    if max_servers * (max_tools + 10) > LIMITS.fleet_tools:
        raise FleetArgumentError(
            f"max_servers × (max_tools + 10) must stay within the fleet limit of {LIMITS.fleet_tools:,} tools, "
            f"got {max_servers} × ({max_tools} + 10)"
        )

    def servers(n: int) -> st.SearchStrategy[tuple[ServerSpec, ...]]:
        return st.tuples(
            *(
                server_specs(
                    server_id=f"s{i}",
                    min_tools=min_tools,
                    max_tools=max_tools,
                    domains=domains,
                    explicit_tools=explicit_tools,
                    faults=faults,
                    raw=raw,
                    live=live,
                )
                for i in range(n)
            )
        )

    return st.builds(
        FleetSpec,
        servers=st.integers(max(min_servers, 1), max_servers).flatmap(servers),
        seed=st.integers(0, 1000),
    )


def tool_policies(server: ServerSpec, *, unknown_names: bool = True) -> st.SearchStrategy[ToolPolicy]:
    """A ``toolPolicy`` for ``server`` in the wire form of the driver protocol.

    Tool names are drawn mostly from the server's own catalog; with ``unknown_names``
    an occasional name the server does not offer is mixed in. Keys other than ``mode``
    are optional, so examples shrink to ``{"mode": "auto"}``.
    """
    if not isinstance(server, ServerSpec):
        raise FleetArgumentError(f"server must be a ServerSpec, got {server!r}")
    names = sorted({t["name"] for t in generate_tools(server) if isinstance(t.get("name"), str)})
    known = st.sampled_from(names) if names else st.nothing()
    name = known | st.just("no_such_tool") if unknown_names else known
    size = min(len(names) + int(unknown_names), 8)
    name_list = st.lists(name, max_size=size, unique=True) if size else st.just([])
    return st.fixed_dictionaries(
        {"mode": st.sampled_from(("auto", "allowlist", "all"))},
        optional={
            "allowedTools": name_list,
            "deniedTools": name_list,
            "pinnedTools": name_list,
            "maxActiveTools": st.integers(0, 96),
            "sideEffects": st.sampled_from(("allow", "readOnly")),
        },
    ).map(_as_policy)


def _as_policy(drawn: dict[str, object]) -> ToolPolicy:
    # fixed_dictionaries types its values as the join of its strategies' (object); each key's
    # strategy above draws exactly the type ToolPolicy gives it.
    return cast(ToolPolicy, drawn)
