"""`FleetHost`: a long-lived ``mcp-fleet host`` process, and a client for its control API.

A test session starts one host process and serves many generated fleets from it: each
``add_fleet`` sends a spec to the host (``POST /_fleet/fleets``) and gets the URL of every
server back. The process leads its own process group and watches its stdin, so it is
ended with everything it started, and never outlives this process. Asked to, it also forks a
fork server for stdio servers off itself (``FleetHost.spawn(forkserver=True)``), which ends
with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mock_servers._control import SESSION_IDLE_SECONDS, ChangeApplied, FleetUrls
from mock_servers._errors import HostError
from mock_servers._forkserver import private_socket, remove_private_socket
from mock_servers._launch import PACKAGE_ROOT
from mock_servers._processes import ProcessGroup, pid_alive, wait_for_pids
from mock_servers._spec import CatalogChange, FleetSpec, change_to_dict, spec_to_dict
from mock_servers._spec_changes import as_change
from mock_servers._spec_format import ChangeDocument
from mock_servers._spec_reader import resolve_spec

__all__ = ["FleetHost"]


class FleetHost:
    """A long-lived fleet host subprocess and a client for its control API.

    Start it once (``with FleetHost.start() as host:``), then add fleets to it at any
    time; each ``add_fleet`` returns the URL of every server of that fleet. The process
    ends when the ``with`` block exits, when `close` is called, or when this process
    ends (it watches its stdin), so it is never left behind.
    """

    def __init__(self, group: ProcessGroup, url: str, token: str, forkserver: _Forks | None = None) -> None:
        self.group = group
        self.url = url
        self.token = token
        self._forks = forkserver
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def process(self) -> subprocess.Popen[bytes]:
        """The host process."""
        return self.group.popen

    @property
    def forkserver(self) -> str | None:
        """The socket of the fork server the host forked (``spawn(forkserver=True)``), for
        ``stdio_command(..., forkserver=...)``; None without one."""
        return None if self._forks is None else self._forks.path

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        *,
        timeout: float = 60.0,
        port: int = 0,
        session_idle_seconds: float = SESSION_IDLE_SECONDS,
        forkserver: bool = False,
    ) -> Iterator[FleetHost]:
        """Spawn ``python -m mock_servers host`` and wait for its address.

        Raises:
            HostError: the process did not report an address within ``timeout`` seconds.
        """
        host = cls.spawn(timeout=timeout, port=port, session_idle_seconds=session_idle_seconds, forkserver=forkserver)
        try:
            yield host
        finally:
            host.close()

    @classmethod
    def spawn(
        cls,
        *,
        timeout: float = 60.0,
        port: int = 0,
        session_idle_seconds: float = SESSION_IDLE_SECONDS,
        forkserver: bool = False,
    ) -> FleetHost:
        """Like `start`, for callers that manage the lifetime themselves (call `close`).

        With ``forkserver``, the host also forks a fork server for stdio servers off itself
        (`FleetHost.forkserver`): it has imported the MCP SDK already, so the fork server
        costs next to nothing where a `ForkServer` of its own costs a second and more.
        """
        return cls.launch(port=port, session_idle_seconds=session_idle_seconds, forkserver=forkserver).connect(timeout)

    @classmethod
    def launch(
        cls, *, port: int = 0, session_idle_seconds: float = SESSION_IDLE_SECONDS, forkserver: bool = False
    ) -> _Launched:
        """Start the process without waiting for it: several hosts then start side by side."""
        # Read only when the host fails to start. A file without a name (unlinked as it is
        # made): nothing is left behind by a caller killed before it stops the host, which
        # writes to it for as long as it runs.
        log = tempfile.TemporaryFile(prefix="mcp-fleet-host-", suffix=".log")  # noqa: SIM115
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        argv = [sys.executable, "-m", "mock_servers", "host", "--port", str(port)]
        argv += ["--session-idle", repr(float(session_idle_seconds))]
        socket = private_socket() if forkserver else None
        if socket is not None:
            argv += ["--forkserver", socket]
        try:
            group = ProcessGroup.start(argv, env=env, stderr=log)
        except BaseException:
            log.close()
            _remove(socket)
            raise
        return _Launched(group, log, socket)

    def add_fleet(
        self,
        spec: FleetSpec | str | os.PathLike[str],
        ledger_path: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
    ) -> FleetUrls:
        """Serve a fleet (a `FleetSpec`, preset name or spec file); returns server id → URL.

        Raises:
            HostError: the host refused (name taken) or is gone.
        """
        body: dict[str, Any] = {"spec": spec_to_dict(resolve_spec(spec)), "name": name}
        if ledger_path is not None:
            body["ledger"] = str(Path(ledger_path).resolve())
        answer = self._request("POST", "/_fleet/fleets", body)
        return FleetUrls(answer["fleet"], answer["servers"])

    def remove_fleet(self, fleet: str | FleetUrls) -> None:
        """Stop serving a fleet, given its name or the `FleetUrls` that `add_fleet` returned."""
        name = fleet.fleet if isinstance(fleet, FleetUrls) else fleet
        self._request("DELETE", f"/_fleet/fleets/{name}", None)

    def change_tools(
        self, fleet: str | FleetUrls, server_id: str, change: CatalogChange | ChangeDocument
    ) -> ChangeApplied:
        """Change a server's tools now and send its notifications; ``{"catalog", "tools", "notified"}``.

        ``change`` is a `CatalogChange` or its spec form (``{"remove": ["x"], "notify": 3}``);
        ``catalog`` in the answer is the version the change made, which `await_listing` waits for.

        Raises:
            SpecError: ``change`` is not a valid change.
            HostError: no such fleet or server, or an edit that does not apply to its tools.
        """
        name = fleet.fleet if isinstance(fleet, FleetUrls) else fleet
        body = change_to_dict(as_change(change))
        answer: ChangeApplied = self._request("POST", f"/_fleet/fleets/{name}/servers/{server_id}/changes", body)
        return answer

    def await_listing(self, fleet: str | FleetUrls, server_id: str, after: int, timeout: float = 10.0) -> str:
        """Wait until a client has listed the server's tools since catalog version ``after``.

        Returns ``complete`` (every page, from page 0, at that version or later), ``error``
        (a ``tools/list`` refused by ``list_error`` or left hanging by ``list_hang``) or ``timeout``, so that a test waits for
        a host to re-list instead of sleeping.
        """
        name = fleet.fleet if isinstance(fleet, FleetUrls) else fleet
        path = f"/_fleet/fleets/{name}/servers/{server_id}/listing?after={int(after)}&timeout={float(timeout)!r}"
        answer: dict[str, Any] = self._request("GET", path, None, timeout=timeout + 30)
        return str(answer["outcome"])

    def close(self, timeout: float = 10.0) -> None:
        """Stop the host process: close its stdin (it removes its fleets and exits), then signal its group."""
        self.group.stop(timeout)
        if self._forks is not None:
            self._forks.close(timeout)

    def _request(self, method: str, path: str, body: Any, *, timeout: float = 120) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("X-Fleet-Token", self.token)
        request.add_header("Content-Type", "application/json")
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError, KeyError, TypeError):
                detail = json.loads(detail)["error"]
            raise HostError(f"fleet host refused {method} {path}: {detail}") from None
        except OSError as exc:
            raise HostError(f"fleet host at {self.url} is unreachable: {exc}") from None


class _Launched:
    """A host process that was started and has not yet reported its address."""

    def __init__(self, group: ProcessGroup, log: IO[bytes], forkserver: str | None = None) -> None:
        self.group = group
        self.log = log
        self.forkserver = forkserver

    def connect(self, timeout: float = 60.0) -> FleetHost:
        """Wait for the host's address line.

        Raises:
            HostError: no address within ``timeout`` seconds; the host is stopped and its log quoted.
        """
        line = _read_line(self.group.popen, timeout)
        try:
            info = json.loads(line)
            forks = None if self.forkserver is None else _Forks(self.forkserver, info["forkserver"])
            host = FleetHost(self.group, info["url"], info["token"], forks)
        except (ValueError, KeyError, TypeError):
            self.group.stop(0.5)
            self.log.seek(0)
            text = self.log.read().decode(errors="replace")[-2000:]
            self.close(0.5)
            raise HostError(f"the fleet host did not start (first line {line!r}); its log ends with:\n{text}") from None
        self.log.close()
        return host

    def close(self, timeout: float = 10.0) -> None:
        """Stop the process, whether or not it reported its address."""
        self.group.stop(timeout)
        self.log.close()
        _remove(self.forkserver)


@dataclass(frozen=True, slots=True)
class _Forks:
    """The fork server a host forked: its socket and its pid."""

    path: str
    pid: int

    def close(self, timeout: float) -> None:
        # It ends with the host; seen to have ended, so that nothing of the host outlives close.
        wait_for_pids([self.pid], timeout)
        if pid_alive(self.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        _remove(self.path)


def _remove(socket: str | None) -> None:
    if socket is not None:
        remove_private_socket(socket)


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    result: list[bytes] = []

    def read() -> None:
        assert process.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            result.append(process.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0].decode(errors="replace").strip() if result else ""
