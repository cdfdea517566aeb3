"""Defects of policy (POL-*): eligibility, read-only, required and pinned tools, names the
server does not offer, and what omitted fields mean."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reference_impl import Definition, ToolResult, _config, _policy, _selection, _toolset, _trace
from reference_impl._catalog import Catalog, CatalogEntry
from reference_impl._config import ServerConfig, ToolPolicy
from reference_impl._errors import ConfigurationError, SelectionError
from reference_impl._policy import Eligibility
from reference_impl._selection import FirstRound
from reference_impl._toolset import AdaptiveToolset
from tests.conformance.defects._patches import _swap
from tests.conformance.defects._registry import defect, variant

__all__: list[str] = []

#: The reasons the reference's policy filter gives for keeping a tool out.
_NOT_ALLOWED = "not in allowedTools"

Exclusion = Callable[[CatalogEntry, ToolPolicy], "str | None"]


def _exclusion(rule: Callable[[CatalogEntry, ToolPolicy, Exclusion], str | None]) -> None:
    """Judge eligibility with ``rule(entry, policy, original)`` instead of the reference's filter."""
    original = _policy.exclusion_reason
    _swap(_policy, "exclusion_reason", lambda entry, policy: rule(entry, policy, original))


def _patch_read_only(read_only: Callable[[CatalogEntry], bool]) -> None:
    """Under ``readOnly``, a tool that ``read_only`` accepts is judged as if writes were allowed."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.side_effects == "readOnly" and read_only(entry):
            return original(entry, dataclasses.replace(policy, side_effects="allow"))
        return original(entry, policy)

    _exclusion(rule)


def _without_exclusions(eligibility: Eligibility, reasons: Callable[[str], bool]) -> Eligibility:
    """``eligibility`` with the exclusions whose reason ``reasons`` accepts lifted."""
    excluded = {i: why for i, why in eligibility.excluded.items() if not reasons(why)}
    return dataclasses.replace(eligibility, excluded=excluded)


def _first_round_with(change: Callable[[Eligibility], Eligibility]) -> None:
    """The first round sees the eligibility ``change`` makes of the real one."""
    select = _selection.select_first_round

    def select_first_round(
        servers: Sequence[ServerConfig], catalog: Catalog, eligibility: Eligibility, *args: Any
    ) -> FirstRound:
        return select(servers, catalog, change(eligibility), *args)

    _swap(_toolset, "select_first_round", select_first_round)


def _discovery_with(change: Callable[[Eligibility], Eligibility]) -> None:
    """Discovery sees the eligibility ``change`` makes of the real one."""
    search = AdaptiveToolset.search

    def _search(self: AdaptiveToolset, arguments: Any) -> ToolResult:
        real = self._eligibility
        self._eligibility = change(real)
        try:
            return search(self, arguments)
        finally:
            self._eligibility = real

    _swap(AdaptiveToolset, "search", _search)


def _policies_rewritten(rewrite: Callable[[ServerConfig, set[str]], ToolPolicy]) -> None:
    """Resolve each server's policy as ``rewrite(server, names it offers)`` makes it."""
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
        offered = {s.id: {e.name for e in catalog.by_server.get(s.id, [])} for s in servers}
        rewritten = [dataclasses.replace(s, policy=rewrite(s, offered[s.id])) for s in servers]
        return resolve(rewritten, catalog)

    _swap(_toolset, "resolve_policies", resolve_policies)


def _names_mapped(policy: ToolPolicy, name: Callable[[str], str]) -> ToolPolicy:
    return dataclasses.replace(
        policy,
        allowed_tools=tuple(map(name, policy.allowed_tools)),
        denied_tools=tuple(map(name, policy.denied_tools)),
        pinned_tools=tuple(map(name, policy.pinned_tools)),
    )


def _wire_defaults(change: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> None:
    """``run.open`` reads each wire policy as ``change`` makes it."""
    from_wire = ToolPolicy.from_wire.__func__  # type: ignore[attr-defined]

    def _from_wire(cls: type[ToolPolicy], data: Any, where: str = "policy") -> ToolPolicy:
        policy: ToolPolicy = from_wire(cls, change(data) if isinstance(data, Mapping) else data, where)
        return policy

    _swap(_config.ToolPolicy, "from_wire", classmethod(_from_wire))


# POL-1 ------------------------------------------------------------------------------------


@defect("POL-1.1", "the first round ranks every tool of an auto server, eligible or not")
def ineligible_ranked_tools_selected() -> None:
    """The first round's ranked walk skips no tool for its policy (required tools are right)."""
    _first_round_with(lambda eligibility: _without_exclusions(eligibility, lambda why: True))


@defect("POL-1.2", "pinned tools the policy excludes are listed, for the model's information")
def ineligible_tools_listed() -> None:
    """Definitions also show pinned tools the policy keeps out; the gate still refuses them."""
    definitions = AdaptiveToolset.definitions

    def _definitions(self: AdaptiveToolset) -> list[Definition]:
        shown = [
            entry.definition()
            for entry in self.catalog.entries
            if entry.index in self._eligibility.excluded and entry.name in self._policies[entry.server_id].pinned_tools
        ]
        return definitions(self) + shown

    _swap(AdaptiveToolset, "definitions", _definitions)


def gate_also_runs(admits: Callable[[AdaptiveToolset, CatalogEntry], bool]) -> None:
    """The gate also runs a catalog tool that is not active when ``admits(toolset, entry)``."""
    call = AdaptiveToolset.call

    async def _call(self: AdaptiveToolset, name: str, arguments: Any = None) -> ToolResult:
        entry = self.catalog.by_exposed.get(name)
        runs = entry is not None and not self.can_execute(name) and admits(self, entry)
        if entry is not None and runs and isinstance(arguments, Mapping | None):
            return await self._connections[entry.server_id].call(entry.name, arguments or {})
        return await call(self, name, arguments)

    _swap(AdaptiveToolset, "call", _call)


@defect("POL-1.3", "the gate runs a pinned tool even when the policy excludes it")
def pinned_ineligible_executes() -> None:
    """A call to a pinned tool is executed whether or not it is active."""
    gate_also_runs(lambda toolset, entry: entry.name in toolset._policies[entry.server_id].pinned_tools)


@defect("POL-1.4", "discovery ignores deniedTools and read-only")
def discovery_ignores_policy() -> None:
    """Discovery honours only allowedTools: denied and non-read-only tools are candidates."""
    _discovery_with(lambda eligibility: _without_exclusions(eligibility, lambda why: why != _NOT_ALLOWED))


# POL-2 ------------------------------------------------------------------------------------


@defect("POL-2.1", "deniedTools applies in auto mode only")
def denied_only_in_auto() -> None:
    """Outside auto mode, deniedTools is not read."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.mode != "auto":
            return original(entry, dataclasses.replace(policy, denied_tools=()))
        return original(entry, policy)

    _exclusion(rule)


@defect("POL-2.2", "a pinned tool is eligible even when denied")
def pinned_beats_deny() -> None:
    """A pinned tool escapes ``deniedTools``."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if entry.name in policy.denied_tools and entry.name in policy.pinned_tools:
            denied = tuple(name for name in policy.denied_tools if name != entry.name)
            return original(entry, dataclasses.replace(policy, denied_tools=denied))
        return original(entry, policy)

    _exclusion(rule)


@defect("POL-2.3", "a tool in allowedTools is eligible even when denied")
def allowed_beats_deny() -> None:
    """A tool named in ``allowedTools`` escapes ``deniedTools``."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if entry.name in policy.allowed_tools:
            return original(entry, dataclasses.replace(policy, denied_tools=()))
        return original(entry, policy)

    _exclusion(rule)


# POL-3, POL-4 -----------------------------------------------------------------------------


@defect("POL-3.1", "in allowlist mode, allowedTools entries match as name prefixes")
def allowlist_matches_prefixes() -> None:
    """``allowedTools: ["get_issue"]`` also admits ``get_issue_comments``."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.mode == "allowlist" and any(entry.name.startswith(name) for name in policy.allowed_tools):
            return original(entry, dataclasses.replace(policy, allowed_tools=(*policy.allowed_tools, entry.name)))
        return original(entry, policy)

    _exclusion(rule)


@defect("POL-3.2", "an empty allowlist admits every tool")
def empty_allowlist_admits_all() -> None:
    """In allowlist mode, an empty ``allowedTools`` restricts nothing."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.mode == "allowlist" and not policy.allowed_tools:
            return original(entry, dataclasses.replace(policy, mode="all"))
        return original(entry, policy)

    _exclusion(rule)


@defect("POL-4.1", "in auto mode, allowedTools restricts discovery only, not the first round")
def auto_allowed_tools_ignored_in_first_round() -> None:
    """The first round of an auto server ranks tools outside its allowedTools."""
    _first_round_with(lambda eligibility: _without_exclusions(eligibility, lambda why: why == _NOT_ALLOWED))


@defect("POL-4.2", "discovery ignores allowedTools")
def discovery_ignores_allowed_tools() -> None:
    """Discovery activates tools of an auto server outside its allowedTools."""
    _discovery_with(lambda eligibility: _without_exclusions(eligibility, lambda why: why == _NOT_ALLOWED))


@defect("POL-4.3", "in auto mode, an empty allowedTools admits nothing")
def empty_auto_allowlist_admits_nothing() -> None:
    """Auto mode reads ``allowedTools`` like allowlist mode does, empty or not."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.mode == "auto" and not policy.allowed_tools:
            return _NOT_ALLOWED
        return original(entry, policy)

    _exclusion(rule)


@defect("POL-4.4", "in all mode, a non-empty allowedTools restricts the server")
def all_mode_honours_allowed_tools() -> None:
    """All mode admits only the tools of a non-empty ``allowedTools``."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.mode == "all" and policy.allowed_tools and entry.name not in policy.allowed_tools:
            return _NOT_ALLOWED
        return original(entry, policy)

    _exclusion(rule)


# POL-5 ------------------------------------------------------------------------------------


@defect("POL-5.1", "sideEffects readOnly applies to auto servers only")
def read_only_only_in_auto() -> None:
    """A server outside auto mode runs its writes under ``readOnly`` too."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.mode != "auto":
            return original(entry, dataclasses.replace(policy, side_effects="allow"))
        return original(entry, policy)

    _exclusion(rule)


@defect("POL-5.1", "sideEffects readOnly is ignored: every server runs as under allow")
def read_only_ignored() -> None:
    """A host with no read-only handling: ``readOnly`` excludes nothing, in the first round
    or in discovery. Checks of other clauses whose oracles apply read-only (the catalog's
    annotations, pinned tools, discovery under a policy) are inconclusive, naming POL-5."""
    _patch_read_only(lambda _entry: True)


@defect("POL-5.2", "readOnly admits tools that have no annotations")
def missing_annotation_is_read_only() -> None:
    """A tool without annotations counts as read-only (fails open)."""
    _patch_read_only(lambda entry: entry.annotations is None or entry.annotations.get("readOnlyHint") is True)


@defect("POL-5.3", "readOnly admits a write marked destructiveHint false")
def harmless_writes_are_read_only() -> None:
    """``readOnlyHint: false`` with ``destructiveHint: false`` counts as read-only."""
    _patch_read_only(lambda entry: entry.annotations is not None and entry.annotations.get("destructiveHint") is False)


@defect("POL-5.4", 'readOnly trusts any truthy readOnlyHint ("true", 1)')
def string_true_is_true() -> None:
    """``readOnlyHint`` judged by truthiness: ``"true"`` and ``1`` pass."""
    _patch_read_only(lambda entry: entry.annotations is not None and bool(entry.annotations.get("readOnlyHint")))


_READ_VERBS = ("list_", "get_", "search_", "read_", "show_")


@defect("POL-5.5", "readOnly guesses from the name when readOnlyHint is missing")
def read_only_guessed_from_names() -> None:
    """A tool without ``readOnlyHint`` whose name starts like a read counts as read-only."""
    _patch_read_only(
        lambda entry: (
            (entry.annotations is None or "readOnlyHint" not in entry.annotations)
            and entry.name.startswith(_READ_VERBS)
        )
    )


@defect("POL-5.6", "under sideEffects allow, destructive tools are left out")
def allow_excludes_destructive() -> None:
    """``destructiveHint: true`` excludes a tool even when writes are allowed."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.side_effects == "allow" and entry.annotations and entry.annotations.get("destructiveHint") is True:
            return "destructive"
        return original(entry, policy)

    _exclusion(rule)


# POL-6, POL-7 -----------------------------------------------------------------------------


@defect("POL-6.1", "only pinned tools are required, whatever the mode")
def only_pinned_required() -> None:
    """Outside auto mode, the eligible tools that are not pinned are not required (nor ranked)."""
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
        eligibility = resolve(servers, catalog)
        pinned = {s.id: set(s.policy.pinned_tools) for s in servers}
        required = {
            sid: tuple(i for i in indexes if catalog.entries[i].name in pinned[sid])
            for sid, indexes in eligibility.required.items()
        }
        return dataclasses.replace(eligibility, required=required)

    _swap(_toolset, "resolve_policies", resolve_policies)


@defect("POL-6.2", "the first round takes at most 12 required tools per server")
def required_capped_at_twelve() -> None:
    """Required tools past the first-round cap of 12 wait for later (they never come)."""
    select = _selection.select_first_round

    def select_first_round(servers: Sequence[ServerConfig], catalog: Catalog, *args: Any) -> FirstRound:
        first = select(servers, catalog, *args)
        per_server: dict[str, int] = {}
        active = []
        for i in first.active:
            sid = catalog.entries[i].server_id
            if first.outcomes[i] == _trace.REQUIRED:
                per_server[sid] = per_server.get(sid, 0) + 1
                if per_server[sid] > 12:
                    continue
            active.append(i)
        return FirstRound(active=tuple(active), outcomes=first.outcomes)

    _swap(_toolset, "select_first_round", select_first_round)


@defect("POL-6.3", "ranked tools fill the first round before required ones")
def ranked_before_required() -> None:
    """The ranked walk takes its tools first; required tools get what capacity is left."""
    select = _selection.select_first_round

    def select_first_round(
        servers: Sequence[ServerConfig], catalog: Catalog, eligibility: Eligibility, index: Any, budgets: Any, user: str
    ) -> FirstRound:
        first = select(servers, catalog, eligibility, index, budgets, user)  # the refusals stay right
        required = [i for i in first.active if first.outcomes[i] == _trace.REQUIRED]
        unrequired = dataclasses.replace(eligibility, required={sid: () for sid in eligibility.required})
        ranked = [i for i in select(servers, catalog, unrequired, index, budgets, user).active if i not in required]
        capacity = budgets.first_round_capacity
        active = ranked[:capacity] + required[: max(0, capacity - len(ranked))]
        return FirstRound(active=tuple(active), outcomes=first.outcomes)

    _swap(_toolset, "select_first_round", select_first_round)


@defect("POL-7.1", "pinned tools are eligible whatever the policy says")
def pinned_ignores_policy() -> None:
    """Pinning a tool admits it past deniedTools, allowedTools and read-only."""
    _exclusion(lambda entry, policy, original: None if entry.name in policy.pinned_tools else original(entry, policy))


@defect("POL-7.2", "pinned tools that are denied count against maxActiveTools")
def pinned_denied_counted() -> None:
    """A pinned, denied tool is not active, but the check of required tools counts it."""
    select = _selection.select_first_round

    def select_first_round(
        servers: Sequence[ServerConfig], catalog: Catalog, eligibility: Eligibility, *args: Any
    ) -> FirstRound:
        for server in servers:
            policy = server.policy
            denied = set(policy.pinned_tools) & set(policy.denied_tools)
            required = len(eligibility.required[server.id]) + len(denied)
            if required > policy.max_active_tools:
                raise SelectionError(
                    f"server {server.id!r} has {required} required tools but maxActiveTools is {policy.max_active_tools}"
                )
        return select(servers, catalog, eligibility, *args)

    _swap(_toolset, "select_first_round", select_first_round)


@defect("POL-7.3", "pinned tools are exempt from read-only")
def pinned_exempt_from_read_only() -> None:
    """A pinned tool is eligible under ``readOnly`` whatever its annotations."""
    _patch_read_only(lambda entry: entry.name in _PINNED.get(entry.server_id, ()))
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
        _PINNED.update({s.id: frozenset(s.policy.pinned_tools) for s in servers})
        return resolve(servers, catalog)

    _swap(_toolset, "resolve_policies", resolve_policies)


# Pinned names by server id, for the read-only check, which sees one catalog entry at a time.
_PINNED: dict[str, frozenset[str]] = {}


@defect("POL-7.4", "pinned tools are exempt from an auto server's allowedTools")
def pinned_exempt_from_auto_allowed_tools() -> None:
    """In auto mode, a pinned tool outside a non-empty ``allowedTools`` is eligible."""

    def rule(entry: CatalogEntry, policy: ToolPolicy, original: Exclusion) -> str | None:
        if policy.mode == "auto" and entry.name in policy.pinned_tools:
            return original(entry, dataclasses.replace(policy, allowed_tools=(*policy.allowed_tools, entry.name)))
        return original(entry, policy)

    _exclusion(rule)


def _refuse_excluded_pins(message: Callable[[str, list[tuple[str, str]]], str]) -> None:
    """Fail every run with a pinned tool its policy excludes: a configuration error whose
    message is ``message(server id, [(tool, why excluded)])``."""
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
        eligibility = resolve(servers, catalog)
        for server in servers:
            excluded = [
                (e.name, eligibility.excluded[e.index])
                for e in catalog.by_server.get(server.id, [])
                if e.name in server.policy.pinned_tools and e.index in eligibility.excluded
            ]
            if excluded:
                raise ConfigurationError(message(server.id, excluded))
        return eligibility

    _swap(_toolset, "resolve_policies", resolve_policies)


@variant(
    "ID-9",
    "a pinned tool its policy excludes fails the run with a configuration error naming it",
    clauses=("POL-7", "SEL-3"),
    tests=(
        "test_policy.py",
        "test_selection.py::test_required_tools_are_checked_against_max_active_tools_when_the_run_opens",
    ),
)
def excluded_pin_refused() -> None:
    _refuse_excluded_pins(
        lambda server_id, excluded: (
            f"server {server_id!r} pins tools its policy excludes: "
            + ", ".join(f"{name!r} ({why})" for name, why in excluded)
            + "; unpin them or change the policy"
        )
    )


@defect("POL-7.2", "a pinned tool its policy excludes fails the run without a word of which tool")
def excluded_pin_refused_without_naming_it() -> None:
    """The refusal POL-7 allows, made unusable: the administrator cannot tell which pin to fix."""
    _refuse_excluded_pins(lambda server_id, _excluded: f"server {server_id!r} has an invalid pinnedTools")


# POL-8, POL-9 -----------------------------------------------------------------------------


@defect("POL-8.1", "policy names match the server's names whatever their case")
def case_insensitive_names() -> None:
    """``pinnedTools: ["GET_ISSUE"]`` pins ``get_issue``."""

    def rewrite(server: ServerConfig, offered: set[str]) -> ToolPolicy:
        by_fold = {name.casefold(): name for name in offered}
        return _names_mapped(server.policy, lambda name: by_fold.get(name.casefold(), name))

    _policies_rewritten(rewrite)


@defect("POL-8.2", "a pinned name the server does not offer is a warning, and exposed anyway")
def phantom_pinned_tools() -> None:
    """Unknown pinned names open the run (ID-3 allows that) but show up as definitions."""

    def rewrite(server: ServerConfig, offered: set[str]) -> ToolPolicy:
        pinned = tuple(name for name in server.policy.pinned_tools if name in offered)
        return dataclasses.replace(server.policy, pinned_tools=pinned)

    _policies_rewritten(rewrite)
    definitions = AdaptiveToolset.definitions

    def _definitions(self: AdaptiveToolset) -> list[Definition]:
        phantoms: list[Definition] = [
            {"name": f"{server.id}__{name}", "description": "", "inputSchema": {"type": "object"}}
            for server in self.servers
            for name in server.policy.pinned_tools
            if f"{server.id}__{name}" not in self.catalog.by_qualified
        ]
        return definitions(self) + phantoms

    _swap(AdaptiveToolset, "definitions", _definitions)


@defect("POL-9.1", "an omitted mode means all")
def omitted_mode_is_all() -> None:
    """A policy without ``mode`` makes every eligible tool required."""
    _wire_defaults(lambda data: data if "mode" in data else {**data, "mode": "all"})


@defect("POL-9.2", "an omitted allowedTools in allowlist mode admits every tool")
def omitted_allowlist_admits_all() -> None:
    """Allowlist mode without ``allowedTools`` behaves like all mode."""
    _wire_defaults(
        lambda data: {**data, "mode": "all"} if data.get("mode") == "allowlist" and "allowedTools" not in data else data
    )


@defect("POL-9.3", "an omitted maxActiveTools means 12")
def omitted_max_active_is_twelve() -> None:
    """A policy without ``maxActiveTools`` caps the server at the first-round cap of 12."""
    _wire_defaults(lambda data: data if "maxActiveTools" in data else {**data, "maxActiveTools": 12})


@defect("POL-9.4", "an omitted sideEffects means readOnly")
def omitted_side_effects_is_read_only() -> None:
    """A policy without ``sideEffects`` fails closed: only read-only tools are eligible."""
    _wire_defaults(lambda data: data if "sideEffects" in data else {**data, "sideEffects": "readOnly"})


@defect("POL-9.5", "policy names may also be qualified names")
def qualified_policy_names() -> None:
    """``pinnedTools: ["s0__get_issue"]`` pins ``get_issue`` of server ``s0``."""

    def rewrite(server: ServerConfig, offered: set[str]) -> ToolPolicy:
        return _names_mapped(server.policy, lambda name: name.removeprefix(f"{server.id}__"))

    _policies_rewritten(rewrite)


@variant(
    "ID-3",
    "pinned and allowlisted names the server does not offer are ignored, not an error",
    clauses=("POL-8",),
)
def unknown_policy_names_ignored() -> None:
    """Names the server does not offer are dropped from the policy; an allowedTools that
    named nothing else still admits nothing where it restricts (``all`` mode ignores it)."""
    resolve = _policy.resolve_policies

    def resolve_policies(servers: Sequence[ServerConfig], catalog: Catalog) -> Eligibility:
        offered = {s.id: {e.name for e in catalog.by_server.get(s.id, [])} for s in servers}
        kept = [
            dataclasses.replace(
                s,
                policy=dataclasses.replace(
                    s.policy,
                    pinned_tools=tuple(n for n in s.policy.pinned_tools if n in offered[s.id]),
                    allowed_tools=tuple(n for n in s.policy.allowed_tools if n in offered[s.id]),
                ),
            )
            for s in servers
        ]
        eligibility = resolve(kept, catalog)
        emptied = {
            s.id
            for s, k in zip(servers, kept, strict=True)
            if s.policy.mode != "all" and s.policy.allowed_tools and not k.policy.allowed_tools
        }
        excluded = {e.index: _NOT_ALLOWED for sid in emptied for e in catalog.by_server.get(sid, [])}
        required = {sid: () if sid in emptied else indexes for sid, indexes in eligibility.required.items()}
        return dataclasses.replace(eligibility, excluded={**excluded, **eligibility.excluded}, required=required)

    _swap(_toolset, "resolve_policies", resolve_policies)
