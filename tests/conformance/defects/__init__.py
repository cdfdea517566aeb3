"""Deliberately defective variants of the reference implementation, one defect each.

``python -m tests.conformance.defects NAME [DRIVER OPTIONS]`` runs the reference stdio
driver after applying exactly one defect, by patching reference_impl internals in that
process only. The suite must catch each defect on the clause it breaks
(:data:`DEFECTS` maps every name to that clause); ``tests/conformance/test_defects.py``
checks that it does.

Nothing here patches anything at import time: only :func:`apply` does, and only the
driver process started through ``__main__`` calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DEFECTS", "Defect", "apply"]


@dataclass(frozen=True, slots=True)
class Defect:
    """One defect: the clause the suite must catch it on, and what it breaks.

    A defect of the lexical ranker names its ``twin``: the wrong ranker of
    ``tests.conformance.vectors._defective`` that models it. The run is then restricted to
    the probes of the lexical vectors that the twin predicts to fail, which shows both that
    the vectors catch the defect and that the model predicts the real implementation.
    """

    name: str
    clause: str
    summary: str
    twin: str | None = None


def _defects() -> dict[str, Defect]:
    rows = [
        ("first_round_97", "BUD-1", "first-round watermark 97 instead of 96"),
        ("dynamic_113", "BUD-2", "dynamic watermark 113 instead of 112"),
        ("no_final_check", "BUD-3", "run.request never refuses more than 128 definitions"),
        ("missing_annotation_is_read_only", "POL-5", "readOnly admits tools that have no annotations"),
        ("string_true_is_true", "POL-5", 'readOnly trusts any truthy readOnlyHint ("true", 1)'),
        ("gate_checks_prefix_only", "GATE-1", "the gate runs any name whose server prefix exists"),
        ("gate_calls_before_refusing", "GATE-1", "the gate calls the server, then returns the refusal"),
        ("definitions_frozen", "DEF-2", "definitions are fixed at open; discovered tools never appear"),
        ("leaks_on_error", "ERR-6", "a failed run.open leaves its connections open"),
        ("ties_by_listing_order", "RNK-8", "equal scores ordered by listing order, not qualified name"),
        ("pinned_beats_deny", "POL-2", "a pinned tool is eligible even when denied"),
        ("pagination_ignored", "CAT-2", "only the first tools/list page is read"),
        ("no_fairness_cap", "SEL-1", "the first round ignores the 12-per-server cap"),
        ("discovery_ignores_max_active", "SEL-3", "discovery ignores maxActiveTools"),
        ("shared_active_set", "ISO-1", "concurrent runs over one fleet share one active set"),
    ]
    # Wrong lexical rankers, each caught by the lexical vectors: (name, clause, summary, twin).
    rankers = [
        ("write_penalty_31", "RNK-6", "under read intent a write tool loses 31 instead of 32", "write_penalty+1"),
        ("underscore_in_words", "RNK-1", "the underscore does not separate words", "underscore_in_words"),
        ("ties_casefolded", "RNK-8", "equal scores ordered by casefolded qualified name", "ties_casefolded"),
        (
            "ascii_triggers_as_substrings",
            "RNK-7",
            "pr fires inside project, list inside listing",
            "ascii_triggers_as_substrings",
        ),
        (
            "read_signal_from_the_prompt",
            "RNK-7",
            "a read signal in the system prompt turns read intent on",
            "read_signal_from_the_prompt",
        ),
    ]
    defects = {name: Defect(name, clause_id, summary) for name, clause_id, summary in rows}
    defects.update((row[0], Defect(*row)) for row in rankers)
    return defects


#: Every defect by name, with the clause the suite must catch it on.
DEFECTS: dict[str, Defect] = _defects()


def apply(name: str) -> None:
    """Patch reference_impl in this process with the named defect.

    Raises:
        KeyError: no such defect.
    """
    if name not in DEFECTS:
        raise KeyError(f"unknown defect {name!r}; known: {', '.join(DEFECTS)}")
    from tests.conformance.defects import _patches

    patch: Callable[[], None] = getattr(_patches, name)
    patch()
