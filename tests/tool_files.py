"""Files in the formats three other tools write, built here from each project's documented schema (uats_core/imports/
names the source of each): the importer tests, the app's browser test and the notebook's example read them.

- llm-reasoners: `json.dumps(TreeLog, cls=TreeLogEncoder)` of an MCTS search, one TreeSnapshot per iteration;
- search-and-learn: `{approach}_completions.jsonl` written by search-and-learn's own code (tool_fixtures/
  search_and_learn/make_files.py: its approaches, score() and save_dataset() with vLLM and the PRM scripted);
- TreeQuest: a tree's nodes (expand_idx, parent, score, state) as JSON, flat or nested from the root."""

from __future__ import annotations

import json
import shutil
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


SAL_DIR = Path(__file__).parent / "tool_fixtures" / "search_and_learn"
SAL_APPROACHES = ("best_of_n", "beam_search", "dvts")
SAL_RULES = ("rlhflow", "qwen", "math-shepherd", "skywork")


def sal_file(approach: str, rule: str, fmt: str = "jsonl") -> Path:
    """A file search-and-learn's own code wrote (tool_fixtures/search_and_learn/make_files.py): save_dataset's
    JSON lines, or the same dataset as the Hub's Parquet."""
    return SAL_DIR / f"{approach}_{rule}_completions.{fmt}"


def sal_expected(approach: str, rule: str) -> dict[str, Any]:
    """The tool's own rows of that file and the scripted PRM's record of the parts it scored."""
    return json.loads((SAL_DIR / f"{approach}_{rule}.expected.json").read_text(encoding="utf-8"))


def search_and_learn_rows() -> list[dict[str, Any]]:
    """The rows of search-and-learn's best-of-N under its default PRM (RLHFlow), as its code wrote them."""
    return [json.loads(line) for line in sal_file("best_of_n", "rlhflow").read_text(encoding="utf-8").splitlines()]


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
    files = {"llm-reasoners": folder / "mcts_tree_log.json", "search-and-learn": folder / "best_of_n_completions.jsonl",
             "treequest": folder / "abmcts_tree.json"}
    files["llm-reasoners"].write_text(json.dumps(llm_reasoners_log()), encoding="utf-8")
    shutil.copyfile(sal_file("best_of_n", "rlhflow"), files["search-and-learn"])  # the tool's bytes as written
    files["treequest"].write_text(json.dumps(treequest_tree()), encoding="utf-8")
    return files
