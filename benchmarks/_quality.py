"""Selection quality: recall of the first round and of one discovery call, and MRR, on a labelled task set."""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reference_impl import AdaptiveToolset, Budgets, Ranker
from reference_impl._rankers import RANKERS
from reference_impl._ranking import names_server

from ._catalogs import Run, build_run, distractors, realistic
from ._report import Table

TASKS = Path(__file__).with_name("tasks.toml")
SYSTEM_PROMPT = "You are an engineering assistant for a software team. Use the tools to help with their requests."


@dataclass(frozen=True, slots=True)
class Task:
    tool: str
    text: str

    @property
    def split(self) -> str:
        """``tune`` or ``held-out``, from a hash of the message: stable, and blind to the ranker."""
        digest = hashlib.sha256(self.text.encode()).digest()
        return "tune" if digest[0] % 2 == 0 else "held-out"

    @property
    def language(self) -> str:
        return "en" if self.text.isascii() else "zh"

    @property
    def names_server(self) -> bool:
        return names_server(self.tool.split("__")[0], self.text.casefold())


def load_tasks(path: Path = TASKS) -> list[Task]:
    with path.open("rb") as file:
        return [Task(tool=t["tool"], text=t["text"]) for t in tomllib.load(file)["tasks"]]


@dataclass(slots=True)
class Outcome:
    first: bool
    discovered: bool
    rank: int


def _toolset(run: Run, index: object, message: str) -> AdaptiveToolset:
    budgets = Budgets(base_tools=0, discovery_tools=1)
    return AdaptiveToolset(run.servers, {}, run.catalog, run.eligibility, index, budgets, [], message)  # type: ignore[arg-type]


def evaluate(ranker: Ranker, run: Run, tasks: Sequence[Task]) -> tuple[list[Outcome], float]:
    """Each task's outcome, and the share of tasks whose tool an empty first message activates."""
    index = ranker.index(run.docs, SYSTEM_PROMPT)
    position = {doc.qualified_name: i for i, doc in enumerate(run.docs)}
    empty = set(_toolset(run, index, "").active_names)
    outcomes: list[Outcome] = []
    for task in tasks:
        needed = position[task.tool]
        toolset = _toolset(run, index, task.text)
        first = task.tool in toolset.active_names
        toolset.search({"query": task.text})
        discovered = task.tool in toolset.active_names
        rank = next(r for r, i in enumerate(index.order(task.text), 1) if i == needed)
        outcomes.append(Outcome(first, discovered, rank))
    return outcomes, sum(t.tool in empty for t in tasks) / len(tasks)


def _row(name: str, split: str, outcomes: Sequence[Outcome], empty: float) -> list[str]:
    n = len(outcomes)
    return [
        name,
        split,
        str(n),
        f"{100 * empty:.1f}%",
        f"{100 * sum(o.first for o in outcomes) / n:.1f}%",
        f"{100 * sum(o.discovered for o in outcomes) / n:.1f}%",
        f"{sum(1 / o.rank for o in outcomes) / n:.3f}",
    ]


def run_quality(smoke: bool, rankers: Sequence[str] | None = None, distractor_count: int = 2000) -> list[Table]:
    tasks = load_tasks()
    if smoke:
        tasks, distractor_count = tasks[::8], 200
    base = realistic()
    names = sorted({t["name"] for tools in base.values() for t in tools})
    run = build_run({**base, **distractors(distractor_count, names)})
    results: dict[str, tuple[list[Outcome], float]] = {}
    factories: dict[str, Callable[[], Ranker]] = {name: RANKERS[name] for name in (rankers or sorted(RANKERS))}
    for name, factory in factories.items():
        results[name] = evaluate(factory(), run, tasks)
    main = Table(
        f"Selection quality: {len(tasks)} tasks over `realistic` + {distractor_count} distractors "
        f"({len(run.docs)} tools, {len(run.servers)} servers)",
        ["ranker", "split", "tasks", "first round, empty message", "first round", "after one discovery", "MRR"],
    )
    detail = Table(
        "Held-out recall after one discovery call, by kind of task",
        ["ranker", "English", "Chinese", "names its server", "no server named", "read tool", "write tool"],
    )
    for name, (outcomes, _) in results.items():
        index_of = {id(t): o for t, o in zip(tasks, outcomes, strict=True)}
        for split in ("tune", "held-out", "all"):
            chosen = [t for t in tasks if split in ("all", t.split)]
            got = [index_of[id(t)] for t in chosen]
            empty = _empty_share(run, factories[name], chosen)
            main.rows.append(_row(name, split, got, empty))
        held = [t for t in tasks if t.split == "held-out"]

        def recall(
            pick: Callable[[Task], bool], held: list[Task] = held, index_of: dict[int, Outcome] = index_of
        ) -> str:
            chosen = [index_of[id(t)] for t in held if pick(t)]
            return f"{100 * sum(o.discovered for o in chosen) / len(chosen):.1f}% ({len(chosen)})" if chosen else "–"

        detail.rows.append(
            [
                name,
                recall(lambda t: t.language == "en"),
                recall(lambda t: t.language == "zh"),
                recall(lambda t: t.names_server),
                recall(lambda t: not t.names_server),
                recall(lambda t: _is_read(t.tool)),
                recall(lambda t: not _is_read(t.tool)),
            ]
        )
    main.notes.append(
        "Recall: the needed tool is active (first round: after the first round for the task's message; "
        "after one discovery: after `search_mcp_tools` with the task's text as its query, default limit 6). "
        "MRR: mean of 1/rank of the needed tool in the ranker's full order for the task's text. "
        "The empty-message column is the first round for an empty user message: recall bought by filling slots."
    )
    return [main, detail]


def _empty_share(run: Run, factory: Callable[[], Ranker], tasks: Sequence[Task]) -> float:
    index = factory().index(run.docs, SYSTEM_PROMPT)
    empty = set(_toolset(run, index, "").active_names)
    return sum(t.tool in empty for t in tasks) / len(tasks)


def _is_read(qualified: str) -> bool:
    from mock_servers._generate import is_read_name

    return is_read_name(qualified.split("__", 1)[1])
