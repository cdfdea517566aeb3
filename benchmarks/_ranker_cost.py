"""What each ranker costs at 10,000 tools: start-up, index build and memory, first round and discovery."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence

from reference_impl import RANKERS, Ranker, RankerUnavailableError, RankingIndex
from reference_impl._selection import select_first_round

from ._catalogs import Run, build_run, fleet, listings
from ._report import Sample, Table
from ._scale import LONG, SHORT, SYSTEM, _budgets, _discovery_walk

_STARTUP = (
    "import time; t = time.perf_counter(); from reference_impl import make_ranker; make_ranker({name!r}); "
    "print(time.perf_counter() - t)"
)


def _startup(name: str, repeats: int) -> str:
    """Importing the ranker and loading its resources in a fresh interpreter (what the driver pays once)."""
    if not repeats:
        return "–"
    values = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", _STARTUP.format(name=name)], check=True, capture_output=True, text=True
        )
        values.append(float(out.stdout.strip()))
    return Sample(tuple(values)).show()


def _retained(build: Callable[[], object]) -> int:
    """Bytes still allocated once the index is built (tracemalloc sees NumPy's arrays too)."""
    gc.collect()
    tracemalloc.start()
    kept = build()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return current


def _per_query(action: Callable[[str], object], message: str, repeats: int) -> Sample:
    # Each repeat asks a query of its own: a ranker may keep the last query's ranking, and a
    # repeated query would time that cache, not the ranking.
    values = []
    for k in range(repeats):
        query = f"{message} r{k}"
        start = time.perf_counter()
        action(query)
        values.append(time.perf_counter() - start)
    return Sample(tuple(values))


def _row(name: str, ranker: Ranker, run: Run, repeats: int, startup_repeats: int) -> list[str]:
    docs = run.docs
    builds = []
    for _ in range(repeats):
        start = time.perf_counter()
        ranker.index(docs, SYSTEM)
        builds.append(time.perf_counter() - start)
    memory = _retained(lambda: ranker.index(docs, SYSTEM))
    index: RankingIndex = ranker.index(docs, SYSTEM)

    def first_round(message: str) -> object:
        return select_first_round(run.servers, run.catalog, run.eligibility, index, _budgets(), message)

    def discovery(query: str) -> object:
        return _discovery_walk(run, index.matches, query, set())

    return [
        name,
        _startup(name, startup_repeats),
        Sample(tuple(builds)).show(),
        f"{memory / 2**20:.1f} MiB",
        _per_query(first_round, SHORT, repeats).show(),
        _per_query(first_round, LONG, repeats).show(),
        _per_query(discovery, SHORT, repeats).show(),
        _per_query(discovery, LONG, repeats).show(),
    ]


def run_ranker_cost(smoke: bool, rankers: Sequence[str] | None = None) -> list[Table]:
    size = 500 if smoke else 10_000
    # Start-up loads every ranker's resources in a fresh interpreter: seconds each, left out of smoke runs.
    repeats, startup_repeats = (2, 0) if smoke else (5, 3)
    run = build_run(listings(fleet(size)))
    table = Table(
        f"Ranker cost at {size:,} tools",
        [
            "ranker",
            "start-up (import, load resources)",
            "index build",
            "index memory",
            "first round, short message",
            "first round, long message",
            "discovery, short query",
            "discovery, long query",
        ],
    )
    missing = []
    for name in rankers or RANKERS:
        try:
            ranker = RANKERS[name]()
        except RankerUnavailableError:
            missing.append(f"`{name}`")
            continue
        table.rows.append(_row(name, ranker, run, repeats, startup_repeats))
    table.notes.append(
        f"Medians over {repeats} repeats (start-up over {startup_repeats} fresh interpreters), ± half the range. "
        "Start-up is what a process pays once, before its first run: importing the ranker and loading its word "
        "lists, dictionaries and model. Index build is per run (per catalog); index memory is what the built "
        "index keeps allocated (tracemalloc, NumPy arrays included). First round: `select_first_round` over "
        "the ranking (95 slots) for the short and long messages of the scale section; discovery: the walk of one "
        "`search_mcp_tools` call over `matches` until 6 tools are taken."
    )
    if missing:
        table.notes.append("Not measured, optional dependencies missing: " + ", ".join(missing) + ".")
    return [table]
