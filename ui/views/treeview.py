"""The tree's view filters (ViewOptions) and which nodes a view draws (visible_nodes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from uats_core.status import NodeStatus

from .treedata import TreeState


@dataclass
class ViewOptions:
    """What the user asked to see. A node is shown if it matches every active filter, or is an ancestor
    of one that does (drawn faded, so the tree stays connected)."""

    score_min: float = 0.0
    score_max: float = 1.0
    high_variance_only: bool = False
    depth_min: int = 0
    depth_max: int | None = None
    search: str = ""
    collapsed: frozenset[int] = field(default_factory=frozenset)
    glyphs: bool = True
    show_decisions: bool = True
    hide_pruned: bool = False
    collapse_pruned: bool = False  # branches whose every leaf was pruned drawn as their top node
    focus: str = "whole tree"  # or "chosen path", "selected subtree", "selected step" (bigtree.FOCUS_CHOICES)

    @property
    def filtering(self) -> bool:
        return (
            self.score_min > 0.0
            or self.score_max < 1.0
            or self.high_variance_only
            or self.depth_min > 0
            or self.depth_max is not None
            or bool(self.search.strip())
        )


# ------------------------------------------------------------------------------------------ visibility
def visible_nodes(state: TreeState, view: ViewOptions) -> tuple[set[int], set[int], dict[int, int]]:
    """(shown, matching, hidden-below count per collapsed node)."""
    hidden_below: dict[int, int] = {}
    blocked: set[int] = set()
    for c in view.collapsed:
        if c in state.nodes:
            below = [n for n in state.subtree(c) if n != c]
            hidden_below[c] = len(below)
            blocked.update(below)
    if view.hide_pruned:  # pruned nodes are leaves: hiding them removes clutter, never disconnects the tree
        blocked.update(
            i for i, n in state.nodes.items() if n.get("status") == NodeStatus.PRUNED and i not in view.collapsed
        )
    candidates = [n for n in state.nodes if n not in blocked]
    if not view.filtering:
        return set(candidates), set(), hidden_below
    needle = view.search.strip().lower()
    gate = state.gate
    matching: set[int] = set()
    for nid in candidates:
        if nid == 0:
            continue
        n = state.nodes[nid]
        mean, depth = n.get("mean"), int(n.get("depth") or 0)
        if (view.score_min > 0.0 or view.score_max < 1.0) and (
            mean is None or not view.score_min <= mean <= view.score_max
        ):
            continue
        if view.high_variance_only and not gate.shown(n):
            continue
        if depth < view.depth_min or (view.depth_max is not None and depth > view.depth_max):
            continue
        if needle and needle not in (n.get("step") or "").lower() and needle != str(nid):
            continue
        matching.add(nid)
    shown = set(matching) | {0}
    for nid in matching:
        shown.update(state.path(nid))
    return shown, matching, hidden_below
