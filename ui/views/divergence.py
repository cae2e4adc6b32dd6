"""Where two runs first decided differently, read from what they stored.

Divergence is by decisions, not by trees: two methods start with different widths, so their trees differ
from iteration 1 whatever uncertainty does. Two steps are "the same" when their step texts from the question
down are the same (a step prefix). The divergence of two runs is, in this order:

1. the first iteration at which a step both runs decided got children in one and none in the other;
2. when that never happened and their answers differ, the first step on an answer's path that the other run
   did not keep: walking down from the question to a run's answer (its best-scored final node holding that
   answer), the first step the other run never sampled (it drew other steps there), or sampled and left
   without children; and when the other run kept the whole path, its vote, which chose another answer.
   Of the two answers' paths, the split nearer the question is reported (A's on a tie).

So two runs whose answers differ always diverge somewhere: a path to an answer that the other run kept
whole ends on a final step with that answer, which the other run's vote did not choose."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace

from uats_core.status import NodeStatus

from .treedata import RunData, TreeState

# what kind of difference a Divergence is
DECISION, UNSAMPLED, PRUNED, VOTE = "decision", "unsampled", str(NodeStatus.PRUNED), "vote"


@dataclass(frozen=True)
class Divergence:
    """Where the two runs first decided differently (kind None: never, with answers that agree or are both
    missing). `node_a`/`node_b` are the differing step's node in each run (None where a run has no such node:
    then its node that shares the most steps with it, `parent_a`/`parent_b`, is given); `children_a`/`children_b`
    the children each gave it; `side` the run whose answer's path split ('a' or 'b', for path kinds); `depth`
    the step's depth; `step` its text; `shared` how many shared decisions came first (all of them when the runs
    never diverged)."""

    iteration: int | None
    node_a: int | None = None
    node_b: int | None = None
    children_a: int = 0
    children_b: int = 0
    shared: int = 0
    kind: str | None = None
    side: str | None = None
    depth: int = 0
    step: str = ""
    parent_a: int | None = None
    parent_b: int | None = None
    answer_a: str | None = None
    answer_b: str | None = None


def _decided(data: RunData, t: int, keys: dict[int, tuple[str, ...]]) -> dict[tuple[str, ...], tuple[int, int]]:
    """Step prefix → (node id, children) of the candidates decided at t; a prefix sampled twice under one
    parent keeps its most generous decision (the run did expand that step)."""
    out: dict[tuple[str, ...], tuple[int, int]] = {}
    for d in data.step(t)[0]:
        key = keys.get(d.node_id)
        if key is not None and (key not in out or d.children > out[key][1]):
            out[key] = (d.node_id, int(d.children or 0))
    return out


_DIV_MEMO: weakref.WeakKeyDictionary[RunData, weakref.WeakKeyDictionary[RunData, Divergence]] = (
    weakref.WeakKeyDictionary()
)


def decision_divergence(a: RunData, b: RunData) -> Divergence:
    """Where the two runs first decided differently (see the module docstring); once per pair of loaded runs
    (the compare view asks on every redraw)."""
    memo = _DIV_MEMO.setdefault(a, weakref.WeakKeyDictionary())
    if b not in memo:
        memo[b] = _divergence(a, b)
    return memo[b]


def _keys(state: TreeState) -> dict[int, tuple[str, ...]]:
    return {i: state.prefix_key(i) for i in state.nodes if i != 0}


def _answer(data: RunData) -> str | None:
    answer = data.run.get("answer")
    return None if answer is None else str(answer).strip()


def _divergence(a: RunData, b: RunData) -> Divergence:
    sa, sb = a.state_at(None), b.state_at(None)
    keys_a, keys_b = _keys(sa), _keys(sb)
    answers = {"answer_a": _answer(a), "answer_b": _answer(b)}
    shared = 0
    for t in range(1, max(a.max_iteration, b.max_iteration) + 1):
        da, db = _decided(a, t, keys_a), _decided(b, t, keys_b)
        for key in sorted(set(da) & set(db)):
            shared += 1
            (na, ca), (nb, cb) = da[key], db[key]
            if (ca > 0) != (cb > 0):
                return Divergence(t, na, nb, ca, cb, shared, DECISION, depth=len(key), step=key[-1], **answers)
    if answers["answer_a"] == answers["answer_b"]:
        return Divergence(None, shared=shared, **answers)
    splits = [
        s for s in (_path_split(sa, keys_a, sb, keys_b, "a"), _path_split(sb, keys_b, sa, keys_a, "b")) if s is not None
    ]
    if not splits:  # neither run stored a final step holding its answer (a run log written by hand)
        return Divergence(None, shared=shared, **answers)
    return replace(min(splits, key=lambda s: (s.depth, s.side)), shared=shared, **answers)


def answer_leaf(state: TreeState) -> int | None:
    """The final node a run's answer is read from: its best-scored final node holding that answer (the
    lowest id on a tie); None when the run has no answer."""
    chosen = state.chosen_nodes()
    return min(chosen, key=lambda i: (-float(state.nodes[i].get("mean") or 0.0), i)) if chosen else None


def _index(state: TreeState, keys: dict[int, tuple[str, ...]]) -> dict[tuple[str, ...], int]:
    """Step prefix → a node holding it, preferring one the run expanded (a step sampled twice under one
    parent counts as kept when either copy was), then the lowest id."""
    out: dict[tuple[str, ...], int] = {}
    for nid in sorted(keys):
        key = keys[nid]
        if key not in out or (state.children.get(nid) and not state.children.get(out[key])):
            out[key] = nid
    return out


def _path_split(
    own: TreeState,
    own_keys: dict[int, tuple[str, ...]],
    other: TreeState,
    other_keys: dict[int, tuple[str, ...]],
    side: str,
) -> Divergence | None:
    """The first step on `own`'s answer path that `other` did not keep, as a Divergence from `side`'s view."""
    leaf = answer_leaf(own)
    if leaf is None:
        return None
    index = _index(other, other_keys)
    path = own.path(leaf)
    prev = 0
    for depth, nid in enumerate(path, 1):
        key = own_keys[nid]
        match = index.get(key)
        last = depth == len(path)
        if match is not None and not last and other.children.get(match):
            prev = match
            continue
        kind = UNSAMPLED if match is None else (VOTE if last else PRUNED)
        node = own.nodes[nid]
        iteration = (
            other.max_iteration
            if kind == VOTE
            # the vote is read at the end
            else int(node.get("created_iter") or 0)
            if kind == UNSAMPLED
            else int(own.nodes[path[depth]].get("created_iter") or 0)
        )  # own expanded it: its child's iteration
        pair = (
            {"node_a": nid, "node_b": match, "parent_b": prev}
            if side == "a"
            else {"node_b": nid, "node_a": match, "parent_a": prev}
        )
        mine = len(own.children.get(nid, ()))
        theirs = 0 if match is None else len(other.children.get(match, ()))
        kids = {"children_a": mine, "children_b": theirs} if side == "a" else {"children_a": theirs, "children_b": mine}
        return Divergence(iteration, kind=kind, side=side, depth=depth, step=key[-1], **pair, **kids)
    return None


def first_divergence(a: RunData, b: RunData) -> int | None:
    """The iteration of decision_divergence (None: the runs never decided differently)."""
    return decision_divergence(a, b).iteration


def counterpart(other: TreeState, key: tuple[str, ...]) -> tuple[int, int]:
    """The node of `other` that shares the longest step prefix with `key`: (node id, steps shared); the root
    (0, 0) when not even the first step matches."""
    index: dict[tuple[str, ...], int] = {}
    for nid in sorted(other.nodes):
        if nid != 0:
            index.setdefault(other.prefix_key(nid), nid)
    for j in range(len(key), 0, -1):
        if key[:j] in index:
            return index[key[:j]], j
    return 0, 0


# ------------------------------------------------------------------------------------------ in words
def _quote(step: str, chars: int = 48) -> str:
    s = " ".join(step.split())
    return "“" + (s if len(s) <= chars else s[: chars - 1] + "…") + "”"


def _kids(k: int) -> str:
    return "no children" if k == 0 else f"{k} child" if k == 1 else f"{k} children"


def divergence_text(div: Divergence) -> str:
    """The summary's words for decision_divergence (Markdown-free: the caller styles and escapes it)."""
    if div.kind is None:
        if div.answer_a != div.answer_b:
            return "the answers differ, but neither run stored a final step holding its answer to trace back"
        if not div.shared:
            return "decisions: no step was decided by both runs (their samples differ), so none diverged"
        return (
            f"decisions never diverged: the {div.shared} steps both runs decided got children in both or in "
            "neither" + (", and both runs answered the same" if div.answer_a is not None else "")
        )
    if div.kind == DECISION:
        return (
            f"decisions diverge at iteration {div.iteration}: the step {_quote(div.step)} (depth {div.depth}), "
            f"which both runs had, got {_kids(div.children_a)} in A (node {div.node_a}) and "
            f"{_kids(div.children_b)} in B (node {div.node_b})"
        )
    own, other = div.side.upper(), "B" if div.side == "a" else "A"
    own_node, other_node = (div.node_a, div.node_b) if div.side == "a" else (div.node_b, div.node_a)
    other_parent = div.parent_b if div.side == "a" else div.parent_a
    answer = div.answer_a if div.side == "a" else div.answer_b
    other_answer = div.answer_b if div.side == "a" else div.answer_a
    head = (
        f"no step both runs had was decided differently ({div.shared} were decided alike); the runs part on "
        f"the way to {own}'s answer {answer}, at depth {div.depth}: "
    )
    if div.kind == VOTE:
        return head + (
            f"{other} kept that whole path down to its final step {_quote(div.step)} ({own} node "
            f"{own_node}, {other} node {other_node}), but {other}'s vote chose "
            + ("no answer" if other_answer is None else f"answer {other_answer}")
        )
    if div.kind == PRUNED:
        own_kids = div.children_a if div.side == "a" else div.children_b
        return head + (
            f"the step {_quote(div.step)} got {_kids(own_kids)} in {own} (node {own_node}) and none in "
            f"{other} (node {other_node}), at iteration {div.iteration}"
        )
    same = "first step" if div.depth == 2 else f"first {div.depth - 1} steps"
    where = f"under its node {other_parent}, which holds the same {same}" if other_parent else "among its first steps"
    return head + (
        f"{own} sampled the step {_quote(div.step)} (node {own_node}) at iteration {div.iteration}; "
        f"{other} never sampled it {where} (it drew other steps there)"
    )
