"""The import graph of packages, read from their source: who imports what, where, and the circles.

Every ``import`` statement counts, at the top of a module or inside a function, except
those under ``if TYPE_CHECKING:``, which never run. An import is resolved to a module of
the packages where it names one (``from pkg import _module`` imports that module);
anything else is kept by the dotted name it was written with.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Import", "circles", "foreign_private", "imports", "modules", "private_names"]


@dataclass(frozen=True, slots=True)
class Import:
    """One name or module imported by one statement."""

    #: The importing module, dotted.
    module: str
    line: int
    #: The module imported (``import target``) or imported from (``from target import name``).
    target: str
    #: The name taken from ``target``; None for ``import target``.
    name: str | None

    def __str__(self) -> str:
        taken = f"from {self.target} import {self.name}" if self.name is not None else f"import {self.target}"
        return f"{self.module}:{self.line}: {taken}"


def modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(found: Mapping[str, Path]) -> list[Import]:
    """Every import the modules make, TYPE_CHECKING blocks left out, resolved against ``found``."""
    out: list[Import] = []
    for module, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                out.extend(Import(module, node.lineno, alias.name, None) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                target = _absolute(package, node.level, node.module)
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    if submodule in found:
                        out.append(Import(module, node.lineno, submodule, None))
                    else:
                        out.append(Import(module, node.lineno, target, alias.name))
    return out


def _statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _statements(node.orelse)
            continue
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _statements([child])
            elif isinstance(child, ast.ExceptHandler | ast.match_case):
                yield from _statements(child.body)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(package: str, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)


def circles(found: Mapping[str, Path], made: Iterable[Import]) -> list[list[Import]]:
    """Each set of modules that import each other in a circle, as the imports that tie it."""
    edges: dict[str, list[Import]] = {}
    for imp in made:
        if imp.target in found and imp.target != imp.module:
            edges.setdefault(imp.module, []).append(imp)
    out = []
    for component in _strongly_connected(found, {m: {i.target for i in e} for m, e in edges.items()}):
        if len(component) > 1:
            out.append([i for m in sorted(component) for i in edges.get(m, []) if i.target in component])
    return out


def _strongly_connected(nodes: Iterable[str], edges: Mapping[str, set[str]]) -> list[set[str]]:
    # Tarjan's algorithm, iterative so that a deep import chain cannot overflow the stack.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    found.append(component)
    return found


def _private(word: str) -> bool:
    return word.startswith("_") and not word.startswith("__")


def private_names(made: Iterable[Import]) -> list[Import]:
    """Imports of an underscore name (not a module) from another module of the same package."""
    return [
        i
        for i in made
        if i.name is not None and _private(i.name) and i.target.partition(".")[0] == i.module.partition(".")[0]
    ]


def foreign_private(made: Iterable[Import]) -> list[Import]:
    """Imports that reach into another package through an underscore module or name."""
    return [
        i
        for i in made
        if i.target.partition(".")[0] != i.module.partition(".")[0]
        and any(_private(part) for part in [*i.target.split("."), *([i.name] if i.name else [])])
    ]
