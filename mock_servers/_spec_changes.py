"""Live catalogs in a spec: the reading of a server's ``changes`` and of a change made on demand.

A change names tools to remove, rename, update and add, and how many
``notifications/tools/list_changed`` follow it (see `CatalogChange`). A scheduled change
has one trigger (``after_calls`` or ``after_seconds``); a change sent by a test has none.
Part of the spec reader (`mock_servers._spec_reader`); the model and its plain-data
form (`change_to_dict`) are `mock_servers._spec`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from mock_servers._errors import FleetArgumentError
from mock_servers._fields import FieldReader
from mock_servers._limits import LIMITS
from mock_servers._spec import CatalogChange, Rename, ToolUpdate, freeze_json
from mock_servers._spec_format import ChangeDocument
from mock_servers._spec_tools import tool_from_dict
from mock_servers._wire import ListedTool, ToolAnnotations

__all__ = [
    "apply_names_or_fail",
    "as_change",
    "change_from_dict",
    "changes_from",
    "check_change_targets",
    "edit_problems",
    "updated_tool",
]

#: What does not apply in a change: (field, what was expected, what was found).
Problem = tuple[str, str, str]

_TRIGGERS = ("after_calls", "after_seconds")
_EDITS = ("remove", "rename", "update", "add", "notify", "list_error", "list_hang", "break_listen")
_UPDATE_KEYS = ("name", "description", "input_schema", "annotations", "title")


def changes_from(r: FieldReader, raw: Any, path: str, raw_mode: bool) -> tuple[CatalogChange, ...]:
    """A server's scheduled changes; problems are recorded on ``r``."""
    if not isinstance(raw, list):
        r.fail(path, "a list of changes", raw)
        return ()
    if len(raw) > LIMITS.changes_per_server:
        r.fail(path, f"at most {LIMITS.changes_per_server:,} changes", f"{len(raw):,} changes")
        return ()
    return tuple(_change(r, item, f"{path}[{i}]", raw_mode, scheduled=True) for i, item in enumerate(raw))


def as_change(change: CatalogChange | ChangeDocument) -> CatalogChange:
    """A change given as a `CatalogChange` or in its spec form (``{"remove": [...], "add": [...]}``).

    Raises:
        SpecError: the mapping is not a valid change.
    """
    return change if isinstance(change, CatalogChange) else change_from_dict(change)


def change_from_dict(data: Any, *, source: str = "<change>") -> CatalogChange:
    """A change made on demand (no trigger), from its plain-data form.

    Raises:
        SpecError: naming ``source`` and, for every problem, the field and what was expected.
    """
    r = FieldReader(source)
    change = _change(r, data, "", False, scheduled=False)
    if r.problems:
        raise r.error()
    return change


def _switch(r: FieldReader, d: Mapping[str, Any], key: str, path: str) -> bool | None:
    """A listing switch of a change: true, false, or left as it is (absent or null)."""
    value = d.get(key)
    if value is not None and not isinstance(value, bool):
        r.fail(_at(path, key), "true or false", value)
        return None
    return value


def _change(r: FieldReader, raw: Any, path: str, raw_mode: bool, *, scheduled: bool) -> CatalogChange:
    keys = (*_TRIGGERS, *_EDITS) if scheduled else _EDITS
    d = r.mapping(raw, path, keys)
    after_calls: int | None = None
    after_seconds: float | None = None
    if scheduled:
        given = [k for k in _TRIGGERS if k in d]
        if len(given) != 1:
            r.fail(_at(path, "after_calls"), "exactly one trigger: after_calls or after_seconds", given or None)
        if "after_calls" in d:
            after_calls = r.integer(d, "after_calls", path, 1, 1, LIMITS.change_calls)
        elif "after_seconds" in d:
            after_seconds = r.number(d, "after_seconds", path, 0.0, LIMITS.change_seconds)
    add = d.get("add", [])
    if not isinstance(add, list):
        r.fail(_at(path, "add"), "a list of tools", add)
        add = []
    list_error, list_hang = (_switch(r, d, key, path) for key in ("list_error", "list_hang"))
    return CatalogChange(
        after_calls=after_calls,
        after_seconds=after_seconds,
        remove=r.strings(d, "remove", path),
        rename=_renames(r, d.get("rename", []), _at(path, "rename")),
        update=_updates(r, d.get("update", []), _at(path, "update"), raw_mode),
        add=tuple(tool_from_dict(r, t, f"{_at(path, 'add')}[{i}]", raw_mode) for i, t in enumerate(add)),
        notify=r.integer(d, "notify", path, 1, 0, LIMITS.notifications_per_change),
        list_error=list_error,
        list_hang=list_hang,
        break_listen=bool(_switch(r, d, "break_listen", path)),
    )


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _renames(r: FieldReader, raw: Any, path: str) -> tuple[Rename, ...]:
    if not isinstance(raw, list):
        r.fail(path, "a list of {from, to} tables", raw)
        return ()
    out = []
    for i, item in enumerate(raw):
        d = r.mapping(item, f"{path}[{i}]", ("from", "to"))
        names = [r.string(d.get(k), f"{path}[{i}].{k}") if k in d else "" for k in ("from", "to")]
        for key, name in zip(("from", "to"), names, strict=True):
            if not name:
                r.fail(f"{path}[{i}].{key}", "a tool name", d.get(key))
        out.append(Rename(names[0], names[1]))
    return tuple(out)


def _updates(r: FieldReader, raw: Any, path: str, raw_mode: bool) -> tuple[ToolUpdate, ...]:
    if not isinstance(raw, list):
        r.fail(path, "a list of tools to update", raw)
        return ()
    out = []
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        d = r.mapping(item, where, _UPDATE_KEYS)
        if "name" not in d:
            r.fail(f"{where}.name", "the name of the tool to update", None)
        # Read as a tool, so that the fields given are checked as an explicit tool's are.
        tool = tool_from_dict(r, {"name": "", **d}, where, raw_mode)
        out.append(
            ToolUpdate(
                name=tool.name,
                description=tool.description if "description" in d else None,
                input_schema=tool.input_schema if "input_schema" in d else None,
                annotations=(tool.annotations or {}) if "annotations" in d else None,
                title=tool.title if "title" in d else None,
            )
        )
    return tuple(out)


_LISTED = "a tool the server lists at that point"
_FREE = "a name no tool has at that point"


def edit_problems(names: Sequence[str], change: CatalogChange) -> tuple[list[str], list[Problem]]:
    """The tool names after ``change``, and the edits of it that do not apply to ``names``."""
    current = list(names)
    problems: list[Problem] = []
    for i, name in enumerate(change.remove):
        if name in current:
            current.remove(name)
        else:
            problems.append((f"remove[{i}]", _LISTED, name))
    for i, rename in enumerate(change.rename):
        if rename.old not in current:
            problems.append((f"rename[{i}].from", _LISTED, rename.old))
        elif rename.new in current:
            problems.append((f"rename[{i}].to", _FREE, rename.new))
        else:
            current[current.index(rename.old)] = rename.new
    for i, update in enumerate(change.update):
        if update.name not in current:
            problems.append((f"update[{i}].name", _LISTED, update.name))
    for i, tool in enumerate(change.add):
        if tool.name in current:
            problems.append((f"add[{i}].name", _FREE, tool.name))
        else:
            current.append(tool.name)
    return current, problems


def check_change_targets(r: FieldReader, names: Sequence[str], changes: Sequence[CatalogChange], path: str) -> None:
    """Every edit of a schedule applies to the catalog as the changes before it left it."""
    current = list(names)
    for i, change in enumerate(changes):
        current, problems = edit_problems(current, change)
        for where, expected, got in problems:
            r.fail(f"{path}[{i}].{where}", expected, got)


def apply_names_or_fail(names: Sequence[str], change: CatalogChange) -> list[str]:
    """The names after ``change``.

    Raises:
        FleetArgumentError: an edit names a tool the server does not list, or adds a name it has.
    """
    current, problems = edit_problems(names, change)
    if problems:
        raise FleetArgumentError(
            "; ".join(f"{where}: expected {expected}, got {got!r}" for where, expected, got in problems)
        )
    return current


def updated_tool(tool: ListedTool, update: ToolUpdate) -> ListedTool:
    """A wire definition with the fields of ``update`` put in."""
    out = tool.copy()
    if update.description is not None:
        out["description"] = update.description
    if update.input_schema is not None:
        out["inputSchema"] = freeze_json(update.input_schema)
    if update.annotations is not None:
        # An update's annotations are JSON from the spec, served as written.
        out["annotations"] = cast(ToolAnnotations, freeze_json(update.annotations))
    if update.title is not None:
        out["title"] = update.title
    return out
