"""Functions that other modules import and whose signature passes ``dict[str, Any]``.

A JSON object typed ``dict[str, Any]`` tells a reader, and mypy, nothing about its keys;
where the shape is known (the driver protocol's wire shapes) a TypedDict says it. This
counts what is left: every function, and every method of a class, that a module of the
three packages imports from another one, whose parameters or return annotation mention
``dict[str, Any]`` (or ``Mapping[str, Any]``), directly or through a type alias of the
packages (``JsonObject``, ``Definition = Mapping[str, Any]``), also where the JSON is
arbitrary by design. ``python -m tests.any_signatures [--list] [ROOT]`` prints the figures.

Of those, it also counts apart the signatures whose every mention is a parameter that holds
JSON nobody fixes: a tool's ``arguments``, a JSON Schema (``input_schema``, ``inputSchema``,
``schema``), a spec document read from a file (``spec``), a table of input read before it is
validated (``raw``, what a reader checks field by field). They stay in the total: the
separate figure only says how many of them are arbitrary by name, and ``--list`` marks them.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.import_graph import imports, modules

__all__ = ["Signature", "imported_signatures"]

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conformance", "mock_servers", "reference_impl")
ANY_DICT = "dict[str, Any]"
ANY_MAPPING = "Mapping[str, Any]"
#: Parameters whose JSON is arbitrary by design, by name.
ARBITRARY = frozenset(
    {
        "arguments",  # a tool's arguments: the tool's input schema fixes them, not the packages
        "input_schema",  # a JSON Schema
        "inputSchema",  # a JSON Schema, as the wire spells it
        "schema",  # a JSON Schema
        "spec",  # a spec document read from a file, before it is validated
        "raw",  # a table of input read before it is validated (a reader checks it field by field)
    }
)


@dataclass(frozen=True, slots=True)
class Signature:
    """One imported function or method and the text of its annotations, aliases expanded."""

    module: str
    qualname: str
    line: int
    annotations: str
    #: Each annotated parameter's name and annotation (aliases expanded); the return's under ``return``.
    parts: tuple[tuple[str, str], ...] = ()

    def mentions(self, text: str) -> bool:
        return text in self.annotations

    @property
    def any_dict(self) -> bool:
        return self.mentions(ANY_DICT) or self.mentions(ANY_MAPPING)

    @property
    def arbitrary_only(self) -> bool:
        """Whether every mention is in a parameter named for arbitrary JSON (`ARBITRARY`)."""
        mentioning = [name for name, text in self.parts if ANY_DICT in text or ANY_MAPPING in text]
        return bool(mentioning) and all(name in ARBITRARY for name in mentioning)

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.qualname}"


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a subscripted type (``Definition = Mapping[str, Any]``)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        if isinstance(value, ast.Subscript | ast.BinOp):
            found[target] = ast.unparse(value)
    return found


def _annotations(function: ast.FunctionDef | ast.AsyncFunctionDef, aliases: Mapping[str, str]) -> str:
    return _expanded(" | ".join(text for _, text in _raw_parts(function)), aliases)


def _parts(function: ast.FunctionDef | ast.AsyncFunctionDef, aliases: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((name, _expanded(text, aliases)) for name, text in _raw_parts(function))


def _raw_parts(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str]]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    parts = [(a.arg, ast.unparse(a.annotation)) for a in every if a is not None and a.annotation is not None]
    if function.returns is not None:
        parts.append(("return", ast.unparse(function.returns)))
    return parts


def _expanded(text: str, aliases: Mapping[str, str]) -> str:
    for name, value in aliases.items():
        if re.search(rf"\b{re.escape(name)}\b", text):
            text += " | " + value
    return text


def _signature(
    module: str, qualname: str, function: ast.FunctionDef | ast.AsyncFunctionDef, aliases: Mapping[str, str]
) -> Signature:
    return Signature(module, qualname, function.lineno, _annotations(function, aliases), _parts(function, aliases))


def _defined(tree: ast.Module, name: str) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            yield node


def imported_signatures(root: Path = ROOT) -> list[Signature]:
    """Every function and method imported by another module of the packages, once each."""
    found = modules(root, PACKAGES)
    trees = {module: ast.parse(path.read_text(encoding="utf-8"), str(path)) for module, path in found.items()}
    aliases = {name: value for tree in trees.values() for name, value in _aliases(tree).items()}
    seen: dict[tuple[str, str], Signature] = {}
    for imp in imports(found):
        if imp.name is None or imp.target not in trees or imp.target == imp.module:
            continue
        tree = trees[imp.target]
        for node in _defined(tree, imp.name):
            if isinstance(node, ast.ClassDef):
                methods = [
                    m
                    for m in node.body
                    if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                    and (not m.name.startswith("_") or m.name == "__init__")
                ]
                for method in methods:
                    key = (imp.target, f"{node.name}.{method.name}")
                    seen[key] = _signature(imp.target, key[1], method, aliases)
            else:
                seen[(imp.target, node.name)] = _signature(imp.target, node.name, node, aliases)
    return sorted(seen.values(), key=lambda s: (s.module, s.line))


def main(argv: list[str]) -> None:
    roots = [arg for arg in argv if not arg.startswith("-")]
    signatures = imported_signatures(Path(roots[0]) if roots else ROOT)
    with_dict = [s for s in signatures if s.mentions(ANY_DICT)]
    with_mapping = [s for s in signatures if s.mentions(ANY_MAPPING)]
    either = [s for s in signatures if s.any_dict]
    arbitrary = [s for s in either if s.arbitrary_only]
    lines = [
        f"imported functions and methods: {len(signatures)}",
        f"  with {ANY_DICT}: {len(with_dict)}",
        f"  with {ANY_MAPPING}: {len(with_mapping)}",
        f"  with either: {len(either)}",
        f"    of which only in a parameter of arbitrary JSON ({', '.join(sorted(ARBITRARY))}): {len(arbitrary)}",
    ]
    if "--list" in argv:
        lines += [f"    {signature}{'  [arbitrary]' if signature.arbitrary_only else ''}" for signature in either]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
