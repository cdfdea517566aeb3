"""Turning ``--sut`` and ``--sut-cmd`` values into a system under test."""

from __future__ import annotations

import importlib
import shlex
import sys
from typing import Final, cast

from conformance._driver import DriverSut
from conformance._errors import SutStartError, UsageError
from conformance._sut import ADAPTER_METHODS, SystemUnderTest

__all__ = ["REFERENCE", "driver_argv", "load_sut", "start_driver"]

#: The alias that names the bundled reference implementation in both modes.
REFERENCE: Final = "reference"
_REFERENCE_FACTORY: Final = "reference_impl.driver:ReferenceDriver"
_REFERENCE_MODULE: Final = "reference_impl.driver"


def load_sut(spec: str) -> SystemUnderTest:
    """An in-process SUT from ``module:factory`` (the factory is called with no arguments).

    ``reference`` stands for the bundled reference implementation.

    Raises:
        UsageError: the spec is malformed, the module or factory cannot be found, or the
            factory returns something that lacks the adapter methods.
        SutStartError: the module fails to import or the factory raises.
    """
    target = _REFERENCE_FACTORY if spec == REFERENCE else spec
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr or ":" in attr:
        raise UsageError(f"--sut expects 'module:factory' (or {REFERENCE!r}), got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise UsageError(
                f"--sut {spec!r}: no module named {module_name!r} (is it installed or on sys.path?)"
            ) from exc
        raise SutStartError(f"--sut {spec!r}: importing {module_name!r} failed: {exc}") from exc
    except Exception as exc:
        raise SutStartError(f"--sut {spec!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from exc
    factory: object = module
    for part in attr.split("."):
        try:
            factory = getattr(factory, part)
        except AttributeError:
            raise UsageError(f"--sut {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    if not callable(factory):
        raise UsageError(f"--sut {spec!r}: {attr!r} is {type(factory).__name__}, not a callable factory")
    try:
        adapter = factory()
    except Exception as exc:
        raise SutStartError(f"--sut {spec!r}: {attr}() raised {type(exc).__name__}: {exc}") from exc
    missing = [name for name in ADAPTER_METHODS if not callable(getattr(adapter, name, None))]
    if missing:
        raise UsageError(
            f"--sut {spec!r}: {attr}() returned {type(adapter).__name__}, which lacks the adapter "
            f"method(s) {', '.join(missing)} of conformance.SystemUnderTest"
        )
    return cast(SystemUnderTest, adapter)


def driver_argv(command: str) -> list[str]:
    """Split a ``--sut-cmd`` value into an argument list (no shell); ``reference`` is expanded.

    Raises:
        UsageError: the command is empty or its quoting is broken.
    """
    if command.strip() == REFERENCE:
        return [sys.executable, "-m", _REFERENCE_MODULE]
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--sut-cmd {command!r}: {exc}") from None
    if not argv:
        raise UsageError("--sut-cmd is empty; give the command that starts your driver")
    return argv


def start_driver(command: str, *, timeout: float = 30.0) -> DriverSut:
    """Start a driver from a ``--sut-cmd`` value and complete ``initialize``.

    Raises:
        UsageError: the command cannot be split.
        SutStartError: it does not start or does not complete ``initialize``.
    """
    driver = DriverSut(driver_argv(command), timeout=timeout)
    driver.start()
    return driver
