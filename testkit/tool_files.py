"""Files of three other tools for the importer tests and the app's browser test.

- llm-reasoners and TreeQuest: files their own code wrote, committed under tests/fixtures/tools/ beside the scripts
  that ran the tools (make_llm_reasoners.py, make_treequest.py) and each file's `.truth.json`, what the tool itself
  held (nodes, parents, scores, its answer);
- search-and-learn: `{approach}_completions.jsonl` written by search-and-learn's own code (tool_fixtures/
  search_and_learn/make_files.py: its approaches, score() and save_dataset() with vLLM and the PRM scripted)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

QUESTION = "A rectangle is 6 cm long and 4 cm wide. What is its area in square centimetres?"
GOLD = "24"
TESTS = Path(__file__).resolve().parents[1] / "tests"
TOOL_FILES = TESTS / "fixtures" / "tools"
# the app's files: a bare llm-reasoners tree log (what visualize() posts: no question, no answer) and a TreeQuest
# export without annotations (no question); both need the question typed
LLM_REASONERS_FILE = "mcts_rap.treelog.json"
LLM_REASONERS_QUESTION = "Tom has 3 boxes with 4 apples in each box. He eats 2 apples. How many apples are left?"
TREEQUEST_FILE = "standard_mcts.json"


SAL_DIR = TESTS / "tool_fixtures" / "search_and_learn"
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
    files = {
        "llm-reasoners": folder / LLM_REASONERS_FILE,
        "search-and-learn": folder / "best_of_n_completions.jsonl",
        "treequest": folder / TREEQUEST_FILE,
    }
    shutil.copyfile(tool_file("llm-reasoners", LLM_REASONERS_FILE), files["llm-reasoners"])
    shutil.copyfile(sal_file("best_of_n", "rlhflow"), files["search-and-learn"])  # the tool's bytes as written
    shutil.copyfile(tool_file("treequest", TREEQUEST_FILE), files["treequest"])
    return files


def import_with_cli(tmp_path: Path, tool: str, path: Path, *extra: str) -> tuple[Any, list[str]]:
    """`uats import --from TOOL PATH` into tmp_path/runs.db: the run log and its run ids, by problem id."""
    from storage import RunStore
    from uats.cli import main as cli

    db = tmp_path / "runs.db"
    assert cli(["import", "--from", tool, str(path), "--db", str(db), *extra]) == 0
    store = RunStore(str(db))
    return store, [r["run_id"] for r in sorted(store.list_runs(), key=lambda r: r["problem_id"])]
