"""The repository's files as a clone has them, and a copy of them to build from.

Building or installing from the checkout itself would leave setuptools' ``build/`` and
``*.egg-info`` in it; tests that build the distribution work on a copy instead.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tracked_files() -> list[str]:
    """The files git tracks, and the untracked ones it does not ignore (a clone's tree, with today's edits)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()]


def copy_of_tree(destination: Path) -> Path:
    """``destination``, holding a copy of :func:`tracked_files`."""
    for name in tracked_files():
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination / name)
    return destination
