"""`uats import` and the Runs tab's import: files of llm-reasoners, search-and-learn and TreeQuest (written by
tests/tool_files.py from each tool's documented schema) become runs the app reads back like its own: iterations to
step through, the tool's score per node, its chosen answer graded; no MC passes, which shadow scoring then adds.
A malformed file is one line naming the file, the place and what is wrong, and nothing is written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from storage import RunStore
from tests.doubles import HashedPRMDouble, WorkerPoolDouble
from tests.tool_files import GOLD, QUESTION, llm_reasoners_log, search_and_learn_rows, treequest_tree, write_tool_files
from uats.cli import main as cli
from uats_core.protocols import Trace


def _import(tmp_path: Path, tool: str, path: Path, *extra: str) -> tuple[RunStore, list[str]]:
    db = tmp_path / "runs.db"
    assert cli(["import", "--from", tool, str(path), "--db", str(db), *extra]) == 0
    store = RunStore(str(db))
    return store, [r["run_id"] for r in sorted(store.list_runs(), key=lambda r: r["problem_id"])]


def test_an_llm_reasoners_log_becomes_a_run_whose_snapshots_are_its_iterations(tmp_path, capsys):
    from ui.views.run_status import run_status_md
    from ui.views.treedata import RunData

    files = write_tool_files(tmp_path / "in")
    store, [run_id] = _import(tmp_path, "llm-reasoners", files["llm-reasoners"], "--answer", GOLD)
    assert "5 nodes, 5 with the tool's score, 3 iterations; no MC passes" in capsys.readouterr().out
    data = RunData.load(store, run_id)
    assert data.run["method"] == "llm-reasoners" and data.run["question"] == QUESTION and data.max_iteration == 3
    assert [len(data.state_at(t).nodes) - 1 for t in (1, 2, 3)] == [2, 3, 5]  # the snapshots' trees
    final = data.state_at(None)
    scores = sorted(n["mean"] for i, n in final.nodes.items() if i)
    assert scores == [0.10, 0.15, 0.20, 0.70, 0.88]  # each edge's reward, as one deterministic score
    assert all(len(n["mc_scores"]) == 1 for i, n in final.nodes.items() if i)
    assert data.run["answer"] == "24" and data.run["correct"] is True  # the selected edges' path, graded
    status = run_status_md(data.run, final)
    assert "imported from **llm&#45;reasoners** (3 snapshots of mcts&#95;tree&#95;log&#46;json)" in status
    assert "cost spent" not in status and "seed" not in status  # another tool's: not ours to say
    assert "no MC passes stored" in status


def test_search_and_learn_rows_become_runs_rebuilt_from_shared_step_prefixes(tmp_path):
    from ui.views.treedata import RunData

    files = write_tool_files(tmp_path / "in")
    store, ids = _import(tmp_path, "search-and-learn", files["search-and-learn"])
    assert len(ids) == 2
    data = RunData.load(store, next(i for i in ids if store.get_run(i)["problem_id"] == "test/prealgebra/rect.json"))
    final = data.state_at(None)
    first = [n for n in final.nodes.values() if n.get("depth") == 1]
    # four completions, three starting with the same step: one node for that step, its score 0.91
    assert sorted(n["mean"] for n in first) == [0.42, 0.91]
    assert len(final.nodes) - 1 == 8 and data.max_iteration == 3
    assert data.run["answer"] == "24" and data.run["correct"] is True
    leaves = [n for n in final.nodes.values() if n.get("status") == "finished"]
    assert sorted(n["answer"] for n in leaves) == ["10", "20", "24", "24"]
    assert {n["answer"]: n["correct"] for n in leaves} == {"10": False, "20": False, "24": True}


def test_a_treequest_tree_in_either_shape_keeps_its_order_of_expansion(tmp_path):
    from ui.views.treedata import RunData

    (tmp_path / "nested.json").write_text(json.dumps(treequest_tree(nested=True)))
    files = write_tool_files(tmp_path / "in")
    for path in (files["treequest"], tmp_path / "nested.json"):
        store, [run_id] = _import(tmp_path / path.stem, "treequest", path)
        data = RunData.load(store, run_id)
        final = data.state_at(None)
        assert data.max_iteration == 5  # one expansion per iteration
        assert [n["created_iter"] for _, n in sorted(final.nodes.items()) if _] == [1, 2, 3, 4, 5]
        assert [n["mean"] for _, n in sorted(final.nodes.items()) if _] == [0.45, 0.62, 0.93, 0.58, 0.95]
        assert data.run["answer"] == "24" and data.run["correct"] is True  # the best-scored node's
        store.close()


class _RecordingPRM(HashedPRMDouble):
    """HashedPRMDouble that keeps the traces it was asked to score."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.traces: list[Trace] = []

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        self.traces += list(traces)
        return super().mc_scores(traces, k)


@pytest.mark.parametrize("tool", ["llm-reasoners", "search-and-learn", "treequest"])
def test_shadow_scoring_adds_mean_and_variance_to_every_imported_node(tool, tmp_path):
    from ui.jobs.shadow import run_shadow
    from ui.views.treedata import RunData

    files = write_tool_files(tmp_path / "in")
    store, ids = _import(tmp_path, tool, files[tool])
    prm = _RecordingPRM()
    shadow = run_shadow(store, ids[0], prm, k=5)
    data = RunData.load(store, ids[0])
    nodes = [i for i in data.nodes if i]
    assert sorted(shadow) == sorted(nodes)
    assert all(len(r["mc_scores"]) == 5 and r["var"] is not None and r["mean"] is not None for r in shadow.values())
    deepest = max(nodes, key=lambda i: data.nodes[i]["depth"])
    scored = next(t for t in prm.traces if t.steps[-1] == data.nodes[deepest]["step"])
    # TreeQuest's nodes are whole answers: the PRM reads the node's own text; elsewhere its path's steps
    assert len(scored.steps) == (1 if tool == "treequest" else data.nodes[deepest]["depth"])
    assert data.nodes[deepest]["mc_scores"] == [data.nodes[deepest]["mean"]]  # the run's own score is untouched


def _bad_llm_reasoners() -> list[tuple[str, Any, str]]:
    log = llm_reasoners_log()
    dangling = json.loads(json.dumps(log))
    dangling["logs"][1]["edges"]["2"]["target"] = 99
    two_roots = json.loads(json.dumps(log))
    del two_roots["logs"][0]["edges"]["1"]
    return [("not JSON", "{logs: [", "not JSON (Expecting property name enclosed in double quotes at line 1)"),
            ("no logs", {"nodes": {}}, "no 'logs' list of snapshots"),
            ("dangling edge", dangling, "logs[1].edges[2]: its target 99 is no node of that snapshot"),
            ("two roots", two_roots, "logs[0]: 2 nodes without a parent edge; a tree has one root"),
            ("no question", llm_reasoners_log(question=None), "the log names no question")]


def _bad_search_and_learn() -> list[tuple[str, Any, str]]:
    rows = search_and_learn_rows()
    short = [dict(rows[0], scores=rows[0]["scores"][:3])]
    steps = [dict(rows[0], scores=[[0.9], *rows[0]["scores"][1:]])]
    out_of_range = [dict(rows[0], scores=[[0.9, 1.7, 0.8], *rows[0]["scores"][1:]])]
    return [("not JSON", "{\"problem\": ", "line 1: not JSON"),
            ("no completions", [{"problem": "x", "scores": []}], "row 0: no 'completions' field"),
            ("scores per completion", short, "row 0: 4 completions but 3 score lists"),
            ("scores per step", steps, "row 0: scores[0] has 1 scores for the 3 steps of completions[0]"),
            ("score range", out_of_range, "row 0: scores[0][1] = 1.7 is no PRM score in [0, 1]")]


def _bad_treequest() -> list[tuple[str, Any, str]]:
    tree = treequest_tree()
    no_root = dict(tree, nodes=tree["nodes"][1:])
    late_parent = json.loads(json.dumps(tree))
    late_parent["nodes"][2]["parent"] = 3
    bad_score = json.loads(json.dumps(tree))
    bad_score["nodes"][3]["score"] = 4.5
    twice = dict(tree, nodes=tree["nodes"] + [tree["nodes"][1]])
    return [("shape", {"tree": []}, "neither {\"nodes\": [...]} nor {\"root\": {...}}"),
            ("no root", no_root, "no root (expand_idx -1)"),
            ("parent", late_parent, "node 1: parent 3 is no node expanded before it"),
            ("score", bad_score, "node 2: score 4.5 is not in [0, 1]"),
            ("duplicate", twice, "expand_idx 0 appears twice"),
            ("no question", {k: v for k, v in tree.items() if k != "question"}, "the file names no question")]


BAD = [(tool, *case) for tool, cases in (("llm-reasoners", _bad_llm_reasoners()),
                                         ("search-and-learn", _bad_search_and_learn()),
                                         ("treequest", _bad_treequest())) for case in cases]


@pytest.mark.parametrize("tool, what, content, message", BAD, ids=[f"{b[0]}-{b[1]}" for b in BAD])
def test_a_malformed_file_is_one_line_and_writes_nothing(tool, what, content, message, tmp_path, capsys):
    path = tmp_path / ("bad.jsonl" if tool == "search-and-learn" else "bad.json")
    if isinstance(content, str):
        path.write_text(content)
    elif tool == "search-and-learn" and isinstance(content, list):
        path.write_text("".join(json.dumps(r) + "\n" for r in content))
    else:
        path.write_text(json.dumps(content))
    db = tmp_path / "runs.db"
    assert cli(["import", "--from", tool, str(path), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: file: {path}: {message}"), err
    assert err.count("\n") == 1 and not db.exists()


def test_the_runs_tab_imports_only_listed_files_through_the_pool(tmp_path):
    from ui.choices import IMPORT_REFUSED, server_choices
    from ui.jobs.import_job import submit_import
    from uats_core.config import ConfigError

    folder = tmp_path / "imports"
    files = write_tool_files(folder)
    (folder / "broken.json").write_text("{\"logs\": []}")
    choices = server_choices(imports_dirs=[folder])
    assert sorted(choices.imports) == ["abmcts_tree.json", "beam_search_completions.jsonl", "broken.json",
                                       "mcts_tree_log.json"]
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    with pytest.raises(ConfigError, match=re.escape(IMPORT_REFUSED)):
        submit_import(store, pool, choices, "treequest", str(files["treequest"]), 0)  # a path is no choice
    assert pool.submitted == [] and store.list_runs() == []
    broken = submit_import(store, pool, choices, "llm-reasoners", "broken.json", 0)  # parsed by the worker, not here
    assert pool.submitted.pop().run(None, store) is None
    assert store.get_run(broken)["status"] == "failed"
    assert store.get_run(broken)["error"].startswith("file: broken.json: no 'logs' list of snapshots")
    run_id = submit_import(store, pool, choices, "search-and-learn", "beam_search_completions.jsonl", 1.0,
                           owner="user:ann")
    assert store.get_run(run_id)["status"] == "queued"
    (req,) = pool.submitted
    assert req.run(None, store) is None
    run = store.get_run(run_id)
    assert (run["status"], run["problem_id"], run["answer"], run["owner"]) == ("finished", "test/prealgebra/sum.json",
                                                                               "8", "user:ann")
    assert len(store.get_nodes(run_id)) == 3
