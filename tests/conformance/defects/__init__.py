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

__all__ = ["DEFECTS", "SAMPLE", "Defect", "apply"]


@dataclass(frozen=True, slots=True)
class Defect:
    """One defect: the clause the suite must catch it on, and what it breaks."""

    name: str
    clause: str
    summary: str


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
        ("base_tools_shadow_mcp_tools", "DEF-5", "a base tool named like an MCP tool of the run is accepted"),
        ("answers_out_of_order", "PRO-1", "requests run concurrently; a quick reply overtakes a slow one"),
        ("dies_on_garbage", "PRO-2", "a line that is not JSON ends the driver"),
        ("unknown_method_is_a_result", "PRO-3", "an unknown method is answered with an empty result"),
        ("no_params_check", "PRO-4", "params are not checked; a wrong type becomes an internal error"),
        ("answers_notifications", "PRO-5", "a notification naming an unknown method is answered"),
        ("executes_notifications", "PRO-5", "a notification is executed, only not answered"),
        ("content_without_type", "PRO-6", "tool results carry content blocks without their type"),
    ]
    return {name: Defect(name, clause_id, summary) for name, clause_id, summary in rows}


#: Every defect by name, with the clause the suite must catch it on.
DEFECTS: dict[str, Defect] = _defects()
#: The defects the default test command runs: one per kind of check (a budget, a policy
#: boundary, the gate, a property over pagination, the lexical order).
SAMPLE: frozenset[str] = frozenset(
    {
        "first_round_97",
        "string_true_is_true",
        "gate_calls_before_refusing",
        "pagination_ignored",
        "ties_by_listing_order",
    }
)


def apply(name: str) -> None:
    """Patch reference_impl in this process with the named defect.

    Raises:
        KeyError: no such defect.
    """
    if name not in DEFECTS:
        raise KeyError(f"unknown defect {name!r}; known: {', '.join(DEFECTS)}")
    from tests.conformance.defects import _patches, _protocol_patches

    patch: Callable[[], None] = getattr(_patches, name, None) or getattr(_protocol_patches, name)
    patch()
