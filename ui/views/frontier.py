"""The order and pages of a step's candidates (its frontier) in Figure 1 (ui/views/figure1.py): grouped by parent,
or sorted by R̄, σ² or R̂; one page at a time; optionally only one parent's children."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .decisions import Candidate, Step

# the choices a page offers, and the Candidate field each sorts by ("parent": grouped, as the tree has them)
SORT_KEYS = {"parent (grouped)": "parent", "R̄ (mean)": "mean", "σ² (gate)": "stat", "R̂ (UCB)": "ucb"}


def _desc(value: float | None) -> tuple[bool, float]:
    return value is None, -(value or 0.0)


def ordered_rows(step: Step, sort_by: str = "parent", parent: int | None = None) -> list[Candidate]:
    """The step's candidates in the figure's order: "parent" groups them under their parents (the parents in the
    tree's order, each group best R̄ first), mean / stat / ucb sort them best first; `parent` keeps only its
    children. Ties go by node id, so the order is the same on every draw."""
    cands = [c for c in step.candidates if parent is None or c.parent_id == parent]
    if sort_by == "parent":
        return sorted(cands, key=lambda c: (c.parent_id if c.parent_id is not None else -1, *_desc(c.mean), c.node_id))
    key = sort_by if sort_by in ("mean", "stat", "ucb") else "mean"
    return sorted(cands, key=lambda c: (*_desc(getattr(c, key)), c.node_id))


def page_of(rows: Sequence[Any], page: int, per_page: int) -> tuple[list[Any], int, int]:
    """(rows of page `page` (0-based, clamped), the page used, the number of pages)."""
    per_page = max(1, int(per_page))
    pages = max(1, -(-len(rows) // per_page))
    page = min(max(0, int(page)), pages - 1)
    return list(rows[page * per_page : (page + 1) * per_page]), page, pages
