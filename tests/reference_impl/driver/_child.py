"""A stdio driver process for tests: requests in, replies out, each read with a bound."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]


def request(request_id: Any, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode("utf-8")


class Driver:
    """``python -m reference_impl.driver`` in a process group of its own."""

    def __init__(self, *options: str, prefix: Sequence[str] = ()) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        # A file, not a pipe: a driver that writes much to stderr must not block on it.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.process = subprocess.Popen(
            [*prefix, sys.executable, "-m", "reference_impl.driver", *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
        self._buffer = b""

    def write(self, *lines: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(line + b"\n" for line in lines))
        self.process.stdin.flush()

    def read(self, timeout: float = 30) -> dict[str, Any] | None:
        """The next reply, or None when none came within ``timeout`` seconds."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(self, request_id: Any, method: str, params: Any = None, timeout: float = 30) -> dict[str, Any]:
        self.write(request(request_id, method, params))
        reply = self.read(timeout)
        assert reply is not None, f"no reply to {method} within {timeout:g} s"
        assert reply.get("id") == request_id, reply
        return reply

    def result(self, request_id: Any, method: str, params: Any = None, timeout: float = 30) -> Any:
        reply = self.send(request_id, method, params, timeout)
        assert "result" in reply, reply
        return reply["result"]

    def exit_code(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stderr(self) -> bytes:
        """What the driver wrote to stderr so far."""
        self._stderr.seek(0)
        return self._stderr.read()

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()
