"""Stdio servers started in milliseconds: one process imports the MCP SDK once and forks each server.

Importing the MCP SDK costs about a second of CPU, and a certification starts dozens of
stdio servers. A `ForkServer` is a process that has made those imports and waits on a Unix
socket. The command a host spawns does not change (``python -m mock_servers stdio …``):
when its environment names a fork server (:data:`FORKSERVER_ENV`, set by
``stdio_command(..., forkserver=...)``), that process, the *launcher*, hands its stdin,
stdout and stderr, its arguments, environment and working directory to the fork server,
which forks a child that takes them over and serves exactly as ``mcp-fleet stdio`` does.
The host's pipes reach the server itself: nothing is relayed.

The launcher lives as long as the server and stands for it: it passes on the signals a
host sends it (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) and ends with the
server's exit status, or by the signal that ended it. A launcher killed outright (SIGKILL)
closes its socket, and the server, which watches it, kills itself: it dies with the process
the host started, as it would have had it been that process. When no fork server answers,
or it gives up before a child takes over, the launcher serves in its own process.
"""

from __future__ import annotations

import array
import contextlib
import importlib
import json
import os
import secrets
import select
import selectors
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Final, NoReturn, TypeAlias

__all__ = [
    "FORKSERVER_ENV",
    "ForkServer",
    "end_beside",
    "fork_beside",
    "launch",
    "preload",
    "private_socket",
    "remove_private_socket",
    "serve",
]

#: The environment variable that points a launcher at a fork server's socket.
FORKSERVER_ENV: Final = "MOCK_SERVERS_FORKSERVER"
#: The signals a launcher passes on to its server.
FORWARDED: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: Seconds a fork server waits for a launcher's request once it has connected.
REQUEST_SECONDS: Final = 5.0
_HEADER: Final = struct.Struct("!I")
_STDIO: Final = (0, 1, 2)
#: The prefix of the private folders made for a fork server's socket.
_FOLDER_PREFIX: Final = "mcp-fork-"
_Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | None
#: What a forked server runs: ``mcp-fleet``'s main, given the launcher's arguments.
Main: TypeAlias = Callable[[Sequence[str]], int]


def private_socket() -> str:
    """A path for a fork server's socket, in a folder of its own that does not exist yet:
    the fork server makes it when it starts listening and removes it when it ends (as
    `remove_private_socket` does).

    Made by the process that listens, the folder exists only while a process that removes
    it does: a caller killed while that process was still starting leaves nothing behind.
    """
    # Short and private: a Unix socket's path has about 100 bytes, and whoever can connect
    # to it can start servers as this user (the folder is made 0700, and a folder of that
    # name made first by anyone else makes the fork server refuse to start).
    folder = Path(tempfile.gettempdir()) / f"{_FOLDER_PREFIX}{secrets.token_hex(8)}"
    return str(folder / "fork.sock")


def remove_private_socket(path: str) -> None:
    """Remove a `private_socket` and its folder, whether or not its fork server did."""
    shutil.rmtree(Path(path).parent, ignore_errors=True)


class ForkServer:
    """A fork server process and its socket, in a private temporary folder.

    Start it before the servers it should fork (a launcher that finds it not yet listening
    serves in its own process); `close` ends it and removes the folder. Servers already
    forked keep serving: each ends with its launcher, not with the fork server.
    """

    def __init__(self) -> None:
        self._path: str | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def path(self) -> str:
        """The socket's path (what :data:`FORKSERVER_ENV` is set to)."""
        if self._path is None:
            raise RuntimeError("the fork server is not started")
        return self._path

    @property
    def pid(self) -> int | None:
        """The fork server's process id (None before `start` and after `close`)."""
        return None if self._process is None else self._process.pid

    def start(self, *, wait: float | None = None) -> ForkServer:
        """Start the process; it listens about a second later, once its imports are done.

        With ``wait``, return only once it listens, or raise `RuntimeError` after ``wait``
        seconds. Without, launchers that come first serve in their own processes.
        """
        if self._process is not None:
            return self
        self._path = private_socket()
        from mock_servers._launch import PACKAGE_ROOT

        measured = {k: v for k, v in os.environ.items() if k.startswith("COVERAGE_PROCESS_")}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "mock_servers", "forkserver", self.path],
            # Its stdin, never written: it ends when this process does, killed or not.
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT, **measured},
        )
        if wait is not None:
            self._wait_listening(wait)
        return self

    def _wait_listening(self, seconds: float) -> None:
        assert self._process is not None and self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], seconds)
        if not ready or self._process.stdout.readline() != b"listening\n":
            self.close()
            raise RuntimeError(f"the fork server did not listen within {seconds:g} s")

    def close(self) -> None:
        """End the fork server and remove its folder."""
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
        path, self._path = self._path, None
        if path is not None:
            remove_private_socket(path)

    def __enter__(self) -> ForkServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# -- the launcher ---------------------------------------------------------------------------------


def launch(path: str) -> None:
    """Hand this process's server to the fork server at ``path``, then stand for it until it ends.

    Returns only when no child took the server over: the caller then serves it itself.
    """
    pending: list[int] = []
    server: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        if server:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server[0], signum)
        else:
            pending.append(signum)

    # Before the handoff: a signal that arrives while the child starts is passed on, not lost.
    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
    except OSError:
        _restore(previous, pending)
        return
    with sock:
        request = json.dumps({"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode("utf-8")
        try:
            fds = array.array("i", _STDIO)
            sock.sendmsg([_HEADER.pack(len(request))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            sock.sendall(request)
            reader = sock.makefile("rb")
            first = reader.readline().split()
        except OSError:
            _restore(previous, pending)
            return
        if len(first) != 2 or first[0] != b"pid":
            # No child took over (the fork server ended, or the child failed before serving).
            _restore(previous, pending)
            return
        server.append(int(first[1]))
        for signum in pending:
            forward(signum, None)
        # Only the server holds the host's pipes now: its exit is the end of file the host reads.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in _STDIO:
            os.dup2(null, fd)
        try:
            last = reader.readline().split()
        except OSError:
            last = []
    _end_as(last)


def _restore(previous: Mapping[signal.Signals, _Handler], pending: list[int]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)
    for pended in pending:
        os.kill(os.getpid(), pended)


def _end_as(status: Sequence[bytes]) -> NoReturn:
    """End this process as the server ended: with its exit code, or by its signal."""
    if len(status) == 2 and status[0] == b"signal":
        signum = int(status[1])
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    # Without a status (the fork server ended first) the server's code is not known.
    os._exit(int(status[1]) if len(status) == 2 and status[0] == b"exit" else 1)


# -- the fork server ------------------------------------------------------------------------------


def serve(path: str, main: Main) -> None:
    """Listen on ``path`` and fork a server for each launcher, until SIGTERM or SIGINT, or
    until its stdin closes when that is a pipe (the process that started it has ended).

    A forked server runs ``main`` (``mcp-fleet``'s) with the launcher's arguments.
    """
    preload()
    listener = _listen(path)
    # Told on stdout, which a `ForkServer` waiting for it reads (servers replace this fd).
    os.write(1, b"listening\n")
    try:
        piped = stat.S_ISFIFO(os.fstat(0).st_mode)
    except OSError:
        piped = False
    _serve(listener, path, os.dup(0) if piped else None, main)


def preload() -> None:
    """Import what every server needs, so that the servers forked from here start with it."""
    for module in ("faker", "mcp.server.lowlevel", "mock_servers._stdio"):
        importlib.import_module(module)


def fork_beside(path: str, main: Main) -> tuple[int, int]:
    """Fork a fork server listening on ``path`` off this process, which must not run threads
    or an event loop yet; return its pid and a descriptor to keep open while it should serve.

    It ends on SIGTERM, or once that descriptor is closed in this process (which dying
    does). It leads a session of its own, so that ending this process's group leaves the
    servers it forked to the hosts that started them.
    """
    preload()
    listener = _listen(path)
    watch, keep = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(keep)
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.close(null)
            _serve(listener, path, watch, main)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(watch)
    listener.close()
    return pid, keep


def end_beside(pid: int, keep: int) -> None:
    """End a fork server `fork_beside` started, and reap it."""
    os.close(keep)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _listen(path: str) -> socket.socket:
    folder = Path(path).parent
    if folder.name.startswith(_FOLDER_PREFIX):
        # A `private_socket`: this process makes its folder, and one that exists already
        # (FileExistsError) is someone else's.
        folder.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(64)
    except BaseException:
        listener.close()
        if folder.name.startswith(_FOLDER_PREFIX):
            remove_private_socket(path)
        raise
    return listener


def _serve(listener: socket.socket, path: str, watch: int | None, main: Main) -> None:
    stop = threading.Event()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signum != signal.SIGCHLD:
            stop.set()

    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    if watch is not None:
        selector.register(watch, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    owned = _Owned(listener, selector, (wake_read, wake_write, *(() if watch is None else (watch,))))
    try:
        while not stop.is_set():
            for key, _ in selector.select():
                if key.fileobj is listener:
                    _fork_one(listener, children, owned, main)
                elif key.fileobj == watch:
                    stop.set()  # only the end of file comes: the process that keeps it open ended
                else:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(wake_read, 512):
                            pass
            _reap(children)
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        folder = Path(path).parent
        if folder.name.startswith(_FOLDER_PREFIX):
            # Made for it (`ForkServer`, `FleetHost`): gone with it, also when whoever made
            # it was killed before it could remove it.
            with contextlib.suppress(OSError):
                folder.rmdir()


@dataclass(frozen=True, slots=True)
class _Owned:
    """What the fork server holds that a forked server must let go of."""

    listener: socket.socket
    selector: selectors.BaseSelector
    fds: tuple[int, ...]


def _fork_one(
    listener: socket.socket,
    children: dict[int, socket.socket],
    owned: _Owned,
    main: Main,
) -> None:
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    fds: list[int] = []
    try:
        conn.settimeout(REQUEST_SECONDS)
        data, ancillary, _flags, _address = conn.recvmsg(_HEADER.size, socket.CMSG_LEN(len(_STDIO) * 4))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[: len(payload) - len(payload) % 4]))
        if len(data) != _HEADER.size or len(fds) != len(_STDIO):
            raise ValueError("a request without its header or its three descriptors")
        (size,) = _HEADER.unpack(data)
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise ValueError("the request ended early")
            body += chunk
        request = json.loads(body)
    except (OSError, ValueError):
        # A launcher that gives up or sends nonsense serves in its own process.
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        _child(conn, fds, request, [*children.values()], owned, main)
    for fd in fds:
        os.close(fd)
    children[pid] = conn


def _reap(children: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        ended = (
            f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.waitstatus_to_exitcode(status)}"
        )
        with contextlib.suppress(OSError):
            conn.sendall(ended.encode() + b"\n")
        conn.close()


def _child(
    conn: socket.socket,
    fds: list[int],
    request: dict[str, object],
    others: list[socket.socket],
    owned: _Owned,
    main: Main,
) -> NoReturn:
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        owned.selector.close()
        owned.listener.close()
        for fd in owned.fds:
            os.close(fd)
        # Another launcher's socket held here would hide that fork server's end from it.
        for other in others:
            other.close()
        for target, fd in zip(_STDIO, fds, strict=True):
            os.dup2(fd, target)
        for fd in fds:
            if fd not in _STDIO:
                os.close(fd)
        argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request["env"].items()})  # type: ignore[attr-defined]
        os.chdir(str(request["cwd"]))
        sys.argv = argv
        conn.settimeout(None)
        conn.sendall(f"pid {os.getpid()}\n".encode())
        threading.Thread(target=_die_with_launcher, args=(conn,), name="launcher-watch", daemon=True).start()
        code = main(argv[1:])
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _die_with_launcher(conn: socket.socket) -> None:
    """Kill this server once its launcher is gone: the host killed the process it started."""
    with contextlib.suppress(OSError):
        while conn.recv(64):
            pass
    os.kill(os.getpid(), signal.SIGKILL)
