"""Defects of errors and cleanup (ERR-*), one function each.

Each one loosens or tightens exactly one check of the reference where it is made: the
configuration checks of ``_config``, the limits the first round checks, the catalog's
collision check, how a server that fails while opening is treated, and what closing a
run ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from reference_impl import _catalog, _config, _connections, _errors, _policy, _toolset
from reference_impl._budgets import Budgets
from reference_impl._catalog import Catalog
from reference_impl._config import ServerConfig, ToolPolicy
from reference_impl._errors import ConfigurationError, SelectionError, ServerConnectionError
from reference_impl._policy import Eligibility
from reference_impl._selection import select_first_round as _select_first_round
from reference_impl.driver import _session
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = []

# Required tools ---------------------------------------------------------------------------


def _required_total(servers: Sequence[ServerConfig], eligibility: Eligibility) -> int:
    return sum(len(eligibility.required[server.id]) for server in servers)


@defect("ERR-1.1", "required tools over maxActiveTools are cut to it instead of failing the run")
def required_cut_to_max_active() -> None:
    """A server's required tools beyond its maxActiveTools are silently left inactive."""

    def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
        eligibility = _policy.resolve_policies(servers, catalog)
        required = {s.id: eligibility.required[s.id][: s.policy.max_active_tools] for s in servers}
        return replace(eligibility, required=required)

    _swap(_toolset, "resolve_policies", resolve_policies)


def _before_first_round(prepare: Callable[[Sequence[ServerConfig], Eligibility, Budgets], Budgets]) -> None:
    """Run ``prepare`` before the first round: it may refuse the run, or hand it other budgets."""

    def select_first_round(
        servers: Sequence[ServerConfig],
        catalog: Catalog,
        eligibility: Eligibility,
        index: Any,
        budgets: Budgets,
        user_message: str,
    ) -> Any:
        budgets = prepare(servers, eligibility, budgets)
        return _select_first_round(servers, catalog, eligibility, index, budgets, user_message)

    _swap(_toolset, "select_first_round", select_first_round)


@defect("ERR-1.2", "required tools exactly at maxActiveTools fail the run")
def required_at_max_active_refused() -> None:
    """The per-server check counts ``>=`` instead of ``>``."""

    def prepare(servers: Sequence[ServerConfig], eligibility: Eligibility, budgets: Budgets) -> Budgets:
        for server in servers:
            required, maximum = len(eligibility.required[server.id]), server.policy.max_active_tools
            if required and required >= maximum:
                raise SelectionError(f"server {server.id!r} has {required} required tools; maxActiveTools is {maximum}")
        return budgets

    _before_first_round(prepare)


@defect("ERR-2.1", "required tools over the first-round capacity all become active")
def required_overflow_the_first_round() -> None:
    """The check of the required tools against the capacity is skipped: every required tool
    is activated, whatever the budget. (A capacity below zero is still refused, BUD-4.1's.)"""

    def prepare(servers: Sequence[ServerConfig], eligibility: Eligibility, budgets: Budgets) -> Budgets:
        excess = _required_total(servers, eligibility) - budgets.first_round_capacity
        if excess <= 0 or budgets.first_round_capacity < 0:
            return budgets
        return Budgets(base_tools=max(0, budgets.base_tools - excess), discovery_tools=budgets.discovery_tools)

    _before_first_round(prepare)


@defect("ERR-2.2", "required tools that exactly fill the first-round capacity fail the run")
def required_filling_the_first_round_refused() -> None:
    """The capacity check counts ``>=`` instead of ``>``."""

    def prepare(servers: Sequence[ServerConfig], eligibility: Eligibility, budgets: Budgets) -> Budgets:
        total = _required_total(servers, eligibility)
        if total and total >= budgets.first_round_capacity:
            raise SelectionError(f"{total} required tools do not fit {budgets.first_round_capacity} first-round slots")
        return budgets

    _before_first_round(prepare)


# Configuration ----------------------------------------------------------------------------


@defect("ERR-3.1", "server ids may hold any Unicode letter or digit")
def server_id_any_letter_or_digit() -> None:
    """Server ids are checked with ``str.isalnum``, which admits ``é``, ``٣`` and ``ｓ``."""

    def check_server_id(server_id: Any, where: str) -> str:
        if not isinstance(server_id, str) or not server_id:
            raise ConfigurationError(f"{where} must be a non-empty string, got {server_id!r}")
        if not all(ch.isalnum() or ch in "-_" for ch in server_id) or "__" in server_id:
            raise ConfigurationError(f"{where} must be letters, digits, '-' and single '_', got {server_id!r}")
        return server_id

    _swap(_config, "check_server_id", check_server_id)
    _swap(_session, "check_server_id", check_server_id)


@defect("ERR-3.2", "a repeated server id is accepted; the last server of that id wins")
def repeated_server_id_accepted() -> None:
    """Only each id's form is checked, not whether another server of the run has it."""

    def validate_servers(servers: Sequence[ServerConfig]) -> None:
        for i, server in enumerate(servers):
            _config.check_server_id(server.id, f"servers[{i}].id")
            server.policy.validate(f"servers[{i}].policy")

    _swap(_toolset, "validate_servers", validate_servers)


@defect("ERR-3.3", "a boolean maxActiveTools is read as 0 or 1")
def max_active_boolean_is_a_number() -> None:
    """``maxActiveTools: true`` passes as 1: ``bool`` is a subclass of ``int``."""
    original = ToolPolicy.validate

    def validate(self: ToolPolicy, where: str) -> None:
        if isinstance(self.max_active_tools, bool):
            object.__setattr__(self, "max_active_tools", int(self.max_active_tools))
        original(self, where)

    _swap(ToolPolicy, "validate", validate)


@defect("ERR-3.3", "a maxActiveTools above 96 is accepted and in effect")
def max_active_above_96_in_effect() -> None:
    """Only negative values are refused: 97 lets a server have 97 active tools."""
    _swap(_config, "MAX_ACTIVE_TOOLS_LIMIT", 10**9)


@variant(
    "ID-17",
    "a maxActiveTools above 96 counts as 96, with a warning",
    clauses=("ERR-3",),
    tests=("test_errors.py::test_max_active_tools_above_96_is_refused_or_counts_as_96",),
)
def max_active_above_96_clamped() -> None:
    original = ToolPolicy.from_wire.__func__  # type: ignore[attr-defined]

    def from_wire(cls: type[ToolPolicy], data: Any, where: str = "policy") -> ToolPolicy:
        value = data.get("maxActiveTools") if isinstance(data, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 96:
            logging.getLogger("reference_impl").warning(
                "%s.maxActiveTools %d counts as 96, its largest value", where, value
            )
            data = {**data, "maxActiveTools": 96}
        policy: ToolPolicy = original(cls, data, where)
        return policy

    _swap(ToolPolicy, "from_wire", classmethod(from_wire))


@defect("ERR-3.4", "an unknown sideEffects value is read as allow")
def unknown_side_effects_allowed() -> None:
    """Anything but ``"readOnly"`` means ``"allow"``: a typo lifts the read-only boundary."""
    original = ToolPolicy.from_wire.__func__  # type: ignore[attr-defined]

    def from_wire(cls: type[ToolPolicy], data: Any, where: str = "policy") -> ToolPolicy:
        if isinstance(data, Mapping) and "sideEffects" in data and data["sideEffects"] != "readOnly":
            data = {**data, "sideEffects": "allow"}
        policy: ToolPolicy = original(cls, data, where)
        return policy

    _swap(ToolPolicy, "from_wire", classmethod(from_wire))


@defect("ERR-3.5", "a deniedTools given as a string is read as a list of its characters")
def policy_string_is_a_list_of_characters() -> None:
    """``"deniedTools": "abc"`` denies the tools ``a``, ``b`` and ``c``: the run opens, the
    tool meant denied active. (The other lists, read so, would name tools the server does
    not offer, which fails the run on another rule with a message about those.)"""
    original = _config._names

    def _names(value: Any, where: str) -> tuple[str, ...]:
        split = isinstance(value, str) and where.endswith(".deniedTools")
        return original(list(value) if split else value, where)

    _swap(_config, "_names", _names)


# Colliding names --------------------------------------------------------------------------


def _drop_repeats(across_servers: bool) -> None:
    """Build the catalog without the later of two tools that share a qualified name.

    ``across_servers``: only names two servers make coincide (else: a name one server
    lists twice).
    """
    original = Catalog.from_listings.__func__  # type: ignore[attr-defined]

    def from_listings(cls: type[Catalog], listings: Mapping[str, Sequence[Any]]) -> Catalog:
        first_from: dict[str, str] = {}  # qualified name -> the server that listed it first
        kept: dict[str, list[Any]] = {}
        for server_id, tools in listings.items():
            kept[server_id] = []
            for raw in tools:
                name = raw.get("name") if isinstance(raw, Mapping) else None
                if isinstance(name, str):
                    qualified = _catalog.qualified_name(server_id, name)
                    if qualified not in first_from:
                        first_from[qualified] = server_id
                    elif (first_from[qualified] != server_id) == across_servers:
                        continue
                kept[server_id].append(raw)
        catalog: Catalog = original(cls, kept)
        return catalog

    _swap(Catalog, "from_listings", classmethod(from_listings))


@defect("ERR-4.1", "qualified names two servers make coincide: the first tool wins")
def colliding_qualified_names_first_wins() -> None:
    _drop_repeats(across_servers=True)


@defect("ERR-4.2", "a name one server lists twice: the first definition wins")
def duplicate_listing_first_wins() -> None:
    _drop_repeats(across_servers=False)


# Servers that fail while the run opens ----------------------------------------------------


def _leave_out(failed: Callable[[ServerConnectionError], bool]) -> None:
    """A server whose failure matches ``failed`` is left out and the run opens without it."""
    original = _toolset._open_connections

    async def _open_connections(task_group: Any, connections: Sequence[_connections.Connection]) -> Any:
        await original(task_group, connections)
        for connection in connections:
            if connection.error is not None and failed(connection.error):
                connection.error, connection.tools = None, []
        return next((c.error for c in connections if c.error is not None), None)

    _swap(_toolset, "_open_connections", _open_connections)


def _timed_out(error: ServerConnectionError) -> bool:
    return "did not finish listing" in error.message


def _malformed(error: ServerConnectionError) -> bool:
    return "malformed" in error.message


@defect("ERR-5.1", "a server that cannot be reached or listed is left out; the run opens without it")
def unreachable_server_left_out() -> None:
    _leave_out(lambda error: not _timed_out(error) and not _malformed(error))


@defect("ERR-5.1", "a stdio server given up for writing what is not JSON-RPC fails the run without being named")
def noisy_server_unnamed() -> None:
    """The transport's reason for giving the server up becomes the whole message."""
    run = _connections.Connection.run

    async def wrapped(self: _connections.Connection) -> None:
        await run(self)
        if self.error is not None and self._problems:
            self.error = ServerConnectionError(f"a server was given up: {self._problems[0]}")

    _swap(_connections.Connection, "run", wrapped)


@defect("ERR-5.2", "a server that does not finish listing in time is left out; the run opens without it")
def hanging_server_left_out() -> None:
    _leave_out(_timed_out)


@defect("ERR-5.3", "listTimeoutSeconds is ignored: listing is bounded only by the host's own two minutes")
def list_timeout_ignored() -> None:
    """A bound exists, so ERR-5.2 holds; it is just not the one the caller asked for."""
    init = _connections.Connection.__init__

    def __init__(self: _connections.Connection, config: Any, *, list_timeout: float, **rest: Any) -> None:
        init(self, config, list_timeout=120.0, **rest)

    _swap(_connections.Connection, "__init__", __init__)


@defect("ERR-8.2", "a server that lists a malformed tool is left out whole; the run opens without it")
def server_with_a_malformed_tool_left_out() -> None:
    _leave_out(_malformed)


@defect("ERR-8.2", "a listed entry that is not an object fails the run without its position")
def entry_position_lost() -> None:
    """The listing fails naming the server, but an entry that is no tool object at all
    (it has no name) is not named by its position."""
    malformed = _connections.Connection._malformed

    def _malformed(self: _connections.Connection, error: ValidationError) -> ServerConnectionError:
        problems = error.errors()
        loc = problems[0].get("loc", ()) if problems else ()
        if len(loc) == 2 and loc[0] == "tools":
            return ServerConnectionError(
                f"server {self.config.id!r} listed a tool that is not an object", server_id=self.config.id
            )
        return malformed(self, error)

    _swap(_connections.Connection, "_malformed", _malformed)


def _unchecked_listing() -> None:
    """A listing the client cannot validate is read from the raw page instead of failing."""

    async def _list_all(self: _connections.Connection, client: Any) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            self._raw_pages.clear()
            try:
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                tools.extend(self._raw_tools(page))
                cursor = page.next_cursor
            except ValidationError:
                raw = self._raw_pages[-1]
                tools.extend(raw.get("tools", []))
                cursor = raw.get("nextCursor")
            if not cursor:
                return tools

    _swap(_connections.Connection, "_list_all", _list_all)


@defect("ERR-8.1", "a tool whose input schema is not of type object reaches the model")
def schema_type_not_checked() -> None:
    """Listings are not validated; the catalog checks only that a schema is a JSON object."""
    _unchecked_listing()


def _when_the_name_is_empty(make: Callable[[str, int, Mapping[str, Any], int], _catalog.CatalogEntry]) -> None:
    """Read a listed tool whose name is the empty string with ``make`` instead of refusing it."""
    entry_from_raw = _catalog._entry_from_raw

    def _entry_from_raw(server_id: str, position: int, raw: Any, index: int) -> _catalog.CatalogEntry:
        if isinstance(raw, Mapping) and raw.get("name") == "":
            return make(server_id, position, raw, index)
        return entry_from_raw(server_id, position, raw, index)

    _swap(_catalog, "_entry_from_raw", _entry_from_raw)


@defect("ERR-8.1", "a tool whose name is the empty string reaches the model")
def empty_name_accepted() -> None:
    """Only a missing or non-string name counts as malformed; ``""`` is a name like any other."""
    entry_from_raw = _catalog._entry_from_raw

    def make(server_id: str, position: int, raw: Mapping[str, Any], index: int) -> _catalog.CatalogEntry:
        entry = entry_from_raw(server_id, position, {**raw, "name": "unnamed"}, index)
        qualified = _catalog.qualified_name(server_id, "")
        return replace(entry, name="", qualified_name=qualified, exposed_name=_catalog.exposed_name(qualified))

    _when_the_name_is_empty(make)


@defect("ERR-8.1", "a tool whose name is not a string reaches the model under the name's text")
def non_string_name_as_text() -> None:
    """``str(tool["name"])`` before the listing is read: a tool named ``7`` is the tool ``"7"``."""
    look = _connections._TappedReader._look

    def _look(self: _connections._TappedReader, item: Any) -> Any:
        result = getattr(getattr(item, "message", None), "result", None)
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            for tool in result["tools"]:
                if isinstance(tool, dict) and isinstance(tool.get("name"), int | float):
                    tool["name"] = str(tool["name"])
        return look(self, item)

    _swap(_connections._TappedReader, "_look", _look)


@defect("ERR-8.2", "a tool whose name is the empty string fails the run without its position")
def empty_name_position_lost() -> None:
    """The run fails naming the server, but not where in its listing the empty-named tool is."""

    def make(server_id: str, position: int, raw: Mapping[str, Any], index: int) -> _catalog.CatalogEntry:
        raise ServerConnectionError(f"server {server_id!r} listed a tool with an empty name", server_id=server_id)

    _when_the_name_is_empty(make)


@variant("ID-4", "a malformed tool definition is left out, not failing the run", clauses=("ERR-8",))
def malformed_tools_left_out() -> None:
    """A malformed tool is left out, the rest of its server's listing stays."""
    _unchecked_listing()
    original = Catalog.from_listings.__func__  # type: ignore[attr-defined]

    def well_formed(raw: Any) -> bool:
        schema = raw.get("inputSchema") if isinstance(raw, Mapping) else None
        name = raw.get("name") if isinstance(raw, Mapping) else None
        return isinstance(name, str) and bool(name) and isinstance(schema, Mapping) and schema.get("type") == "object"

    def from_listings(cls: type[Catalog], listings: Mapping[str, Sequence[Any]]) -> Catalog:
        catalog: Catalog = original(cls, {sid: [t for t in tools if well_formed(t)] for sid, tools in listings.items()})
        return catalog

    _swap(Catalog, "from_listings", classmethod(from_listings))


# Closing ----------------------------------------------------------------------------------

# Runs closed without their connections being told to stop.
_ABANDONED: list[Any] = []


@defect("ERR-7.1", "run.close forgets the run without closing its connections")
def close_leaves_connections_open() -> None:
    """The run id is dropped; its connections (and stdio servers) live on until the driver exits."""

    async def close_run(self: _session.ReferenceDriver, run_id: Any) -> None:
        _ABANDONED.append(self._run("run.close", {"runId": run_id}))
        del self._runs[run_id]

    _swap(_session.ReferenceDriver, "close_run", close_run)


# Messages ---------------------------------------------------------------------------------


@defect("ERR-9.1", "configuration errors say only that the configuration is invalid")
def config_errors_without_detail() -> None:
    """Every configuration error loses its detail: no field, no value, nothing expected.

    Except the base tools' errors: that a collision names both tools is DEF-5.3's and
    DEF-5.5's to require, so this defect shows on ERR-9.1 alone.
    """

    def __init__(self: ConfigurationError, message: str) -> None:
        kept = message.startswith("baseTools[")
        _errors.ToolsetError.__init__(self, message if kept else "the configuration is invalid")

    _swap(ConfigurationError, "__init__", __init__)


@defect("ERR-3.6", "a policy's unknown fields are ignored")
def unknown_policy_fields_ignored() -> None:
    """Fields POL-9 does not name are dropped instead of failing the run."""
    known = {"mode", "allowedTools", "deniedTools", "pinnedTools", "maxActiveTools", "sideEffects"}
    original = ToolPolicy.from_wire.__func__  # type: ignore[attr-defined]

    def from_wire(cls: type[ToolPolicy], data: Any, where: str = "policy") -> ToolPolicy:
        if isinstance(data, Mapping):
            data = {k: v for k, v in data.items() if k in known}
        policy: ToolPolicy = original(cls, data, where)
        return policy

    _swap(ToolPolicy, "from_wire", classmethod(from_wire))
