"""Crash tests: whatever a spec file holds, reading it gives a FleetSpec or a clean error, never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given

from mock_servers import FleetSpec, SpecError, load_spec
from mock_servers._cli import main
from tests.fuzz import EXAMPLES, fuzzing
from tests.mock_servers.spec_documents import spec_files


def written(suffix: str, data: bytes, folder: str) -> Path:
    path = Path(folder) / f"fleet{suffix}"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("examples", EXAMPLES)
def test_reading_any_spec_file_gives_a_spec_or_a_spec_error(examples: int) -> None:
    @fuzzing(4 * examples)
    @given(spec_files())
    def check(file: tuple[str, bytes]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = written(*file, folder)
            try:
                spec = load_spec(path)
            except SpecError as exc:
                assert exc.problems and all(p.source == str(path) for p in exc.problems)
                assert all(": expected " in line for line in str(exc).splitlines())
            else:
                assert isinstance(spec, FleetSpec)

    check()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_the_cli_exits_0_or_2_with_a_message_and_never_a_traceback(examples: int) -> None:
    @fuzzing(2 * examples)
    @given(spec_files())
    def check(file: tuple[str, bytes]) -> None:
        _config_of(file)

    check()


def _config_of(file: tuple[str, bytes]) -> None:
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as folder:
        path = written(*file, folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["config", str(path), "--for", "cursor"])
        ids = [s.id for s in load_spec(path).servers] if code == 0 else []
    assert "Traceback" not in err.getvalue()
    if code == 0:
        assert list(json.loads(out.getvalue())["mcpServers"]) == ids
    else:
        assert code == 2
        lines = err.getvalue().splitlines()
        assert lines and all(line.startswith(f"mcp-fleet: invalid spec: {path}") for line in lines)
