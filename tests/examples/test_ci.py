"""``examples/ci``: the CI script installs the suite from a source the team controls and always leaves a certificate.

The script runs as a CI job would, from a directory of its own, with a copy of this repository as
``CONFORMANCE_PACKAGE``. Its virtual environment is a fresh one that sees this environment's
installed packages (so that installing the suite downloads nothing but the build backend);
the package itself is built and installed from the path. A fresh environment installed from
nothing but a built wheel or sdist is tested in ``tests/test_packaging.py`` (slow).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from tests.source_tree import ROOT, copy_of_tree

SCRIPT = ROOT / "examples" / "ci" / "certify.sh"
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"


def run_script(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # Nothing of this test run leaks into the job: no coverage or pytest hooks, no virtualenv.
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "COV_CORE", "COVERAGE_", "VIRTUAL_ENV", "CONFORMANCE_", "SUT_", "GITHUB_"))
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=cwd,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def certificate(folder: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((folder / "certificate.json").read_text(encoding="utf-8"))
    return document


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment without pip or the suite, that sees this one's packages."""
    path = tmp_path_factory.mktemp("ci") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    [site] = path.glob("lib/python*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def installed(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The script run with a copy of this repository as the source (pip builds a path in place,
    leaving ``build/`` behind): the suite installed into ``venv``, one clause certified."""
    job = tmp_path_factory.mktemp("job")
    source = copy_of_tree(tmp_path_factory.mktemp("source"))
    done = run_script(
        job,
        "--clause",
        "RNK-9.1",
        "-n",
        "1",
        CONFORMANCE_PACKAGE=str(source),
        SUT_CMD="reference",
        VENV=str(venv),
        GITHUB_STEP_SUMMARY=str(job / "summary.md"),
    )
    return job, done


@pytest.mark.slow
@pytest.mark.e2e
def test_the_script_installs_the_suite_from_a_local_path_and_certifies(
    venv: Path, installed: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    job, done = installed

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = certificate(job / "certificate")
    assert (document["verdict"], document["exit_code"]) == ("partial", 0)
    assert document["suite"]["package"] == "mcp-adaptive-conformance"
    assert {"certificate.md", "certificate.html", "badge.svg"} <= {p.name for p in (job / "certificate").iterdir()}
    assert (job / "summary.md").read_text(encoding="utf-8").startswith("# ")
    # The suite that ran is the one installed into the job's environment, not this checkout.
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import conformance; print(conformance.__file__)"],
        cwd=job,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(venv)), where


@pytest.mark.e2e
def test_a_suite_that_cannot_be_installed_leaves_an_error_certificate_with_the_reason(
    venv: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-checkout"
    done = run_script(tmp_path, CONFORMANCE_PACKAGE=str(missing), SUT_CMD="reference", VENV=str(venv))

    assert done.returncode == 2
    document = certificate(tmp_path / "certificate")
    assert (document["verdict"], document["exit_code"], document["stage"]) == ("error", 2, "install")
    assert document["why"][0].startswith(f"pip could not install {missing}: ERROR:")
    assert document["package"] == str(missing)
    assert document["log"] == "install.log"
    assert (tmp_path / "certificate" / "install.log").is_file()
    assert "**Why:** pip could not install" in (tmp_path / "certificate" / "certificate.md").read_text()


@pytest.mark.e2e
def test_a_certification_that_writes_nothing_leaves_an_error_certificate_not_the_previous_one(
    venv: Path, installed: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    folder = tmp_path / "certificate"
    folder.mkdir()
    (folder / "certificate.json").write_text('{"verdict": "conformant"}')  # a previous run's
    (folder / "badge.svg").write_text("<svg/>")

    # Installed already (by name, as from an index): pip finds it satisfied and downloads nothing.
    sut = str(tmp_path / "no-such-driver")
    done = run_script(tmp_path, CONFORMANCE_PACKAGE="mcp-adaptive-conformance", SUT_CMD=sut, VENV=str(venv))

    assert done.returncode == 2
    document = certificate(folder)
    assert (document["verdict"], document["stage"], document["log"]) == ("error", "certify", "certify.log")
    assert document["why"][0].startswith("mcp-conformance certify exited with status 2 and wrote no certificate: ")
    assert "did not start" in document["why"][0]
    assert document["sut"] == f"--sut-cmd {tmp_path / 'no-such-driver'}"
    assert not (folder / "badge.svg").exists()


@pytest.mark.e2e
def test_without_a_source_to_install_from_the_error_certificate_says_what_to_give(tmp_path: Path) -> None:
    done = run_script(tmp_path, SUT_CMD="reference", VENV=str(tmp_path / "venv"))

    assert done.returncode == 2
    document = certificate(tmp_path / "certificate")
    assert (document["verdict"], document["stage"], document["log"]) == ("error", "configure", None)
    assert document["why"][0].startswith("CONFORMANCE_PACKAGE is not set: give the source to install the suite from")
    assert not (tmp_path / "venv").exists()


def test_the_workflow_runs_the_script_with_the_source_and_keeps_the_certificate_whatever_happens() -> None:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    [job] = workflow["jobs"].values()
    assert set(workflow["env"]) >= {"CONFORMANCE_PACKAGE", "SUT_CMD"}
    assert "@ git+https://" in workflow["env"]["CONFORMANCE_PACKAGE"]
    steps = {step.get("name"): step for step in job["steps"]}
    assert steps["Certify"]["run"].startswith("bash .github/mcp-conformance/certify.sh")
    upload = steps["Upload the certificate"]
    assert (upload["if"], upload["with"]["path"]) == ("always()", "certificate/")
    # The script the workflow runs is this one, copied: the workflow says where from.
    assert "examples/ci/certify.sh" in WORKFLOW.read_text(encoding="utf-8")
