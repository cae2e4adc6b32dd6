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
from tests.tool_files import (GOLD, QUESTION, SAL_APPROACHES, SAL_RULES, llm_reasoners_log, sal_expected, sal_file,
                              search_and_learn_rows, treequest_tree, write_tool_files)
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
    from uats_core.grading import extract_boxed

    files = write_tool_files(tmp_path / "in")  # best-of-N under the default PRM (RLHFlow), by the tool's code
    store, ids = _import(tmp_path, "search-and-learn", files["search-and-learn"])
    rows = {r["unique_id"]: r for r in search_and_learn_rows()}
    assert len(ids) == len(rows) == 2
    for run_id in ids:
        data = RunData.load(store, run_id)
        row = rows[data.run["problem_id"]]
        final = data.state_at(None)
        # one node per distinct first step, holding the PRM's score of it
        firsts = {c.split("\n\n")[0]: s[0] for c, s in zip(row["completions"], row["scores"])}
        assert sorted(n["mean"] for n in final.nodes.values() if n.get("depth") == 1) == sorted(firsts.values())
        # depth t holds step t; RLHFlow's score of the empty part after a final blank line is no step
        assert data.max_iteration == max(len([p for p in c.split("\n\n") if p]) for c in row["completions"])
        assert data.run["answer"] == extract_boxed(row["pred"])
        assert data.run["correct"] is (data.run["answer"] == row["answer"])
        leaves = [n for n in final.nodes.values() if n.get("status") == "finished"]
        assert sorted(n["answer"] for n in leaves) == sorted(extract_boxed(c) for c in set(row["completions"]))


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
    # TreeQuest's nodes are whole answers: the PRM reads the node's own text; elsewhere its path's steps (a step's
    # text may recur at another depth: the trace is the one of this node's path)
    path, at = [], deepest
    while at:
        path.append(data.nodes[at]["step"])
        at = data.nodes[at]["parent_id"]
    want = (data.nodes[deepest]["step"],) if tool == "treequest" else tuple(reversed(path))
    assert any(t.steps == want for t in prm.traces)
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
    out_of_range = [dict(rows[0], scores=[[0.9, 1.7, *rows[0]["scores"][0][2:]], *rows[0]["scores"][1:]])]
    return [("not JSON", "{\"problem\": ", "row 0 (line 1): not JSON"),
            ("no completions", [{"problem": "x", "scores": []}], "row 0: no 'completions' field"),
            ("scores per completion", short, "row 0: 4 completions but 3 score lists"),
            ("scores per step", steps, "row 0: scores[0] has 1 scores for completions[0], where RLHFFlow or "
                                       "Qwen_2_5_Math scores "),
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
    from uats_core.grading import extract_boxed
    from uats_core.imports import ImportFormatError, read_runs

    folder = tmp_path / "imports"
    files = write_tool_files(folder)
    (folder / "broken.json").write_text("{\"logs\": []}")
    choices = server_choices(imports_dirs=[folder])
    assert sorted(choices.imports) == ["abmcts_tree.json", "best_of_n_completions.jsonl", "broken.json",
                                       "mcts_tree_log.json"]
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    with pytest.raises(ConfigError, match=re.escape(IMPORT_REFUSED)):
        submit_import(store, pool, choices, "treequest", str(files["treequest"]), 0)  # a path is no choice
    with pytest.raises(ImportFormatError, match="^file: broken.json: no 'logs' list of snapshots"):
        submit_import(store, pool, choices, "llm-reasoners", "broken.json", 0)
    assert pool.submitted == [] and store.list_runs() == []
    run_id = submit_import(store, pool, choices, "search-and-learn", "best_of_n_completions.jsonl", 1.0,
                           owner="user:ann")
    assert store.get_run(run_id)["status"] == "queued"
    (req,) = pool.submitted
    assert req.run(None, store) is None
    run = store.get_run(run_id)
    pred = extract_boxed(search_and_learn_rows()[1]["pred"])
    assert (run["status"], run["problem_id"], run["answer"], run["owner"]) == ("finished", "test/prealgebra/order.json",
                                                                               pred, "user:ann")
    assert len(store.get_nodes(run_id)) == len(read_runs("search-and-learn", files["search-and-learn"], rows=[1])[0].nodes)


# search-and-learn's own files (tests/tool_fixtures/search_and_learn/make_files.py ran its best_of_n, beam_search and
# dvts with vLLM's LLM and each PRM class scripted; MANIFEST.json names the sal commit): one per approach x PRM rule.
SAL_CASES = [(a, r) for a in SAL_APPROACHES for r in SAL_RULES]


def _expected_path(completion: str, cut: list[list[Any]], sep: str) -> list[tuple[str, float, list[float]]]:
    """From the scripted PRM's record (the text up to each score it gave), the nodes along one completion: (text
    from the start to the node's end, its own score, the scores of the empty parts after it), a node ending where
    the next part with text starts."""
    content = [k for k, (p, _) in enumerate(cut)
               if p.rstrip("\n") and (k == 0 or p.rstrip("\n") != cut[k - 1][0].rstrip("\n"))]
    path = []
    for i, k in enumerate(content):
        nxt = content[i + 1] if i + 1 < len(content) else None
        end = len(completion) if nxt is None else len(cut[nxt - 1][0]) + len(sep)
        lead = [s for _, s in cut[:k]] if i == 0 else []
        folded = [s for _, s in cut[k + 1:nxt]]
        path.append((completion[:end], cut[k][1], lead + folded))
    return path


def _check_sal_run(run: Any, expected: dict[str, Any], sep: str) -> None:
    row = expected["row"]
    assert (run.question, run.gold, run.problem_id) == (row["problem"], row["answer"], row["unique_id"])
    texts: dict[Any, str] = {}
    for n in run.nodes:  # parents first
        assert n.parent is None or n.parent in texts
        texts[n.key] = (texts[n.parent] if n.parent is not None else "") + n.step
    by_key = {n.key: n for n in run.nodes}
    all_nodes = set()
    for completion, cut in zip(row["completions"], expected["prm_parts"], strict=True):
        want = _expected_path(completion, cut, sep)
        leaf = next(k for k, n in by_key.items() if n.finished and texts[k] == completion)
        path = [leaf]
        while by_key[path[-1]].parent is not None:
            path.append(by_key[path[-1]].parent)
        got = [(texts[k], by_key[k].score, by_key[k].extra.get("folded_scores", [])) for k in reversed(path)]
        assert [t for t, _, _ in got] == [t for t, _, _ in want]
        # save_dataset's JSON lines round floats to 10 digits (pandas' to_json); the Parquet keeps them whole
        assert [[s, *f] for _, s, f in got] == [pytest.approx([s, *f], abs=5e-11, rel=0) for _, s, f in want]
        assert [by_key[k].created_iter for k in reversed(path)] == list(range(1, len(path) + 1))
        all_nodes |= {t for t, _, _ in want}
    assert len(run.nodes) == len(all_nodes)  # a prefix completions share is one node
    chosen = row["completions"].index(row["pred"])
    assert run.chosen == [next(k for k, t in texts.items() if t == row["completions"][chosen] and by_key[k].finished)]
    assert run.info["answer_from"] == "pred"
    assert run.info["tool_answers"] == {k: v for k, v in row.items() if k.startswith(("pred_weighted@", "pred_maj@",
                                                                                        "pred_naive@"))}
    assert any(k.startswith("pred_weighted@") for k in run.info["tool_answers"])


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("approach, rule", SAL_CASES, ids=[f"{a}-{r}" for a, r in SAL_CASES])
def test_search_and_learn_files_of_every_approach_and_prm_import_with_the_tools_nodes_scores_and_answer(
        approach, rule, fmt):
    from uats_core.imports import read_runs

    expected = sal_expected(approach, rule)
    path = sal_file(approach, rule, fmt)
    sep = "\n" if rule == "skywork" else "\n\n"
    recognised = read_runs("search-and-learn", path)
    named = read_runs("search-and-learn", path, prm_rule=rule)
    assert len(recognised) == len(named) == len(expected["rows"])
    for run, again, exp in zip(recognised, named, expected["rows"], strict=True):
        _check_sal_run(run, exp, sep)
        assert [(n.key, n.parent, n.step, n.score) for n in again.nodes] == [
            (n.key, n.parent, n.step, n.score) for n in run.nodes]
    if approach == "dvts" and rule != "math-shepherd":  # DVTS under these PRMs: a score for an empty part, kept
        assert any(n.extra.get("folded_scores") for run in recognised for n in run.nodes)
    # recognised from the scores' shape: the rule that wrote them, with any other that cuts these texts alike
    assert ("rlhflow or qwen" if rule in ("rlhflow", "qwen") else rule) in recognised[0].info["prm_rule"]
    assert named[0].info["prm_rule"] == ("rlhflow or qwen" if rule in ("rlhflow", "qwen") else rule)


def test_a_search_and_learn_run_shows_pred_graded_and_keeps_the_weighted_and_majority_answers(tmp_path, capsys):
    from ui.views.run_status import run_status_md
    from ui.views.safe_text import md_text
    from ui.views.treedata import RunData
    from uats_core.grading import extract_boxed

    path = sal_file("dvts", "rlhflow", "jsonl")
    store, ids = _import(tmp_path, "search-and-learn", path)
    out = capsys.readouterr().out
    rows = sal_expected("dvts", "rlhflow")["rows"]
    assert out.count("the answer shown is the tool's pred (kept beside it: pred_weighted@4 ") == len(rows)
    assert "steps cut as rlhflow or qwen cuts them" in out
    for run_id in ids:
        data = RunData.load(store, run_id)
        row = next(r["row"] for r in rows if r["row"]["unique_id"] == data.run["problem_id"])
        assert data.run["answer"] == extract_boxed(row["pred"])
        assert data.run["correct"] is (extract_boxed(row["pred"]) == row["answer"])
        imported = data.run["config"]["imported"]
        assert imported["answer_from"] == "pred" and imported["tool_answers"]["pred_maj@4"] == row["pred_maj@4"]
        status = run_status_md(data.run, data.state_at(None))
        assert f"the answer is its pred (kept beside it: {md_text('pred_weighted@4')} " in status


def test_a_bad_search_and_learn_row_is_reported_by_number_and_the_others_import(tmp_path, capsys):
    lines = sal_file("beam_search", "skywork", "jsonl").read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[0])
    bad["scores"][1] = bad["scores"][1][:-1]
    path = tmp_path / "beam_search_completions.jsonl"
    path.write_text("\n".join([json.dumps(bad), *lines[1:], "{\"problem\": "]) + "\n", encoding="utf-8")
    store, ids = _import(tmp_path, "search-and-learn", path)
    err = capsys.readouterr().err.splitlines()
    assert len(ids) == len(lines) - 1
    assert err[0].startswith(f"warning: {path}: row 0: scores[1] has ") and "SkyworkO1 " in err[0]
    assert err[0].endswith("(row left out; the other rows import)")
    assert err[1].startswith(f"warning: {path}: row {len(lines)} (line {len(lines) + 1}): not JSON")
    assert len(err) == 2


def test_a_named_prm_rule_that_does_not_fit_is_named_in_the_row_error(tmp_path, capsys):
    path = sal_file("best_of_n", "skywork", "jsonl")
    assert cli(["import", "--from", "search-and-learn", str(path), "--db", str(tmp_path / "r.db"),
                "--prm-rule", "math-shepherd"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: file: {path}: row 0: scores[0] has ") and "where MathShepherd scores " in err
    assert "--prm-rule" not in err.split("MathShepherd")[1] and not (tmp_path / "r.db").exists()
    other = write_tool_files(tmp_path / "in")["treequest"]
    assert cli(["import", "--from", "treequest", str(other), "--db", str(tmp_path / "r.db"), "--prm-rule", "qwen"]) == 2
    assert capsys.readouterr().err == ("error: prm-rule: a treequest file has no PRM steps to cut; --prm-rule is for "
                                       "search-and-learn\n")


def test_the_node_cap_refuses_a_search_and_learn_file_while_reading_and_rows_read_no_further(tmp_path):
    from uats_core.imports import ImportFormatError, read_runs

    src = sal_file("dvts", "qwen", "jsonl").read_text(encoding="utf-8")
    path = tmp_path / "dvts_completions.jsonl"
    path.write_text(src * 50 + "not json at all\n", encoding="utf-8")
    per_file = sum(len(r.nodes) for r in read_runs("search-and-learn", sal_file("dvts", "qwen", "jsonl")))
    with pytest.raises(ImportFormatError, match=r"more than the 30 nodes an import writes, passed at row \d"):
        read_runs("search-and-learn", path, max_nodes=30)
    assert per_file < 30
    rows = len(src.splitlines())
    # the bad last line is never read when the rows asked for come before it
    assert [r.label for r in read_runs("search-and-learn", path, rows=[1, rows + 1])] == ["row 1", f"row {rows + 1}"]


def test_the_hubs_parquet_without_pyarrow_is_one_line_naming_the_fix(tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # as where pyarrow is not installed
    path = sal_file("best_of_n", "qwen", "parquet")
    assert cli(["import", "--from", "search-and-learn", str(path), "--db", str(tmp_path / "r.db")]) == 2
    assert capsys.readouterr().err == (f"error: file: {path}: a Parquet file (the Hub's format); reading it needs "
                                       "pyarrow (pip install pyarrow), or import the tool's .jsonl\n")


def test_the_import_benchmarks_file_is_search_and_learns_rows_scaled_to_n_256(tmp_path):
    from benchmarks.imports import COPIES, FIXTURE, build
    from uats_core.imports import read_runs

    rows = build(tmp_path / "big.jsonl", 2.0)
    assert (tmp_path / "big.jsonl").stat().st_size >= 2e6
    base = read_runs("search-and-learn", FIXTURE)
    scaled = read_runs("search-and-learn", tmp_path / "big.jsonl", rows=[0, rows - 1])
    assert len(scaled[0].nodes) == COPIES * len(base[0].nodes)  # each copy's steps are nodes of their own
    assert scaled[0].info["completions"] == 4 * COPIES
    assert [r.label for r in scaled] == ["row 0", f"row {rows - 1}"]


def test_the_runs_tab_lists_and_imports_the_hubs_parquet(tmp_path):
    import shutil

    from ui.choices import server_choices
    from ui.jobs.import_job import submit_import
    from uats_core.grading import extract_boxed

    folder = tmp_path / "imports"
    folder.mkdir()
    shutil.copyfile(sal_file("dvts", "skywork", "parquet"), folder / "train-00000-of-00001.parquet")
    choices = server_choices(imports_dirs=[folder])
    assert sorted(choices.imports) == ["train-00000-of-00001.parquet"]
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    run_id = submit_import(store, pool, choices, "search-and-learn", "train-00000-of-00001.parquet", 1)
    (req,) = pool.submitted
    assert req.run(None, store) is None
    row = sal_expected("dvts", "skywork")["rows"][1]["row"]
    run = store.get_run(run_id)
    assert (run["status"], run["problem_id"], run["answer"]) == ("finished", row["unique_id"], extract_boxed(row["pred"]))
    assert run["config"]["imported"]["prm_rule"] == "skywork"


def test_rows_past_the_end_are_each_named_and_a_damaged_parquet_is_one_line(tmp_path, capsys):
    from uats_core.imports import read_runs

    skipped: list[str] = []
    path = sal_file("dvts", "skywork", "jsonl")
    runs = read_runs("search-and-learn", path, rows=[1, 7, 9], on_skip=skipped.append)
    assert [r.label for r in runs] == ["row 1"]
    assert skipped == [f"{path}: row {r}: the file has 2 rows (0 to 1) (row left out; the other rows import)"
                       for r in (7, 9)]
    damaged = tmp_path / "train-00000-of-00001.parquet"
    damaged.write_bytes(sal_file("dvts", "skywork", "parquet").read_bytes()[:600])
    assert cli(["import", "--from", "search-and-learn", str(damaged), "--db", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: file: {damaged}: not a readable Parquet file (") and err.count("\n") == 1
    data = bytearray(sal_file("dvts", "skywork", "parquet").read_bytes())
    data[100:500] = b"\xff" * 400  # the first row group's pages, the footer intact
    damaged.write_bytes(bytes(data))
    assert cli(["import", "--from", "search-and-learn", str(damaged), "--db", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: file: {damaged}: row 0: its Parquet data is unreadable (") and err.count("\n") == 1
    assert not (tmp_path / "r.db").exists()
