"""Which policy rule a host misreads, asked before a finding is reported on another clause.

Most checks predict what a run shows from the policies it was given (POL-1 to POL-5): how
many tools fill the first round, which are required, which are candidates. A host that
misreads one rule (excludes destructive tools under ``sideEffects: allow``, lets
``allowedTools`` restrict an ``all`` server, lets allowing beat denial) then breaks the
predictions of a dozen checks, and each would report a finding on its own clause while the
code to fix is the policy's. So :func:`fail <conformance.suite._wire.fail>` asks this module
first: for each server the test served recently, it opens control runs of that server's
tools alone, one rule of its policy at a time, in modes where every eligible tool is
required and so must be active (POL-6.1, POL-6.2). The first rule whose control shows other
tools than the rule admits is misread: the finding becomes an inconclusive test naming that
rule, whose own checks report it.

A control changes one thing at a time against a baseline that must hold first: the same
tools without annotations, on one page, in ``all`` mode. A host that does not show them all
(a listing or a required-tools defect) tells nothing about policies, and nothing is blamed.
Under ``readOnly`` only a tool admitted without ``readOnlyHint: true`` is blamed: one left
out may be a tool whose annotations the host lost (CAT-1.2). A rule's lists are tried again
with qualified names before the rule is blamed, so that a host reading policy names as
qualified names is blamed on POL-9.5.

The controls run on the way to a finding only, once per server and policy in a pytest
process: a conformant host never pays for them.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeVar

from conformance import Inconclusive, OutcomeError, Sut
from conformance._wire_types import Definition, OpenParams, ToolPolicy
from conformance.suite._fleets import Fleets
from conformance.suite._predictions import DEFAULT_MAX_ACTIVE, FIRST_ROUND, FIRST_ROUND_SERVER_CAP, server_model
from conformance.suite._wire import mcp_definitions, names, open_params, qualified, refusal_or, run
from mock_servers import FleetSpec, ListedTool, ServerSpec, ToolSpec, generate_tools

__all__ = ["PolicyDiagnosis"]

#: The most tools of one server a control run carries: every one is required, and the
#: first round's MCP capacity is 96 (BUD-1.2).
_MOST_TOOLS: Final = 80
#: Clauses whose findings stand whatever rule is misread: POL-1's say that no ineligible
#: tool is listed, active or run, whatever the rule.
_JUDGES: Final = frozenset({"POL-1"})

#: (server id, tools, policy) as JSON: what one diagnosis of one server depends on.
_Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class _Misread:
    sentence: str
    what: str
    observed: object


@dataclass
class PolicyDiagnosis:
    """The policy diagnosis of one SUT in one pytest process, with what it found so far."""

    sut: Sut
    fleets: Fleets
    _found: dict[_Key, _Misread | None] = field(default_factory=dict)

    def finding_or_inconclusive(self, sentences: Sequence[str]) -> Inconclusive | None:
        """For a finding on ``sentences`` (none: a refusal the test did not expect, a finding
        on the sentences it cites): the inconclusive outcome naming a policy rule the SUT
        misreads on a server served recently, or None to report the finding."""
        if {s.split(".")[0] for s in sentences} & _JUDGES:
            return None
        # A test that cites the rule judges it itself.
        exempt = {s.split(".")[0] for s in (*sentences, *self.sut.cited)}
        for spec, policies in list(self.fleets.recent):
            for server in spec.servers:
                tools = generate_tools(server)
                if not _well_formed(tools) or len(tools) > _MOST_TOOLS:
                    continue
                misread = self._diagnose(server.id, tools, policies.get(server.id, {}))
                if misread is not None and misread.sentence.split(".")[0] not in exempt:
                    return Inconclusive(misread.sentence, misread.what, observed=misread.observed)
        return None

    def refusal_or_inconclusive(
        self, kind: str, sentences: Sequence[str] = (), params: OpenParams | None = None
    ) -> Inconclusive | None:
        """For a refusal (``kind``) of a ``run.open`` (``params``, or the last sent) that a
        finding on ``sentences`` (none: the ones the test cites) is about: the inconclusive
        outcome naming the rule the refusal came of, when the same run opens (or is refused
        otherwise) once that rule's part of it is changed, served anew. Three are asked:

        - pins its policies exclude, left out: POL-7 (a host may refuse such a run, ID-9,
          with an error that names them, which the checks accept);
        - a ``maxActiveTools`` left out, written out as its default of 24: POL-9.3 (a host
          that reads another default refuses runs whose required tools fit in 24);
        - a run at the first-round watermark, with one base tool fewer: BUD-4.3 (a host that
          refuses a capacity of exactly zero refuses every run drawn at the watermark).

        None otherwise, and for a finding on the rule's own clause."""
        params = params or self.sut.last_opened
        if params is None or kind not in ("config_error", "selection_error"):
            return None
        cited = {s.split(".")[0] for s in (sentences or self.sut.cited)}
        pins = self._excluded_pins(params) if "POL-7" not in cited else {}
        if pins:

            def unpinned(policy: ToolPolicy, sid: str) -> None:
                if "pinnedTools" in policy:
                    excluded = pins.get(sid, set())
                    policy["pinnedTools"] = [n for n in policy["pinnedTools"] if n not in excluded]

            now = self._refused_otherwise(params, kind, unpinned)
            if now is not None:
                return Inconclusive(
                    "POL-7.2",
                    f"the run was refused with a {kind}, and {now} once the pins its policies exclude are left "
                    "out: a refusal for them must name them (ID-9), and they are never required",
                    observed={"excluded pins": {sid: sorted(names) for sid, names in pins.items()}},
                )
        omitted = [
            e.get("id", "") for e in params.get("servers", []) if "maxActiveTools" not in (e.get("policy") or {})
        ]
        # By sentence: a test of other defaults (POL-9.5, say) does not judge this one.
        if omitted and "POL-9.3" not in (sentences or self.sut.cited):

            def written_out(policy: ToolPolicy, _sid: str) -> None:
                policy.setdefault("maxActiveTools", DEFAULT_MAX_ACTIVE)

            now = self._refused_otherwise(params, kind, written_out)
            if now is not None:
                return Inconclusive(
                    "POL-9.3",
                    f"the run was refused with a {kind}, and {now} once its policies write out maxActiveTools "
                    f"as its default, {DEFAULT_MAX_ACTIVE}: an omitted maxActiveTools is read as another number",
                    observed={"servers without maxActiveTools": omitted},
                )
        base = params.get("baseTools") or []
        # 95 base tools and the discovery tool leave a first-round MCP capacity of exactly
        # zero, which a run requiring nothing may have (BUD-4.3); one base tool fewer leaves one.
        if len(base) >= FIRST_ROUND - 1 and "BUD-4" not in cited:
            now = self._refused_otherwise(params, kind, base_tools=base[:-1])
            if now is not None:
                return Inconclusive(
                    "BUD-4.3",
                    f"the run, of {len(base)} base tools, was refused with a {kind}, and {now} with one base tool "
                    "fewer: a first-round MCP capacity of exactly zero is refused",
                    observed={"baseTools": len(base)},
                )
        return None

    def _refused_otherwise(
        self,
        params: OpenParams,
        kind: str,
        edit: Callable[[ToolPolicy, str], None] | None = None,
        *,
        base_tools: list[Definition] | None = None,
    ) -> str | None:
        """How ``params``, with ``edit(policy, server id)`` applied to each server's policy
        and ``base_tools`` in place of its own, fares over its fleet served anew: "opens",
        "is refused with a …", or None when it is refused with ``kind`` again or its fleet
        is not known."""
        ids = [entry.get("id", "") for entry in params.get("servers", [])]
        # The fleet it was refused over, served anew: the test's own has ended by now.
        spec = next(
            (spec for spec, _ in reversed(self.fleets.recent) if set(ids) <= {s.id for s in spec.servers}), None
        )
        if spec is None:
            return None
        with self.fleets.serve(spec, record=False) as served:
            fresh = {entry["id"]: entry for entry in served.servers}
            changed = copy.deepcopy(params)
            if base_tools is not None:
                changed["baseTools"] = base_tools
            for server in changed["servers"]:
                policy = copy.deepcopy(server.get("policy") or ToolPolicy())
                if edit is not None:
                    edit(policy, server["id"])
                server.update(fresh[server["id"]])
                server["policy"] = policy
            opened = _in_a_thread(lambda: run(refusal_or(self.sut, changed)))
        if isinstance(opened, OutcomeError) and opened.kind == kind:
            return None
        return "opens" if not isinstance(opened, OutcomeError) else f"is refused with a {opened.kind}"

    def _excluded_pins(self, params: OpenParams) -> dict[str, set[str]]:
        """Server id -> the pins its policy in ``params`` excludes, for the servers of the
        fleets served recently (whose tools the suite knows)."""
        known = {server.id: server for spec, _ in self.fleets.recent for server in spec.servers}
        pins: dict[str, set[str]] = {}
        for entry in params.get("servers", []):
            sid, policy = entry.get("id", ""), entry.get("policy") or {}
            if sid in known and policy.get("pinnedTools") and _well_formed(tools := generate_tools(known[sid])):
                excluded = set(server_model(sid, tools, policy).excluded_pins)
                if excluded:
                    pins[sid] = excluded
        return pins

    def _diagnose(self, sid: str, tools: Sequence[ListedTool], policy: ToolPolicy) -> _Misread | None:
        key = (sid, json.dumps([[t["name"], t.get("annotations")] for t in tools], sort_keys=True), json.dumps(policy))
        if key not in self._found:
            self._found[key] = _in_a_thread(lambda: _first_misread(self.sut, self.fleets, sid, tools, policy))
        return self._found[key]


def _well_formed(tools: Sequence[ListedTool]) -> bool:
    """Whether a control can serve ``tools`` again as they are: named, once each, described
    and annotated or not at all (a server listing a malformed tool is ERR-8's subject)."""
    names_ = [t.get("name") for t in tools]
    return (
        bool(tools)
        and all(isinstance(n, str) and n for n in names_)
        and len(set(names_)) == len(names_)
        and all(isinstance(t.get("annotations"), Mapping | None) for t in tools)
        and all(isinstance(t.get("description"), str | None) for t in tools)
    )


_T = TypeVar("_T")


def _in_a_thread(work: Callable[[], _T]) -> _T:
    """``work()``, in a thread of its own when this one runs an event loop (a finding raised
    inside a run's body): the controls open runs of their own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return work()
    done: list[_T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            done.append(work())
        except BaseException as exc:  # raised again in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=target, name="policy-diagnosis")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def _control(
    count: int,
    mode: Literal["all", "allowlist"] = "all",
    *,
    allowed: list[str],
    denied: list[str],
    side: Literal["allow", "readOnly"] = "allow",
) -> ToolPolicy:
    """A policy under which every tool it admits is required (``all`` or ``allowlist`` mode)."""
    return {
        "mode": mode,
        "maxActiveTools": count,
        "allowedTools": allowed,
        "deniedTools": denied,
        "sideEffects": side,
    }


def _first_misread(
    sut: Sut, fleets: Fleets, sid: str, tools: Sequence[ListedTool], policy: ToolPolicy
) -> _Misread | None:
    count = len(tools)
    everything = _control(count, allowed=[], denied=[])
    if _shown(sut, fleets, sid, tools, everything, annotated=False) != {t["name"] for t in tools}:
        return None  # not every tool shows even with nothing restricting it: no policy to blame
    denied = list(policy.get("deniedTools") or [])
    allowed = list(policy.get("allowedTools") or [])
    mode = policy.get("mode", "auto")
    # (sentence, control, whether too few shown is blamed as well as too many)
    controls: list[tuple[str, ToolPolicy, bool]] = [("POL-5.6", everything, True)]
    if denied:
        controls.append(("POL-2.1", _control(count, allowed=[], denied=denied), True))
    if mode == "allowlist":
        controls.append(("POL-3.1" if allowed else "POL-3.2", _control(count, mode, allowed=allowed, denied=[]), True))
    elif mode == "all" and allowed:
        controls.append(("POL-4.4", _control(count, allowed=allowed, denied=[]), True))
    if denied and allowed and mode in ("allowlist", "all"):
        controls.append(("POL-2.3", _control(count, mode, allowed=allowed, denied=denied), True))
    if policy.get("sideEffects") == "readOnly":
        # Too few admitted may be annotations lost (CAT-1.2): only too many is blamed.
        controls.append(("POL-5.1", _control(count, allowed=[], denied=[], side="readOnly"), False))
    for sentence, control, both_ways in controls:
        expected = set(server_model(sid, tools, control).eligible)
        shown = _shown(sut, fleets, sid, tools, control)
        if shown is None or shown == expected or (not both_ways and shown <= expected):
            continue
        requalified: ToolPolicy = {
            **control,
            "allowedTools": [qualified(sid, n) for n in control.get("allowedTools", [])],
            "deniedTools": [qualified(sid, n) for n in control.get("deniedTools", [])],
        }
        if requalified != control and _shown(sut, fleets, sid, tools, requalified) == expected:
            sentence = "POL-9.5"
        extra, missing = sorted(shown - expected), sorted(expected - shown)
        return _Misread(
            sentence,
            f"the policy of {sid} is misread: a run of its tools alone under {json.dumps(control)}, where every "
            f"tool the policy admits is required, shows "
            + "; ".join(
                part
                for part in (
                    f"{len(extra)} it does not admit ({', '.join(extra[:3])})" if extra else "",
                    f"{len(missing)} it admits left out ({', '.join(missing[:3])})" if missing else "",
                )
                if part
            ),
            {"policy": control, "admitted": sorted(expected), "shown": sorted(shown)},
        )
    return _omission_misread(sut, fleets, sid, tools, policy)


def _omission_misread(
    sut: Sut, fleets: Fleets, sid: str, tools: Sequence[ListedTool], policy: ToolPolicy
) -> _Misread | None:
    """POL-9: a field the policy leaves out, misread. Each control leaves out one field the
    policy leaves out, and is read only when its twin, the field spelled out as POL-9 reads
    it, shows what it must: otherwise what fails is not the omission."""
    names_ = [t["name"] for t in tools]
    pins = names_[:2]
    room = list(tools[:DEFAULT_MAX_ACTIVE])
    # (sentence, field, tools, policy with the field left out, the same spelled out, what must show)
    checks: list[tuple[str, str, Sequence[ListedTool], ToolPolicy, ToolPolicy, Callable[[set[str] | None], bool]]]
    checks = []
    if "sideEffects" not in policy:
        spelled: ToolPolicy = {"mode": "all", "maxActiveTools": len(tools), "sideEffects": "allow"}
        left_out: ToolPolicy = {"mode": "all", "maxActiveTools": len(tools)}
        checks.append(("POL-9.4", "sideEffects", tools, left_out, spelled, lambda shown: shown == set(names_)))
    if "maxActiveTools" not in policy and len(tools) > FIRST_ROUND_SERVER_CAP:
        room_names = {t["name"] for t in room}
        checks.append(
            (
                "POL-9.3",
                "maxActiveTools",
                room,
                {"mode": "all"},
                {"mode": "all", "maxActiveTools": DEFAULT_MAX_ACTIVE},
                lambda shown: shown == room_names,
            )
        )
    if "mode" not in policy and len(tools) > FIRST_ROUND_SERVER_CAP + len(pins):
        # The first round takes the pins and at most 12 more of an auto server (12 in all
        # where the cap counts the pins, ID-10); all mode would take every tool.
        checks.append(
            (
                "POL-9.1",
                "mode",
                tools,
                {"pinnedTools": pins, "maxActiveTools": len(tools)},
                {"mode": "auto", "pinnedTools": pins, "maxActiveTools": len(tools)},
                lambda shown: (
                    shown is not None and len(shown) <= FIRST_ROUND_SERVER_CAP + len(pins) and set(pins) <= shown
                ),
            )
        )
    if policy.get("mode") == "allowlist" and "allowedTools" not in policy:
        checks.append(
            (
                "POL-9.2",
                "allowedTools",
                tools,
                {"mode": "allowlist", "maxActiveTools": len(tools)},
                {"mode": "allowlist", "allowedTools": [], "maxActiveTools": len(tools)},
                lambda shown: shown == set(),
            )
        )
    for sentence, field_, served, omitted, spelled_out, holds in checks:
        if not holds(_shown(sut, fleets, sid, served, spelled_out)):
            continue
        shown = _shown(sut, fleets, sid, served, omitted)
        if not holds(shown):
            return _Misread(
                sentence,
                f"the policy of {sid} leaves out {field_}, which is misread: a run of its tools alone under "
                f"{json.dumps(omitted)} shows "
                + ("nothing: it was refused" if shown is None else f"{len(shown)} tools")
                + f", and under {json.dumps(spelled_out)} what it must",
                {"policy": omitted, "shown": None if shown is None else sorted(shown)},
            )
    return None


def _shown(
    sut: Sut, fleets: Fleets, sid: str, tools: Sequence[ListedTool], policy: ToolPolicy, *, annotated: bool = True
) -> set[str] | None:
    """The original names of the tools a run of ``tools`` (one server, one page, without
    annotations unless ``annotated``) shows under ``policy``, or None when it does not open."""
    # Only a raw server sends annotations as written (a hint that is not a JSON boolean).
    raw = annotated and any(not _plain(_annotations(t)) for t in tools)
    server = ServerSpec(
        id=sid,
        tool_count=0,
        page_size=max(1, len(tools)),
        raw=raw,
        tools=tuple(
            ToolSpec(
                name=t["name"],
                description=t.get("description") or "",
                annotations=_annotations(t) if annotated else None,
            )
            for t in tools
        ),
    )
    with fleets.serve(FleetSpec(servers=(server,)), {sid: policy}, record=False) as served:
        got = run(refusal_or(sut, open_params(served.servers)))
    if isinstance(got, OutcomeError):
        return None
    return {n.removeprefix(f"{sid}__") for n in names(mcp_definitions(got, []))}


def _plain(annotations: Mapping[str, object] | None) -> bool:
    """Whether ``annotations`` are ones a server that checks its tools would send."""
    return annotations is None or all(
        isinstance(value, str) if key == "title" else key.endswith("Hint") and isinstance(value, bool)
        for key, value in annotations.items()
    )


def _annotations(tool: Mapping[str, object]) -> dict[str, object] | None:
    annotations = tool.get("annotations")
    return dict(annotations) if isinstance(annotations, Mapping) else None
