"""A tiny driver speaking protocol 1, with switchable ways to misbehave.

Started as ``python fake_driver.py [MODE]``. Modes decide how it starts:
``good`` (default), ``silent`` (never answers initialize), ``exit-at-start`` (exits at
once), ``bad-initialize`` (answers initialize with a wrong shape), ``protocol-2`` (claims
protocol version 2), ``stubborn`` (ignores ``shutdown`` and SIGTERM), ``crash-on-open``
(every ``run.open`` crashes it), ``hang-on-open`` (every ``run.open`` hangs), ``escape``
(starts a process in a new session at start and leaves it running), ``hopper-and-zombies``
(starts a daemon that, in a new session each time, forks and exits again and again and
ignores SIGTERM, then leaves an orphan that ends 50 ms later every 10 ms while it runs).

When the environment names a file in ``FAKE_DRIVER_PIDS``, the driver appends its pid (and
the pid of any process it starts) to it, one per line.

Once running, the ``userMessage`` of ``run.open`` picks what happens to that request:
``crash``, ``hang``, ``garbage``, ``wrong-id``, ``spawn-and-hang``, ``method-error``,
``outcome:KIND`` (a -32000 error of that kind), ``bad-definitions`` (a normal run whose
definitions break the protocol's schema: an input schema that is a list), or anything else
for a normal run. Each misbehaviour first writes a line saying so to stderr.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def hang() -> None:
    threading.Event().wait()


def error(request_id: object, code: int, message: str, kind: str | None = None) -> None:
    data = {"kind": kind, "message": message} if kind else None
    payload: dict[str, Any] = {"code": code, "message": message}
    if data:
        payload["data"] = data
    send({"jsonrpc": "2.0", "id": request_id, "error": payload})


def note_pid(pid: int) -> None:
    path = os.environ.get("FAKE_DRIVER_PIDS")
    if path:
        with open(path, "a") as pids:
            pids.write(f"{pid}\n")


def hop() -> None:
    """A daemon that is never the same process for long: fork, exit, again, each in a new session.

    Every incarnation holds a shared lock on the file ``HOP_LOCK`` names, if any, so that a
    test can tell that none is left: an exclusive lock succeeds.

    Nothing but SIGKILL stops it, so if what should reap it dies first (a test run killed
    mid-test), it would eat the machine for good: it ends itself once the process named by
    ``HOP_GUARDIAN`` is gone, and after ``HOP_LIFETIME`` seconds (300 by default) whatever
    happens.
    """
    if os.fork() != 0:
        return
    if os.environ.get("HOP_LOCK"):
        lock = os.open(os.environ["HOP_LOCK"], os.O_RDWR | os.O_CREAT)
        fcntl.flock(lock, fcntl.LOCK_SH)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    guardian = int(os.environ.get("HOP_GUARDIAN", "0"))
    deadline = time.monotonic() + float(os.environ.get("HOP_LIFETIME", "300"))
    while time.monotonic() < deadline and (guardian == 0 or _alive(guardian)):
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        time.sleep(0.002)
    os._exit(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_orphans() -> None:
    """Orphans that end at once, re-parented to whoever reaps for the tree (PR_SET_CHILD_SUBREAPER)."""
    while True:
        subprocess.run(["sh", "-c", "(sleep 0.05 &)"], check=False)
        time.sleep(0.01)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "good"
    log(f"fake driver {mode} started, pid {os.getpid()}")
    note_pid(os.getpid())
    if mode == "escape":
        sleeper = subprocess.Popen(
            [sys.executable, "-c", "import threading; threading.Event().wait()"], start_new_session=True
        )
        note_pid(sleeper.pid)
    if mode == "hopper-and-zombies":
        hop()  # before any thread: a fork copies only the thread that forks
        threading.Thread(target=make_orphans, daemon=True).start()
    if mode == "exit-at-start":
        log("fatal: no configuration found")
        sys.exit(7)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    runs: dict[str, dict[str, Any]] = {}
    for line in sys.stdin:
        request = json.loads(line)
        request_id, method, params = request["id"], request["method"], request.get("params", {})
        if method == "initialize":
            if mode == "silent":
                log("thinking about initialize")
                continue
            if mode == "bad-initialize":
                send({"jsonrpc": "2.0", "id": request_id, "result": {"name": 1}})
                continue
            result: dict[str, Any] = {"name": "fake", "version": "0.0.1", "profiles": ["core"]}
            if mode == "protocol-2":
                result["protocolVersion"] = "2"
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "run.open":
            behaviour = params.get("userMessage", "")
            if mode in ("crash-on-open", "hang-on-open"):
                behaviour = mode.removesuffix("-on-open")
            if behaviour == "crash":
                log("boom: run.open crashed")
                sys.exit(3)
            elif behaviour == "hang":
                log("stuck in run.open")
                hang()
            elif behaviour == "garbage":
                log("about to print garbage")
                sys.stdout.write("this is not json\n")
                sys.stdout.flush()
            elif behaviour == "wrong-id":
                log("answering the wrong id")
                send({"jsonrpc": "2.0", "id": request_id + 100, "result": {"runId": "r"}})
            elif behaviour == "spawn-and-hang":
                child = subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"])
                log(f"spawned child pid {child.pid}")
                hang()
            elif behaviour == "method-error":
                error(request_id, -32601, "method not found")
            elif behaviour.startswith("outcome:"):
                kind = behaviour.removeprefix("outcome:")
                error(request_id, -32602 if kind in ("invalid_params", "unknown_run") else -32000, f"no: {kind}", kind)
            else:
                run_id = f"run-{len(runs) + 1}"
                runs[run_id] = params
                send({"jsonrpc": "2.0", "id": request_id, "result": {"runId": run_id}})
        elif method in ("run.definitions", "run.request", "run.call", "run.close"):
            run = runs.get(params.get("runId", ""))
            if run is None:
                error(request_id, -32602, f"unknown run {params.get('runId')!r}", "unknown_run")
            elif method == "run.definitions":
                tools = run.get("baseTools", [])
                if run.get("userMessage") == "bad-definitions":
                    log("answering definitions with a list for an input schema")
                    tools = [{**tool, "inputSchema": ["object"]} for tool in tools]
                send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
            elif method == "run.request":
                tools = run.get("baseTools", []) + params.get("extraTools", [])
                if len(tools) > 128:
                    error(request_id, -32000, f"{len(tools)} definitions", "request_too_large")
                else:
                    send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
            elif method == "run.call":
                text = f"refused {params['name']}"
                result = {"content": [{"type": "text", "text": text}], "isError": True}
                send({"jsonrpc": "2.0", "id": request_id, "result": result})
            else:
                del runs[params["runId"]]
                send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
            if mode == "stubborn":
                log("not shutting down")
                continue
            return
        else:
            error(request_id, -32601, f"unknown method {method}")


if __name__ == "__main__":
    main()
