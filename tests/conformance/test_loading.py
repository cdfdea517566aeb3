from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from conformance import SutStartError, UsageError, driver_argv, load_sut


class Complete:
    async def initialize(self) -> Any: ...
    async def open_run(self, params: Any) -> Any: ...
    async def definitions(self, run_id: Any) -> Any: ...
    async def call(self, run_id: Any, name: Any, arguments: Any) -> Any: ...
    async def request(self, run_id: Any, extra_tools: Any = ()) -> Any: ...
    async def close_run(self, run_id: Any) -> Any: ...
    async def aclose(self) -> Any: ...


class Incomplete:
    async def initialize(self) -> Any: ...


def failing_factory() -> Complete:
    raise RuntimeError("no licence key")


@pytest.fixture
def factories(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("sut_factories")
    module.Complete = Complete  # type: ignore[attr-defined]
    module.Incomplete = Incomplete  # type: ignore[attr-defined]
    module.failing = failing_factory  # type: ignore[attr-defined]
    module.not_callable = 42  # type: ignore[attr-defined]
    module.nested = types.SimpleNamespace(make=Complete)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sut_factories", module)
    return module


@pytest.mark.usefixtures("factories")
@pytest.mark.parametrize("spec", ["sut_factories:Complete", "sut_factories:nested.make"])
def test_a_factory_spec_gives_the_object_the_factory_returns(spec: str) -> None:
    assert isinstance(load_sut(spec), Complete)


@pytest.mark.usefixtures("factories")
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sut_factories", "--sut expects 'module:factory' (or 'reference'), got 'sut_factories'"),
        (":Complete", "--sut expects 'module:factory'"),
        ("sut_factories:a:b", "--sut expects 'module:factory'"),
        ("no_such_module_here:make", "no module named 'no_such_module_here'"),
        ("sut_factories:missing", "module 'sut_factories' has no attribute 'missing'"),
        ("sut_factories:not_callable", "'not_callable' is int, not a callable factory"),
        ("sut_factories:Incomplete", "lacks the adapter method(s) open_run, definitions, call, request, close_run"),
    ],
)
def test_a_bad_spec_is_a_usage_error_saying_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        load_sut(spec)

    assert message in str(refused.value)


@pytest.mark.usefixtures("factories")
def test_a_factory_that_raises_is_a_start_error() -> None:
    with pytest.raises(SutStartError, match=r"failing\(\) raised RuntimeError: no licence key"):
        load_sut("sut_factories:failing")


def test_a_module_that_fails_to_import_is_a_start_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sut_with_broken_import.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.delitem(sys.modules, "sut_with_broken_import", raising=False)

    with pytest.raises(SutStartError, match="importing 'sut_with_broken_import' failed: No module named"):
        load_sut("sut_with_broken_import:make")


def test_reference_names_the_reference_driver_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("reference_impl.driver")
    module.ReferenceDriver = Complete  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "reference_impl.driver", module)

    assert isinstance(load_sut("reference"), Complete)


def test_reference_as_a_command_runs_the_reference_driver_module() -> None:
    assert driver_argv("reference") == [sys.executable, "-m", "reference_impl.driver"]


def test_a_command_is_split_like_a_shell_would_without_one() -> None:
    assert driver_argv("node 'my driver.js' --flag=$HOME") == ["node", "my driver.js", "--flag=$HOME"]


@pytest.mark.parametrize(("command", "message"), [("", "--sut-cmd is empty"), ("node 'unterminated", "quotation")])
def test_a_command_that_cannot_be_split_is_a_usage_error(command: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        driver_argv(command)
