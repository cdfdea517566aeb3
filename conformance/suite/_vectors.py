"""The lexical vectors (``conformance/vectors/lexical.json``), the runs that observe them, and
the sentence a difference is blamed on.

An implementation's definition order is its own (ID-1), so the suite observes rankings
through behaviour, one run (a *probe*) at a time:

- The first round. With ``95 - k`` base tools the first-round MCP capacity is ``k``, and
  the first round takes the best ``k`` tools of one global ranking (SEL-5): the active
  MCP tools are the ``k``-prefix of the case's first-round order.
- Discovery. With the first round full, the room under the dynamic watermark is 16. A
  discovery call with ``limit`` 1 activates the best candidate not active yet (DSC-10),
  so a sequence of calls reveals the discovery order one tool at a time, and once every
  relevant tool is active the next call activates nothing. An order longer than the room
  is revealed in chunks: for a later chunk the tools of the earlier ones are pinned, so
  that they are active from the first round and take its whole capacity.

Each probe serves its group's whole catalog, and one probe carries the discovery checks of
several cases that share its system prompt and what they isolate when their tools do not
overlap; the plan is computed from the vectors alone, so it is the same in every run.

The probes measure rankings, not budgets: how many tools a first round takes and how much
room discovery has are the business of SEL-1, SEL-2, BUD-1 and BUD-2, whose own checks
report them. So a first round that takes another number of tools than planned is judged
on whether the tools it took are the best of the ranking, a discovery call is expected to
activate the best candidate not active yet, whatever is active, and no probe uses the last
tool of room the budgets give it.

A case *isolates* the sentences that alone decide what its probes observe, given the
sentences it *assumes*, which cases of their own isolate. :class:`Diagnosis` blames a
difference on the sentences the case isolates, unless a case isolating one of the
sentences it assumes differs too, which accounts for it; a difference in a case that
isolates nothing (an end-to-end case) is blamed on the sentences whose isolating cases
differ among those that could explain it, or on all of those when none does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Final

from conformance._clauses import CLAUSES
from conformance._errors import Inconclusive
from conformance._wire_types import ToolPolicy
from conformance.suite._predictions import DEFAULT_MAX_ACTIVE, DYNAMIC, FIRST_ROUND, FIRST_ROUND_SERVER_CAP

__all__ = [
    "LEXICAL_SENTENCES",
    "Outcome",
    "ROOM",
    "Diagnosis",
    "DiscoveryCheck",
    "DiscoveryWalk",
    "FirstRoundCheck",
    "Mismatch",
    "Probe",
    "Violation",
    "VectorCase",
    "VectorGroup",
    "VectorTool",
    "assumed",
    "first_round_mismatch",
    "isolating_probes",
    "load_vectors",
    "plan",
    "suspects",
    "walk",
]

#: Discovery room in a run whose first round is full: the dynamic capacity minus the first-round one.
ROOM: Final = DYNAMIC - FIRST_ROUND
#: Tools of room a probe leaves unused, so that a dynamic capacity one short (BUD-2) is not
#: taken for a ranking that stops early.
_SLACK: Final = 1
#: The most base tools a run may have with the discovery tool registered (capacity 0).
_MAX_BASE: Final = FIRST_ROUND - 1
_PROVIDER_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Every sentence of the lexical profile, in document order.
LEXICAL_SENTENCES: Final = tuple(s.id for c in CLAUSES.values() if c.profile == "lexical" for s in c.sentences)


def _sentences_of(*refs: str) -> tuple[str, ...]:
    """Sentence ids for ids that name sentences or whole clauses, in order, without repeats."""
    out: dict[str, None] = {}
    for ref in refs:
        if ref in CLAUSES:
            out.update(dict.fromkeys(s.id for s in CLAUSES[ref].sentences))
        else:
            out[ref] = None
    return tuple(out)


@dataclass(frozen=True, slots=True)
class VectorTool:
    """A tool of a vector catalog, as its server lists it."""

    server: str
    name: str
    description: str
    annotations: Mapping[str, Any] | None

    @property
    def qualified(self) -> str:
        return f"{self.server}__{self.name}"


@dataclass(frozen=True, slots=True)
class VectorCase:
    """One message with its expected scores and orders."""

    id: str
    description: str
    clauses: tuple[str, ...]
    system_prompt: str
    user_message: str
    # Qualified name -> {"score": int, and the components that are not zero}.
    scores: Mapping[str, Mapping[str, Any]]
    first_round: tuple[str, ...]
    discovery: tuple[str, ...]
    #: The sentences that alone decide what the case's probes observe; empty for an
    #: end-to-end case.
    isolates: tuple[str, ...] = ()
    #: The sentences, isolated by cases of their own, that the case relies on besides.
    assumes: tuple[str, ...] = ()

    def score(self, name: str) -> int:
        return int(self.scores[name]["score"])

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "description": self.description,
            "userMessage": self.user_message,
            "systemPrompt": self.system_prompt,
        }


@dataclass(frozen=True, slots=True)
class VectorGroup:
    """A catalog and the cases scored against it."""

    id: str
    description: str
    tools: tuple[VectorTool, ...]
    cases: tuple[VectorCase, ...]

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(tool.server for tool in self.tools))

    @property
    def servable(self) -> bool:
        """Whether every qualified name suits every provider, so no implementation maps it (ID-2)."""
        return all(_PROVIDER_NAME.fullmatch(tool.qualified) for tool in self.tools)

    def tool(self, qualified: str) -> VectorTool | None:
        return next((tool for tool in self.tools if tool.qualified == qualified), None)

    def server_of(self, qualified: str) -> str:
        return next(tool.server for tool in self.tools if tool.qualified == qualified)


def _number(case: VectorCase) -> str:
    return case.id.rsplit("-", 1)[-1]


def _group(raw: Mapping[str, Any]) -> VectorGroup:
    tools = tuple(
        VectorTool(server["id"], tool["name"], tool["description"], tool.get("annotations"))
        for server in raw["catalog"]
        for tool in server["tools"]
    )
    cases = tuple(
        VectorCase(
            id=case["id"],
            description=case["description"],
            clauses=tuple(case["clauses"]),
            system_prompt=case["systemPrompt"],
            user_message=case["userMessage"],
            scores=case["scores"],
            first_round=tuple(case["firstRound"]),
            discovery=tuple(case["discovery"]),
            # Both fields came after the first files: a file without them isolates nothing.
            isolates=tuple(case.get("isolates", ())),
            assumes=tuple(case.get("assumes", ())),
        )
        for case in raw["cases"]
    )
    return VectorGroup(raw["id"], raw["description"], tools, cases)


@cache
def load_vectors() -> tuple[VectorGroup, ...]:
    """The groups of the shipped ``vectors/lexical.json``."""
    text = resources.files("conformance").joinpath("vectors", "lexical.json").read_text(encoding="utf-8")
    return tuple(_group(raw) for raw in json.loads(text)["groups"])


def walk(order: Sequence[str], capacity: int, server_of: Mapping[str, str]) -> list[str]:
    """What a first round of ``capacity`` takes from ``order`` (SEL-5) under the default policy."""
    cap = min(FIRST_ROUND_SERVER_CAP, DEFAULT_MAX_ACTIVE)
    taken: list[str] = []
    per_server: dict[str, int] = {}
    for name in order:
        if len(taken) == capacity:
            break
        server = server_of[name]
        if per_server.get(server, 0) < cap:
            per_server[server] = per_server.get(server, 0) + 1
            taken.append(name)
    return taken


@dataclass(frozen=True, slots=True)
class FirstRoundCheck:
    """The first round of ``case`` at ``capacity`` takes exactly ``expected``."""

    case: VectorCase
    capacity: int
    expected: frozenset[str]


@dataclass(frozen=True, slots=True)
class DiscoveryCheck:
    """Discovery calls with the case's message as query activate ``expected``, one per call.

    When ``complete``, one more call activates nothing: the order has no further candidate.
    """

    case: VectorCase
    expected: tuple[str, ...]
    complete: bool
    # Where in the case's discovery order ``expected`` starts.
    start: int = 0


@dataclass(slots=True)
class Probe:
    """One run: its inputs, and the checks made on it in order."""

    group: VectorGroup
    system_prompt: str
    user_message: str = ""
    capacity: int = 0
    pinned: tuple[str, ...] = ()
    first_round: FirstRoundCheck | None = None
    discoveries: list[DiscoveryCheck] = field(default_factory=list)

    @property
    def id(self) -> str:
        """``group:07@5+12+30d16``: case 07's first round at capacity 5, then the discovery
        orders of cases 12 and 30 (the latter from its 17th tool on)."""
        parts = []
        if self.first_round is not None:
            parts.append(f"{_number(self.first_round.case)}@{self.capacity}")
        for check in self.discoveries:
            parts.append(f"{_number(check.case)}d{check.start}" if check.start else _number(check.case))
        return f"{self.group.id}:{'+'.join(parts)}"

    @property
    def base_tools(self) -> int:
        return _MAX_BASE - self.capacity

    @property
    def servers(self) -> tuple[str, ...]:
        return self.group.servers

    @property
    def used(self) -> int:
        return sum(len(check.expected) for check in self.discoveries)

    @property
    def active(self) -> set[str]:
        fixed = set(self.pinned) | (set(self.first_round.expected) if self.first_round else set())
        return fixed.union(*(check.expected for check in self.discoveries))

    @property
    def isolates(self) -> tuple[str, ...]:
        """What the probe's cases isolate (a probe carries cases that isolate the same)."""
        return self.cases()[0].isolates

    def policies(self) -> dict[str, ToolPolicy]:
        pins: dict[str, list[str]] = {}
        for name in self.pinned:
            server = self.group.server_of(name)
            pins.setdefault(server, []).append(name[len(server) + 2 :])
        return {server: {"pinnedTools": names} for server, names in pins.items()}

    def cases(self) -> list[VectorCase]:
        found = [self.first_round.case] if self.first_round else []
        found += [check.case for check in self.discoveries]
        return list({case.id: case for case in found}.values())

    def _accepts(self, case: VectorCase, tools: Sequence[str], complete: bool) -> bool:
        if self.pinned or case.system_prompt != self.system_prompt or case.isolates != self.isolates:
            return False
        # A completeness check needs room left after its sequence, or "nothing more" means nothing.
        if self.used + len(tools) > ROOM - _SLACK - (1 if complete else 0):
            return False
        return self.active.isdisjoint(tools)


def first_round_capacities(case: VectorCase) -> list[int]:
    """Where the first round is worth observing: the smallest score gap near the relevant tools.

    Among the capacities up to two past the discovery order's length, the one whose boundary
    has the smallest positive score gap (the earliest of equal gaps), so that a weight that is
    slightly off moves a tool across it; a tie when there is no gap, so that the tie-break
    decides. Ties between two relevant tools are left to discovery, which orders them anyway.
    A case that isolates a sentence is observed at every boundary with that smallest gap.
    """
    order = case.first_round
    relevant = set(case.discovery)
    gaps: list[tuple[int, int]] = []
    for k in range(1, min(len(order), len(relevant) + 3)):
        above, below = order[k - 1], order[k]
        gap = case.score(above) - case.score(below)
        if gap == 0 and above in relevant and below in relevant:
            continue
        gaps.append((gap if gap > 0 else 10**6, k))
    if not gaps:
        return [1]
    smallest = min(gaps)
    return [k for gap, k in gaps if gap == smallest[0]] if case.isolates else [smallest[1]]


def first_round_tells_more(case: VectorCase) -> bool:
    """Whether the case's first round shows what its discovery order does not.

    That is so when nothing is relevant (the first round is then all there is to see), or
    when a tool that discovery would not activate outranks one it would.
    """
    relevant = len(case.discovery)
    return relevant == 0 or case.first_round[:relevant] != case.discovery


def plan(group: VectorGroup) -> list[Probe]:
    """The probes that check a servable group: the complete discovery order of every case, and
    first-round prefixes of every case whose first round tells more (:func:`first_round_tells_more`).

    Every probe serves the whole catalog of its group, so that a tool that should stay out
    of an order can show up in it."""
    server_of = {tool.qualified: tool.server for tool in group.tools}
    probes: list[Probe] = []
    for case in group.cases:
        if not first_round_tells_more(case):
            continue
        for k in first_round_capacities(case):
            taken = walk(case.first_round, k, server_of)
            probes.append(
                Probe(
                    group,
                    case.system_prompt,
                    case.user_message,
                    capacity=k,
                    first_round=FirstRoundCheck(case, k, frozenset(taken)),
                )
            )
    checks: list[DiscoveryCheck] = []
    chunk = ROOM - _SLACK - 1
    # A blank query is invalid arguments (DSC-7), not a ranking: such cases have no discovery check.
    for case in (case for case in group.cases if case.user_message.strip()):
        order = case.discovery
        for start in range(0, len(order) + 1, chunk) if len(order) >= chunk else (0,):
            checks.append(DiscoveryCheck(case, order[start : start + chunk], start + chunk > len(order), start))
    # Longest first packs best; a check joins the probe it leaves the least room in.
    for check in sorted(checks, key=lambda check: -len(check.expected)):
        hosts = [
            probe for probe in probes if check.start == 0 and probe._accepts(check.case, check.expected, check.complete)
        ]
        if hosts:
            min(hosts, key=lambda probe: ROOM - probe.used - len(check.expected)).discoveries.append(check)
            continue
        pinned = check.case.discovery[: check.start]
        probes.append(Probe(group, check.case.system_prompt, capacity=len(pinned), pinned=pinned, discoveries=[check]))
    for probe in probes:
        # In case order, and the checks that expect nothing first, while the room is whole.
        probe.discoveries.sort(key=lambda check: (len(check.expected) > 0, group.cases.index(check.case)))
    return probes


def isolating_probes(probes: Iterable[Probe]) -> dict[str, list[Probe]]:
    """The probes of the cases that isolate each sentence."""
    found: dict[str, list[Probe]] = {}
    for probe in probes:
        for sentence in probe.isolates:
            found.setdefault(sentence, []).append(probe)
    return found


# What a probe sees ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A probe saw another tool than the vectors give: ``kind`` is ``"SEL-5"`` for the first
    round, ``"DSC-10"`` for discovery. ``None`` on either side is no tool: discovery stopped
    early or went on, a first round took fewer or more."""

    kind: str
    group: VectorGroup
    case: VectorCase
    expected: str | None
    observed: str | None
    #: What the probe saw of the order before it differed, and what it expected and saw in full.
    detail: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Violation:
    """A probe saw a sentence of another part of the specification broken outright, on the way
    to the ranking (a discovery call with ``limit`` 1 that activates two tools)."""

    sentences: tuple[str, ...]
    message: str
    observed: Any = None


def first_round_mismatch(probe: Probe, active: Collection[str]) -> Mismatch | None:
    """How the first round's active MCP tools differ from the best of the ranking, if they do.

    A first round that took another number of tools than planned is held to the best tools
    of the ranking in that number: how many it takes is not the ranking's business.
    """
    check = probe.first_round
    if check is None:
        return None
    taken = set(active)
    if taken == check.expected:
        return None
    server_of = {tool.qualified: tool.server for tool in probe.group.tools}
    order = check.case.first_round
    expected = check.expected if len(taken) == check.capacity else frozenset(walk(order, len(taken), server_of))
    if taken == expected:
        return None
    rank = {name: i for i, name in enumerate(check.case.first_round)}
    missing = sorted(expected - taken, key=rank.__getitem__)
    # Names the vectors do not know (a mapped or made-up name) sort last.
    extra = sorted(taken - expected, key=lambda name: (rank.get(name, len(rank)), name))
    return Mismatch(
        "SEL-5",
        probe.group,
        check.case,
        missing[0] if missing else None,
        extra[0] if extra else None,
        {
            "capacity": check.capacity,
            "expected": sorted(expected),
            "observed": sorted(taken),
            "missing": missing,
            "unexpected": extra,
        },
    )


class DiscoveryWalk:
    """One discovery check, call by call: which tool the next call should activate, given what
    is active, and whether what it activated is that tool.

    Expecting the best candidate not active yet, whatever made the others active, keeps a
    first round that took a tool too many (BUD-1) from showing as a ranking difference.
    """

    def __init__(self, group: VectorGroup, check: DiscoveryCheck, active: Collection[str]) -> None:
        self.group = group
        self.check = check
        self.active = set(active)
        self.seen: list[str] = []
        self._done = False

    def want(self) -> str | None:
        """The tool the next call should activate; ``None`` when it should activate nothing."""
        return next((name for name in self.check.expected if name not in self.active), None)

    @property
    def done(self) -> bool:
        """Whether the check is over: every tool seen, and the end seen when it is checked."""
        return self._done or (self.want() is None and not self.check.complete)

    def see(self, activated: Sequence[str]) -> Mismatch | Violation | None:
        """What one call with ``limit`` 1 activated."""
        if len(activated) > 1:
            return Violation(("DSC-5.1",), "a discovery call with limit 1 activated more than one tool", activated)
        got = activated[0] if activated else None
        if got is not None and got in self.active:
            return Violation(("DSC-4.2",), f"a discovery call activated {got}, which was active already", activated)
        want = self.want()
        if got != want:
            position = self.check.start + len(self.seen) + 1
            what = f"tool {position} of the discovery order" if want is not None else "the end of the discovery order"
            return Mismatch(
                "DSC-10",
                self.group,
                self.check.case,
                want,
                got,
                {
                    "what": what,
                    "expected": [*self.seen, want] if want is not None else [*self.seen, "nothing more"],
                    "observed": [*self.seen, got] if got is not None else [*self.seen, "nothing"],
                },
            )
        if got is None:
            self._done = True
        else:
            self.seen.append(got)
            self.active.add(got)
        return None


# Whom a difference is blamed on --------------------------------------------------------------

# The sentences behind each component of a score (lexical.json's field names): the words
# (RNK-1) behind the hits, the triggers (RNK-7) behind aliases, read intent and server ids.
_COMPONENT_SENTENCES: Final[Mapping[str, tuple[str, ...]]] = {
    "messageHits": _sentences_of("RNK-1", "RNK-2.1", "RNK-2.3"),
    "promptHits": _sentences_of("RNK-1", "RNK-2.2", "RNK-2.3"),
    "serverInMessage": ("RNK-3.1", "RNK-3.3", "RNK-7.1", "RNK-7.4"),
    "serverInPrompt": ("RNK-3.2", "RNK-3.3", "RNK-7.1", "RNK-7.4"),
    "readOnly": ("RNK-4.1",),
    "aliases": _sentences_of("RNK-5", "RNK-7.1", "RNK-7.2", "RNK-7.3"),
    "intent": _sentences_of("RNK-6", "RNK-7.1", "RNK-7.2", "RNK-7.3"),
}
_KIND_SENTENCES: Final[Mapping[str, tuple[str, ...]]] = {
    "SEL-5": ("SEL-5.1", "SEL-5.2"),
    "DSC-10": ("DSC-10.1", "DSC-10.2", "DSC-10.3"),
}


def _intent_shape(group: VectorGroup, name: str) -> int:
    """What read intent does to a tool (RNK-6: 8, -32, -24 or 0), read off a case of the
    group where it applies; 0 when no case has read intent."""
    for case in group.cases:
        if name in case.scores and any(score.get("intent") for score in case.scores.values()):
            return int(case.scores[name].get("intent", 0))
    return 0


def suspects(mismatch: Mismatch) -> tuple[str, ...]:
    """The sentences that could explain a difference in a case, from the vectors alone.

    The part that differed (SEL-5 or DSC-10), the clauses the case is about, the sentences
    of the components where the scores of the expected tool and the observed one differ
    (where discovery stopped early or went on too long, the components of the one tool
    there is), RNK-8.1 when they score the same, RNK-6 when their names differ in read or
    write words, and RNK-4.1 when either has a readOnlyHint that is not a boolean.
    """
    group, case, expected, observed = mismatch.group, mismatch.case, mismatch.expected, mismatch.observed
    found = [*_KIND_SENTENCES[mismatch.kind], *_sentences_of(*case.clauses)]
    known = [name is None or name in case.scores for name in (expected, observed)]
    if all(known) and (expected, observed) != (None, None):
        a, b = (case.scores[name] if name is not None else {} for name in (expected, observed))
        found += [s for key, sentences in _COMPONENT_SENTENCES.items() if a.get(key) != b.get(key) for s in sentences]
        if expected is not None and observed is not None:
            if a["score"] == b["score"]:
                found.append("RNK-8.1")
            if _intent_shape(group, expected) != _intent_shape(group, observed):
                found += _sentences_of("RNK-6")
    else:
        # A tool the vectors do not know: any sentence of the ranking could explain it.
        found += LEXICAL_SENTENCES
    for name in (expected, observed):
        tool = group.tool(name) if name is not None else None
        hint = (tool.annotations or {}).get("readOnlyHint") if tool is not None else None
        if hint is not None and not isinstance(hint, bool):
            found.append("RNK-4.1")
    return tuple(s for s in dict.fromkeys(found) if s in LEXICAL_SENTENCES)


Outcome = Mismatch | Violation


class Diagnosis:
    """Blames a difference on the sentences it shows broken, running the isolating probes of
    the sentences a case assumes (or, for an end-to-end case, of those that could explain
    it) through ``observe`` when it must. Each probe runs at most once: a check that ran a
    probe itself tells the diagnosis what it saw with :meth:`record`.
    """

    def __init__(
        self,
        probes: Iterable[Probe],
        observe: Callable[[Probe], Outcome | None],
        relied_on: Callable[[Probe], None] = lambda probe: None,
    ) -> None:
        self._isolating = isolating_probes(probes)
        self._observe = observe
        #: Checks of what the vectors assume beyond the ranking, run before a difference a
        #: probe saw is reported (raising Inconclusive when one does not hold).
        self.relied_on = relied_on
        self._outcomes: dict[str, Outcome | None] = {}

    def record(self, probe: Probe, outcome: Outcome | None) -> None:
        self._outcomes[probe.id] = outcome

    def outcome(self, probe: Probe) -> Outcome | None:
        if probe.id not in self._outcomes:
            self._outcomes[probe.id] = self._observe(probe)
        return self._outcomes[probe.id]

    def differing(self, sentence: str) -> list[Outcome]:
        """What the probes isolating ``sentence`` saw differ."""
        return [found for probe in self._isolating.get(sentence, ()) if (found := self.outcome(probe)) is not None]

    def blame(self, found: Outcome, _behind: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """The sentences a difference shows broken.

        Those a case isolates, unless a case isolating a sentence it assumes differs too:
        then what that case is blamed on. For an end-to-end case, what the isolating cases
        that differ are blamed on, or, when none differs, every sentence that could explain
        the difference (:func:`suspects`).
        """
        if isinstance(found, Violation):
            return found.sentences
        case = found.case
        if case.isolates:
            own, behind = case.isolates, _behind | set(case.isolates)
            candidates = [s for s in case.assumes if s not in behind]
        else:
            # Any broken sentence can show in an end-to-end case, whatever its components.
            own = suspects(found)
            behind, candidates = _behind, list(LEXICAL_SENTENCES)
        explained: dict[str, None] = {}
        for sentence in candidates:
            for other in self.differing(sentence):
                explained.update(dict.fromkeys(self.blame(other, behind)))
        return tuple(explained) or own

    def explain(self, sentences: Iterable[str]) -> tuple[str, ...]:
        """What the isolating cases of ``sentences`` that differ are blamed on: the sentences
        found broken that a check relying on ``sentences`` can blame its own difference on."""
        found: dict[str, None] = {}
        for sentence in sentences:
            for other in self.differing(sentence):
                found.update(dict.fromkeys(self.blame(other)))
        return tuple(found)

    def accounting(self, sentences: Iterable[str], cited: Collection[str]) -> tuple[str, ...]:
        """What :meth:`explain` finds broken among ``sentences`` and what they assume, for a
        check that cites ``cited`` to blame its own difference on. A sentence found broken that
        the check does not cite (discovery past its limit, DSC-5.1, say) is not its to report:
        the check ends inconclusive, naming it, and that sentence's checks report it.

        Raises:
            Inconclusive: naming the first sentence found broken that the check does not cite.
        """
        explained = self.explain(sentences)
        outside = [s for s in explained if s not in cited]
        if outside:
            raise Inconclusive(
                outside[0], "the lexical vectors find it broken, which accounts for the difference", observed=outside
            )
        return explained


def assumed(sentences: Iterable[str], groups: Iterable[VectorGroup] | None = None) -> tuple[str, ...]:
    """``sentences`` and every sentence the cases isolating them assume, and so on: what a
    finding blamed through :meth:`Diagnosis.explain` on ``sentences`` can name."""
    cases = [case for group in (load_vectors() if groups is None else groups) for case in group.cases]
    found: dict[str, None] = {}
    pending = list(sentences)
    while pending:
        sentence = pending.pop(0)
        if sentence in found:
            continue
        found[sentence] = None
        # A case that differs is blamed on all it isolates, or on what it assumes.
        pending += [s for case in cases if sentence in case.isolates for s in (*case.isolates, *case.assumes)]
    return tuple(found)
