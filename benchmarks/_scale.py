"""Selection and discovery at scale: the indexed lexical ranker beside a full rescan and two BM25 libraries."""

from __future__ import annotations

import gc
import importlib
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from reference_impl import AdaptiveToolset, Bm25Ranker, Budgets, LexicalIndex, RankingIndex, words
from reference_impl._selection import select_first_round

from ._catalogs import Run, build_run, fleet, listings
from ._report import Sample, Table, fmt_seconds, measure, ratio
from ._rescan import RescanRanking

SHORT = "show me the open pull requests and recent build failures"
LONG = (
    "Hi! I am working on the release of our payments service this week and I need a hand. First, could you find "
    "the pull requests that are still open against the main branch and tell me which of them touch the retry logic "
    "of the checkout flow? Then look at the issues labelled bug that were opened in the last two weeks, summarize "
    "them, and check whether any of them mention timeouts in the database layer or the load balancer. After that, "
    "pull the logs of the failing workflow run from last night, compare them with the dashboard of query latency "
    "in the warehouse, and draft a short message for the incidents channel in chat explaining what went wrong. "
    "Finally, create a calendar event with the team for Friday to review the release notes, and update the "
    "milestone of the project so that the new target date is visible to everyone in the tracker and the docs."
)
SYSTEM = " ".join(
    [
        "You are a careful engineering assistant working inside a company's developer platform.",
        "You have access to code hosting, an issue tracker, browser automation, a data warehouse, team chat,",
        "cloud infrastructure, documents, calendars, a CRM and monitoring. Prefer reading before writing;",
        "never delete, merge, publish or send anything without the user's explicit confirmation; explain each",
        "step briefly; cite the identifiers of the issues, pull requests, tables, channels and instances you use;",
        "when a task is ambiguous, ask one short question first. Keep answers short and factual.",
    ]
    * 4
)
QUERIES = {"short": SHORT, "long": LONG}
NOTE = (
    "What bounds the gaps: the index groups tools that share a word set, so a query costs the groups "
    "its words touch, and the first round then walks a lazy merge only as far as selection takes it; "
    "what still grows with the catalog is the number of distinct word sets a common word reaches and, "
    "for servers named in the query, their tools. `bm25s` scores with vectorised NumPy over a sparse "
    "matrix, which pure Python does not reach; the reference keeps the exact integer formula and tie "
    "order of the `lexical` profile."
)


@dataclass
class SizeResult:
    size: int
    generate: float = 0.0
    catalog: float = 0.0
    index: dict[str, float] = field(default_factory=dict)  # per tool, seconds
    peak: dict[str, int] = field(default_factory=dict)  # bytes
    times: dict[tuple[str, str, str], Sample] = field(default_factory=dict)  # (impl, operation, query)


def _budgets() -> Budgets:
    return Budgets(base_tools=3, discovery_tools=1)


def _first_round(run: Run, index: RankingIndex, message: str) -> Callable[[], object]:
    return lambda: select_first_round(run.servers, run.catalog, run.eligibility, index, _budgets(), message)


def _discovery_walk(run: Run, matches: Callable[[str], Iterator[int] | list[int]], query: str, active: set[int]) -> int:
    """What one discovery call does with the ranking: the first 6 eligible, inactive matches."""
    taken = 0
    for i in matches(query):
        if i in active or not run.eligibility.is_eligible(i):
            continue
        taken += 1
        if taken == 6:
            break
    return taken


def _peak(build: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    kept = build()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return peak


def _repeats(size: int, smoke: bool) -> int:
    if smoke:
        return 3
    return 9 if size <= 1000 else 5 if size <= 10_000 else 3


def bench_size(size: int, smoke: bool, libraries: bool) -> SizeResult:
    result = SizeResult(size)
    repeats = _repeats(size, smoke)
    start = time.perf_counter()
    tools = listings(fleet(size, per_server=40 if size <= 160 else 100))
    result.generate = time.perf_counter() - start
    start = time.perf_counter()
    run = build_run(tools)
    result.catalog = time.perf_counter() - start
    docs = run.docs

    build = measure(lambda: LexicalIndex(docs, SYSTEM), 1 if size >= 100_000 else 3)
    result.index["lexical"] = build.median / size
    lexical = LexicalIndex(docs, SYSTEM)
    bm25_ranker = Bm25Ranker()
    build = measure(lambda: bm25_ranker.index(docs, SYSTEM), 1 if size >= 100_000 else 3)
    result.index["bm25 ranker"] = build.median / size
    bm25 = bm25_ranker.index(docs, SYSTEM)
    rescan = RescanRanking(docs, SYSTEM)
    result.peak["lexical"] = _peak(lambda: LexicalIndex(docs, SYSTEM))
    result.peak["bm25 ranker"] = _peak(lambda: bm25_ranker.index(docs, SYSTEM))

    corpus = [words(d.name) + words(d.description) for d in docs]
    okapi: Any = None
    fast: Any = None
    if libraries:
        try:
            BM25Okapi = importlib.import_module("rank_bm25").BM25Okapi

            start = time.perf_counter()
            okapi = BM25Okapi(corpus)
            result.index["rank_bm25"] = (time.perf_counter() - start) / size
            result.peak["rank_bm25"] = _peak(lambda: BM25Okapi(corpus))
        except ImportError:
            pass
        try:
            bm25s = importlib.import_module("bm25s")

            start = time.perf_counter()
            fast = bm25s.BM25()
            fast.index(corpus, show_progress=False)
            result.index["bm25s"] = (time.perf_counter() - start) / size

            def _bm25s() -> object:
                index = bm25s.BM25()
                index.index(corpus, show_progress=False)
                return index

            result.peak["bm25s"] = _peak(_bm25s)
        except ImportError:
            pass

    rescan_repeats = 1 if size >= 100_000 and not smoke else repeats
    for label, query in QUERIES.items():
        tokens = words(query)
        first = select_first_round(run.servers, run.catalog, run.eligibility, lexical, _budgets(), query)
        active = set(first.active)
        t = result.times
        t["lexical", "first round", label] = measure(_first_round(run, lexical, query), repeats)
        t["lexical", "discovery", label] = measure(
            partial(_discovery_walk, run, lexical.matches, query, active), repeats
        )
        t["bm25 ranker", "first round", label] = measure(_first_round(run, bm25, query), repeats)
        t["bm25 ranker", "discovery", label] = measure(
            partial(_discovery_walk, run, bm25.matches, query, active), repeats
        )
        t["rescan", "first round", label] = measure(_first_round(run, rescan, query), rescan_repeats)  # type: ignore[arg-type]
        t["rescan", "discovery", label] = measure(
            partial(_discovery_walk, run, rescan.matches, query, active), rescan_repeats
        )
        if okapi is not None:
            t["rank_bm25", "scoring", label] = measure(partial(okapi.get_scores, tokens), repeats)
        if fast is not None:
            t["bm25s", "scoring", label] = measure(partial(fast.get_scores, tokens), repeats)
    toolset = AdaptiveToolset(run.servers, {}, run.catalog, run.eligibility, lexical, _budgets(), [], SHORT)
    toolset.search({"query": LONG, "limit": 12})
    result.times["lexical", "definitions", "short"] = measure(toolset.definitions, repeats, inner=10)
    return result


def run_scale(smoke: bool, libraries: bool = True) -> list[Table]:
    sizes = (160, 1000) if smoke else (160, 1000, 10_000, 100_000)
    results = [bench_size(size, smoke, libraries) for size in sizes]
    return _tables(results)


def _tables(results: list[SizeResult]) -> list[Table]:
    build = Table(
        "Catalog build and indexing",
        ["tools", "generate", "catalog", "index per tool: lexical", "bm25 ranker", "rank_bm25", "bm25s",
         "peak index memory: lexical", "bm25 ranker", "rank_bm25", "bm25s"],
    )  # fmt: skip
    for r in results:
        build.rows.append(
            [f"{r.size:,}", fmt_seconds(r.generate), fmt_seconds(r.catalog)]
            + [
                fmt_seconds(r.index[k]) if k in r.index else "–"
                for k in ("lexical", "bm25 ranker", "rank_bm25", "bm25s")
            ]
            + [
                f"{r.peak[k] / 2**20:.1f} MiB" if k in r.peak else "–"
                for k in ("lexical", "bm25 ranker", "rank_bm25", "bm25s")
            ]
        )
    build.notes.append(
        "Index times are for the ranking index alone (the catalog is built once before it); peak memory is "
        "measured with tracemalloc around the index build, in a separate build from the timed ones."
    )
    ops = Table(
        "Selection and discovery: median ±half-range over repeats",
        ["tools", "message", "operation", "lexical (indexed)", "rescan", "rescan ÷ lexical", "rank_bm25 scoring",
         "bm25s scoring", "bm25 ranker"],
    )  # fmt: skip
    for r in results:
        for label in QUERIES:
            for op in ("first round", "discovery"):
                lex = r.times["lexical", op, label]
                res = r.times["rescan", op, label]
                okapi = r.times.get(("rank_bm25", "scoring", label))
                fast = r.times.get(("bm25s", "scoring", label))
                ops.rows.append(
                    [
                        f"{r.size:,}",
                        label,
                        op,
                        lex.show(),
                        res.show(),
                        ratio(res.median, lex.median),
                        okapi.show() if okapi else "–",
                        fast.show() if fast else "–",
                        r.times["bm25 ranker", op, label].show(),
                    ]
                )
        ops.rows.append(
            [f"{r.size:,}", "–", "per-turn definitions", r.times["lexical", "definitions", "short"].show()] + ["–"] * 5
        )
    ops.notes.append(
        "First round: `select_first_round` over the ranking (3 base tools, 92 slots, fairness caps). Discovery: "
        "the walk of one `search_mcp_tools` call over `matches` (6 eligible inactive tools). The libraries' "
        "columns time `get_scores` for the same words (scoring only, no sort or selection). The long system "
        f"prompt ({len(SYSTEM)} characters) is indexed with every catalog. Short message: {len(SHORT)} characters; "
        f"long: {len(LONG)}."
    )
    return [build, ops, _goals(results)]


def _goals(results: list[SizeResult]) -> Table:
    table = Table("Goals", ["goal", "measured", "status"])
    by_size = {r.size: r for r in results}
    ten, hundred = by_size.get(10_000), by_size.get(100_000)
    if ten is None:
        table.notes.append("The smoke run stops at 1,000 tools: the goals are judged on the full run only.")
        return table
    for op in ("first round", "discovery"):
        for label in QUERIES:
            lex = ten.times["lexical", op, label].median
            res = ten.times["rescan", op, label].median
            table.rows.append(
                [f"10k, {op}, {label} message: ≥20× faster than rescan", ratio(res, lex), _met(res / lex >= 20)]
            )
            for lib in ("rank_bm25", "bm25s"):
                other = ten.times.get((lib, "scoring", label))
                if other is not None:
                    table.rows.append(
                        [
                            f"10k, {op}, {label} message: faster than {lib} scoring",
                            f"{fmt_seconds(lex)} vs {fmt_seconds(other.median)} ({ratio(other.median, lex)})",
                            _met(lex < other.median),
                        ]
                    )
            if hundred is not None:
                growth = hundred.times["lexical", op, label].median / lex
                table.rows.append([f"{op}, {label} message: 10k → 100k grows ≤3×", f"{growth:.1f}×", _met(growth <= 3)])
    table.notes.append(NOTE)
    if hundred is not None:
        peak = hundred.peak["lexical"]
        table.rows.append(["index 100k tools: peak < 1 GiB", f"{peak / 2**20:.0f} MiB", _met(peak < 2**30)])
    return table


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"
