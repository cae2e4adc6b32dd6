"""search-and-learn's output (huggingface/search-and-learn, `save_dataset`: `{approach}_completions.jsonl`, one JSON
row per problem): the dataset's own fields (`problem`, `answer`, `unique_id`, ...) plus what its approaches add:
`completions` (the N solutions), `scores` (per solution, the PRM's score of each of its steps: a list of floats),
`pred` (the solution it chose) and `completion_tokens`. Its PRMs cut a solution into steps at "\\n\\n"
(sal/models/reward_models.py), one score per step, so the tree is rebuilt from shared step prefixes: a prefix two
solutions share is one node; each node holds the score its step got (iteration t: the nodes at depth t)."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

from uats_core.protocols import STEP_DELIMITER

from .tree import ImportedNode, ImportedRun, ImportFormatError, score_or_none


def split_steps(completion: str) -> list[str]:
    """A solution's steps as its PRM saw them (split at the delimiter), each kept with its delimiter as a policy
    writes it, so the steps concatenate back to the solution."""
    parts = completion.split(STEP_DELIMITER)
    steps = [p + STEP_DELIMITER for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    return steps or [completion]


def parse(text: str, name: str, rows: list[int] | None = None) -> list[ImportedRun]:
    """The file's rows (or the 0-based `rows` of it) as runs; ImportFormatError on the first thing amiss."""
    lines = [(i, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    if not lines:
        raise ImportFormatError(name, "empty; a search-and-learn output is one JSON row per problem "
                                      "({approach}_completions.jsonl)")
    wanted = range(len(lines)) if rows is None else rows
    runs = []
    for r in wanted:
        if not 0 <= r < len(lines):
            raise ImportFormatError(name, f"row {r}: the file has {len(lines)} rows (0 to {len(lines) - 1})")
        line_no, line = lines[r]
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(name, f"line {line_no + 1}: not JSON ({exc.msg}); the file must be JSON lines, "
                                          "one row per problem") from None
        runs.append(_run(row, f"row {r}", name, r))
    return runs


def _field(row: Any, key: str, kind: type, where: str, name: str) -> Any:
    if not isinstance(row, dict) or key not in row:
        raise ImportFormatError(name, f"{where}: no '{key}' field; a search-and-learn row has problem, completions, "
                                      "scores and pred")
    value = row[key]
    if not isinstance(value, kind):
        raise ImportFormatError(name, f"{where}: '{key}' is {type(value).__name__}, not {kind.__name__}")
    return value


def _run(row: Any, where: str, name: str, index: int) -> ImportedRun:
    problem = _field(row, "problem", str, where, name)
    completions = _field(row, "completions", list, where, name)
    scores = _field(row, "scores", list, where, name)
    pred = row.get("pred")
    if len(scores) != len(completions):
        raise ImportFormatError(name, f"{where}: {len(completions)} completions but {len(scores)} score lists; "
                                      "scores holds one list per completion")
    nodes: list[ImportedNode] = []
    by_prefix: dict[tuple[str, ...], ImportedNode] = {}
    leaves: list[tuple[str, ...]] = []
    for c, (completion, per_step) in enumerate(zip(completions, scores)):
        if not isinstance(completion, str):
            raise ImportFormatError(name, f"{where}: completions[{c}] is {type(completion).__name__}, not text")
        steps = split_steps(completion)
        if not isinstance(per_step, list) or len(per_step) != len(steps):
            got = len(per_step) if isinstance(per_step, list) else type(per_step).__name__
            raise ImportFormatError(name, f"{where}: scores[{c}] has {got} scores for the {len(steps)} steps of "
                                          f"completions[{c}] (split at blank lines, as its PRM splits them)")
        for d, step in enumerate(steps):
            score = per_step[d]
            if score_or_none(score) is None:
                raise ImportFormatError(name, f"{where}: scores[{c}][{d}] = {score!r} is no PRM score in [0, 1]")
            key = tuple(steps[:d + 1])
            if key not in by_prefix:
                by_prefix[key] = ImportedNode(key=key, parent=key[:-1] or None, step=step, created_iter=d + 1,
                                              score=float(score), finished=d == len(steps) - 1)
                nodes.append(by_prefix[key])
            elif d == len(steps) - 1:
                by_prefix[key].finished = True
        leaves.append(tuple(steps))
    for node in nodes:  # a solution that is a prefix of another ends where the other goes on: it stays a candidate
        node.extra = {"completions": sum(1 for leaf in leaves if leaf[:len(node.key)] == node.key)}
    chosen = [tuple(split_steps(pred))] if isinstance(pred, str) and tuple(split_steps(pred)) in by_prefix else []
    nodes.sort(key=lambda n: n.created_iter)  # stable: parents (one step shorter) before their children
    gold = row.get("answer")
    return ImportedRun(tool="search-and-learn", label=where, question=problem,
                       gold=str(gold) if gold is not None else None, nodes=nodes, chosen=chosen,
                       problem_id=str(row.get("unique_id") or f"{PurePath(name).name}#{index}"),
                       info={"completions": len(completions), "file": PurePath(name).name})
