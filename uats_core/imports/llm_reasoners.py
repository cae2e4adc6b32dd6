"""llm-reasoners' tree log (maitrix-org/llm-reasoners 1.0.2, reasoners/visualization): `TreeLog.from_mcts_results` /
`from_beam_search_results` / `from_dfs_results` serialised with `json.dumps(tree_log, cls=TreeLogEncoder)` (what
`visualize()` uploads): `{"logs": [snapshot, ...]}`, one `TreeSnapshot` per MCTS iteration (beam search and DFS: one),
each `{"nodes": {id: {"id", "data", "selected_edge"}}, "edges": {id: {"id", "source", "target", "data"}}}`. Node data
is the search state made a dict by the node_data_factory (the default: a list state as `{"0": step, "1": step, ...}`,
every earlier step again; RAP's: `{"question", "answer"}` of the last step); edge data holds the step's numbers (MCTS:
`Q`, `reward` and the reward's details; beam search and DFS: `reward` and `action`). An MCTS child that was never
visited has no state: its data is `{}` and its edge holds only its `fast_reward` estimate.

What llm-reasoners writes to disk itself is a pickle (`log_dir/algo_output/N.pkl`), refused before it is read; and
the tree log holds no answer: `selected_edge` follows the last iteration's trace, not the search's result. So the
answer is stated only from what `uats_studio.llm_reasoners.export_llm_reasoners` adds beside the log (`result`: the
search's own terminal node and trace, its aggregated answer, the answer the user's output_extractor read, and
`question`); a bare tree log imports with no answer.

Each snapshot is an iteration, one for one. A node is created at the first snapshot in which it is visited and
takes its step and numbers from the last one; unvisited children are no steps: they stay with their parent
(`unvisited_children` in its source fields), never scored. A step's text is the node data's new entries against its
parent's (the default factory's cumulative states), else its `question` and `answer`, else its `step` / `action` /
`text`, else the edge's `action`, else the data as JSON. `reward` is the node's score when every visited node's
reward lies in [0, 1]; otherwise every number stays in the node's source fields only. Answers are read as
`\\boxed{}` or as RAP's "The answer is N."."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

from uats_core.protocols import STEP_DELIMITER

from .tree import ImportedNode, ImportedRun, ImportFormatError, extract_boxed_or_rap, score_or_none

EXPORTER = "uats_studio.llm_reasoners.export_llm_reasoners(result, 'run.json', question=...)"
Snapshot = tuple[dict[str, dict], dict[str, dict]]  # nodes by id, the edge into each node by its target's id


def _snapshot(log: Any, t: int, name: str) -> Snapshot:
    where = f"logs[{t}]"
    if not isinstance(log, dict) or not isinstance(log.get("nodes"), dict) or not isinstance(log.get("edges"), dict):
        raise ImportFormatError(
            name,
            f"{where}: a snapshot is an object with 'nodes' and 'edges' objects "
            "(TreeSnapshot as TreeLogEncoder writes it)",
        )
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
                raise ImportFormatError(
                    name, f"{where}.edges[{key}]: its {end} {edge[end]!r} is no node of that snapshot"
                )
        if not isinstance(edge.get("data", {}), dict):
            raise ImportFormatError(name, f"{where}.edges[{key}]: 'data' is not an object")
        edges[str(edge["target"])] = edge
    return nodes, edges


def _root(nodes: dict[str, dict], edges: dict[str, dict], t: int, name: str) -> str:
    roots = [k for k in nodes if k not in edges]
    if len(roots) != 1:
        raise ImportFormatError(name, f"logs[{t}]: {len(roots)} nodes without a parent edge; a tree has one root")
    return roots[0]


def _entry_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "\n".join(t for t in (_entry_text(v) for v in value) if t)
    if isinstance(value, dict):
        return "\n".join(t for t in (_entry_text(v) for v in value.values()) if t)
    return ""


def _cumulative(data: dict, parent: dict) -> str | None:
    """The default node_data_factory's list state, {"0": ..., "k": ...}: the entries the parent's state lacks."""
    keys = list(data)
    if not keys or keys != [str(i) for i in range(len(keys))] or len(parent) >= len(keys):
        return None
    if any(parent.get(k) != data[k] for k in parent):
        return None
    return "\n".join(_entry_text(data[k]) for k in keys[len(parent) :]) or None


def _step(data: dict, parent_data: dict, edge_data: dict) -> str:
    found = _cumulative(data, parent_data)
    if found is not None:
        return found
    if isinstance(data.get("question"), str) and isinstance(data.get("answer"), str):
        return f"{data['question']}\n{data['answer']}"
    for source, key in ((data, "step"), (data, "action"), (data, "text"), (edge_data, "action")):
        if isinstance(source.get(key), str):
            return source[key]
    return json.dumps(data, ensure_ascii=False, default=str) if data else ""


def _result(data: dict, name: str) -> dict[str, Any] | None:
    result = data.get("result")
    if result is None:
        return None
    if not isinstance(result, dict) or not isinstance(result.get("trace_nodes", []), list):
        raise ImportFormatError(name, f"'result' is not what {EXPORTER} writes")
    return result


def _unvisited(nodes: dict[str, dict], edges: dict[str, dict], root: str, t: int, result: dict | None) -> set[str]:
    listed = (result or {}).get("unvisited_after_each_iter")
    if isinstance(listed, list) and t < len(listed) and isinstance(listed[t], list):
        return {str(i) for i in listed[t]}
    return {k for k, n in nodes.items() if k != root and not (n.get("data") or {})}  # state None: data {}


def parse(text: str, name: str, question: str | None = None, gold: str | None = None) -> list[ImportedRun]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            name,
            f"not JSON ({exc.msg} at line {exc.lineno}); an llm-reasoners tree log is "
            'one JSON object {"logs": [...]}',
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("logs"), list) or not data["logs"]:
        raise ImportFormatError(
            name,
            "no 'logs' list of snapshots; an llm-reasoners tree log is "
            '{"logs": [TreeSnapshot, ...]} (json.dumps(tree_log, cls=TreeLogEncoder))',
        )
    result = _result(data, name)
    snaps = [_snapshot(log, t, name) for t, log in enumerate(data["logs"])]
    root = _root(*snaps[0], 0, name)
    first: dict[str, int] = {}
    latest: dict[str, tuple[dict, dict]] = {}
    unvisited_last: set[str] = set()
    for t, (nodes, edges) in enumerate(snaps):
        if _root(nodes, edges, t, name) != root:
            raise ImportFormatError(name, f"logs[{t}]: its root is not logs[0]'s root {root}; one log holds one search")
        unvisited = _unvisited(nodes, edges, root, t, result)
        for key, edge in edges.items():
            if key not in unvisited:
                first.setdefault(key, t + 1)
                latest[key] = (nodes[key], edge)
        unvisited_last = unvisited
    nodes_last, edges_last = snaps[-1]
    parents = {k: str(e["source"]) for k, (_, e) in latest.items()}
    for k in first:
        if parents[k] != root and parents[k] not in first:
            raise ImportFormatError(name, f"node {k}: visited, but its parent {parents[k]} never is")
    _check_acyclic(parents, root, name)
    imported = _nodes(first, latest, parents, root, nodes_last, edges_last, unvisited_last, result)
    asked = question if question is not None else data.get("question")
    if not isinstance(asked, str) or not asked.strip():
        raise ImportFormatError(name, "the log names no question (llm-reasoners stores none); give it with --question")
    if gold is None and isinstance(data.get("gold_answer"), str):
        gold = data["gold_answer"]
    run = ImportedRun(
        tool="llm-reasoners",
        label=f"{len(snaps)} snapshots",
        question=asked,
        gold=gold,
        nodes=imported,
        chosen=[],
        problem_id=PurePath(name).name,
        iterations=len(snaps),
        extract=extract_boxed_or_rap,
        info={
            "snapshots": len(snaps),
            "file": PurePath(name).name,
            "rewards_as_scores": all(n.score is not None for n in imported),
            "unvisited_children": len(unvisited_last - set(first)),
        },
    )
    _state_answer(run, result, {n.key: n for n in imported})
    return [run]


def _nodes(
    first: dict[str, int],
    latest: dict[str, tuple[dict, dict]],
    parents: dict[str, str],
    root: str,
    nodes_last: dict[str, dict],
    edges_last: dict[str, dict],
    unvisited: set[str],
    result: dict | None,
) -> list[ImportedNode]:
    terminal = {str(i) for i in (result or {}).get("terminal_nodes") or []}
    end = (result or {}).get("terminal_node")
    if end is not None:
        terminal.add(str(end))
    has_children = set(parents.values())
    rewards = [(e.get("data") or {}).get("reward") for _, e in latest.values()]
    use_reward = all(score_or_none(r) is not None for r in rewards)
    aside: dict[str, list[dict]] = {}
    for k in sorted((unvisited - set(first)) & set(edges_last), key=lambda k: int(k) if k.isdigit() else 0):
        aside.setdefault(str(edges_last[k]["source"]), []).append(
            {"id": nodes_last[k]["id"], "edge": edges_last[k].get("data") or {}}
        )
    data_of = {k: (n.get("data") or {}) for k, (n, _) in latest.items()}
    data_of[root] = nodes_last[root].get("data") or {}
    out = []
    for key in sorted(first, key=lambda k: (first[k], int(k) if k.isdigit() else 0)):
        node, edge = latest[key]
        edata = edge.get("data") or {}
        step = _step(data_of[key], data_of[parents[key]], edata)
        finished = key in terminal or (key not in has_children and extract_boxed_or_rap(step) is not None)
        if not finished and not step.endswith(STEP_DELIMITER):
            step += STEP_DELIMITER  # a step goes on: the delimiter a PRM reads between steps
        extra = {"edge": edata, "node": data_of[key], "id": node["id"]}
        if key in aside:
            extra["unvisited_children"] = aside[key]
        out.append(
            ImportedNode(
                key=key,
                parent=None if parents[key] == root else parents[key],
                step=step,
                created_iter=first[key],
                score=score_or_none(edata.get("reward")) if use_reward else None,
                finished=finished,
                extra=extra,
            )
        )
    return out


def _state_answer(run: ImportedRun, result: dict | None, by_key: dict[str, ImportedNode]) -> None:
    """The tool's own answer, from the export's result; none from a bare tree log."""
    run.answer_stated = True
    if result is None:
        run.answer_unknown = True
        run.info["answer_read_from"] = f"none: a tree log holds no answer of the tool's (export with {EXPORTER})"
        return
    end = result.get("terminal_node")
    end_node = by_key.get(str(end)) if end is not None else None
    if end_node is not None:
        run.chosen = [end_node.key]
    for value, source in (
        (result.get("answer"), "the exporter's output_extractor"),
        (result.get("aggregated_result"), "MCTS's aggregated_result"),
    ):
        if value is not None:
            run.answer, run.info["answer_read_from"] = str(value), source
            return
    if end_node is not None:
        path = []
        node: ImportedNode | None = end_node
        while node is not None:
            path.append(node.step)
            node = by_key.get(node.parent) if node.parent is not None else None
        run.answer = extract_boxed_or_rap(end_node.step) or extract_boxed_or_rap("".join(reversed(path)))
        run.info["answer_read_from"] = f"the search's terminal node {end}"
        return
    run.info["answer_read_from"] = "none: the search ended at no terminal node"


def _check_acyclic(parents: dict[str, str], root: str, name: str) -> None:
    for start in parents:
        key, d = start, 0
        while key != root:
            if d > len(parents):
                raise ImportFormatError(
                    name, f"node {start}: its parent edges never reach the root (a cycle); a tree log holds a tree"
                )
            key, d = parents.get(key, root), d + 1
