"""Calcite's streaming forms rewritten into SQL the Spark translation evaluates, when a tree is rendered
(``_render``): interval differences ``(a - b) HOUR`` (``_interval_diff``), window table functions
``TABLE(TUMBLE(...))`` (``_window_tvf``), group window functions ``GROUP BY TUMBLE/HOP/SESSION(...)``
(``_group_windows``) and named OVER windows (``_stream_over``), in that order."""

from __future__ import annotations

from sqlglot import exp

from .group_windows import rewrite_group_windows
from .interval_diff import rewrite_interval_differences
from .over import inline_named_windows
from .window_tvf import rewrite_window_tvfs

__all__ = ["rewrite_stream_forms"]


def rewrite_stream_forms(tree: exp.Expression) -> exp.Expression:
    """``tree``, or a rewritten copy of it."""
    tree = rewrite_interval_differences(tree)
    tree = rewrite_window_tvfs(tree)
    tree = rewrite_group_windows(tree)
    return inline_named_windows(tree)
