"""SakanaAI TreeQuest's tree (src/treequest/algos/tree.py): `Node(state, score, expand_idx, parent, children)`,
the root with `expand_idx = -1` and score -1.0, every other node a `(state, score)` its generate function returned,
score in [0, 1], `expand_idx` 0, 1, 2, ... in the order of expansion (`Tree.get_nodes`). TreeQuest keeps the tree
in memory (the algorithm's state; its visualiser draws it with Graphviz), so the file is that tree's fields as JSON,
in either shape:

- flat, as `Tree.get_nodes()` lists them: `{"nodes": [{"expand_idx": -1, "parent": null, "score": -1.0,
  "state": null}, {"expand_idx": 0, "parent": -1, "score": 0.4, "state": ...}, ...]}`;
- nested from the root: `{"root": {"expand_idx": -1, "score": -1.0, "state": null, "children": [...]}}`.

A state is text, or an object whose `llm_answer` / `answer` / `text` is the text (the README's `State`); its other
fields stay with the node. A node's expansion is iteration `expand_idx + 1`. TreeQuest's states are whole answers
(each node refines its parent's), so each node is a candidate solution on its own: the run says so
(`each_node_is_a_solution`), and shadow scoring scores a node's own text, not its path's. The chosen answer is the
best-scored node's (`tq.top_k(tree, algo, k=1)` for the score-ranked algorithms)."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

from .tree import ImportedNode, ImportedRun, ImportFormatError

_TEXT_KEYS = ("llm_answer", "answer", "text", "content")


def _state_text(state: Any, where: str, name: str) -> tuple[str, dict[str, Any]]:
    if isinstance(state, str):
        return state, {}
    if isinstance(state, dict):
        for key in _TEXT_KEYS:
            if isinstance(state.get(key), str):
                return state[key], {k: v for k, v in state.items() if k != key}
        return json.dumps(state, ensure_ascii=False, default=str), {}
    raise ImportFormatError(name, f"{where}: its state is {type(state).__name__}; give text or an object with "
                                  "llm_answer/answer/text")


def _flat(data: Any, name: str) -> list[dict[str, Any]]:
    """The nodes as flat dicts with a parent expand_idx, from either shape."""
    if isinstance(data, dict) and isinstance(data.get("nodes"), list):
        return data["nodes"]
    if isinstance(data, dict) and isinstance(data.get("root"), dict):
        out, stack = [], [(data["root"], None)]
        while stack:
            node, parent = stack.pop()
            if not isinstance(node, dict):
                raise ImportFormatError(name, f"a child of node {parent} is not an object")
            out.append({**{k: v for k, v in node.items() if k != "children"}, "parent": parent})
            kids = node.get("children") or []
            if not isinstance(kids, list):
                raise ImportFormatError(name, f"node {node.get('expand_idx')}: 'children' is not a list")
            stack.extend((c, node.get("expand_idx")) for c in reversed(kids))
        return out
    raise ImportFormatError(name, "neither {\"nodes\": [...]} nor {\"root\": {...}}; a TreeQuest tree is its nodes' "
                                  "expand_idx, parent, score and state")


def parse(text: str, name: str, question: str | None = None, gold: str | None = None) -> list[ImportedRun]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(name, f"not JSON ({exc.msg} at line {exc.lineno})") from None
    rows = _flat(data, name)
    by_idx: dict[int, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        idx = row.get("expand_idx") if isinstance(row, dict) else None
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise ImportFormatError(name, f"node {i}: no integer expand_idx")
        if idx in by_idx:
            raise ImportFormatError(name, f"expand_idx {idx} appears twice; each node has its own")
        by_idx[idx] = row
    if -1 not in by_idx:
        raise ImportFormatError(name, "no root (expand_idx -1)")
    nodes: list[ImportedNode] = []
    parents = {int(r.get("parent")) for i, r in by_idx.items() if i != -1 and isinstance(r.get("parent"), int)}
    for idx in sorted(i for i in by_idx if i != -1):
        row, where = by_idx[idx], f"node {idx}"
        parent = row.get("parent")
        if isinstance(parent, bool) or not isinstance(parent, int) or parent not in by_idx or parent >= idx:
            raise ImportFormatError(name, f"{where}: parent {parent!r} is no node expanded before it (a parent's "
                                          "expand_idx is smaller; the root's is -1)")
        score = row.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= float(score) <= 1.0:
            raise ImportFormatError(name, f"{where}: score {score!r} is not in [0, 1] (TreeQuest's nodes hold one)")
        step, fields = _state_text(row.get("state"), where, name)
        nodes.append(ImportedNode(key=idx, parent=None if parent == -1 else parent, step=step, created_iter=idx + 1,
                                  score=float(score), finished=idx not in parents,
                                  extra={"expand_idx": idx, **({"state": fields} if fields else {})}))
    root_state = by_idx[-1].get("state")
    asked = question if question is not None else (root_state.get("question") if isinstance(root_state, dict)
                                                   else data.get("question") if isinstance(data, dict) else None)
    if not isinstance(asked, str) or not asked:
        raise ImportFormatError(name, "the file names no question (a top-level \"question\"); give it with --question")
    gold = gold if gold is not None else (data.get("answer") if isinstance(data.get("answer"), str) else None)
    best = max(nodes, key=lambda n: (n.score or 0.0, -n.created_iter), default=None)
    return [ImportedRun(tool="treequest", label="the tree", question=asked, gold=gold, nodes=nodes,
                        chosen=[best.key] if best is not None else [], problem_id=PurePath(name).name,
                        info={"file": PurePath(name).name, "each_node_is_a_solution": True})]
