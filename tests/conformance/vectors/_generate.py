"""Compute the lexical vectors with the reference ranker and render them as JSON.

The reference is an instrument here, not the authority: ``test_lexical.py`` recomputes
every score and order from the specification's text and fails when the two disagree.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance._clauses import SENTENCES
from reference_impl import LexicalRanker, ToolDoc, qualified_name, words
from reference_impl._ranking import ALIASES, READ_SIGNALS, fires, names_server
from tests.conformance.vectors._cases import GROUPS, Case, Group

__all__ = ["VECTORS_PATH", "document", "render"]

VECTORS_PATH = Path(__file__).resolve().parents[3] / "conformance" / "vectors" / "lexical.json"
# Sentences in the order of SPEC.md.
_SENTENCE_ORDER = list(SENTENCES)

DESCRIPTION = (
    "Exact scores and orders of the lexical profile of conformance/SPEC.md "
    "(RNK-1 to RNK-8, SEL-5, DSC-10); conformance/vectors/README.md describes the format."
)


def _distinct_words(text: str) -> list[str]:
    return list(dict.fromkeys(words(text)))


def _catalog(group: Group) -> list[dict[str, Any]]:
    servers = []
    for server in group.servers:
        tools = []
        for tool in server.tools:
            entry: dict[str, Any] = {"name": tool.name, "description": tool.description}
            annotations = tool.annotations()
            if annotations is not None:
                entry["annotations"] = annotations
            entry["words"] = _distinct_words(f"{tool.name} {tool.description}")
            tools.append(entry)
        servers.append({"id": server.id, "tools": tools})
    return servers


def _docs(group: Group) -> list[ToolDoc]:
    return [
        ToolDoc(
            qualified_name(server.id, tool.name),
            server.id,
            tool.name,
            tool.description,
            (tool.annotations() or {}).get("readOnlyHint") is True,
        )
        for server in group.servers
        for tool in server.tools
    ]


def _triggers(group: Group, case: Case) -> dict[str, list[str]]:
    message, prompt = case.user_message.casefold(), case.system_prompt.casefold()
    message_words = frozenset(words(message))
    return {
        "aliases": [trigger for trigger, _ in ALIASES if fires(trigger, message, message_words)],
        "readSignals": [signal for signal in READ_SIGNALS if fires(signal, message, message_words)],
        "serversInMessage": [s.id for s in group.servers if names_server(s.id, message)],
        "serversInPrompt": [s.id for s in group.servers if names_server(s.id, prompt)],
    }


def _case(group: Group, number: int, case: Case, docs: Sequence[ToolDoc]) -> dict[str, Any]:
    index = LexicalRanker().index(docs, case.system_prompt)
    message = case.user_message
    scores: dict[str, dict[str, Any]] = {}
    for i, doc in enumerate(docs):
        why = index.breakdown(i, message)
        entry: dict[str, Any] = {"score": why.total}
        fields: Mapping[str, Any] = {
            "messageHits": list(why.user_words),
            "promptHits": list(why.system_words),
            "serverInMessage": why.user_server,
            "serverInPrompt": why.system_server,
            "readOnly": why.read_only,
            "aliases": list(why.aliases),
            "intent": why.components["intent"],
        }
        entry.update((key, value) for key, value in fields.items() if value)
        scores[doc.qualified_name] = entry
    return {
        "id": f"{group.id}-{number:02d}",
        "description": case.description,
        "clauses": sorted(case.clauses, key=_clause_key),
        "isolates": sorted(case.isolates, key=_SENTENCE_ORDER.index),
        "assumes": sorted(case.assumes, key=_SENTENCE_ORDER.index),
        "systemPrompt": case.system_prompt,
        "userMessage": message,
        "messageWords": _distinct_words(message),
        "promptWords": _distinct_words(case.system_prompt),
        "triggers": _triggers(group, case),
        "scores": scores,
        "firstRound": [docs[i].qualified_name for i in index.order(message)],
        "discovery": [docs[i].qualified_name for i in index.matches(message)],
    }


def _clause_key(clause_id: str) -> tuple[str, int]:
    prefix, _, number = clause_id.partition("-")
    return prefix, int(number)


def document() -> dict[str, Any]:
    """The vectors, as the JSON document ``lexical.json`` holds."""
    groups = []
    for group in GROUPS:
        docs = _docs(group)
        groups.append(
            {
                "id": group.id,
                "description": group.description,
                "catalog": _catalog(group),
                "cases": [_case(group, n, case, docs) for n, case in enumerate(group.cases, start=1)],
            }
        )
    return {
        "description": DESCRIPTION,
        "unicodeVersion": unicodedata.unidata_version,
        "weights": {
            "messageHit": 12,
            "promptHit": 2,
            "serverInMessage": 16,
            "serverInPrompt": 3,
            "readOnly": 3,
            "alias": 12,
            "readBonus": 8,
            "writePenalty": -32,
        },
        "groups": groups,
    }


def render(value: Any) -> str:
    """JSON with one line per case field, per tool and per score: diffable and not too long."""
    return _render(value, 0) + "\n"


def _render(value: Any, depth: int) -> str:
    flat = json.dumps(value, ensure_ascii=False)
    # Scalars, short values, lists of names and leaf objects (a tool, a score) stay on one line.
    if not isinstance(value, dict | list) or len(flat) <= 100 or _is_leaf(value):
        return flat
    if isinstance(value, list) and not any(isinstance(item, dict | list) for item in value):
        return flat
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, list):
        items = [inner + _render(item, depth + 1) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    items = [f"{inner}{json.dumps(key, ensure_ascii=False)}: {_render(item, depth + 1)}" for key, item in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"


def _is_leaf(value: dict[str, Any] | list[Any]) -> bool:
    """An object of scalars and lists of scalars: a tool, a score, the weights."""
    return isinstance(value, dict) and all(
        not isinstance(item, dict | list)
        or (isinstance(item, list) and not any(isinstance(i, dict | list) for i in item))
        for item in value.values()
    )


def write(path: Path = VECTORS_PATH) -> bool:
    """Write the vectors; True when the file changed."""
    text = render(document())
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True
