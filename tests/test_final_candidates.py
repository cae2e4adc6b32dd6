"""What a search votes on is what its Pass@N reads. Beam search and DVTS end more solutions than they vote on (beam
search answers from the N best-scored of the beams that finished, DVTS from each subtree's last step), so the run
marks its final candidates (Node.voted) and the evaluation counts Pass@N and n_final over those alone."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from reports.duplicates import trace_counts, voted_mask
from reports.stats import pass_lower
from storage.eval_results import load_nodes, load_results
from storage.results_ledger import ResultsLedger
from testkit.eval_doubles import MODELS, RaggedPolicyDouble, TorchRngPRMDouble
from uats.eval import EvalOptions, run_eval
from uats.eval.run import sync_run_log
from uats.report import report_from_ledger
from uats_core.config import SearchConfig
from uats_core.eval import GridSpec
from uats_core.eval.grid import load_eval_problems, parse_pairs
from uats_core.problems import Problem
from uats_core.runner import run_search

PROBLEM = Problem("ragged-1", "What is 4 + 4?", "8")
METHODS = ["best-of-n", "beam", "dvts", "rebase", "h-uats"]
SEEDS = range(6)


@pytest.mark.parametrize("method", METHODS)
def test_a_search_marks_the_candidates_it_votes_on(method: str) -> None:
    unvoted_ends = 0
    for seed in SEEDS:
        result = run_search(
            PROBLEM, SearchConfig(method=method, budget=8, seed=seed), RaggedPolicyDouble(), TorchRngPRMDouble()
        )
        nodes = [n for n in result.tree.nodes.values() if n.id]
        voted = [n for n in nodes if n.voted]
        assert voted and len(voted) <= 8, f"seed {seed}: {len(voted)} final candidates for N = 8"
        assert all(n.voted is not None for n in nodes if n.is_terminal)  # every ended solution is decided
        assert all(n.voted is None for n in nodes if not n.is_terminal and not n.voted)
        assert result.answer in {n.answer for n in voted}  # the answer comes from the voted candidates
        if result.correct:
            assert any(n.correct for n in voted)
        unvoted_ends += sum(n.is_terminal and n.voted is False for n in nodes)
    if method in ("beam", "dvts"):
        assert unvoted_ends, "the double never made the search end a solution it did not vote on"
    else:
        assert unvoted_ends == 0  # these methods vote on every solution they end


def test_pass_at_n_and_n_final_count_only_the_voted_candidates(problems_file: Path, tmp_path: Path) -> None:
    dataset, problems = load_eval_problems(None, str(problems_file), 3)
    spec = GridSpec(
        pairs=parse_pairs("ragged:rm", MODELS),
        problems=problems,
        dataset=dataset,
        methods=["best-of-n", "beam", "dvts"],
        budgets=[8],
        seeds=list(SEEDS),
    )
    db = tmp_path / "eval.db"
    assert run_eval(spec, EvalOptions(db=str(db), progress=False)).failed == 0
    rows = load_results(str(db))
    nodes = load_nodes(str(db), list(rows["run_id"]))
    assert len(rows) == 3 * 3 * len(SEEDS)
    more_ended = 0
    for row in rows.itertuples():
        mine = nodes[nodes["run_id"] == row.run_id]
        voted = mine[mine["voted"].eq(True)]
        assert row.n_final == len(voted) <= row.budget, f"{row.cell_key}: n_final {row.n_final}"
        assert bool(row.pass_at_n) == bool(voted["correct"].eq(True).any())
        assert not row.correct or row.pass_at_n  # the vote's answer is among the candidates Pass@N reads
        assert voted_mask(mine).sum() == len(voted)
        more_ended += int(mine["status"].isin(["finished", "truncated"]).sum() > row.budget)
    assert more_ended, "no search ended more solutions than N: the test would not see the difference"
    # The final solutions kept for the aggregation table are the voted candidates too.
    counts = trace_counts(nodes).set_index("run_id")
    copies = {run: sum(s[2] for s in json.loads(sol)) for run, sol in counts["solutions"].items()}
    answered = nodes[nodes["voted"].eq(True) & nodes["answer"].notna()].groupby("run_id").size()
    assert copies == answered.to_dict()

    # The ledger keeps that these cells count only their final candidates, so the report's Pass@N is exact.
    ledger = ResultsLedger(tmp_path / "ledger")
    assert sync_run_log(ledger, str(db), "0123456789ab") == len(rows)
    held = ledger.results()
    assert held["finals_marked"].all() and set(ledger.voted()["cell_key"]) == set(rows["cell_key"])
    assert (pass_lower(held) == held["pass_at_n"]).all()
    table = report_from_ledger(tmp_path / "ledger").markdown[f"Pass@N by budget (%, oracle): {spec.dataset}|base"]
    assert "A range is all the record allows" not in table and "–" not in table


def _legacy(method: str, n_final: int, pass_at_n: bool, correct: bool, naive: bool, marked: bool = False) -> dict:
    return dict(
        method=method,
        budget=16,
        n_final=n_final,
        pass_at_n=pass_at_n,
        correct=correct,
        naive_correct=naive,
        finals_marked=marked,
    )


def test_cells_that_counted_every_ended_solution_give_pass_at_n_as_a_bound() -> None:
    rows = pd.DataFrame(
        [
            _legacy("beam", 20, True, False, False),  # more than N ended: unknown, the bound's low end is False
            _legacy("beam", 20, True, False, True),  # the best score's answer is a voted candidate: right
            _legacy("beam", 16, True, False, False),  # at most N ended: beam search voted on all of them
            _legacy("dvts", 9, True, False, False),  # DVTS may end solutions it does not vote on at any count
            _legacy("dvts", 9, True, False, False, marked=True),  # recorded with its final candidates marked
            _legacy("rebase", 9, True, False, False),  # REBASE votes on every solution it ends
        ]
    )
    assert pass_lower(rows).tolist() == [False, True, True, False, True, True]
