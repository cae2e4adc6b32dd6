"""Large runs in the page: a run log may hold 100,000 nodes, which took 90 s and a 58.7 MB figure to open.
The tree draws at most MAX_DRAWN nodes - the chosen answers' paths and the selected node's path first, then
the shallowest nodes breadth first - and every drawn node whose subtree was cut says how many it hides.
RunData skips the per-iteration history of runs above HISTORY_LIMIT nodes (replay then shows each node's
final snapshot from the iteration it was created)."""

from __future__ import annotations

import contextlib
import gc
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from typing import Any

from uats_core.status import NodeStatus

MAX_DRAWN = 3000
MAX_DRAWN_HUGE = 2000
MAX_LABELS = 200  # "+k hidden" marks are SVG text: only the largest cuts get one
HISTORY_LIMIT = 20_000


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: building 100,000 node dicts set off collector passes that cost
    a third of opening a big run (nothing built here holds cycles that must be freed at once)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def cap_shown(
    state: Any, shown: set[int], keep: Iterable[int], limit: int = MAX_DRAWN
) -> tuple[set[int], dict[int, int]]:
    """(nodes to draw, hidden-descendant count per drawn node) for the `shown` nodes of `state`."""
    if len(state.nodes) > HISTORY_LIMIT:  # a huge run: fewer nodes drawn, so it opens within seconds
        limit = min(limit, MAX_DRAWN_HUGE)
    if len(shown) <= limit:
        return shown, {}
    keep = set(keep)
    drawn: set[int] = {0}
    order = deque([0])
    bfs: list[int] = []
    while order:  # breadth first over the shown nodes: shallow nodes first, creation order within a depth
        nid = order.popleft()
        bfs.append(nid)
        order.extend(c for c in state.children.get(nid, ()) if c in shown)
    for wanted in (lambda n: n in keep, lambda n: True):  # keep (closed under ancestors) first, in BFS order
        for nid in bfs:
            if len(drawn) >= limit:
                break
            if wanted(nid) and (nid == 0 or state.nodes[nid].get("parent_id") in drawn):
                drawn.add(nid)
    return drawn, hidden_counts(state, bfs, drawn)


def dead_branches(state: Any, shown: set[int], keep: Iterable[int] = ()) -> tuple[set[int], dict[int, int]]:
    """Collapse branches in which every leaf was pruned: their top node stays, its subtree goes, and it
    says how many it hides. `keep` nodes (chosen path, selection) stay whatever their branch."""
    keep = set(keep)
    dead: dict[int, bool] = {}
    for nid in sorted(shown, reverse=True):  # children are created after their parents: ids descend
        kids = [c for c in state.children.get(nid, ()) if c in shown]
        if nid in keep or nid == 0:
            dead[nid] = False
        elif kids:
            dead[nid] = all(dead.get(c, False) for c in kids)
        else:
            dead[nid] = state.nodes[nid].get("status") == NodeStatus.PRUNED
    out = set(shown)
    hidden: dict[int, int] = {}
    for nid in shown:
        parent = state.nodes[nid].get("parent_id")
        if dead.get(nid) and not dead.get(parent, False) and state.children.get(nid):
            below = [c for c in state.subtree(nid) if c != nid and c in shown]
            if below:
                hidden[nid] = len(below)
                out.difference_update(below)
    return out, hidden


FOCUS_CHOICES = ("whole tree", "chosen path", "selected subtree", "selected step")


def focus_nodes(state: Any, shown: set[int], focus: str, selected: int | None) -> tuple[set[int], dict[int, int]]:
    """Only the chosen answers' paths and the alternatives at each of their steps, only the selected node's
    path and subtree, or only its path and the candidates of its step (its parent's children); every drawn
    node whose children were left out says how many it hides."""
    if focus == "chosen path":
        path = state.chosen_path_nodes()
        if not path:
            return shown, {}
        keep = set(path)
        for nid in path:  # the candidates each chosen step competed with
            keep.update(state.children.get(nid, ()))
    elif focus == "selected subtree" and selected in state.nodes:
        keep = {0, *state.path(selected), *state.subtree(selected)}
    elif focus == "selected step" and selected in state.nodes:
        keep = {0, *state.path(selected), *state.siblings(selected)}
    else:
        return shown, {}
    keep &= shown | {0}
    return keep, hidden_counts(state, sorted(shown), keep)  # node ids grow with depth: parents come first


def hidden_counts(state: Any, order: Iterable[int], kept: set[int]) -> dict[int, int]:
    """ "+k hidden" per kept node: walking `order` (parents before children), each node left out counts towards
    its nearest kept ancestor (the root when none); the MAX_LABELS largest counts."""
    anchor: dict[int, int] = {}
    hidden: Counter = Counter()
    for nid in order:
        if nid in kept:
            anchor[nid] = nid
        else:
            a = anchor.get(state.nodes[nid].get("parent_id"), 0)
            anchor[nid] = a
            hidden[a] += 1
    return dict(hidden.most_common(MAX_LABELS))
