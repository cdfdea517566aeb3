"""The adaptive MCP toolset, as the specification describes it: an executable reference.

Open a run with :func:`open_toolset`; read :meth:`AdaptiveToolset.definitions` before
every model request; send every tool call through :meth:`AdaptiveToolset.call`.
"""

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
