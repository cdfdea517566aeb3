"""A raw line channel to a fresh driver process, for checks of the driver protocol itself.

Every other check reaches a driver through :class:`~conformance._driver.DriverSut`, which
frames each request and reads exactly one reply. The protocol checks must write what
``DriverSut`` never writes (a line that is not JSON, a notification, several requests at
once) and see exactly what comes back, on a process of their own so that a driver that dies
of it does not take the shared one along.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO, Any, cast

from conformance._driver_process import EOF, DriverProcess
from conformance._errors import SutStartError

__all__ = ["ChannelError", "RawChannel"]


class ChannelError(Exception):
    """The driver did not give the next line the protocol needs: it exited, hung, or wrote garbage."""


class RawChannel:
    """A driver process started for one protocol check; a context manager that ends it.

    Args:
        argv: the driver's command line.
        env: its environment; None inherits the suite's.
        timeout: seconds each expected line may take.
        grace: seconds the driver gets to exit when the channel closes.
    """

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None, timeout: float, grace: float) -> None:
        self.timeout, self.grace = timeout, grace
        try:
            self._process = DriverProcess(argv, env=env, tail_lines=40)
        except OSError as exc:
            raise SutStartError(f"cannot start driver {list(argv)!r}: {exc.strerror or exc}") from exc

    def __enter__(self) -> RawChannel:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def pid(self) -> int:
        """Process id (and process group id) of the driver."""
        return self._process.pgid

    def stderr_tail(self) -> str:
        """The last lines the driver wrote to stderr."""
        return self._process.stderr_tail()

    def write(self, *lines: bytes) -> None:
        """Write ``lines``, each followed by a line feed, in one write: the driver sees them at once.

        Raises:
            ChannelError: the driver no longer reads its stdin.
        """
        stdin = cast(IO[bytes], self._process.popen.stdin)
        try:
            stdin.write(b"".join(line + b"\n" for line in lines))
            stdin.flush()
        except (OSError, ValueError):
            raise ChannelError(
                f"the driver {self._process.exit_status(self.grace)} and no longer reads its stdin"
            ) from None

    def send(self, *messages: Mapping[str, Any]) -> None:
        """Write each message as one line of JSON, all in one write."""
        self.write(*(json.dumps(message, ensure_ascii=False).encode("utf-8") for message in messages))

    def read(self) -> Any:
        """The next line the driver writes, parsed (blank lines skipped).

        Raises:
            ChannelError: end of output, nothing within the time-out, or a line that is not JSON.
        """
        try:
            line = self._process.receive(time.monotonic() + self.timeout)
        except TimeoutError:
            raise ChannelError(f"the driver wrote nothing within {self.timeout:g} s") from None
        if line == EOF:
            raise ChannelError(f"the driver {self._process.exit_status(self.grace)} without writing another line")
        try:
            return json.loads(line)
        except ValueError:
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            raise ChannelError(f"the driver wrote a line that is not JSON: {text[:200]!r}") from None

    def request(self, request_id: Any, method: str, params: Any = None) -> Any:
        """Send one request and read the next line, whatever it is."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.read()

    def exit_code(self, wait: float) -> int | None:
        """The driver's exit code once it has exited, waiting up to ``wait`` s; None while it runs."""
        try:
            return self._process.popen.wait(wait)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Close the driver's stdin (it exits on end of input), then end its process group."""
        with contextlib.suppress(OSError, ValueError):
            cast(IO[bytes], self._process.popen.stdin).close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.popen.wait(self.grace)
        self._process.terminate(self.grace)
