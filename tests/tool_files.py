"""Files in the formats three other tools write, built here from each project's documented schema (uats_core/imports/
names the source of each): the importer tests, the app's browser test and the notebook's example read them.

- llm-reasoners: `json.dumps(TreeLog, cls=TreeLogEncoder)` of an MCTS search, one TreeSnapshot per iteration;
- search-and-learn: `{approach}_completions.jsonl` rows as `save_dataset` writes them (MATH-500's fields plus
  completions, scores, pred, completion_tokens);
- TreeQuest: a tree's nodes (expand_idx, parent, score, state) as JSON, flat or nested from the root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QUESTION = "A rectangle is 6 cm long and 4 cm wide. What is its area in square centimetres?"
GOLD = "24"


def _node(i: int, data: dict[str, Any], selected: int | None = None) -> dict[str, Any]:
    return {"id": i, "data": data, "selected_edge": selected, "convert_images": True}


def _edge(i: int, source: int, target: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"id": i, "source": source, "target": target, "data": data, "convert_images": True}


# MCTS over steps (RAP-style sub-questions and answers in the node data; Q and reward on the edges)
_MCTS_NODES = {
    1: (0, {"question": "What is the area formula?", "answer": "Area = length × width."}, 0.82, 0.70),
    2: (0, {"question": "What is the perimeter?", "answer": "2 × (6 + 4) = 20."}, 0.35, 0.20),
    3: (1, {"question": "What is 6 × 4?", "answer": "6 × 4 = 24, so the area is \\boxed{24}."}, 0.91, 0.88),
    4: (1, {"question": "What is 6 + 4?", "answer": "6 + 4 = 10, so the area is \\boxed{10}."}, 0.22, 0.15),
    5: (2, {"question": "Is it 20?", "answer": "The answer is \\boxed{20}."}, 0.18, 0.10),
}
_SNAPSHOT_NODES = ([1, 2], [1, 2, 3], [1, 2, 3, 4, 5])  # the tree after each of three MCTS iterations


def llm_reasoners_log(question: str | None = QUESTION) -> dict[str, Any]:
    logs = []
    for held in _SNAPSHOT_NODES:
        edges = {str(k): _edge(k - 1, _MCTS_NODES[n][0], n, {"Q": _MCTS_NODES[n][2], "reward": _MCTS_NODES[n][3]})
                 for k, n in enumerate(held, start=1)}
        best = {p: max((n for n in held if _MCTS_NODES[n][0] == p), key=lambda n: _MCTS_NODES[n][2], default=None)
                for p in [0, *held]}
        edge_of = {n: k - 1 for k, n in enumerate(held, start=1)}
        nodes = {"0": _node(0, {"question": question} if question else {},
                            None if best[0] is None else edge_of[best[0]])}
        for n in held:
            nodes[str(n)] = _node(n, _MCTS_NODES[n][1], None if best[n] is None else edge_of[best[n]])
        logs.append({"nodes": nodes, "edges": edges})
    return {"logs": logs}


def search_and_learn_rows() -> list[dict[str, Any]]:
    base = "The area of a rectangle is its length times its width.\n\n"
    rows = [{"problem": QUESTION, "solution": "6 × 4 = 24", "answer": GOLD, "subject": "Prealgebra", "level": 1,
             "unique_id": "test/prealgebra/rect.json",
             "completions": [base + "6 × 4 = 24.\n\nSo the area is \\boxed{24}.",
                             base + "6 + 4 = 10.\n\nSo the area is \\boxed{10}.",
                             base + "6 × 4 = 24.\n\nThe answer is \\boxed{24}.",
                             "Add the sides: 6 + 4 + 6 + 4 = 20.\n\nSo \\boxed{20}."],
             "scores": [[0.91, 0.88, 0.86], [0.91, 0.31, 0.22], [0.91, 0.88, 0.83], [0.42, 0.18]],
             "pred": base + "6 × 4 = 24.\n\nSo the area is \\boxed{24}.", "completion_tokens": [31, 30, 30, 24]},
            {"problem": "What is 3 + 5?", "solution": "8", "answer": "8", "subject": "Prealgebra", "level": 1,
             "unique_id": "test/prealgebra/sum.json", "completions": ["3 + 5 = 8.\n\n\\boxed{8}", "\\boxed{9}"],
             "scores": [[0.9, 0.95], [0.3]], "pred": "3 + 5 = 8.\n\n\\boxed{8}", "completion_tokens": [9, 4]}]
    return rows


_TQ = [(-1, None, -1.0, None), (0, -1, 0.45, "Area = 6 + 4 = \\boxed{10}"), (1, -1, 0.62, "Area = 2 × (6 + 4) = \\boxed{20}"),
       (2, 0, 0.93, "Area = length × width = 6 × 4 = \\boxed{24}"), (3, 1, 0.58, "Perimeter is 20, so \\boxed{20}"),
       (4, 2, 0.95, {"llm_answer": "6 cm × 4 cm = 24 cm², so \\boxed{24}", "score": 0.95})]


def treequest_tree(nested: bool = False) -> dict[str, Any]:
    nodes = [{"expand_idx": i, "parent": p, "score": s, "state": st} for i, p, s, st in _TQ]
    if not nested:
        return {"question": QUESTION, "answer": GOLD, "nodes": nodes}
    by = {n["expand_idx"]: {k: v for k, v in n.items() if k != "parent"} | {"children": []} for n in nodes}
    for n in nodes[1:]:
        by[n["parent"]]["children"].append(by[n["expand_idx"]])
    return {"question": QUESTION, "answer": GOLD, "root": by[-1]}


def write_tool_files(folder: Path) -> dict[str, Path]:
    """One file of each tool in `folder`, by tool name."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"llm-reasoners": folder / "mcts_tree_log.json", "search-and-learn": folder / "beam_search_completions.jsonl",
             "treequest": folder / "abmcts_tree.json"}
    files["llm-reasoners"].write_text(json.dumps(llm_reasoners_log()), encoding="utf-8")
    files["search-and-learn"].write_text("".join(json.dumps(r) + "\n" for r in search_and_learn_rows()),
                                         encoding="utf-8")
    files["treequest"].write_text(json.dumps(treequest_tree()), encoding="utf-8")
    return files
