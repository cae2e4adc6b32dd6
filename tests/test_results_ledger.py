"""The results ledger: an evaluation's outcomes in gzip CSV files that a fresh machine resumes from and that the
report builds from alone."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pandas as pd
import pytest

import storage.results_ledger as results_ledger
from storage.results_ledger import LEDGER_COLUMNS, ResultsLedger, in_step_sample
from testkit.eval_doubles import MODELS
from uats.eval import EvalOptions, run_eval
from uats.report import build_report, main as report_main, report_from_ledger
from uats_core.eval import GridSpec
from uats_core.eval.grid import load_eval_problems, parse_pairs


def _spec(path: Path, methods=("best-of-n", "rebase", "h-uats"), seeds=(0, 1)) -> GridSpec:
    dataset, probs = load_eval_problems(None, str(path), 3)
    return GridSpec(
        pairs=parse_pairs("pol:rm", MODELS),
        problems=probs,
        dataset=dataset,
        methods=list(methods),
        budgets=[4],
        seeds=list(seeds),
    )


def test_ledger_resumes_a_grid_on_a_fresh_run_log(problems_file: Path, tmp_path: Path) -> None:
    ledger_dir = tmp_path / "results" / "grid"
    first = run_eval(
        _spec(problems_file, seeds=(0,)), EvalOptions(db=str(tmp_path / "a.db"), progress=False, ledger=str(ledger_dir))
    )
    assert first.finished == 9 and first.in_ledger == 0
    rows = ResultsLedger(ledger_dir).results()
    assert len(rows) == 9 and list(rows.columns) == LEDGER_COLUMNS + ["finals_marked"]
    assert rows["code_version"].str.len().min() > 0 and rows["policy"].eq(MODELS["pol"]).all()
    assert set(rows["method"]) == {"best-of-n", "rebase", "h-uats"} and rows["cost"].gt(0).all()

    # Another machine: no run log, the same ledger. The seed-0 cells are done; only seed 1 runs.
    second = run_eval(
        _spec(problems_file), EvalOptions(db=str(tmp_path / "b.db"), progress=False, ledger=str(ledger_dir))
    )
    assert second.in_ledger == 9 and second.ran == second.finished == 9 and second.cells == 18
    both = ResultsLedger(ledger_dir).results()
    assert len(both) == 18 and both["cell_key"].is_unique
    # The ledger's rows are the run logs' rows: same answers, costs and correctness.
    from storage.eval_results import load_results

    logged = pd.concat([load_results(str(tmp_path / "a.db")), load_results(str(tmp_path / "b.db"))]).set_index(
        "cell_key"
    )
    mine = both.set_index("cell_key")
    for col in ("answer", "cost", "correct", "pass_at_n", "n_final", "finals_marked", "iterations", "n_nodes"):
        assert mine[col].astype(str).to_dict() == logged.loc[mine.index, col].astype(str).to_dict(), col
    # Appended as gzip members, never rewritten: the file is one valid gzip stream with one header line.
    with gzip.open(ledger_dir / "results.csv.gz", "rt") as fh:
        assert sum(line.startswith("cell_key,") for line in fh) == 1

    third = run_eval(
        _spec(problems_file), EvalOptions(db=str(tmp_path / "c.db"), progress=False, ledger=str(ledger_dir))
    )
    assert third.ran == 0 and third.in_ledger == 18


def test_report_from_the_ledger_alone_equals_the_run_log_report(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(results_ledger, "STEP_SAMPLE", 1)  # every base cell keeps its step records
    db, ledger_dir = tmp_path / "eval.db", tmp_path / "ledger"
    dataset, probs = load_eval_problems("arith", None, 2)
    spec = GridSpec(
        pairs=parse_pairs("A:prm"),
        problems=probs,
        dataset=dataset,
        methods=["rebase", "h-uats"],
        budgets=[4],
        seeds=[0],
    )
    run_eval(spec, EvalOptions(db=str(db), progress=False, ledger=str(ledger_dir)))
    steps = ResultsLedger(ledger_dir).steps()
    assert len(steps) and set(steps["method"]) == {"rebase", "h-uats"} and steps["cell_key"].notna().all()
    traces = ResultsLedger(ledger_dir).traces()  # every cell's duplicate counts
    assert (
        len(traces) == 4 and (traces["n_distinct"] <= traces["n_candidates"]).all() and traces["n_distinct"].gt(0).all()
    )
    candidates = ResultsLedger(ledger_dir).candidates()  # every cell's final solutions
    assert set(candidates["cell_key"]) == set(traces["cell_key"])
    from_log, from_ledger = build_report(str(db)), report_from_ledger(ledger_dir)
    assert "Duplicate candidates" in from_log.markdown and "Answer aggregation" in from_log.markdown
    # the weighted vote recomputed from the stored final solutions is the one each search recorded
    agg = from_ledger.tables["aggregation"]
    assert (agg["cells_re"] == agg["cells"]).all() and (agg["agree"] == 1.0).all()
    for name, text in from_log.markdown.items():
        # the ledger's rows name their code version (a run log's do not): the one line the ledger report adds
        # and, in the tables that carry one, the uncommitted-code column: the ledger's share, '–' (unknown) from a log
        table, line = from_ledger.markdown[name].rsplit("\n\n", 1)

        def share(t: str) -> str:
            return re.sub(r"\| \d+\.\d% \|$", "| – |", t, flags=re.M)

        assert share(table) == share(text), name
        assert line.startswith("Code versions of the "), name
    assert set(from_ledger.figures) == set(from_log.figures) and "prm_analysis" in from_ledger.figures

    assert report_main(["--ledger", str(ledger_dir), "--out", str(tmp_path / "rep"), "--no-png"]) == 0
    assert (tmp_path / "rep" / "tables.md").exists()
    assert report_main(["--ledger", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: ledger: no results.csv.gz")


def test_step_sample_is_fixed_by_the_cell_key() -> None:
    keys = [f"A:prm|arith-test|arith-test-{i}|rebase|4|0|base" for i in range(800)]
    chosen = [k for k in keys if in_step_sample(k, "base")]
    assert 60 < len(chosen) < 140  # about one in eight
    assert chosen == [k for k in keys if in_step_sample(k, "base")]
    assert not any(in_step_sample(k, "k0=3") for k in keys)


def test_append_skips_cells_already_in_the_ledger(tmp_path: Path) -> None:
    ledger = ResultsLedger(tmp_path)
    row = {c: 0 for c in LEDGER_COLUMNS} | {"cell_key": "k1", "correct": True, "variant": "base", "answer": "8"}
    assert ledger.append(pd.DataFrame([row])) == 1
    assert ledger.append(pd.DataFrame([row, row | {"cell_key": "k2"}])) == 1
    again = ResultsLedger(tmp_path)
    assert again.keys() == {"k1", "k2"} and again.results()["correct"].tolist() == [True, True]
    with pytest.raises(KeyError):
        ledger.append(pd.DataFrame([{"cell_key": "k3"}]))


def _rows(keys: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {c: 0 for c in LEDGER_COLUMNS} | {"cell_key": k, "correct": True, "variant": "base", "answer": "8"}
            for k in keys
        ]
    )


def test_two_appenders_never_write_a_cell_twice(tmp_path: Path) -> None:
    """Another ledger object (another process) appended since this one read its keys: it re-reads them."""
    first, second = ResultsLedger(tmp_path), ResultsLedger(tmp_path)
    assert second.keys() == set()
    assert first.append(_rows(["k1"])) == 1
    assert second.append(_rows(["k1", "k2"])) == 1
    with gzip.open(tmp_path / results_ledger.RESULTS_FILE, "rt") as fh:
        assert sorted(line.split(",")[0] for line in fh.read().splitlines()[1:]) == ["k1", "k2"]


def _append_many(folder: str, who: int) -> None:
    ledger = ResultsLedger(folder)
    for i in range(40):
        ledger.append(_rows([f"p{who}-{i}-{j}" for j in range(5)]))


def test_concurrent_processes_append_one_readable_ledger(tmp_path: Path) -> None:
    import multiprocessing as mp

    procs = [mp.get_context("spawn").Process(target=_append_many, args=(str(tmp_path), who)) for who in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    keys = ResultsLedger(tmp_path).results()["cell_key"]
    assert len(keys) == 3 * 40 * 5 and keys.is_unique


def test_ledger_command_fills_the_duplicate_counts_finals_and_controller_steps_of_cells_recorded_without_them(
    tmp_path: Path, capsys
) -> None:
    """A ledger recorded before it kept duplicate counts, final solutions and A-UATS's controller steps gets them
    from the run log that holds the same searches; a cell whose ledger row is another search (here: another compute)
    gets none."""
    from uats.cli import main as cli_main

    db, ledger_dir = tmp_path / "eval.db", tmp_path / "ledger"
    dataset, probs = load_eval_problems("arith", None, 2)
    spec = GridSpec(
        pairs=parse_pairs("A:prm"),
        problems=probs,
        dataset=dataset,
        methods=["rebase", "h-uats", "a-uats"],
        budgets=[4],
        seeds=[0],
    )
    run_eval(spec, EvalOptions(db=str(db), progress=False, ledger=str(ledger_dir)))
    full = ResultsLedger(ledger_dir).traces().set_index("cell_key").sort_index()
    assert len(full) == 6
    full_candidates = ResultsLedger(ledger_dir).candidates().set_index("cell_key").sort_index()
    rows = ResultsLedger(ledger_dir).results()
    # Every A-UATS cell has one controller step per iteration, written with its row; no other method has any.
    full_controller = ResultsLedger(ledger_dir).controller().set_index(["cell_key", "iteration"]).sort_index()
    auats = rows[rows["method"] == "a-uats"].set_index("cell_key")["iterations"]
    assert full_controller.groupby(level="cell_key").size().sort_index().tolist() == auats.sort_index().tolist()
    assert full_controller[["mean_rbar", "beta", "tau"]].notna().all().all()
    # The old ledger: no traces, candidates or controller file, and one A-UATS cell whose recorded search is not
    # the run log's.
    for name in (results_ledger.TRACES_FILE, results_ledger.CANDIDATES_FILE, results_ledger.CONTROLLER_FILE):
        (ledger_dir / name).unlink()
    other = auats.index[0]
    rows.loc[rows["cell_key"] == other, "cost"] += 1.0
    (ledger_dir / results_ledger.RESULTS_FILE).unlink()
    ResultsLedger(ledger_dir).append(rows)

    assert cli_main(["ledger", "--ledger", str(ledger_dir), str(db)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{ledger_dir}: 6 cells, 5 with duplicate counts (5 more), "
        "5 with final solutions (5 more), 1 A-UATS cells with "
        "controller steps (1 more)"
    )
    filled = ResultsLedger(ledger_dir).traces().set_index("cell_key").sort_index()
    assert other not in filled.index and len(filled) == 5
    pd.testing.assert_frame_equal(filled, full.drop(index=other))
    filled_candidates = ResultsLedger(ledger_dir).candidates().set_index("cell_key").sort_index()
    pd.testing.assert_frame_equal(filled_candidates, full_candidates.drop(index=other))
    filled_controller = ResultsLedger(ledger_dir).controller().set_index(["cell_key", "iteration"]).sort_index()
    pd.testing.assert_frame_equal(filled_controller, full_controller.drop(index=other, level="cell_key"))
    # Run again: nothing new, nothing written twice.
    assert cli_main(["ledger", "--ledger", str(ledger_dir), str(db)]) == 0
    assert len(pd.read_csv(ledger_dir / results_ledger.TRACES_FILE)) == 5
    assert len(pd.read_csv(ledger_dir / results_ledger.CANDIDATES_FILE)) == 5
    assert len(pd.read_csv(ledger_dir / results_ledger.CONTROLLER_FILE)) == len(filled_controller)
    assert cli_main(["ledger", "--ledger", str(ledger_dir), str(tmp_path / "none.db")]) == 2
    assert capsys.readouterr().err.strip().endswith("give a SQLite path or SQLAlchemy URL")


def test_ledger_rows_come_only_from_committed_code(tmp_path, monkeypatch, capsys):
    """A ledger row names the commit that ran it: uncommitted code is refused before anything runs."""
    from uats.eval import cli

    monkeypatch.setattr(cli, "code_version", lambda: "0123456789ab+dirty")
    db = tmp_path / "grid.db"
    rc = cli.main(
        [
            "--world",
            "arith",
            "--problems",
            "1",
            "--seeds",
            "1",
            "--methods",
            "rebase",
            "--budgets",
            "4",
            "--ledger",
            str(tmp_path / "ledger"),
            "--db",
            str(db),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: ledger: ")
    assert not db.exists() and not (tmp_path / "ledger").exists()


def test_code_version_is_dirty_for_any_code_the_commit_lacks(tmp_path):
    """What the eval command refuses --ledger for: a changed tracked file or an untracked Python module; a changed
    ledger under results/ or an untracked note is no change to the code."""
    import subprocess

    from uats.eval.run import code_version

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *a],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "code.py").write_text("X = 1\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "rows.csv").write_text("a\n")
    git("add", ".")
    git("commit", "-qm", "first")
    head = git("rev-parse", "--short=12", "HEAD")
    assert code_version(tmp_path) == head
    (tmp_path / "results" / "rows.csv").write_text("a\nb\n")
    (tmp_path / "notes.md").write_text("a note\n")
    assert code_version(tmp_path) == head
    (tmp_path / "extra.py").write_text("Y = 2\n")
    assert code_version(tmp_path) == head + "+dirty"
    (tmp_path / "extra.py").unlink()
    (tmp_path / "code.py").write_text("X = 2\n")
    assert code_version(tmp_path) == head + "+dirty"


def test_code_version_names_this_checkouts_commit_by_default():
    """What the eval command writes into a ledger row when run from a checkout: its own commit (the package's
    folder depth is counted right: a wrong one read a folder above the checkout, with no commit)."""
    import subprocess

    from uats.eval.run import code_version

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert code_version().removesuffix("+dirty") == head


def test_the_ledger_command_adds_cells_only_for_a_named_commit(tmp_path, capsys):
    """Without --code-version the command fills what the ledger holds and leaves out the cells it lacks; a version
    no commit reproduces is refused before anything is written."""
    from uats.cli import main as cli_main

    db, ledger_dir = tmp_path / "eval.db", tmp_path / "ledger"
    dataset, probs = load_eval_problems("arith", None, 1)
    spec = GridSpec(
        pairs=parse_pairs("A:prm"), problems=probs, dataset=dataset, methods=["rebase"], budgets=[4], seeds=[0, 1]
    )
    run_eval(spec, EvalOptions(db=str(db), progress=False))
    capsys.readouterr()  # the models' loading bars
    for bad in ("0123456789ab+dirty", "unknown"):
        assert cli_main(["ledger", "--ledger", str(ledger_dir), "--code-version", bad, str(db)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: code-version: ")
        assert not ledger_dir.exists()
    assert cli_main(["ledger", "--ledger", str(ledger_dir), str(db)]) == 0
    assert "2 cells the ledger lacks left out" in capsys.readouterr().out
    assert not ResultsLedger(ledger_dir).keys()
    assert cli_main(["ledger", "--ledger", str(ledger_dir), "--code-version", "0123456789ab", str(db)]) == 0
    assert set(ResultsLedger(ledger_dir).results()["code_version"]) == {"0123456789ab"}


def test_a_ledger_written_before_the_feature_rename_reads_compute_left() -> None:
    """results/arith-grid/controller.csv.gz names A-UATS's last state feature budget_left, as it was called when
    the grid ran; the ledger reads it as compute_left (uats_core.methods.uats.RENAMED_FEATURES), the file unchanged."""
    from uats_core.methods.uats import STATE_FEATURES

    folder = Path(__file__).resolve().parents[1] / "results" / "arith-grid"
    with gzip.open(folder / "controller.csv.gz", "rt", encoding="utf-8") as f:
        assert "budget_left" in f.readline().split(",")
    steps = ResultsLedger(folder).controller()
    assert "compute_left" in steps.columns and "budget_left" not in steps.columns
    assert set(STATE_FEATURES) <= set(steps.columns) and steps["compute_left"].between(0, 1).all()


def test_a_code_version_of_digits_reads_back_as_written(tmp_path: Path) -> None:
    """A commit whose short hash is all digits (this repository's 1377029528…) was read back as an integer, which
    failed the report's text checks and would drop a leading zero: the version reads back as the text written."""
    ledger = ResultsLedger(tmp_path)
    row = {c: "x" for c in LEDGER_COLUMNS}
    row.update(correct=True, naive_correct=False, pass_at_n=True, batched=False, budget=4, seed=0, cost=1.5)
    rows = pd.DataFrame([{**row, "cell_key": "a"}, {**row, "cell_key": "b"}])
    assert ledger.append(rows.assign(code_version=["012345678901", "137702952875"])) == 2
    assert ledger.results()["code_version"].tolist() == ["012345678901", "137702952875"]
