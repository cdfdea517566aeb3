"""What ``mcp-conformance certify`` prints while the suite runs, and the summary after.

Progress comes from the records the plugin writes (:mod:`conformance._records`): a line
when every test of a section has finished, a line when a property starts shrinking or
the SUT is declared broken, and a line when nothing has finished for a while, naming
the tests still running.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Final

from conformance._certificate import KINDS, SEEN, Certificate, stale, unexpected
from conformance._records import Records, ResultRecord
from conformance._render import counted, outcome

__all__ = ["Progress", "first_line"]

PROG: Final = "mcp-conformance"
#: Seconds without a finished test before the tests still running are named.
QUIET_AFTER: Final = 30.0
#: How many failures the summary shows; the certificate has them all.
SHOWN: Final = 10


def first_line(text: str, width: int = 200) -> str:
    """The first line of ``text``, cut to ``width`` characters."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def section_of(module: str) -> str:
    """``test_first_round.py`` -> ``first round``."""
    return module.removeprefix("test_").removesuffix(".py").replace("_", " ")


class Progress:
    """Prints progress lines as records arrive; silent when not ``enabled``."""

    def __init__(
        self,
        stream: IO[str],
        *,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
        quiet_after: float = QUIET_AFTER,
    ) -> None:
        self._stream = stream
        self._enabled = enabled
        self._clock = clock
        self._quiet_after = quiet_after
        self._totals: dict[str, int] | None = None
        self._done: dict[str, list[ResultRecord]] = {}
        self._seen_tests: set[str] = set()
        self._seen_events: set[tuple[str, str, str]] = set()
        self._running: dict[str, float] = {}
        self._reported_sections: set[str] = set()
        self._session_seen = False
        self._last_activity = clock()

    def say(self, text: str) -> None:
        if self._enabled:
            self._stream.write(f"{PROG}: {text}\n")
            self._stream.flush()

    def update(self, records: Records) -> None:
        now = self._clock()
        session = records.session
        if session is not None and not self._session_seen and session["implementation"] is not None:
            self._session_seen = True
            impl = session["implementation"]
            self.say(
                f"{impl['name']} {impl['version']} claims {', '.join(impl['profiles']) or 'nothing'}; "
                f"profiles under test: {', '.join(session['profiles_under_test'])}"
            )
        for event in records.events:
            key = (event["event"], event["nodeid"], event["message"])
            if key in self._seen_events:
                continue
            self._seen_events.add(key)
            if event["event"] == "collected" and self._totals is None:
                self._totals = {str(k): int(v) for k, v in json.loads(event["message"] or "{}").items()}
                self.say(f"{counted(sum(self._totals.values()), 'test')} in {counted(len(self._totals), 'section')}")
            elif event["event"] == "start":
                self._running.setdefault(event["nodeid"], now)
            elif event["event"] == "shrinking":
                self.say(f"  {event['nodeid']}: failed; {event['message']}")
            elif event["event"] == "broken":
                self.say(f"  {event['message'].removeprefix('not run: ')}; the remaining tests are not run")
        for record in records.tests:
            if record["nodeid"] in self._seen_tests:
                continue
            self._seen_tests.add(record["nodeid"])
            self._running.pop(record["nodeid"], None)
            self._last_activity = now
            self._done.setdefault(record["module"], []).append(record)
        for module, done in sorted(self._done.items()):
            total = (self._totals or {}).get(module)
            if module in self._reported_sections or total is None or len(done) < total:
                continue
            self._reported_sections.add(module)
            self.say(f"  {section_of(module):<16} {self._describe(done)}")

    def tick(self) -> None:
        now = self._clock()
        if not self._running or now - self._last_activity < self._quiet_after:
            return
        self._last_activity = now
        oldest = sorted(self._running.items(), key=lambda item: item[1])[:2]
        names = ", ".join(f"{nodeid} ({now - since:.0f} s)" for nodeid, since in oldest)
        self.say(f"  still running: {names}")

    @staticmethod
    def _describe(done: Sequence[ResultRecord]) -> str:
        counts = {kind: sum(1 for r in done if r["kind"] == kind) for kind in KINDS}
        parts = [f"{n} {'failed' if kind == 'finding' else outcome(kind)}" for kind, n in counts.items() if n]
        broken = sorted({c for r in done for f in r["findings"] for c in (f["clauses"] or ["protocol"])})
        return f"{counted(len(done), 'test')}: {', '.join(parts)}" + (f" ({', '.join(broken)})" if broken else "")

    def summary(self, cert: Certificate, paths: Sequence[Path]) -> None:
        """The verdict, why, and the first failures with their replay commands.

        With an expectations file, every stale entry and the unexpected failures come first,
        whatever the verdict: they are what a regression run is read for.
        """
        lines = [f"verdict: {cert['verdict']} (exit {cert['exit_code']})"]
        lines += [f"  {line}" for line in cert["why"]]
        failures = cert["failures"]
        listed = cert["expectations"]
        if listed["file"] is not None:
            old = stale(listed["entries"])
            failures = unexpected(failures)
            seen = sum(1 for e in listed["entries"] if e["status"] == SEEN)
            lines.append(
                f"expectations {listed['file']}: {len(listed['entries'])} listed, {seen} seen as expected, "
                f"{len(old)} stale; {len(failures)} unexpected failure(s)"
            )
            for entry in old:
                scope = f" ({entry['test']})" if entry["test"] else ""
                lines.append(f"  stale: {entry['clause']}{scope}: the listed failure no longer happens; remove it")
        for error in cert["errors"][:SHOWN]:
            lines.append(f"  broke: {error['test']} ({error['when']}): {first_line(error['message'])}")
        for failure in failures[:SHOWN]:
            mark = " (unexpected)" if listed["file"] is not None else ""
            lines.append(f"  {failure['label']}{mark}: {failure['message']}")
            if failure["replay"]:
                lines.append(f"    replay: {failure['replay']}")
        if len(failures) > SHOWN:
            lines.append(f"  … and {len(failures) - SHOWN} more in the certificate")
        lines.append(f"certificate: {', '.join(str(p) for p in paths)}")
        self._stream.write("".join(f"{PROG}: {line}\n" for line in lines))
        self._stream.flush()
