"""SakanaAI TreeQuest's own export: `treequest.render(state, "name", format="json")` (or `"yaml"`), which writes
`treequest.vis.build_snapshot(state)` through `dump_snapshot` (treequest/vis/renderers/json_yaml.py):
`{"nodes": [...], "edges": [...], "trials": [...], "metadata": {...}}`. A node (vis/snapshot.py, NodeSnapshot) is
`id` (its `expand_idx`: the root -1, then 0, 1, 2, ... in the order of expansion), `parent_id`, `depth`, `score`
(the root's -1.0), `state_repr` (the state as text: `"ROOT"` for the root; JSON for a dataclass or pydantic state,
`repr()` otherwise, so a text state is a quoted Python literal), `action_from_parent`, `status`, `algo_metrics`, ...
`metadata` holds `algorithm`, `treequest_version` and the `annotations=` the user passed (a `question` and `answer`
there are read).

A node's expansion is iteration `id + 1`. TreeQuest's states are whole answers (each node refines its parent's, and
`tq.top_k` ranks every node), so each node is a candidate solution on its own: every node is graded, the run says so
(`each_node_is_a_solution`), and shadow scoring scores a node's own text. The answer text is the state's: the JSON
state's `llm_answer` / `answer` / `text` / `content` field, or the Python string literal read back. The chosen answer is
`tq.top_k(state, algo, k=1)`'s: the highest score, the first expanded among equals. Scores are in [0, 1] unless the
algorithm was told otherwise (ABMCTSM's `validate_reward_range=False`): then every score stays in the node's source
fields, none is drawn as R̄, and the run says how many lie outside."""

from __future__ import annotations

import ast
import json
from pathlib import PurePath
from typing import Any

from .tree import ImportedNode, ImportedRun, ImportFormatError, score_or_none

_TEXT_KEYS = ("llm_answer", "answer", "text", "content", "solution", "code")
_REQUIRED = ("id", "parent_id", "score", "state_repr")


def state_text(state_repr: str) -> tuple[str, dict[str, Any]]:
    """The answer text of a node's state_repr and the state's other fields (JSON states)."""
    stripped = state_repr.strip()
    if stripped[:1] in "{[":
        try:
            state = json.loads(stripped)
        except json.JSONDecodeError:
            return state_repr, {}
        if isinstance(state, dict):
            for key in _TEXT_KEYS:
                if isinstance(state.get(key), str):
                    return state[key], {k: v for k, v in state.items() if k != key}
            return state_repr, state
        return state_repr, {}
    if stripped[:1] in "'\"" or stripped[:2] in ("r'", 'r"', "b'"):
        try:
            value = ast.literal_eval(stripped)  # a literal only: nothing is run
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return state_repr, {}
        if isinstance(value, str):
            return value, {}
    return state_repr, {}


def load(text: str, name: str) -> Any:
    """The export's data, JSON or YAML (YAML read safely, and without aliases: TreeQuest writes none)."""
    if text.lstrip()[:1] == "{":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(name, f"not JSON ({exc.msg} at line {exc.lineno})") from None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, 5x faster where PyYAML has it; both safe
    try:
        for event in yaml.parse(text, Loader=loader):  # aliases first: one could make the tree expand without bound
            if isinstance(event, yaml.AliasEvent):
                raise ImportFormatError(
                    name,
                    f"line {event.start_mark.line + 1}: a YAML alias (*name), which "
                    "treequest.render never writes; give the file it wrote",
                )
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ImportFormatError(name, f"neither JSON nor YAML{where} ({str(exc).splitlines()[0]})") from None


def _rows(data: Any, name: str) -> dict[int, dict[str, Any]]:
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise ImportFormatError(
            name,
            "no 'nodes' list; a TreeQuest export is what treequest.render(state, name, "
            'format="json") writes: nodes, edges, trials, metadata',
        )
    by_id: dict[int, dict[str, Any]] = {}
    for i, row in enumerate(data["nodes"]):
        missing = [k for k in _REQUIRED if not isinstance(row, dict) or k not in row]
        if missing:
            raise ImportFormatError(
                name,
                f"nodes[{i}]: no {', '.join(missing)}; TreeQuest's export gives every node "
                "id, parent_id, score and state_repr",
            )
        nid = row["id"]
        if isinstance(nid, bool) or not isinstance(nid, int):
            raise ImportFormatError(name, f"nodes[{i}]: id {nid!r} is not an integer (TreeQuest's expand_idx)")
        if nid in by_id:
            raise ImportFormatError(name, f"node {nid} appears twice; each node has its own id")
        by_id[nid] = row
    if -1 not in by_id:
        raise ImportFormatError(name, "no root (the node with id -1)")
    return by_id


def _node(nid: int, row: dict[str, Any], by_id: dict[int, dict[str, Any]], name: str) -> ImportedNode:
    where = f"node {nid}"
    parent = row["parent_id"]
    if isinstance(parent, bool) or not isinstance(parent, int) or parent not in by_id or parent >= nid:
        raise ImportFormatError(
            name,
            f"{where}: parent_id {parent!r} is no node expanded before it (a parent's id is smaller; the root's is -1)",
        )
    score = row["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or score != score:
        raise ImportFormatError(name, f"{where}: score {score!r} is not a number")
    if not isinstance(row["state_repr"], str):
        raise ImportFormatError(name, f"{where}: state_repr is {type(row['state_repr']).__name__}, not text")
    step, fields = state_text(row["state_repr"])
    source = {
        k: row[k]
        for k in ("id", "score", "action_from_parent", "status", "trial_id", "algo_metrics")
        if row.get(k) not in (None, {}, "")
    }
    if fields:
        source["state"] = fields
    return ImportedNode(
        key=nid,
        parent=None if parent == -1 else parent,
        step=step,
        created_iter=nid + 1,
        score=float(score),
        finished=True,
        extra=source,
    )


def parse(text: str, name: str, question: str | None = None, gold: str | None = None) -> list[ImportedRun]:
    data = load(text, name)
    by_id = _rows(data, name)
    nodes = [_node(nid, by_id[nid], by_id, name) for nid in sorted(i for i in by_id if i != -1)]
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    asked = question if question is not None else meta.get("question")
    if not isinstance(asked, str) or not asked.strip():
        raise ImportFormatError(
            name,
            "the export names no question (TreeQuest stores none); give it with --question "
            '(or render with annotations={"question": ...})',
        )
    if gold is None and isinstance(meta.get("answer"), (str, int, float)) and not isinstance(meta.get("answer"), bool):
        gold = str(meta["answer"])
    raw = [n.score for n in nodes]
    outside = sum(1 for s in raw if score_or_none(s) is None)
    # tq.top_k: sorted by score, descending, stable, over the nodes in expand order
    best = sorted(nodes, key=lambda n: -float(n.score or 0.0))[0] if nodes else None
    if outside:
        for n in nodes:
            n.score = None  # every score stays in the node's source fields (its "score")
    info = {
        "file": PurePath(name).name,
        "each_node_is_a_solution": True,
        "algorithm": meta.get("algorithm"),
        "treequest_version": meta.get("treequest_version"),
        "scores_as_r": not outside,
        "scores_outside_unit_range": outside,
    }
    return [
        ImportedRun(
            tool="treequest",
            label="the tree",
            question=asked,
            gold=gold,
            nodes=nodes,
            chosen=[best.key] if best is not None else [],
            problem_id=PurePath(name).name,
            info={k: v for k, v in info.items() if v is not None},
        )
    ]
