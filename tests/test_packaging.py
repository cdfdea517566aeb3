"""The distribution as it would be published: ``python -m build`` from a clean tree, installed fresh.

The sdist and the wheel are built from the files a clone has (tracked and not ignored), the
wheel from the sdist, as ``build`` does; each is installed in a fresh virtual environment
with its dependencies from the package index, and certifies the reference. Slow (several
minutes: two environments are installed from nothing), so only ``scripts/test --full`` runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.source_tree import copy_of_tree, tracked_files

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PACKAGES = ("conformance", "mock_servers", "reference_impl")
DIST = "mcp_adaptive_conformance-0.1.0"


def clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "COV_CORE", "COVERAGE_", "VIRTUAL_ENV", "PYTHONPATH"))
    }


def run(*argv: str | Path, cwd: Path, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return done


def package_files() -> set[str]:
    return {name for name in tracked_files() if name.split("/")[0] in PACKAGES}


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel, built from a copy of the tree a clone would have."""
    base = tmp_path_factory.mktemp("dist")
    source = copy_of_tree(base / "source")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(base / "dist"), str(source)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return base / "dist" / f"{DIST}.tar.gz", base / "dist" / f"{DIST}-py3-none-any.whl"


def fresh_venv(path: Path, distribution: Path) -> Path:
    """A new virtual environment with ``distribution`` and its dependencies installed from the index."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300, env=clean_env())
    python = path / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip", cwd=path)
    done = run(python, "-m", "pip", "install", "--quiet", str(distribution), cwd=path)
    assert done.returncode == 0, done.stderr[-3000:]
    return path


def test_the_sdist_holds_the_packages_with_their_data_and_nothing_else(dists: tuple[Path, Path]) -> None:
    sdist, _ = dists
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()}
    metadata = {
        name for name in members if name.startswith(("PKG-INFO", "setup.cfg", "mcp_adaptive_conformance.egg-info/"))
    }
    expected = package_files() | {"pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md"}
    assert members - metadata == expected


def test_the_wheel_holds_every_file_of_the_packages(dists: tuple[Path, Path]) -> None:
    _, wheel = dists
    with zipfile.ZipFile(wheel) as archive:
        names = {name for name in archive.namelist() if not name.startswith(f"{DIST}.dist-info/")}
        entry_points = archive.read(f"{DIST}.dist-info/entry_points.txt").decode()
        requires = archive.read(f"{DIST}.dist-info/METADATA").decode()
    assert names == package_files()
    assert "[pytest11]\nmcp_fleet = mock_servers.pytest_plugin\n" in entry_points
    assert "conformance.plugin" not in entry_points
    assert "Requires-Dist: pytest-asyncio" not in requires.split("Provides-Extra")[0]


HOST_TEST = """
def test_the_fleet_serves_the_host(mcp_fleet):
    fleet = mcp_fleet("seed-example")
    assert sorted(fleet.servers) == ["browser", "data", "github", "linear"]
    assert fleet.ledger.sessions_open() == []
"""


def test_the_wheel_installs_fresh_certifies_the_reference_and_leaves_a_host_project_alone(
    dists: tuple[Path, Path], tmp_path: Path
) -> None:
    _, wheel = dists
    venv = fresh_venv(tmp_path / "venv", wheel)
    installed = run(venv / "bin" / "python", "-m", "pip", "list", "--format=json", cwd=tmp_path).stdout
    assert "pytest-asyncio" not in {p["name"] for p in json.loads(installed)}

    done = run(venv / "bin" / "mcp-conformance", "certify", "--sut-cmd", "reference", "-n", "2", cwd=tmp_path)
    certificate = json.loads((tmp_path / "certificate" / "certificate.json").read_text())
    assert certificate["verdict"] == "conformant", done.stderr[-3000:]
    assert certificate["suite"]["version"] == "0.1.0"

    # A host project that installs the package: strict warnings, the fleet fixture, no conformance options.
    host = tmp_path / "host"
    host.mkdir()
    (host / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (host / "test_host.py").write_text(HOST_TEST)
    tests = run(venv / "bin" / "python", "-m", "pytest", "-q", cwd=host)
    assert tests.returncode == 0 and "1 passed" in tests.stdout, tests.stdout[-3000:] + tests.stderr[-3000:]
    shown = run(venv / "bin" / "python", "-m", "pytest", "--help", cwd=host).stdout
    assert "mcp_fleet_check_cleanup" in shown and "--sut" not in shown and "asyncio_mode" not in shown


def test_the_sdist_installs_fresh_and_certifies_the_reference(dists: tuple[Path, Path], tmp_path: Path) -> None:
    sdist, _ = dists
    venv = fresh_venv(tmp_path / "venv", sdist)

    run(venv / "bin" / "mcp-conformance", "certify", "--sut-cmd", "reference", "--clause", "PRO-1", cwd=tmp_path)
    certificate = json.loads((tmp_path / "certificate" / "certificate.json").read_text())
    assert certificate["verdict"] == "partial"
    statuses = {c["clause"]: c["status"] for c in certificate["clauses"]}  # from the SPEC.md the sdist carried
    assert statuses["PRO-1"] == "pass"
    # The optional profiles' clauses are not applicable: the reference does not claim them by default.
    assert set(statuses.values()) <= {"pass", "not-run", "untested", "not-applicable"}
    assert {c["profile"] for c in certificate["clauses"] if c["status"] == "not-applicable"} <= {"eviction", "refresh"}
