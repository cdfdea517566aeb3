"""Hypothesis strategies for the reference's rankers, shared by their tests."""

from __future__ import annotations

from hypothesis import strategies as st

from reference_impl import ToolDoc

__all__ = ["tool_lists"]


def tool_lists(text: st.SearchStrategy[str]) -> st.SearchStrategy[list[ToolDoc]]:
    """Small catalogs whose descriptions are drawn from ``text``; names repeat across servers."""
    return st.lists(
        st.builds(
            lambda server, name, description, read_only: ToolDoc(
                f"{server}__{name}", server, name, description, read_only
            ),
            st.sampled_from(["s1", "s2", "pr"]),
            st.text(alphabet="abcl_ist", min_size=1, max_size=10),
            text,
            st.booleans(),
        ),
        max_size=12,
        unique_by=lambda tool: tool.qualified_name,
    )
