"""One started driver process: its process group, its stdout lines in a queue, its stderr tail.

Both ways of talking to a driver stand on it: `DriverSut` (one framed request and one
reply at a time) and the raw channel of the protocol checks. Reader threads own the pipes,
so neither depends on an event loop.
"""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final, cast

from mock_servers import ProcessGroup

__all__ = ["EOF", "DriverProcess"]

#: What `DriverProcess.receive` returns once the driver has closed its stdout.
EOF: Final = b""


class DriverProcess:
    """One started driver: its process group, its stdout queue and its stderr tail."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None, tail_lines: int) -> None:
        self.argv = list(argv)
        self.group = ProcessGroup.start(
            self.argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.popen = self.group.popen
        self.pgid = self.group.pgid
        self.lines: queue.Queue[bytes] = queue.Queue()
        self._tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self._readers = [
            threading.Thread(target=self._read_stdout, name=f"driver-{self.pgid}-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"driver-{self.pgid}-stderr", daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    # Each reader owns its stream and closes it at end of file: closing a buffered stream
    # from another thread blocks while the reader holds its lock, and a process the
    # driver started may keep the pipe open long after the driver is gone.

    def _read_stdout(self) -> None:
        stream = cast(IO[bytes], self.popen.stdout)
        with contextlib.suppress(OSError, ValueError), stream:
            for line in stream:
                self.lines.put(line)
        self.lines.put(EOF)

    def _read_stderr(self) -> None:
        stream = cast(IO[bytes], self.popen.stderr)
        with contextlib.suppress(OSError, ValueError), stream:
            for line in stream:
                self._tail.append(line.decode("utf-8", "replace").rstrip()[:1000])

    def stderr_tail(self) -> str:
        """The last lines of stderr; once the driver has exited, its last words included."""
        if self.popen.poll() is not None:
            # They may still be in the pipe; a process the driver started may hold it open, hence the bound.
            self._readers[1].join(1.0)
        return "\n".join(self._tail)

    def send(self, message: Mapping[str, Any]) -> None:
        stdin = cast(IO[bytes], self.popen.stdin)
        try:
            data = json.dumps(message, ensure_ascii=False).encode()
        except UnicodeEncodeError:  # a lone surrogate: written escaped, as PROTOCOL.md P8 has it
            data = json.dumps(message).encode()
        stdin.write(data + b"\n")
        stdin.flush()

    def receive(self, deadline: float) -> bytes:
        """The next non-blank stdout line, ``EOF`` at end of output; TimeoutError past deadline."""
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError from None
            if line == EOF:
                self.lines.put(EOF)
                return EOF
            if line.strip():
                return line

    def exit_status(self, wait: float) -> str:
        """How the process ended, waiting up to ``wait`` s, for messages."""
        code = self.group.wait(wait)
        if code is None:
            return "closed its stdout but is still running"
        return f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"

    def terminate(self, grace: float) -> None:
        """End the whole process group: SIGTERM, then SIGKILL after ``grace`` s; idempotent."""
        self.group.stop(grace, close_stdin_first=False, close_output=False)
        # The readers end with the pipes; a process that escaped the group may hold them open.
        for reader in self._readers:
            reader.join(0.2)
