"""The three packages' imports: no circles, no private names across modules, dependencies one way."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.import_graph import Import, circles, foreign_private, imports, modules, private_names

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conformance", "mock_servers", "reference_impl")
FOUND = modules(ROOT, PACKAGES)
MADE = imports(FOUND)

# Which of the three packages each may import: reference_impl knows nothing of the others,
# mock_servers imports neither, conformance serves mock_servers fleets and reaches the
# reference only by name.
ALLOWED = {"reference_impl": set(), "mock_servers": set(), "conformance": {"mock_servers"}}


def _listed(found: list[Import] | list[list[Import]]) -> str:
    return "\n".join(" | ".join(map(str, i)) if isinstance(i, list) else str(i) for i in found)


def test_the_packages_are_read_whole() -> None:
    assert {"conformance._driver", "conformance.suite._predictions", "mock_servers", "reference_impl.driver"} <= set(
        FOUND
    )
    assert any(i.module == "conformance.plugin" and i.target == "conformance._session" for i in MADE)


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert not circles(FOUND, MADE), _listed(circles(FOUND, MADE))


def test_no_module_imports_a_private_name_of_another() -> None:
    assert not private_names(MADE), _listed(private_names(MADE))


def test_no_module_reaches_into_another_package_through_a_private_module() -> None:
    assert not foreign_private(MADE), _listed(foreign_private(MADE))


def test_the_packages_depend_one_way() -> None:
    crossing = [
        i
        for i in MADE
        if (theirs := i.target.partition(".")[0]) in ALLOWED
        and theirs != (ours := i.module.partition(".")[0])
        and theirs not in ALLOWED[ours]
    ]
    assert not crossing, _listed(crossing)


def test_only_the_benchmarks_tests_import_the_benchmarks() -> None:
    tests = modules(ROOT, ["tests"])
    reaching = [
        i
        for i in imports(tests)
        if i.target.partition(".")[0] == "benchmarks" and not i.module.startswith("tests.benchmarks")
    ]
    assert not reaching, _listed(reaching)


def test_no_test_module_is_imported_as_a_library_of_helpers() -> None:
    tests = modules(ROOT, ["tests"])
    borrowing = [
        i
        for i in imports(tests)
        if i.target.startswith("tests.") and i.target.rpartition(".")[2].startswith("test_") and i.target != i.module
    ]
    assert not borrowing, _listed(borrowing)


# The checks themselves, on packages made for them.


def _package(root: Path, files: dict[str, str]) -> list[Import]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return imports(modules(root, {name.partition("/")[0] for name in files}))


def test_an_import_inside_a_function_closes_a_circle_and_one_under_type_checking_does_not(tmp_path: Path) -> None:
    made = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import B\n",
            "pkg/b.py": "def f():\n    from pkg import a\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n",
            "pkg/d.py": "from . import c\n",
        },
    )
    found = modules(tmp_path, ["pkg"])
    tied = circles(found, made)
    assert [[(i.module, i.target) for i in circle] for circle in tied] == [[("pkg.a", "pkg.b"), ("pkg.b", "pkg.a")]]
    assert Import("pkg.d", 1, "pkg.c", None) in made
    assert not any(i.module == "pkg.c" and i.target.startswith("pkg") for i in made)


def test_a_private_name_from_another_module_is_found_and_a_private_module_is_not(tmp_path: Path) -> None:
    made = _package(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg._impl import Public\n",
            "pkg/_impl.py": "_HIDDEN = 1\nclass Public: ...\n",
            "pkg/user.py": "from pkg import _impl\nfrom pkg._impl import _HIDDEN\nfrom ._impl import __doc__\n",
            "other/__init__.py": "from pkg._impl import Public\nfrom sdk.shared import _utils\nimport pkg\n",
        },
    )
    assert [str(i) for i in private_names(made)] == ["pkg.user:2: from pkg._impl import _HIDDEN"]
    assert [str(i) for i in foreign_private(made)] == [
        "other:1: from pkg._impl import Public",
        "other:2: from sdk.shared import _utils",
    ]
