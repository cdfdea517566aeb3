"""scripts/mutation: what its fingerprint of the suite may leave out."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    # By path: mypy checks scripts/mutation.py as a module of its own, not as scripts.mutation.
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MUTATION = _load()
CERTIFY_ONLY: tuple[str, ...] = MUTATION.CERTIFY_ONLY

# Collect the shipped suite with the plugin, as a mutant's run does, and name every module
# of the package that got imported.
PROBE = """
import sys, pytest

class Loaded:
    def pytest_sessionfinish(self):
        print("LOADED", *sorted(m for m in sys.modules if m.split(".")[0] == "conformance"))

pytest.main(["-p", "conformance.plugin", "-c", "conformance/suite/pytest.ini", "--sut", "reference",
             "--collect-only", "-q", "-p", "no:cacheprovider", "conformance/suite"], plugins=[Loaded()])
"""


def test_the_modules_the_fingerprint_leaves_out_exist() -> None:
    assert all((ROOT / "conformance" / name).is_file() for name in CERTIFY_ONLY)


@pytest.mark.e2e
def test_the_suite_imports_none_of_the_modules_the_fingerprint_leaves_out() -> None:
    """A verdict survives a change to these only while a mutant's run never meets them."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    loaded = next(line.split()[1:] for line in out.splitlines() if line.startswith("LOADED"))

    assert "conformance.suite._wire" in loaded  # the probe saw the suite
    assert not {f"conformance.{name.removesuffix('.py')}" for name in CERTIFY_ONLY} & set(loaded)


@pytest.mark.e2e
def test_a_pool_stopped_midway_kills_the_processes_it_started() -> None:
    """Each driver run leads a session of its own: stopping the script must not orphan them."""
    started: list[subprocess.Popen[bytes]] = []

    def start(slot: int, item: int) -> subprocess.Popen[bytes]:
        started.append(subprocess.Popen(["sleep", "60"], start_new_session=True))
        return started[-1]

    def budget(item: int) -> float:
        raise KeyboardInterrupt  # as Ctrl-C would, once both runs are under way

    with pytest.raises(KeyboardInterrupt):
        MUTATION._pool([1, 2], {}, 2, start, lambda *args: None, budget)

    assert len(started) == 2
    assert all(proc.poll() is not None for proc in started)
