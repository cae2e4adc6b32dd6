"""The report's numbers against a hand count on a tiny hand-built run log."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from reports import t_interval, t_quantile, write_report
from storage import RunStore
from testkit.hand_log import CORRECT, HandLogWriter
from uats.report import build_report

T975_2 = 4.302652729911275  # Student t, 97.5% quantile, 2 degrees of freedom (3 seeds)


def _hand(method: str, budget: int) -> tuple[float, float]:
    per_seed = [sum(CORRECT[(method, budget, s)]) / 2 for s in range(3)]
    mean = sum(per_seed) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in per_seed) / 2)
    return mean, T975_2 * sd / math.sqrt(3)


def test_t_quantiles() -> None:
    assert t_quantile(0.975, 2) == pytest.approx(T975_2, abs=1e-6)
    assert t_quantile(0.975, 1) == pytest.approx(12.706204736, abs=1e-5)
    assert t_quantile(0.975, 30) == pytest.approx(2.042272456, abs=1e-6)
    assert t_quantile(0.025, 5) == pytest.approx(-2.570581836, abs=1e-6)
    assert t_interval([1.0, 1.0, 1.0]) == (1.0, 0.0)
    assert math.isnan(t_interval([0.5])[1])


def test_curves_match_hand_count(hand_db: Path) -> None:
    rep = build_report(str(hand_db), fig2=False)
    cur = rep.tables["curves"].set_index(["method", "budget"])
    assert set(cur["n_problems"]) == {2} and set(cur["n_seeds"]) == {3}  # p2 left out everywhere
    # rebase N=4: per-seed accuracy 0.5, 1, 0 -> mean 0.5, sd 0.5, half 4.3027·0.5/√3 = 1.2421
    assert cur.loc[("rebase", 4), "acc"] == pytest.approx(0.5)
    assert cur.loc[("rebase", 4), "acc_half"] == pytest.approx(T975_2 * 0.5 / math.sqrt(3))
    for method in ("rebase", "h-uats"):
        for budget in (4, 16):
            mean, half = _hand(method, budget)
            assert cur.loc[(method, budget), "acc"] == pytest.approx(mean)
            assert cur.loc[(method, budget), "acc_half"] == pytest.approx(half)
            # Pass@N: at N=16 the truncated second candidate is always right; at N=4 only the voted one can be
            pass_mean = 1.0 if budget == 16 else mean
            assert cur.loc[(method, budget), "pass_at_n"] == pytest.approx(pass_mean)
            assert cur.loc[(method, budget), "cost"] == pytest.approx(10.0 * budget + 1.0)  # mean of seeds 0, 1, 2
    assert cur.loc[("h-uats", 16), "acc_half"] == 0.0
    cost_md = rep.markdown["Mean compute spent per search (PRM-pass units, ± 95% t over seeds): hand|base"]
    cost_half = T975_2 * 1.0 / math.sqrt(3)  # costs 10·N + seed over seeds 0, 1, 2: sd 1
    assert f"| rebase | 41 ± {cost_half:.0f} | 161 ± {cost_half:.0f} |" in cost_md


def test_table4_is_mean_over_budgets_with_seed_interval(hand_db: Path) -> None:
    rep = build_report(str(hand_db), fig2=False)
    t4 = rep.tables["table4"].set_index("method")
    # rebase per seed: (0.5+1)/2, (1+1)/2, (0+0.5)/2 = 0.75, 1, 0.25
    per_seed = [0.75, 1.0, 0.25]
    mean = sum(per_seed) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in per_seed) / 2)
    assert t4.loc["rebase", "value"] == pytest.approx(mean)
    assert t4.loc["rebase", "half"] == pytest.approx(T975_2 * sd / math.sqrt(3))
    assert t4.loc["h-uats", "value"] == pytest.approx((0.5 + 0.75 + 0.75) / 3)
    md = rep.markdown["Table 4 layout: hand|base"]
    assert f"| rebase | {100 * mean:.1f} ± {100 * T975_2 * sd / math.sqrt(3):.1f} |" in md
    assert "2 problems, 3 seeds" in md


def test_paired_differences_by_hand(hand_db: Path) -> None:
    rep = build_report(str(hand_db), fig2=False)
    pdiff = rep.tables["paired_differences"].set_index(["budget", "x", "y"])
    assert list(pdiff.index.get_level_values("x").unique()) == ["h-uats"]  # no A-UATS here: one comparison
    for budget in (4, 16):
        # h-uats − rebase on (p0, p1) per seed, by hand from CORRECT; p2 is left out (unfinished for h-uats)
        d = {
            (p, s): CORRECT[("h-uats", budget, s)][p] - CORRECT[("rebase", budget, s)][p]
            for p in (0, 1)
            for s in range(3)
        }
        per_seed = [(d[(0, s)] + d[(1, s)]) / 2 for s in range(3)]
        per_problem = [sum(d[(p, s)] for s in range(3)) / 3 for p in (0, 1)]
        row = pdiff.loc[(budget, "h-uats", "rebase")]
        assert row["diff"] == pytest.approx(sum(per_seed) / 3) and row["n_cells"] == 6
        assert row["half_seeds"] == pytest.approx(t_interval(per_seed)[1])
        assert row["half_problems"] == pytest.approx(t_interval(per_problem)[1])
    # N=16: per seed 0, 0, +0.5 -> +16.7 points
    assert "| P:Q | 16 | h-uats − rebase | +16.7 |" in rep.markdown["Paired accuracy differences: hand|base"]


def test_ablation_compares_variants_on_the_same_problems(tmp_path: Path) -> None:
    """The base grid covers p0 and p1, the ablation only p0: the ablation table must use p0 for both rows."""
    store = RunStore(str(tmp_path / "abl.db"))
    w = HandLogWriter(store)
    for seed in range(3):
        w.run(problem="p0", method="h-uats", budget=4, seed=seed, correct=seed > 0, cost=1.0)  # base on p0: 2/3
        w.run(problem="p1", method="h-uats", budget=4, seed=seed, correct=True, cost=1.0)  # base on p1 only
        w.run(problem="p0", method="h-uats", budget=4, seed=seed, correct=False, cost=1.0, variant="reeval_share=0.0")
    store.close()
    rep = build_report(str(tmp_path / "abl.db"), fig2=False)
    md = rep.markdown["Ablations"]
    half = T975_2 * math.sqrt(1 / 3) / math.sqrt(3)  # per-seed 0, 1, 1: sd √(1/3)
    assert f"| hand | h-uats | base | {100 * 2 / 3:.1f} ± {100 * half:.1f} (n=1) |" in md
    assert "| hand | h-uats | reeval_share=0.0 | 0.0 ± 0.0 (n=1) |" in md
    assert rep.tables["table4"].set_index("variant").loc["base", "value"] == pytest.approx(
        (2 / 3 + 1) / 2
    )  # base table: both
    assert "ablations" in rep.figures


def test_ablation_table_says_when_a_variant_ran_at_other_budgets_or_seeds(tmp_path: Path) -> None:
    """Base at N = 4 and 16 over 3 seeds, the variant at N = 4 on seed 0: its mean covers less, and the row says so
    and gives the base's mean on the same cells."""
    store = RunStore(str(tmp_path / "abl.db"))
    w = HandLogWriter(store)
    for seed in range(3):
        for budget in (4, 16):
            w.run(problem="p0", method="h-uats", budget=budget, seed=seed, correct=True, cost=1.0)
    w.run(problem="p0", method="h-uats", budget=4, seed=0, correct=False, cost=1.0, variant="spend_rule=paper")
    store.close()
    md = build_report(str(tmp_path / "abl.db"), fig2=False).markdown["Ablations"]
    assert "| hand | h-uats | base | 100.0 ± 0.0 (n=1) |" in md
    assert "| hand | h-uats | spend_rule=paper | 0.0 (n=1; N=4; no ±: 1 seed; base on these cells 100.0) |" in md


def test_two_seeds_show_no_interval_and_say_why(tmp_path: Path) -> None:
    """2 seeds once printed "37.5 ± 476.5": a t-interval from 2 values (t(0.975, 1) = 12.7) says nothing. Every
    table shows the mean and the seed count instead, and the figures draw no error bar."""
    store = RunStore(str(tmp_path / "two.db"))
    w = HandLogWriter(store)
    for seed, outcomes in ((0, (True, False, False, False)), (1, (True, True, False, False))):
        for p, ok in enumerate(outcomes):
            for method in ("rebase", "h-uats"):
                w.run(problem=f"p{p}", method=method, budget=4, seed=seed, correct=ok, cost=10.0 + seed)
    store.close()
    rep = build_report(str(tmp_path / "two.db"), fig2=False)
    assert rep.tables["curves"]["acc_half"].gt(0.5).all()  # the raw half-widths: wider than the whole range
    md = rep.markdown
    assert "| rebase | 37.5 (no ±: 2 seeds) |" in md["Table 4 layout: hand|base"]
    assert "| rebase | 37.5 (no ±: 2 seeds) |" in md["Accuracy by budget (%): hand|base"]
    assert (
        "| rebase | 10 (no ±: 2 seeds) |"
        in md["Mean compute spent per search (PRM-pass units, ± 95% t over seeds): hand|base"]
    )
    for name in ("Table 4 layout: hand|base", "Accuracy by budget (%): hand|base", "UATS against REBASE: hand|base"):
        table = (
            md[name][md[name].index("| method") :] if "| method" in md[name] else md[name][md[name].index("| pair") :]
        )
        assert " ± " not in table, name  # the table, below any title
    # over problems (4 of them) the paired difference has its interval; over 2 seeds it says why not
    assert "| – (no ±: 2 seeds) | ± 0.0 |" in md["Paired accuracy differences: hand|base"]
    for trace in rep.figures["accuracy_vs_n"].data:
        if trace.error_y is not None and trace.error_y.array is not None:
            assert not any(trace.error_y.array), trace.name


def test_all_problems_mode_counts_the_unfinished_problem(hand_db: Path) -> None:
    rep = build_report(str(hand_db), fig2=False, common_problems=False)
    cur = rep.tables["curves"].set_index(["method", "budget"])
    assert cur.loc[("rebase", 4), "n_problems"] == 3 and cur.loc[("h-uats", 4), "n_problems"] == 2
    # rebase N=4 with p2 (always right): per seed (1+0+1)/3, (1+1+1)/3, (0+0+1)/3
    assert cur.loc[("rebase", 4), "acc"] == pytest.approx((2 / 3 + 1 + 1 / 3) / 3)


def test_a_budget_filter_keeps_the_problems_other_budgets_leave_unfinished(hand_db: Path, tmp_path: Path) -> None:
    """p3 finished at N=4 only: the whole report drops it, a report of N=4 alone counts it."""
    store = RunStore(str(hand_db))
    w = HandLogWriter(store)
    w.n = 1000
    for method in ("rebase", "h-uats"):
        for seed in range(3):
            w.run(problem="p3", method=method, budget=4, seed=seed, correct=method == "rebase", cost=1.0)
    store.close()
    both = build_report(str(hand_db), fig2=False).tables["curves"].set_index(["method", "budget"])
    assert both.loc[("rebase", 4), "n_problems"] == 2
    only4 = build_report(str(hand_db), fig2=False, budgets=[4]).tables["curves"]
    assert set(only4["budget"]) == {4} and set(only4["n_problems"]) == {3}
    h4 = only4.set_index("method").loc["h-uats", "acc"]
    assert h4 == pytest.approx(((0 + 0 + 0) + (1 + 0 + 0) + (1 + 0 + 0)) / 9)  # p0,p1 per seed from CORRECT, p3 wrong
    from uats.report import main as report_main

    assert report_main(["--db", str(hand_db), "--budgets", "4,x", "--out", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()


def test_figure2_step_accuracy_and_variance_by_hand(tmp_path: Path) -> None:
    from uats_core.worlds.arith.solutions import solve
    from uats_core.worlds.arith.world import get_problem

    problem = get_problem("arith-test-0")
    gold, _ = solve(problem, "A")
    store = RunStore(str(tmp_path / "fig2.db"))
    w = HandLogWriter(store)
    nodes = [
        dict(node_id=0, parent_id=None, depth=0, step="", status="kept"),
        # correct step, MC mean 0.85 -> predicted correct: right
        dict(
            node_id=1,
            parent_id=0,
            depth=1,
            step=gold[0] + "\n\n",
            status="kept",
            mean=0.85,
            mc_scores=[0.9, 0.8, 0.85],
            initial_passes=3,
            k=3,
        ),
        # wrong step, MC mean 0.8 -> predicted correct: wrong
        dict(
            node_id=2,
            parent_id=0,
            depth=1,
            step="1 + 1 = 3\n\n",
            status="pruned",
            mean=0.8,
            mc_scores=[0.7, 0.9, 0.8],
            initial_passes=3,
            k=3,
        ),
        # correct second step after a correct first one, initial passes mean 0.3 -> predicted wrong: wrong.
        # Its fourth pass is a re-evaluation: not part of the K0 statistics.
        dict(
            node_id=3,
            parent_id=1,
            depth=2,
            step=gold[1] + "\n\n",
            status="pruned",
            mean=0.45,
            mc_scores=[0.2, 0.4, 0.3, 0.9],
            initial_passes=3,
            k=4,
            extra_passes=1,
        ),
    ]
    w.run(
        problem="arith-test-0",
        method="h-uats",
        budget=4,
        seed=0,
        correct=False,
        cost=1.0,
        dataset="arith-test",
        pair="A2:prm2",
        nodes=nodes,
    )
    rep = build_report(store, fig2=True)
    store.close()
    s = rep.tables["prm_summary"].iloc[0]
    assert s["n_steps"] == 3 and s["label_kind"] == "step"
    assert s["share_correct"] == pytest.approx(2 / 3)
    assert s["accuracy"] == pytest.approx(1 / 3)
    assert s["auroc"] == pytest.approx(0.5)  # correct {0.85, 0.3} vs wrong {0.8}: one pair of two ordered right
    variances = [np.var([0.9, 0.8, 0.85], ddof=1), np.var([0.7, 0.9, 0.8], ddof=1), np.var([0.2, 0.4, 0.3], ddof=1)]
    assert s["var_median"] == pytest.approx(float(np.median(variances)))
    assert s["share_var_over_tau"] == pytest.approx(2 / 3)  # 0.0025 <= 0.003 < 0.01, 0.01
    assert s["share_std_over_tau"] == pytest.approx(1.0)  # σ = 0.05, 0.1, 0.1: all over 0.003
    assert "% σ > τ" in rep.markdown["Figure 2 analysis: PRM on each pair's steps"]
    assert "prm_analysis" in rep.figures


def test_write_report_offline_html_and_tables(hand_db: Path, tmp_path: Path) -> None:
    rep = build_report(str(hand_db), fig2=False)
    files = write_report(rep, tmp_path / "out", png=False)
    names = {f.name for f in files}
    assert {"report.html", "tables.md", "curves.csv", "table4.csv"} <= names
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    # plotly.js inlined (no <script src=...> to a CDN): the page opens offline
    assert "<script src=" not in html and len(html) > 1_000_000 and "Plotly.newPlot" in html
    assert {"accuracy_vs_n", "accuracy_vs_cost", "pass_at_n"} <= set(rep.figures)


def test_empty_database_gives_an_empty_report(tmp_path: Path) -> None:
    rep = build_report(str(tmp_path / "empty.db"))
    assert rep.tables["results"].empty and not rep.figures
    assert "no finished evaluation cells" in rep.notes[0]


def test_the_apps_reports_tab_shows_the_hand_counted_numbers(hand_db: Path) -> None:
    from ui.views.report_sources import ReportSources
    from ui.views.report_view import report_view
    from ui.views.safe_text import md_text

    sources = ReportSources(RunStore("sqlite://"), hand_db.parent)
    md, figs = report_view(sources, hand_db.name)
    assert md_text(hand_db.name) in md and "Table 4 layout" in md  # the label is escaped for Markdown
    assert "83.3" in md  # REBASE at N=16: per-seed accuracy 1, 1, 0.5 -> 83.3%
    assert set(figs) == {"accuracy_vs_n", "accuracy_vs_cost", "prm_analysis"}
    names = {tr.get("name") for tr in figs["accuracy_vs_n"]["data"]}
    assert any("rebase" in str(n).lower() for n in names) and any("uats" in str(n).lower() for n in names)


def test_a_report_of_a_run_log_not_in_the_list_names_the_field_and_creates_nothing(tmp_path: Path) -> None:
    from uats_core.errors import ConfigError
    from ui.views.report_sources import ReportSources
    from ui.views.report_view import report_view

    sources = ReportSources(RunStore("sqlite://"), tmp_path)
    missing = tmp_path / "typo.db"
    for key in ("typo.db", str(missing), "sqlite:///" + str(missing), "../typo.db"):
        with pytest.raises(ConfigError, match=r"run log: .*not in the reports folder"):
            report_view(sources, key)
    assert not missing.exists() and list(tmp_path.iterdir()) == []


def test_controller_curves_from_the_database_and_the_figure(tmp_path: Path) -> None:
    from ui.views.charts import training_curve_figure
    from ui.views.report_sources import ReportSources
    from ui.views.report_view import curve_choices, curve_rows

    db = tmp_path / "train.db"
    store = RunStore(str(db))
    for rnd in range(30):
        store.append_curve(
            "controller-x-seed0", {"round": rnd, "mean_reward": rnd / 30, "accuracy": 0.5, "mean_cost": 100.0 + rnd}
        )
    store.close()
    sources = ReportSources(RunStore("sqlite://"), tmp_path)
    assert "controller-x-seed0" in curve_choices(sources, db.name)
    rows = curve_rows(sources, db.name, "controller-x-seed0")
    fig = training_curve_figure(rows, window=10)
    assert fig["meta"]["rounds"] == 30
    reward_smooth = fig["data"][1]
    assert reward_smooth["x"] == list(range(30))
    # trailing 10-round mean of r/30 at round 29: mean of 20..29 / 30
    assert reward_smooth["y"][-1] == pytest.approx(sum(range(20, 30)) / 10 / 30)
    assert training_curve_figure([]) is None


def test_uats_against_rebase_table_by_hand(tmp_path: Path) -> None:
    """Issue 6's table: each UATS method beside REBASE at its budget, with the share of REBASE's compute."""
    store = RunStore(str(tmp_path / "vs.db"))
    w = HandLogWriter(store)
    cost = {"rebase": 100.0, "h-uats": 70.0, "a-uats": 85.0}
    for seed in range(3):
        for method in ("rebase", "h-uats", "a-uats", "best-of-n"):
            w.run(
                problem="p0",
                method=method,
                budget=4,
                seed=seed,
                correct=method != "rebase" or seed == 0,
                cost=cost.get(method, 100.0) + seed,
            )
    store.close()
    md = build_report(str(tmp_path / "vs.db"), fig2=False).markdown["UATS against REBASE: hand|base"]
    rows = [line for line in md.splitlines() if line.startswith("| P:Q")]
    half = T975_2 * math.sqrt(1 / 3) / math.sqrt(3)  # REBASE per seed 1, 0, 0: sd √(1/3)
    assert rows == [
        f"| P:Q | 4 | rebase | {100 / 3:.1f} ± {100 * half:.1f} | 101 ± 2 | 1.00 | 1 |",
        "| P:Q | 4 | h-uats | 100.0 ± 0.0 | 71 ± 2 | 0.70 | 1 |",  # (70+1)/(100+1)
        "| P:Q | 4 | a-uats | 100.0 ± 0.0 | 86 ± 2 | 0.85 | 1 |",
    ]  # best-of-n is not part of this comparison


def test_variant_against_its_base_and_rebase_paired_by_hand(tmp_path: Path) -> None:
    """A UATS variant against the same method's base settings and against REBASE, on the cells both ran."""
    store = RunStore(str(tmp_path / "var.db"))
    w = HandLogWriter(store)
    variant = "dropout_mode=last:2,tau=auto"
    won = {("p0", 0): 1, ("p0", 1): 1, ("p0", 2): 0, ("p1", 0): 1, ("p1", 1): 0, ("p1", 2): 1}
    for problem in ("p0", "p1"):
        for seed in range(3):
            w.run(problem=problem, method="rebase", budget=4, seed=seed, correct=False, cost=100.0)
            w.run(problem=problem, method="h-uats", budget=4, seed=seed, correct=seed == 0, cost=90.0)
            w.run(
                problem=problem,
                method="h-uats",
                budget=4,
                seed=seed,
                correct=bool(won[(problem, seed)]),
                cost=95.0,
                variant=variant,
            )
    w.run(problem="p2", method="h-uats", budget=4, seed=0, correct=True, cost=95.0, variant=variant)  # no reference
    store.close()
    rep = build_report(str(tmp_path / "var.db"), fig2=False)
    v = rep.tables["variant_differences"].set_index("reference")
    vs_base, vs_rebase = v.loc["h-uats (base)"], v.loc["rebase (base)"]
    # vs base: per seed (1−1 + 1−1)/2 = 0, (1−0 + 0−0)/2 = 0.5, (0 + 1)/2 = 0.5
    assert vs_base["diff"] == pytest.approx(1 / 3) and vs_base["n_cells"] == 6
    assert vs_base["half_seeds"] == pytest.approx(t_interval([0.0, 0.5, 0.5])[1])
    assert vs_base["half_problems"] == pytest.approx(t_interval([1 / 3, 1 / 3])[1])
    assert vs_base["spend_ratio"] == pytest.approx(95 / 90) and vs_rebase["spend_ratio"] == pytest.approx(0.95)
    assert vs_rebase["diff"] == pytest.approx(4 / 6)  # the variant wins 4 of 6 cells, REBASE none
    assert f"| P:Q | 4 | h-uats | {variant} | rebase (base) | +66.7 |" in rep.markdown["Variants, paired"]


def test_trace_counts_merge_exact_duplicates_by_hand() -> None:
    """Two candidates are the same partial solution when their parents are and their step texts are equal."""
    import pandas as pd

    from reports.duplicates import trace_counts

    nodes = pd.DataFrame(
        [
            {"run_id": "r", "node_id": 0, "parent_id": None, "depth": 0, "step": ""},
            {"run_id": "r", "node_id": 1, "parent_id": 0, "depth": 1, "step": "a"},
            {"run_id": "r", "node_id": 2, "parent_id": 0, "depth": 1, "step": "a"},  # a duplicate of 1
            {"run_id": "r", "node_id": 3, "parent_id": 0, "depth": 1, "step": "b"},
            {"run_id": "r", "node_id": 4, "parent_id": 1, "depth": 2, "step": "c"},
            {"run_id": "r", "node_id": 5, "parent_id": 2, "depth": 2, "step": "c"},  # a→c again, through the duplicate
            {"run_id": "r", "node_id": 6, "parent_id": 3, "depth": 2, "step": "c"},  # b→c: another trace
        ]
    )
    (row,) = trace_counts(nodes).to_dict("records")
    assert row["n_candidates"] == 6 and row["n_distinct"] == 4 and row["steps"] == 2
    assert row["candidates_per_step"] == pytest.approx(3.0) and row["distinct_per_step"] == pytest.approx(2.0)


def test_final_solutions_and_the_recomputed_votes_by_hand() -> None:
    """Copies of one final solution merge (same parent trace, same step); answers without one take no part; each
    rule's pick is graded as the search would grade it."""
    import json

    import pandas as pd

    from reports.aggregation import recomputed_votes
    from reports.duplicates import trace_counts

    def node(i, parent, depth, step, status="kept", answer=None, correct=None, mean=0.5):
        return {
            "run_id": "r",
            "node_id": i,
            "parent_id": parent,
            "depth": depth,
            "step": step,
            "status": status,
            "answer": answer,
            "correct": correct,
            "mean": mean,
        }

    nodes = pd.DataFrame(
        [
            node(0, None, 0, ""),
            node(1, 0, 1, "a"),
            node(2, 0, 1, "a"),
            node(3, 0, 1, "b"),
            node(4, 1, 2, "=14", "finished", "14", False, 0.88),
            node(5, 2, 2, "=14", "finished", "14", False, 0.86),  # a copy of 4: its parent is a copy of 1
            node(6, 3, 2, "=15", "finished", "15", True, 0.9),
            node(7, 3, 2, "x=15", "truncated", "15", True, 0.7),
            node(8, 3, 2, "cut", "truncated", None, False, 0.99),  # no answer: in no vote
        ]
    )
    (row,) = trace_counts(nodes).to_dict("records")
    assert json.loads(row["solutions"]) == [
        ["14", False, 2, pytest.approx(1.74), 0.88],
        ["15", True, 1, 0.9, 0.9],
        ["15", True, 1, 0.7, 0.7],
    ]
    # weighted 1.74 vs 1.60 and majority 2 vs 2 (a tie: the answer seen first) pick 14; one copy of it counts
    # 0.87 against 1.60; the best score is 0.9
    assert recomputed_votes(row["solutions"]) == {"weighted": False, "best": True, "majority": False, "distinct": True}
    assert recomputed_votes("[]") == dict.fromkeys(["weighted", "best", "majority", "distinct"], False)


def test_spend_against_rebase_by_hand(tmp_path: Path) -> None:
    """Totals, the median per search, and the totals without a cell where REBASE ran to the iteration cap."""
    store = RunStore(str(tmp_path / "spend.db"))
    w = HandLogWriter(store)
    for seed, (ref, mine) in enumerate([(100.0, 90.0), (100.0, 100.0), (1000.0, 110.0)]):
        w.run(
            problem="p0",
            method="rebase",
            budget=4,
            seed=seed,
            correct=True,
            cost=ref,
            iterations=40 if seed == 2 else 3,
        )
        w.run(problem="p0", method="h-uats", budget=4, seed=seed, correct=True, cost=mine)
    store.close()
    rep = build_report(str(tmp_path / "spend.db"), fig2=False)
    (row,) = rep.tables["spend"].to_dict("records")
    assert row["cells"] == 3 and row["capped"] == 1
    assert row["spend_ratio"] == pytest.approx(300 / 1200) and row["median_ratio"] == pytest.approx(0.9)
    assert row["spend_ratio_uncapped"] == pytest.approx(190 / 200)
    assert "| P:Q | 4 | h-uats | base | 3 | 0.250 | 0.900 | 1 | 0.950 |" in rep.markdown["Compute spent against REBASE"]
