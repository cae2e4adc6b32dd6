"""llm-reasoners' tree log (maitrix-org/llm-reasoners, reasoners/visualization: `TreeLog` written with
`json.dumps(tree_log, cls=TreeLogEncoder)`, what its visualizer uploads): `{"logs": [snapshot, ...]}`, one
`TreeSnapshot` per search iteration (`TreeLog.from_mcts_results`: the tree after each MCTS iteration; beam search
and DFS write one), each `{"nodes": {id: {"id", "data", "selected_edge"}}, "edges": {id: {"id", "source",
"target", "data"}}}`. Node data is the search state as a dict (its factory's choice); edge data holds the step's
numbers (MCTS: `Q`, `reward` and the reward's details; beam search and DFS: `reward` and `action`).

Snapshots become iterations: a node is created at the first snapshot that holds it, and takes its step and numbers
from the last one. The step's text is the edge's `action`, else the node data's `step`/`action`/`text`, else its
`question` and `answer` (RAP's sub-question and sub-answer), else the data as JSON. `reward` is the node's score
when every reward of the log lies in [0, 1] (a PRM's); otherwise every number stays in the node's source fields only.
The question is the root's data `question`/`problem`/`init_state`, or the one given. The chosen answer follows
`selected_edge` from the root in the last snapshot."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

from uats_core.protocols import STEP_DELIMITER

from .tree import ImportedNode, ImportedRun, ImportFormatError, score_or_none

_QUESTION_KEYS = ("question", "problem", "init_state", "query")


def _snapshot(log: Any, t: int, name: str) -> tuple[dict[str, dict], dict[str, dict]]:
    where = f"logs[{t}]"
    if not isinstance(log, dict) or not isinstance(log.get("nodes"), dict) or not isinstance(log.get("edges"), dict):
        raise ImportFormatError(name, f"{where}: a snapshot is an object with 'nodes' and 'edges' objects "
                                      "(TreeSnapshot as TreeLogEncoder writes it)")
    nodes, edges = {}, {}
    for key, node in log["nodes"].items():
        if not isinstance(node, dict) or "id" not in node or not isinstance(node.get("data", {}), dict):
            raise ImportFormatError(name, f"{where}.nodes[{key}]: a node has an 'id' and a 'data' object")
        nodes[str(node["id"])] = node
    for key, edge in log["edges"].items():
        if not isinstance(edge, dict) or not all(k in edge for k in ("source", "target")):
            raise ImportFormatError(name, f"{where}.edges[{key}]: an edge has a 'source' and a 'target'")
        for end in ("source", "target"):
            if str(edge[end]) not in nodes:
                raise ImportFormatError(name, f"{where}.edges[{key}]: its {end} {edge[end]!r} is no node of that snapshot")
        if not isinstance(edge.get("data", {}), dict):
            raise ImportFormatError(name, f"{where}.edges[{key}]: 'data' is not an object")
        edges[str(edge["target"])] = edge
    return nodes, edges


def _root(nodes: dict[str, dict], edges: dict[str, dict], t: int, name: str) -> str:
    roots = [k for k in nodes if k not in edges]
    if len(roots) != 1:
        raise ImportFormatError(name, f"logs[{t}]: {len(roots)} nodes without a parent edge; a tree has one root")
    return roots[0]


def _step(node: dict, edge: dict) -> str:
    edata, ndata = edge.get("data") or {}, node.get("data") or {}
    for source, key in ((edata, "action"), (ndata, "step"), (ndata, "action"), (ndata, "text")):
        if isinstance(source.get(key), str):
            return source[key]
    if isinstance(ndata.get("question"), str) and isinstance(ndata.get("answer"), str):
        return f"{ndata['question']}\n{ndata['answer']}"
    return json.dumps(ndata, ensure_ascii=False, default=str) if ndata else ""


def parse(text: str, name: str, question: str | None = None, gold: str | None = None) -> list[ImportedRun]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(name, f"not JSON ({exc.msg} at line {exc.lineno}); an llm-reasoners tree log is "
                                      "one JSON object {\"logs\": [...]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("logs"), list) or not data["logs"]:
        raise ImportFormatError(name, "no 'logs' list of snapshots; an llm-reasoners tree log is "
                                      "{\"logs\": [TreeSnapshot, ...]} (json.dumps(tree_log, cls=TreeLogEncoder))")
    snaps = [_snapshot(log, t, name) for t, log in enumerate(data["logs"])]
    root = _root(*snaps[0], 0, name)
    first: dict[str, int] = {}
    latest: dict[str, tuple[dict, dict]] = {}
    for t, (nodes, edges) in enumerate(snaps):
        if _root(nodes, edges, t, name) != root:
            raise ImportFormatError(name, f"logs[{t}]: its root is not logs[0]'s root {root}; one log holds one search")
        for key, edge in edges.items():
            first.setdefault(key, t + 1)
            latest[key] = (nodes[key], edge)
    rewards = [e.get("data", {}).get("reward") for _, e in latest.values()]
    use_reward = all(score_or_none(r) is not None for r in rewards if r is not None)
    last_nodes, last_edges = snaps[-1]
    chosen_path = _selected_path(last_nodes, last_edges, root)
    parents = {k: str(e["source"]) for k, (_, e) in latest.items()}
    has_children = {p for p in parents.values()}
    imported = []
    depth = {k: _depth(k, parents, root, name) for k in first}
    for key in sorted(first, key=lambda k: (first[k], depth[k])):
        node, edge = latest[key]
        step = _step(node, edge)
        leaf = key not in has_children
        finished = leaf and (key == (chosen_path[-1] if chosen_path else None) or "\\boxed{" in step
                             or bool((node.get("data") or {}).get("is_terminal")))
        if not finished and not step.endswith(STEP_DELIMITER):
            step += STEP_DELIMITER  # a step goes on: the delimiter a PRM reads between steps
        reward = (edge.get("data") or {}).get("reward")
        imported.append(ImportedNode(key=key, parent=None if parents[key] == root else parents[key], step=step,
                                     created_iter=first[key], score=score_or_none(reward) if use_reward else None,
                                     finished=finished, extra={"edge": edge.get("data") or {},
                                                               "node": node.get("data") or {}, "id": node["id"]}))
    root_data = (snaps[-1][0][root].get("data") or {})
    asked = question if question is not None else next((root_data[k] for k in _QUESTION_KEYS
                                                        if isinstance(root_data.get(k), str)), None)
    if not asked:
        raise ImportFormatError(name, "the log names no question (its root's data has no question/problem); "
                                      "give it with --question")
    return [ImportedRun(tool="llm-reasoners", label=f"{len(snaps)} snapshots", question=asked, gold=gold,
                        nodes=imported, chosen=chosen_path[-1:], problem_id=PurePath(name).name,
                        info={"snapshots": len(snaps), "file": PurePath(name).name, "rewards_as_scores": use_reward})]


def _depth(key: str, parents: dict[str, str], root: str, name: str) -> int:
    d, start = 0, key
    while key != root:
        if d > len(parents):
            raise ImportFormatError(name, f"node {start}: its parent edges never reach the root (a cycle); a tree log "
                                          "holds a tree")
        key, d = parents.get(key, root), d + 1
    return d


def _selected_path(nodes: dict[str, dict], edges: dict[str, dict], root: str) -> list[str]:
    """Node keys from the root's child down the selected edges of the last snapshot."""
    by_id = {str(e.get("id")): str(e["target"]) for e in edges.values()}
    path, cur = [], root
    while len(path) <= len(nodes):
        sel = nodes[cur].get("selected_edge")
        nxt = by_id.get(str(sel)) if sel is not None else None
        if nxt is None:
            break
        path.append(nxt)
        cur = nxt
    return path
