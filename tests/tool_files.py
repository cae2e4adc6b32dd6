"""Files of three other tools for the importer tests and the app's browser test.

- llm-reasoners and TreeQuest: files their own code wrote, committed under tests/fixtures/tools/ beside the scripts
  that ran the tools (make_llm_reasoners.py, make_treequest.py) and each file's `.truth.json`, what the tool itself
  held (nodes, parents, scores, its answer);
- search-and-learn: `{approach}_completions.jsonl` rows as `save_dataset` writes them (MATH-500's fields plus
  completions, scores, pred, completion_tokens), built here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

QUESTION = "A rectangle is 6 cm long and 4 cm wide. What is its area in square centimetres?"
GOLD = "24"
TOOL_FILES = Path(__file__).resolve().parent / "fixtures" / "tools"
# the app's files: a bare llm-reasoners tree log (what visualize() posts: no question, no answer) and a TreeQuest
# export without annotations (no question); both need the question typed
LLM_REASONERS_FILE = "mcts_rap.treelog.json"
LLM_REASONERS_QUESTION = "Tom has 3 boxes with 4 apples in each box. He eats 2 apples. How many apples are left?"
TREEQUEST_FILE = "standard_mcts.json"


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


def tool_file(tool: str, name: str) -> Path:
    """A file the tool's own code wrote (tests/fixtures/tools/, made by the make_*.py script beside it)."""
    return TOOL_FILES / {"llm-reasoners": "llm_reasoners", "treequest": "treequest"}[tool] / name


def truth_of(path: Path) -> dict[str, Any]:
    """What the tool itself held when it wrote `path`: the `.truth.json` its script saved from the tool's objects."""
    stem = path.name.split(".")[0]
    return json.loads((path.parent / f"{stem}.truth.json").read_text(encoding="utf-8"))


def write_tool_files(folder: Path) -> dict[str, Path]:
    """One file of each tool in `folder`, by tool name."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"llm-reasoners": folder / LLM_REASONERS_FILE, "search-and-learn": folder / "beam_search_completions.jsonl",
             "treequest": folder / TREEQUEST_FILE}
    shutil.copyfile(tool_file("llm-reasoners", LLM_REASONERS_FILE), files["llm-reasoners"])
    files["search-and-learn"].write_text("".join(json.dumps(r) + "\n" for r in search_and_learn_rows()),
                                         encoding="utf-8")
    shutil.copyfile(tool_file("treequest", TREEQUEST_FILE), files["treequest"])
    return files
