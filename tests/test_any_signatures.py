"""The counter of imported signatures that pass ``dict[str, Any]``: what it counts, and what it sets apart."""

from __future__ import annotations

from pathlib import Path

from tests.any_signatures import imported_signatures


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_signature_whose_only_any_dict_is_its_arguments_is_counted_and_set_apart(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "reference_impl/__init__.py": "",
            "reference_impl/_impl.py": (
                "from collections.abc import Mapping\n"
                "from typing import Any\n"
                "Json = dict[str, Any]\n"
                "def call(name: str, arguments: Mapping[str, Any]) -> bool: ...\n"
                "def result(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]: ...\n"
                "def load(spec: Json) -> None: ...\n"
                "def config(data: Json) -> None: ...\n"
                "def read(raw: Mapping[str, Any], key: str) -> int: ...\n"
                "def typed(name: str) -> str: ...\n"
            ),
            "reference_impl/user.py": "from reference_impl._impl import call, config, load, read, result, typed\n",
        },
    )
    found = {s.qualname: s for s in imported_signatures(tmp_path)}
    assert set(found) == {"call", "config", "load", "read", "result", "typed"}
    assert {name for name, s in found.items() if s.any_dict} == {"call", "config", "load", "read", "result"}
    # Through an alias too; a return or a parameter of another name is not arbitrary by name.
    assert {name for name, s in found.items() if s.arbitrary_only} == {"call", "load", "read"}
