"""Deliberately defective variants of the reference implementation, one defect each.

``python -m tests.conformance.defects NAME [DRIVER OPTIONS]`` runs the reference stdio
driver after applying exactly one defect, by patching reference_impl internals in that
process only. Each defect breaks one normative sentence of SPEC.md and is registered with
``@defect(sentence, summary)`` (:mod:`._registry`) in the module of its section;
``tests/conformance/test_defects.py`` checks that the suite catches every one on the
sentence's clause.

Nothing here patches anything at import time: only :func:`apply` does, and only the
driver process started through ``__main__`` calls it.
"""

from __future__ import annotations

import importlib
import pkgutil

from tests.conformance.defects._registry import REGISTRY, VARIANT_REGISTRY, Defect, Variant

__all__ = ["DEFECTS", "SAMPLE", "VARIANTS", "VARIANT_SAMPLE", "Defect", "Variant", "apply"]

# Importing a module of patches registers its defects.
for _info in pkgutil.iter_modules(__path__):
    if _info.name not in ("__main__", "_registry"):
        importlib.import_module(f"{__name__}.{_info.name}")

#: Every defect by name, with the sentence the suite must catch it on.
DEFECTS: dict[str, Defect] = dict(sorted(REGISTRY.items()))
#: Correct implementations that choose otherwise where the specification lets them: the
#: suite must pass each on its clauses.
VARIANTS: dict[str, Variant] = dict(sorted(VARIANT_REGISTRY.items()))
#: The defects the default test command runs (the rest run with ``scripts/test --full``):
#: a budget, the gate, and a gate a refresh leaves open. Each is a certification of its clause
#: (ten seconds or more), so the gate keeps three and ``--full`` runs every one.
SAMPLE: frozenset[str] = frozenset({"first_round_97", "gate_calls_before_refusing", "removed_tools_reach_the_server"})
#: The variants the default test command certifies on the tests their reading touches: a
#: configuration read another way and a discovery argument read another way.
VARIANT_SAMPLE: frozenset[str] = frozenset({"max_active_above_96_clamped", "null_limit_refused"})


def apply(name: str) -> None:
    """Patch reference_impl in this process with the named defect or variant.

    Raises:
        KeyError: no such defect or variant.
    """
    change = DEFECTS.get(name) or VARIANTS.get(name)
    if change is None:
        raise KeyError(f"unknown defect {name!r}; known: {', '.join([*DEFECTS, *VARIANTS])}")
    change.patch()
