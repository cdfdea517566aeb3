"""Property tests over served fleets: their Hypothesis settings, and a guard around each.

Settings come from one public Hypothesis profile that the plugin registers before the
suite is imported: no deadline (a served fleet is slow by nature), the example database
the run asked for (or none), and every distinct failure reported. The number of examples
a property asks for is scaled by the run's *thoroughness*.

Hypothesis shrinks a counterexample for up to five minutes, which over served fleets and
a slow SUT is where a failing certification spent most of its time. The
:class:`PropertyGuard` wraps a property's body (Hypothesis' documented
``test.hypothesis.inner_test`` hook) and bounds that: once a property has failed, a new
example after the shrink budget, after the SUT misbehaved (a crash or a hang is no
smaller for a smaller input), after the SUT was declared broken, or past the session's
time budget passes at once without touching the SUT, so shrinking ends with the smallest
failing example found so far; the examples that failed still run for real when Hypothesis
replays them. The guard also counts examples and shrink steps for the record.

An example whose check is inconclusive (:class:`~conformance._errors.Inconclusive`: a
clause the check relies on broke first, or the SUT left nothing to check) passes for
Hypothesis, so that it neither shrinks nor filters: the property goes on drawing, and a
finding on another example still fails it. When none fails, the property is inconclusive
if an example named a clause that broke first, or if no example had anything to check.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import InvalidArgument, UnsatisfiedAssumption

from conformance._errors import Inconclusive, SutMisbehaved
from conformance._records import PropertyStats, jsonable

__all__ = [
    "MAX_EXAMPLES_ATTR",
    "PROFILE",
    "THOROUGHNESS",
    "PropertyGuard",
    "Thoroughness",
    "configure",
    "property_settings",
]

PROFILE: Final = "mcp-conformance"
#: Where :func:`property_settings` notes, on the decorated test, how many examples it asks for.
MAX_EXAMPLES_ATTR: Final = "mcp_conformance_max_examples"
Thoroughness = Literal["quick", "default", "deep"]
#: How each level scales the number of examples a property asks for.
THOROUGHNESS: Final[dict[str, float]] = {"quick": 0.5, "default": 1.0, "deep": 4.0}
_F = TypeVar("_F", bound=Callable[..., Any])
_scale = 1.0


def configure(*, database: Path | None = None, thoroughness: str = "default") -> None:
    """Register (again) the suite's Hypothesis profile; call before the suite is imported.

    Raises:
        ValueError: an unknown thoroughness.
    """
    global _scale
    if thoroughness not in THOROUGHNESS:
        raise ValueError(f"thoroughness must be one of {', '.join(THOROUGHNESS)}, got {thoroughness!r}")
    _scale = THOROUGHNESS[thoroughness]
    settings.register_profile(
        PROFILE,
        deadline=None,
        database=None if database is None else DirectoryBasedExampleDatabase(str(database)),
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
        # The explain phase re-runs examples to annotate the report: not worth a served fleet each.
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
        report_multiple_bugs=True,
        print_blob=False,
    )


def property_settings(examples: int) -> Callable[[_F], _F]:
    """Decorate a property that asks for ``examples`` examples at default thoroughness."""
    try:
        parent = settings.get_profile(PROFILE)
    except InvalidArgument:  # not registered yet: imported outside a run (the manifest, say)
        configure()
        parent = settings.get_profile(PROFILE)
    chosen = settings(parent, max_examples=max(1, math.ceil(examples * _scale)))

    def decorate(test: _F) -> _F:
        test = chosen(test)
        test.__dict__[MAX_EXAMPLES_ATTR] = chosen.max_examples
        return test

    return decorate


class PropertyGuard:
    """Wraps one property's body; see the module docstring.

    Args:
        inner: the body Hypothesis calls once per example.
        max_examples: what the property's settings ask for.
        fixtures: names of the body's arguments that are fixtures, not drawn values.
        shrink_time: seconds of shrinking allowed after the first failure.
        deadline: ``clock()`` value after which nothing new runs, or None.
        broken: tells why the SUT was declared broken, or None while it is usable.
        on_shrinking: called once, when the first failure starts the shrinking.
        clock: the time source.
    """

    def __init__(
        self,
        inner: Callable[..., Any],
        *,
        max_examples: int,
        fixtures: Collection[str],
        shrink_time: float,
        deadline: float | None,
        broken: Callable[[], str | None],
        on_shrinking: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self._fixtures = frozenset(fixtures)
        self._shrink_time = shrink_time
        self._deadline = deadline
        self._broken = broken
        self._on_shrinking = on_shrinking
        self._clock = clock
        self._failed: dict[str, BaseException] = {}
        self._because: Inconclusive | None = None
        self._unchecked: list[Inconclusive] = []
        self._first_failure: float | None = None
        self.stats = PropertyStats(
            max_examples=max_examples,
            examples=0,
            cut_short=False,
            shrink_steps=0,
            shrink_seconds=0.0,
            shrink_stopped="",
        )

    def wrapper(self) -> Callable[..., Any]:
        """A function that Hypothesis can call in place of the body (it reads its name and code)."""

        @functools.wraps(self.inner)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return self(*args, **kwargs)

        guarded.__dict__["mcp_conformance_guard"] = self
        return guarded

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        key = self._key(kwargs)
        if self._first_failure is None:
            if self._past_deadline():
                # Passing here would certify what was never checked: the record says so.
                self.stats["cut_short"] = True
                return None
            self.stats["examples"] += 1
            return self._run(key, args, kwargs)
        known = self._failed.get(key)
        if known is not None:
            if self._broken() is not None:
                raise known
            return self._run(key, args, kwargs)
        stop = self._stop_reason()
        if stop:
            if not self.stats["shrink_stopped"]:
                self.stats["shrink_stopped"] = stop
            return None
        self.stats["shrink_steps"] += 1
        return self._run(key, args, kwargs)

    def _run(self, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        try:
            return self.inner(*args, **kwargs)
        except UnsatisfiedAssumption:
            # A discarded example (``assume``), not a failure.
            raise
        except Inconclusive as exc:
            if self._first_failure is None:
                if exc.because:
                    self._because = self._because or exc
                else:
                    self._unchecked.append(exc)
            return None
        except Exception as exc:
            now = self._clock()
            if self._first_failure is None:
                self._first_failure = now
                if isinstance(exc, SutMisbehaved):
                    self.stats["shrink_stopped"] = "misbehaviour"
                else:
                    self._on_shrinking(f"shrinking its counterexample for at most {self._shrink_time:g} s")
            elif isinstance(exc, SutMisbehaved) and not self.stats["shrink_stopped"]:
                self.stats["shrink_stopped"] = "misbehaviour"
            self._failed.setdefault(key, exc)
            raise
        finally:
            if self._first_failure is not None:
                self.stats["shrink_seconds"] = round(self._clock() - self._first_failure, 3)

    def inconclusive(self) -> Inconclusive | None:
        """Why the property established nothing although no example failed, or None.

        An example that named a clause broken first makes it inconclusive; examples that
        had nothing to check do only when no example had anything to check.
        """
        if self._because is not None:
            return self._because
        if self._unchecked and len(self._unchecked) >= self.stats["examples"]:
            reason = self._unchecked[0].reason
            return Inconclusive("", f"{reason} (in each of its {len(self._unchecked)} examples)")
        return None

    def _stop_reason(self) -> str:
        if self.stats["shrink_stopped"]:
            return self.stats["shrink_stopped"]
        if self._broken() is not None:
            return "broken"
        if self._past_deadline():
            return "deadline"
        if self._first_failure is not None and self._clock() - self._first_failure >= self._shrink_time:
            return "time"
        return ""

    def _past_deadline(self) -> bool:
        return self._deadline is not None and self._clock() >= self._deadline

    def _key(self, kwargs: dict[str, Any]) -> str:
        drawn = {name: value for name, value in kwargs.items() if name not in self._fixtures}
        return json.dumps(jsonable(drawn), sort_keys=True, ensure_ascii=False)
