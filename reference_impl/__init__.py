"""The adaptive MCP toolset, as the specification describes it: an executable reference.

Open a run with :func:`open_toolset`; read :meth:`AdaptiveToolset.definitions` before
every model request; send every tool call through :meth:`AdaptiveToolset.call`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._analysis import RankerUnavailableError
    from ._bm25 import Bm25Breakdown, Bm25Index, Bm25Params, Bm25Ranker
    from ._budgets import DYNAMIC_LIMIT, FAIRNESS_CAP, FIRST_ROUND_LIMIT, REQUEST_LIMIT, Budgets
    from ._catalog import Catalog, CatalogEntry, exposed_name, qualified_name
    from ._config import HttpTarget, MemoryTarget, ServerConfig, StdioTarget, Target, ToolPolicy
    from ._discovery import DISCOVERY_TOOL, discovery_definition
    from ._errors import (
        ConfigurationError,
        McpToolSelectionError,
        RequestTooLargeError,
        SelectionError,
        ServerConnectionError,
        ToolsetError,
    )
    from ._loop import AgentLoop, ModelProvider, ModelReply, ToolCall, assemble_request
    from ._ranking import LexicalIndex, LexicalRanker, Ranker, RankingIndex, ScoreBreakdown, ToolDoc, words
    from ._registry import RANKERS, make_ranker
    from ._toolset import AdaptiveToolset, open_toolset
    from ._trace import CandidateTrace, DiscoveryTrace, SelectionTrace
    from ._wire import ContentBlock, Definition, Message, Notice, RequestedCall, ToolResult

__all__ = [
    # running a toolset
    "AdaptiveToolset",
    "AgentLoop",
    "ModelProvider",
    "ModelReply",
    "ToolCall",
    "assemble_request",
    "open_toolset",
    # what a request, a model and an operator see
    "ContentBlock",
    "Definition",
    "Message",
    "Notice",
    "RequestedCall",
    "ToolResult",
    # configuration
    "HttpTarget",
    "MemoryTarget",
    "ServerConfig",
    "StdioTarget",
    "Target",
    "ToolPolicy",
    # catalog and budgets
    "DISCOVERY_TOOL",
    "DYNAMIC_LIMIT",
    "FAIRNESS_CAP",
    "FIRST_ROUND_LIMIT",
    "REQUEST_LIMIT",
    "Budgets",
    "Catalog",
    "CatalogEntry",
    "discovery_definition",
    "exposed_name",
    "qualified_name",
    # ranking
    "LexicalIndex",
    "LexicalRanker",
    "Ranker",
    "RankingIndex",
    "ScoreBreakdown",
    "ToolDoc",
    "words",
    "RANKERS",
    "Bm25Breakdown",
    "Bm25Index",
    "Bm25Params",
    "Bm25Ranker",
    "make_ranker",
    # trace
    "CandidateTrace",
    "DiscoveryTrace",
    "SelectionTrace",
    # errors
    "ConfigurationError",
    "McpToolSelectionError",
    "RankerUnavailableError",
    "RequestTooLargeError",
    "SelectionError",
    "ServerConnectionError",
    "ToolsetError",
]

# Every name loads on first use: a driver answering only the protocol's own questions never
# loads the toolset, and with it the MCP SDK (a second of imports), as ``import
# reference_impl.driver`` would otherwise.
_HOMES = {
    "RankerUnavailableError": "_analysis",
    "Bm25Breakdown": "_bm25",
    "Bm25Index": "_bm25",
    "Bm25Params": "_bm25",
    "Bm25Ranker": "_bm25",
    "Budgets": "_budgets",
    "DYNAMIC_LIMIT": "_budgets",
    "FAIRNESS_CAP": "_budgets",
    "FIRST_ROUND_LIMIT": "_budgets",
    "REQUEST_LIMIT": "_budgets",
    "Catalog": "_catalog",
    "CatalogEntry": "_catalog",
    "exposed_name": "_catalog",
    "qualified_name": "_catalog",
    "HttpTarget": "_config",
    "MemoryTarget": "_config",
    "ServerConfig": "_config",
    "StdioTarget": "_config",
    "Target": "_config",
    "ToolPolicy": "_config",
    "DISCOVERY_TOOL": "_discovery",
    "discovery_definition": "_discovery",
    "ConfigurationError": "_errors",
    "McpToolSelectionError": "_errors",
    "RequestTooLargeError": "_errors",
    "SelectionError": "_errors",
    "ServerConnectionError": "_errors",
    "ToolsetError": "_errors",
    "AgentLoop": "_loop",
    "ModelProvider": "_loop",
    "ModelReply": "_loop",
    "ToolCall": "_loop",
    "assemble_request": "_loop",
    "LexicalIndex": "_ranking",
    "LexicalRanker": "_ranking",
    "Ranker": "_ranking",
    "RankingIndex": "_ranking",
    "ScoreBreakdown": "_ranking",
    "ToolDoc": "_ranking",
    "words": "_ranking",
    "RANKERS": "_registry",
    "make_ranker": "_registry",
    "AdaptiveToolset": "_toolset",
    "open_toolset": "_toolset",
    "CandidateTrace": "_trace",
    "DiscoveryTrace": "_trace",
    "SelectionTrace": "_trace",
    "ContentBlock": "_wire",
    "Definition": "_wire",
    "Message": "_wire",
    "Notice": "_wire",
    "RequestedCall": "_wire",
    "ToolResult": "_wire",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'reference_impl' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"reference_impl.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
