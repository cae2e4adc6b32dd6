"""The ablation ladder between REBASE and H-UATS (issue 32; docs/eval.md "The ablation ladder"): each rung is a
config variant that changes one thing, at REBASE's compute. On test doubles, swapping the one rounding rule that
separates two neighbouring rungs makes their searches identical node for node, so nothing else differs."""

from __future__ import annotations

import numpy as np
import pytest

from testkit.doubles import DOUBLES_PROBLEM as PROBLEM, HashedPRMDouble, ScriptedPolicyDouble
from uats_core.allocation import largest_remainder, sequential_ceil, softmax
from uats_core.config import ConfigError, SearchConfig
from uats_core.eval.grid import GridSpec, build_cells, parse_pairs
from uats_core.events import IterationEnded
from uats_core.request import check_config
from uats_core.runner import run_search

C, K0 = 18.0, 7


def _run(method: str, budget: int, seed: int, depth: int = 5, **kw):
    events: list = []
    cfg = SearchConfig(method=method, budget=budget, seed=seed, **kw)
    result = run_search(
        PROBLEM, cfg, ScriptedPolicyDouble(depth=depth), HashedPRMDouble(seed), subscribers=[events.append]
    )
    assert result.status == "finished"
    return result, [e for e in events if isinstance(e, IterationEnded)]


def _tree(result) -> list[tuple]:
    return [
        (n.id, n.parent_id, n.step, tuple(n.mc_scores), n.status, n.children_granted)
        for n in result.tree.nodes.values()
    ]


@pytest.mark.parametrize("budget", [4, 16, 64])
@pytest.mark.parametrize("seed", range(3))
def test_rebase_mc_scores_with_k0_passes_paid_out_of_its_width(budget, seed):
    result, steps = _run("rebase", budget, seed, rebase_scoring="mc")
    rebase, _ = _run("rebase", budget, seed)
    for node in result.tree.nodes.values():
        if node.id:
            assert len(node.mc_scores) == K0 and node.extra_passes == 0
            assert node.mean == pytest.approx(float(np.mean(node.mc_scores)))
    # the first step spends REBASE's N(c+1) on children at c+K0 each
    assert steps[0].step_info.width == int(budget * (C + 1) // (C + K0))
    spent = 0.0
    for t, it in enumerate(steps, start=1):
        assert it.cost_step == pytest.approx(it.step_info.width * (C + K0))
        spent += it.cost_step
        assert spent <= t * budget * (C + 1) + 1e-9  # never ahead of REBASE's spend
    # matched compute: what REBASE spends at the same N, less under one child's price left at the end
    assert rebase.cost - (C + K0) < result.cost <= rebase.cost
    assert _tree(result) != _tree(rebase)


@pytest.mark.parametrize("budget", [4, 16])
@pytest.mark.parametrize("seed", range(4))
def test_rebase_mc_with_largest_remainder_is_h_uats_without_reevaluation(budget, seed, monkeypatch):
    """Rung 1 -> rung 2: REBASE-MC and H-UATS with no re-evaluation share differ in the children's rounding only
    (T = ν2, the softmax temperatures are the same number)."""
    assert SearchConfig().rebase_temperature == SearchConfig().nu2
    uats, _ = _run("h-uats", budget, seed, reeval_share=0.0)
    plain, _ = _run("rebase", budget, seed, rebase_scoring="mc")
    monkeypatch.setattr(
        "uats_core.methods.rebase.rebase_children",
        lambda scores, width, temperature: largest_remainder(softmax(scores, temperature), width),
    )
    swapped, _ = _run("rebase", budget, seed, rebase_scoring="mc")
    assert _tree(swapped) == _tree(uats)
    assert (swapped.answer, swapped.cost) == (uats.answer, uats.cost)
    if (budget, seed) == (16, 0):
        assert _tree(plain) != _tree(uats)  # the rounding does change searches


@pytest.mark.parametrize("budget", [4, 16])
@pytest.mark.parametrize("seed", range(4))
def test_single_pass_h_uats_with_rebases_rounding_is_rebase(budget, seed, monkeypatch):
    """The paper's "w/o Uncert." (H-UATS, prm_scoring=single) against REBASE: again only the rounding differs."""
    rebase, _ = _run("rebase", budget, seed)
    monkeypatch.setattr(
        "uats_core.allocation.largest_remainder",  # what softmax_shares rounds with
        lambda weights, total: sequential_ceil(list(weights), weights, total),
    )
    swapped, _ = _run("h-uats", budget, seed, prm_scoring="single")
    assert _tree(swapped) == _tree(rebase)
    assert (swapped.answer, swapped.cost) == (rebase.answer, rebase.cost)


def test_rebase_scoring_is_a_rebase_setting():
    check_config(SearchConfig(method="rebase", rebase_scoring="mc"))
    with pytest.raises(ConfigError, match="rebase_scoring"):
        check_config(SearchConfig(method="h-uats", rebase_scoring="mc"))
    with pytest.raises(ConfigError, match="rebase_scoring"):
        check_config(SearchConfig(method="rebase", rebase_scoring="dropout"))


def test_rebase_mc_cells_name_the_mc_settings_and_plain_rebase_ignores_them():
    """The variant string records k0 (and the dropout settings) for REBASE only when it scores with K0 passes."""
    spec = GridSpec(
        pairs=parse_pairs("A:prm"),
        problems=[PROBLEM],
        dataset="d",
        methods=["rebase", "h-uats", "beam"],
        budgets=[16],
        seeds=[0],
        settings={"rebase_scoring": "mc"},
        axes={"k0": [3, 7]},
    )
    variants = {(it.cell.method, it.cell.variant) for it in build_cells(spec)}
    assert variants == {
        ("rebase", "rebase_scoring=mc"),
        ("rebase", "k0=3,rebase_scoring=mc"),
        ("h-uats", "base"),
        ("h-uats", "k0=3"),
        ("beam", "base"),
    }
    spec.settings = {}
    assert {it.cell.variant for it in build_cells(spec) if it.cell.method == "rebase"} == {"base"}


def test_ladder_table_pairs_each_step_on_shared_cells_by_hand():
    import pandas as pd

    from reports.ladder import ladder_table

    def rows(method, variant, correct, cost):
        return [
            {
                "dataset": "d",
                "pair": "P",
                "budget": 4,
                "problem_id": f"p{i}",
                "seed": 0,
                "method": method,
                "variant": variant,
                "correct": c,
                "cost": cost,
            }
            for i, c in enumerate(correct)
        ]

    df = pd.DataFrame(
        rows("rebase", "base", [1, 0, 0, 1], 100.0)
        + rows("rebase", "rebase_scoring=mc", [1, 1, 0], 95.0)
        + rows("h-uats", "base", [1, 1, 1, 1], 110.0)
    )
    table = ladder_table(df).set_index(["upper", "lower"])
    assert list(table.index) == [("REBASE, MC mean", "REBASE"), ("H-UATS", "REBASE")]  # steps with both rungs only
    mc = table.loc[("REBASE, MC mean", "REBASE")]
    assert mc["n_cells"] == 3 and mc["diff"] == pytest.approx(1 / 3) and mc["spend_ratio"] == pytest.approx(0.95)
    assert mc["acc_upper"] == pytest.approx(2 / 3) and mc["acc_lower"] == pytest.approx(1 / 3)
    total = table.loc[("H-UATS", "REBASE")]
    assert total["n_cells"] == 4 and total["diff"] == pytest.approx(0.5) and total["spend_ratio"] == pytest.approx(1.1)


def test_a_ladder_over_two_datasets_names_each_row_s_dataset():
    """A report over several ledgers (uats.report.report_from_ledger) puts rows of two datasets
    in one table: each row says which dataset it is; one dataset keeps the plain pair."""
    import pandas as pd

    from reports.ladder import ladder_markdown, ladder_table

    def rows(dataset, method, correct):
        return [
            {
                "dataset": dataset,
                "pair": "P",
                "budget": 4,
                "problem_id": f"p{i}",
                "seed": 0,
                "method": method,
                "variant": "base",
                "correct": c,
                "cost": 100.0,
            }
            for i, c in enumerate(correct)
        ]

    df = pd.DataFrame(
        rows("easy", "rebase", [1, 0])
        + rows("easy", "h-uats", [1, 1])
        + rows("hard", "rebase", [0, 0])
        + rows("hard", "h-uats", [1, 0])
    )
    body = [line for line in ladder_markdown(ladder_table(df), {}).splitlines() if line.startswith("| P")]
    assert [line.split(" | ")[0] for line in body] == ["| P, easy", "| P, hard"]
    one = ladder_markdown(ladder_table(df[df["dataset"] == "easy"]), {})
    assert [line.split(" | ")[0] for line in one.splitlines() if line.startswith("| P")] == ["| P"]
