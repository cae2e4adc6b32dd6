"""`uats import --from search-and-learn`: the files search-and-learn's own code wrote (one per approach and PRM
rule) become runs with the tool's nodes, scores and answers; the hub's parquet imports through the command and the
Runs tab; a bad row is named by its number while the others import."""

from __future__ import annotations

import json
from typing import Any

import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from testkit.tool_files import (
    SAL_APPROACHES,
    SAL_RULES,
    import_with_cli,
    sal_expected,
    sal_file,
    search_and_learn_rows,
    write_tool_files,
)
from uats.cli import main as cli


def test_search_and_learn_rows_become_runs_rebuilt_from_shared_step_prefixes(tmp_path):
    from uats_core.grading import extract_boxed
    from ui.views.treedata import RunData

    files = write_tool_files(tmp_path / "in")  # best-of-N under the default PRM (RLHFlow), by the tool's code
    store, ids = import_with_cli(tmp_path, "search-and-learn", files["search-and-learn"])
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


# search-and-learn's own files (tests/tool_fixtures/search_and_learn/make_files.py ran its best_of_n, beam_search and
# dvts with vLLM's LLM and each PRM class scripted; MANIFEST.json names the sal commit): one per approach x PRM rule.
SAL_CASES = [(a, r) for a in SAL_APPROACHES for r in SAL_RULES]


def _expected_path(completion: str, cut: list[list[Any]], sep: str) -> list[tuple[str, float, list[float]]]:
    """From the scripted PRM's record (the text up to each score it gave), the nodes along one completion: (text
    from the start to the node's end, its own score, the scores of the empty parts after it), a node ending where
    the next part with text starts."""
    content = [
        k for k, (p, _) in enumerate(cut) if p.rstrip("\n") and (k == 0 or p.rstrip("\n") != cut[k - 1][0].rstrip("\n"))
    ]
    path = []
    for i, k in enumerate(content):
        nxt = content[i + 1] if i + 1 < len(content) else None
        end = len(completion) if nxt is None else len(cut[nxt - 1][0]) + len(sep)
        lead = [s for _, s in cut[:k]] if i == 0 else []
        folded = [s for _, s in cut[k + 1 : nxt]]
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
    assert run.info["tool_answers"] == {
        k: v for k, v in row.items() if k.startswith(("pred_weighted@", "pred_maj@", "pred_naive@"))
    }
    assert any(k.startswith("pred_weighted@") for k in run.info["tool_answers"])


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("approach, rule", SAL_CASES, ids=[f"{a}-{r}" for a, r in SAL_CASES])
def test_search_and_learn_files_of_every_approach_and_prm_import_with_the_tools_nodes_scores_and_answer(
    approach, rule, fmt
):
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
            (n.key, n.parent, n.step, n.score) for n in run.nodes
        ]
    if approach == "dvts" and rule != "math-shepherd":  # DVTS under these PRMs: a score for an empty part, kept
        assert any(n.extra.get("folded_scores") for run in recognised for n in run.nodes)
    # recognised from the scores' shape: the rule that wrote them, with any other that cuts these texts alike
    assert ("rlhflow or qwen" if rule in ("rlhflow", "qwen") else rule) in recognised[0].info["prm_rule"]
    assert named[0].info["prm_rule"] == ("rlhflow or qwen" if rule in ("rlhflow", "qwen") else rule)


def test_a_search_and_learn_run_shows_pred_graded_and_keeps_the_weighted_and_majority_answers(tmp_path, capsys):
    from uats_core.grading import extract_boxed
    from ui.views.run_status import run_status_md
    from ui.views.safe_text import md_text
    from ui.views.treedata import RunData

    path = sal_file("dvts", "rlhflow", "jsonl")
    store, ids = import_with_cli(tmp_path, "search-and-learn", path)
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
    path.write_text("\n".join([json.dumps(bad), *lines[1:], '{"problem": ']) + "\n", encoding="utf-8")
    store, ids = import_with_cli(tmp_path, "search-and-learn", path)
    err = capsys.readouterr().err.splitlines()
    assert len(ids) == len(lines) - 1
    assert err[0].startswith(f"warning: {path}: row 0: scores[1] has ") and "SkyworkO1 " in err[0]
    assert err[0].endswith("(row left out; the other rows import)")
    assert err[1].startswith(f"warning: {path}: row {len(lines)} (line {len(lines) + 1}): not JSON")
    assert len(err) == 2


def test_a_named_prm_rule_that_does_not_fit_is_named_in_the_row_error(tmp_path, capsys):
    path = sal_file("best_of_n", "skywork", "jsonl")
    assert (
        cli(
            [
                "import",
                "--from",
                "search-and-learn",
                str(path),
                "--db",
                str(tmp_path / "r.db"),
                "--prm-rule",
                "math-shepherd",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"error: file: {path}: row 0: scores[0] has ") and "where MathShepherd scores " in err
    assert "--prm-rule" not in err.split("MathShepherd")[1] and not (tmp_path / "r.db").exists()
    other = write_tool_files(tmp_path / "in")["treequest"]
    assert cli(["import", "--from", "treequest", str(other), "--db", str(tmp_path / "r.db"), "--prm-rule", "qwen"]) == 2
    assert capsys.readouterr().err == (
        "error: prm-rule: a treequest file has no PRM steps to cut; --prm-rule is for search-and-learn\n"
    )


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
    assert capsys.readouterr().err == (
        f"error: file: {path}: a Parquet file (the Hub's format); reading it needs "
        "pyarrow (pip install pyarrow), or import the tool's .jsonl\n"
    )


def test_the_import_benchmarks_file_is_search_and_learns_rows_scaled_to_n_256(tmp_path):
    from testkit.big_files import COPIES, FIXTURE, build
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

    from uats_core.grading import extract_boxed
    from ui.choices import server_choices
    from ui.jobs.import_job import submit_import

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
    assert (run["status"], run["problem_id"], run["answer"]) == (
        "finished",
        row["unique_id"],
        extract_boxed(row["pred"]),
    )
    assert run["config"]["imported"]["prm_rule"] == "skywork"


def test_rows_past_the_end_are_each_named_and_a_damaged_parquet_is_one_line(tmp_path, capsys):
    from uats_core.imports import read_runs

    skipped: list[str] = []
    path = sal_file("dvts", "skywork", "jsonl")
    runs = read_runs("search-and-learn", path, rows=[1, 7, 9], on_skip=skipped.append)
    assert [r.label for r in runs] == ["row 1"]
    assert skipped == [
        f"{path}: row {r}: the file has 2 rows (0 to 1) (row left out; the other rows import)" for r in (7, 9)
    ]
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
