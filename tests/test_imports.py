"""`uats import` and the Runs tab's import: files of llm-reasoners and TreeQuest written by the tools' own code
(tests/fixtures/tools/, checked against what each tool itself held: its `.truth.json`) become runs the app reads back
like its own: iterations to step through, the tool's score per node, the tool's own answer (or none) graded; no MC
passes, which shadow scoring then adds. A malformed file is one line naming the file, the place and what is wrong,
and nothing is written. search-and-learn's files: test_imports_search_and_learn.py."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from storage import RunStore
from testkit.doubles import HashedPRMDouble, WorkerPoolDouble
from testkit.tool_files import (
    GOLD,
    LLM_REASONERS_QUESTION,
    QUESTION,
    import_with_cli,
    search_and_learn_rows,
    tool_file,
    truth_of,
    write_tool_files,
)
from uats.cli import main as cli
from uats_core.protocols import Trace

ASKED = {
    "llm-reasoners": ("--question", LLM_REASONERS_QUESTION),
    "treequest": ("--question", QUESTION),
    "search-and-learn": (),
}


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
    store, ids = import_with_cli(tmp_path, tool, files[tool], *ASKED[tool])
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
    log = json.loads(tool_file("llm-reasoners", "mcts_rap.export.json").read_text(encoding="utf-8"))
    dangling = json.loads(json.dumps(log))
    dangling["logs"][1]["edges"]["2"]["target"] = 99
    two_roots = json.loads(json.dumps(log))
    del two_roots["logs"][0]["edges"]["1"]
    no_question = {k: v for k, v in log.items() if k != "question"}
    return [
        ("not JSON", "{logs: [", "not JSON (Expecting property name enclosed in double quotes at line 1)"),
        ("no logs", {"nodes": {}}, "no 'logs' list of snapshots"),
        ("dangling edge", dangling, "logs[1].edges[2]: its target 99 is no node of that snapshot"),
        ("two roots", two_roots, "logs[0]: 2 nodes without a parent edge; a tree has one root"),
        ("no question", no_question, "the log names no question (llm-reasoners stores none); give it with --question"),
    ]


def _bad_search_and_learn() -> list[tuple[str, Any, str]]:
    rows = search_and_learn_rows()
    short = [dict(rows[0], scores=rows[0]["scores"][:3])]
    steps = [dict(rows[0], scores=[[0.9], *rows[0]["scores"][1:]])]
    out_of_range = [dict(rows[0], scores=[[0.9, 1.7, *rows[0]["scores"][0][2:]], *rows[0]["scores"][1:]])]
    return [
        ("not JSON", '{"problem": ', "row 0 (line 1): not JSON"),
        ("no completions", [{"problem": "x", "scores": []}], "row 0: no 'completions' field"),
        ("scores per completion", short, "row 0: 4 completions but 3 score lists"),
        (
            "scores per step",
            steps,
            "row 0: scores[0] has 1 scores for completions[0], where RLHFFlow or Qwen_2_5_Math scores ",
        ),
        ("score range", out_of_range, "row 0: scores[0][1] = 1.7 is no PRM score in [0, 1]"),
    ]


def _bad_treequest() -> list[tuple[str, Any, str]]:
    tree = json.loads(tool_file("treequest", "ab_mcts_a.json").read_text(encoding="utf-8"))
    no_root = dict(tree, nodes=tree["nodes"][1:])
    late_parent = json.loads(json.dumps(tree))
    late_parent["nodes"][2]["parent_id"] = 3
    bad_score = json.loads(json.dumps(tree))
    bad_score["nodes"][3]["score"] = "high"
    twice = dict(tree, nodes=tree["nodes"] + [tree["nodes"][1]])
    no_state = json.loads(json.dumps(tree))
    del no_state["nodes"][4]["state_repr"]
    return [
        ("shape", {"tree": []}, "no 'nodes' list; a TreeQuest export is what treequest.render"),
        ("yaml", "nodes: [\n  - id: 1\n  bad", "neither JSON nor YAML at line 2"),
        ("no root", no_root, "no root (the node with id -1)"),
        ("parent", late_parent, "node 1: parent_id 3 is no node expanded before it"),
        ("score", bad_score, "node 2: score 'high' is not a number"),
        ("duplicate", twice, "node 0 appears twice"),
        ("state", no_state, "nodes[4]: no state_repr"),
        ("alias", "nodes: &n []\nedges: *n\n", "line 2: a YAML alias (*name), which treequest.render never writes"),
        ("no question", dict(tree, metadata={}), "the export names no question (TreeQuest stores none)"),
    ]


BAD = [
    (tool, *case)
    for tool, cases in (
        ("llm-reasoners", _bad_llm_reasoners()),
        ("search-and-learn", _bad_search_and_learn()),
        ("treequest", _bad_treequest()),
    )
    for case in cases
]


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
    from uats_core.config import ConfigError
    from uats_core.grading import extract_boxed
    from uats_core.imports import read_runs
    from ui.choices import IMPORT_REFUSED, server_choices
    from ui.jobs.import_job import submit_import

    folder = tmp_path / "imports"
    files = write_tool_files(folder)
    (folder / "broken.json").write_text('{"logs": []}')
    choices = server_choices(imports_dirs=[folder])
    assert sorted(choices.imports) == [
        "best_of_n_completions.jsonl",
        "broken.json",
        "mcts_rap.treelog.json",
        "standard_mcts.json",
    ]
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    with pytest.raises(ConfigError, match=re.escape(IMPORT_REFUSED)):
        submit_import(store, pool, choices, "treequest", str(files["treequest"]), 0)  # a path is no choice
    assert pool.submitted == [] and store.list_runs() == []
    broken = submit_import(store, pool, choices, "llm-reasoners", "broken.json", 0)  # parsed by the worker, not here
    assert pool.submitted.pop().run(None, store) is None
    assert store.get_run(broken)["status"] == "failed"
    assert store.get_run(broken)["error"].startswith("file: broken.json: no 'logs' list of snapshots")
    run_id = submit_import(
        store, pool, choices, "search-and-learn", "best_of_n_completions.jsonl", 1.0, owner="user:ann"
    )
    assert store.get_run(run_id)["status"] == "queued"
    (req,) = pool.submitted
    assert req.run(None, store) is None
    run = store.get_run(run_id)
    pred = extract_boxed(search_and_learn_rows()[1]["pred"])
    assert (run["status"], run["problem_id"], run["answer"], run["owner"]) == (
        "finished",
        "test/prealgebra/order.json",
        pred,
        "user:ann",
    )
    assert len(store.get_nodes(run_id)) == len(
        read_runs("search-and-learn", files["search-and-learn"], rows=[1])[0].nodes
    )
    no_question = submit_import(store, pool, choices, "treequest", "standard_mcts.json", 0)  # an export holds none
    assert pool.submitted.pop().run(None, store) is None  # the worker's parse says so, as one line on the run
    assert re.search("the export names no question .* give it with --question", store.get_run(no_question)["error"])
    with pytest.raises(ConfigError, match="^question: a search-and-learn row holds its problem"):
        submit_import(store, pool, choices, "search-and-learn", "best_of_n_completions.jsonl", 0, question="q")
    with pytest.raises(ConfigError, match="^question: 20,001 characters"):
        submit_import(store, pool, choices, "treequest", "standard_mcts.json", 0, question="x" * 20_001)
    run_id = submit_import(
        store,
        pool,
        choices,
        "llm-reasoners",
        "mcts_rap.treelog.json",
        0,
        question=f"  {LLM_REASONERS_QUESTION}\n",
        gold="10",
    )
    assert pool.submitted[-1].run(None, store) is None
    run = store.get_run(run_id)
    assert (run["status"], run["question"], run["gold_answer"]) == ("finished", LLM_REASONERS_QUESTION, "10")
    assert run["answer"] is None and run["correct"] is None  # a bare tree log holds no answer of the tool's: ungraded


TREEQUEST_EXPORTS = sorted(
    p.name
    for p in (tool_file("treequest", "x").parent).iterdir()
    if p.suffix in (".json", ".yaml") and ".truth." not in p.name
)
LLM_REASONERS_FILES = sorted(
    p.name
    for p in (tool_file("llm-reasoners", "x").parent).iterdir()
    if p.name.endswith((".export.json", ".treelog.json"))
)


@pytest.mark.parametrize("name", TREEQUEST_EXPORTS)
def test_a_treequest_export_imports_as_treequest_holds_its_tree(name, tmp_path):
    """treequest.render's JSON and YAML of five algorithms: every node with its parent, score and answer text as
    TreeQuest held them, every node graded, the run's answer top_k's; scores outside [0, 1] kept and said."""
    from uats_core.grading import extract_boxed
    from uats_core.imports import read_runs

    path = tool_file("treequest", name)
    truth = truth_of(path)
    (run,) = read_runs("treequest", path, question=QUESTION)
    held = [n for n in truth["nodes"] if n["expand_idx"] != -1]
    assert [n.key for n in run.nodes] == [n["expand_idx"] for n in held]
    assert [-1 if n.parent is None else n.parent for n in run.nodes] == [n["parent"] for n in held]
    assert [n.step for n in run.nodes] == [n["text"] for n in held]  # the state's own text, out of state_repr
    assert [n.extra["score"] for n in run.nodes] == [n["score"] for n in held]
    outside = sum(1 for n in held if not 0 <= n["score"] <= 1)
    assert run.info["scores_outside_unit_range"] == outside
    assert [n.score for n in run.nodes] == ([None] * len(held) if outside else [n["score"] for n in held])
    assert all(n.finished for n in run.nodes)  # every node is an answer TreeQuest ranks
    (best,) = [n for n in run.nodes if n.key in run.chosen]
    assert (best.step, best.extra["score"]) == (truth["top_k_1"]["text"], truth["top_k_1"]["score"])
    events = run.events("r")
    assert events[-1].answer == extract_boxed(truth["top_k_1"]["text"])
    graded = [r for e in events if hasattr(e, "nodes") for r in e.nodes if r.get("status") == "finished"]
    assert {r["id"] for r in graded} == set(range(1, len(held) + 1))


def test_scores_outside_the_unit_range_are_said_so_by_the_command_and_the_app(tmp_path, capsys):
    from ui.views.run_status import run_status_md
    from ui.views.treedata import RunData

    store, [run_id] = import_with_cli(
        tmp_path,
        "treequest",
        tool_file("treequest", "ab_mcts_m_unbounded.json"),
        "--question",
        QUESTION,
        "--answer",
        GOLD,
    )
    out = capsys.readouterr().out
    assert "6 scores outside [0, 1] (validate_reward_range=False): kept in each node's source fields" in out
    data = RunData.load(store, run_id)
    assert all(n.get("mean") is None for i, n in data.state_at(None).nodes.items() if i)
    assert "the tool's scores are not in [0, 1] (6 outside)" in run_status_md(data.run, data.state_at(None))


def _selected_end(log: dict[str, Any]) -> str:
    """Where the last snapshot's selected_edge path ends: what the import stated as the answer before."""
    nodes, edges = log["logs"][-1]["nodes"], {str(e["id"]): e for e in log["logs"][-1]["edges"].values()}
    cur = next(k for k in nodes if all(str(e["target"]) != k for e in edges.values()))
    while nodes[cur].get("selected_edge") is not None:
        cur = str(edges[str(nodes[cur]["selected_edge"])]["target"])
    return cur


@pytest.mark.parametrize("name", LLM_REASONERS_FILES)
def test_an_llm_reasoners_log_imports_as_llm_reasoners_holds_its_search(name, tmp_path):
    """MCTS (8 runs, RAP's and the default node data), beam search and DFS: the visited nodes with their parents,
    per-step text and rewards as llm-reasoners held them, unvisited children kept apart, one iteration per
    snapshot, and the answer the tool gave (the export) or none (a bare tree log)."""
    from uats_core.imports import read_runs
    from uats_core.protocols import STEP_DELIMITER

    path = tool_file("llm-reasoners", name)
    truth, log = truth_of(path), json.loads(path.read_text(encoding="utf-8"))
    (run,) = read_runs("llm-reasoners", path, question=LLM_REASONERS_QUESTION)
    root = next(n["id"] for n in truth["nodes"] if n["parent"] is None)
    visited = {str(n["id"]): n for n in truth["nodes"] if n["visited"] and n["parent"] is not None}
    assert sorted(n.key for n in run.nodes) == sorted(visited)
    for n in run.nodes:
        held = visited[n.key]
        assert (int(n.parent) if n.parent is not None else root) == held["parent"]
        assert n.step.removesuffix(STEP_DELIMITER) == held["step"]  # one step, not every earlier one again
        assert n.score == pytest.approx(held["reward"])
    unvisited = [n for n in truth["nodes"] if not n["visited"]]
    assert run.info["unvisited_children"] == len(unvisited)
    assert sorted(c["id"] for n in run.nodes for c in n.extra.get("unvisited_children", [])) == sorted(
        n["id"] for n in unvisited
    )
    events = run.events("r")
    assert events[-1].iterations == len(log["logs"])  # every snapshot an iteration, also those adding no node
    if name.endswith(".export.json"):
        assert events[-1].answer == truth["answer"] and run.chosen == [str(truth["terminal_node"])]
    else:
        assert (
            events[-1].answer is None
            and run.chosen == []
            and "none: a tree log holds no answer" in (run.info["answer_read_from"])
        )


def test_the_last_iterations_path_is_not_the_tools_answer():
    """The runs where llm-reasoners' selected_edge path ends elsewhere than its answer: the import states the tool's."""
    differs = []
    for name in LLM_REASONERS_FILES:
        path = tool_file("llm-reasoners", name)
        if not name.endswith(".export.json"):
            continue
        truth, log = truth_of(path), json.loads(path.read_text(encoding="utf-8"))
        if _selected_end(log) != str(truth["terminal_node"]):
            differs.append(name)
    assert "mcts_seed3.export.json" in differs and "mcts_seed5.export.json" in differs


def test_the_pickle_llm_reasoners_writes_is_refused_naming_the_exporter(tmp_path, capsys):
    import gzip

    pkl = tool_file("llm-reasoners", "evaluate/algo_output/1.pkl")
    db = tmp_path / "runs.db"
    assert cli(["import", "--from", "llm-reasoners", str(pkl), "--db", str(db), "--question", "q"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(
            f"error: file: {pkl}: a Python pickle (llm-reasoners' algo_output/N.pkl), not read: unpickling runs code"
        )
        and "uats_studio.llm_reasoners.export_llm_reasoners(" in err
    )
    assert err.count("\n") == 1 and not db.exists()
    packed = tmp_path / "log.json.gz"
    packed.write_bytes(gzip.compress(tool_file("llm-reasoners", LLM_REASONERS_FILES[0]).read_bytes()))
    assert cli(["import", "--from", "llm-reasoners", str(packed), "--db", str(db), "--question", "q"]) == 2
    assert "gzip-compressed; decompress it (gunzip)" in capsys.readouterr().err
    sources = Path(__file__).resolve().parents[1] / "uats_core" / "imports"
    assert not any("tools write JSON" in p.read_text(encoding="utf-8") for p in sources.glob("*.py"))


def test_the_exporter_loads_no_llm_reasoners_until_called():
    import subprocess
    import sys

    code = "import sys, uats_studio.llm_reasoners as m; assert 'reasoners' not in sys.modules; print(m.EXPORT_FORMAT)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr


@pytest.mark.parametrize(
    "state_repr, text, fields",
    [
        ("'6 × 4 = \\\\boxed{24}'", "6 × 4 = \\boxed{24}", {}),  # repr() of a text state: read back as a literal
        ('{"llm_answer":"It is 24","round":2}', "It is 24", {"round": 2}),  # a dataclass's JSON
        ('{"answer":"24","judge_score":0.9}', "24", {"judge_score": 0.9}),  # a pydantic model's JSON
        ('{"score":0.9}', '{"score":0.9}', {"score": 0.9}),  # JSON with no text field: the JSON is the text
        ("Attempt(text='24')", "Attempt(text='24')", {}),  # a custom repr: as written, nothing evaluated
        ("'a' + __import__('os').getcwd()", "'a' + __import__('os').getcwd()", {}),  # no literal: not run
        ("{not json", "{not json", {}),
    ],
)
def test_a_treequest_state_repr_gives_its_answer_text(state_repr, text, fields):
    from uats_core.imports.treequest import state_text

    assert state_text(state_repr) == (text, fields)


def test_rap_answers_are_read_and_graded_on_every_terminal_node(tmp_path):
    """llm-reasoners' RAP world writes "The answer is N." (no \\boxed{}): each terminal step's answer is read as RAP's
    retrieve_answer reads it and graded; the run's answer is the tool's (10), not the last iteration's path's (5)."""
    from ui.views.treedata import RunData

    path = tool_file("llm-reasoners", "mcts_seed5.export.json")
    store, [run_id] = import_with_cli(tmp_path, "llm-reasoners", path, "--answer", "10")
    data = RunData.load(store, run_id)
    finished = {
        n["answer"]: n["correct"] for i, n in data.state_at(None).nodes.items() if i and n.get("status") == "finished"
    }
    assert finished == {"10": True, "12": False, "5": False}
    assert (data.run["answer"], data.run["correct"]) == ("10", True)
    log = json.loads(path.read_text(encoding="utf-8"))
    end = next(n for n in truth_of(path)["nodes"] if str(n["id"]) == _selected_end(log))
    assert end["step"].endswith("The answer is 5.")  # what the import stated before: the last iteration's path
