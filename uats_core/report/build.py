"""Assembling a Report from an evaluation's rows: the tables, the Markdown and the figures.

The rows (one per finished evaluation cell, from storage.eval_results.load_results) and the node loader of
the Figure 2 analysis are handed in, so building a report needs no database here; the entry point
uats_core.entrypoints.report.build_report(store_or_url) opens the run log and calls assemble_report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from ..config import UATS_METHODS, SearchConfig
from .aggregation import aggregation_markdown, aggregation_table
from .difficulty import difficulty_markdown
from .duplicates import duplicates_markdown, duplicates_table, trace_counts
from .ladder import RUNGS, ladder_markdown, ladder_table
from .provenance import with_provenance
from .sigma_features import controller_markdown, controller_response, sigma_beside_rbar, sigma_markdown
from .figures import fig_ablation, fig_curves, fig_prm
from .stats import (MIN_REPLICATES, base_on_variant_cells, curves, mean_over_budgets, paired_differences,
                    restrict_common, same_problems_across_variants, spend_against_rebase, variant_differences)
from .steps import MC_SCORED, NodeLoader, prm_summary, select_runs, step_records
from .tables import (ablation_table, against_rebase_markdown, paired_markdown, per_budget_markdown, prm_markdown, span,
                     spend_markdown, table4_markdown, variant_markdown)


@dataclass
class Report:
    figures: dict[str, Any] = field(default_factory=dict)  # name -> plotly Figure
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    markdown: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """{"figures": {name: go.Figure}, "tables": {name: DataFrame}, "markdown": {name: str}, "notes": [...]}."""
        return {"figures": self.figures, "tables": self.tables, "markdown": self.markdown, "notes": self.notes}

    def summary_markdown(self) -> str:
        parts = ["# Evaluation report", "", *[f"- {n}" for n in self.notes], ""]
        for name, text in self.markdown.items():
            parts += [f"## {name}", "", text, ""]
        return "\n".join(parts)


def default_roles(df: pd.DataFrame) -> dict[str, str]:
    """The built-in pairs' roles (e.g. 'ID', 'OOD') for the pairs that use the built-in models."""
    from ..eval.grid import BUILTIN_MODELS, BUILTIN_ROLES
    from ..paths import portable_path

    roles = {}
    for pair, g in df.groupby("pair"):
        # a ledger keeps model paths relative to the repository, a run log absolute: compare them alike
        if pair in BUILTIN_ROLES and portable_path(str(g["policy"].iloc[0])) == portable_path(BUILTIN_MODELS[pair.split(":")[0]]):
            roles[pair] = BUILTIN_ROLES[pair]
    return roles


def assemble_report(raw: pd.DataFrame, load_nodes: NodeLoader | None = None, *, common_problems: bool = True,
                    confidence: float = 0.95, roles: dict[str, str] | None = None, fig2: bool = True,
                    max_fig2_runs_per_pair: int = 600, tau: float | None = None, methods: Sequence[str] | None = None,
                    pairs: Sequence[str] | None = None, budgets: Sequence[int] | None = None,
                    steps: pd.DataFrame | None = None, traces: pd.DataFrame | None = None,
                    controller: pd.DataFrame | None = None) -> Report:
    """Every figure and table of an evaluation, from its rows (storage.eval_results.load_results).

    figures: accuracy_vs_n, accuracy_vs_cost, pass_at_n, prm_analysis (Figure 2), ablations (when any);
    tables (DataFrames): results (one row per cell), curves, table4, pass_table4, prm_summary;
    markdown: table4 / per-budget / Pass@N / cost / PRM / ablation tables, ready for docs.
    load_nodes: run ids -> their nodes, for the Figure 2 analysis and the duplicates table (both skipped without
    it); or steps and traces: the step records and duplicate counts already read (a results ledger keeps them),
    traces with a `solutions` column where final solutions are known (the answer aggregation table).
    controller: A-UATS's controller steps by cell (a ledger keeps them), for what its knobs follow.
    methods / pairs / budgets: report only these (e.g. leave out a method or a budget still running, whose
    unfinished problems would otherwise shrink the common problem set of every method)."""
    rep = Report()
    if methods:
        raw = raw[raw["method"].isin(list(methods))]
    if pairs:
        raw = raw[raw["pair"].isin(list(pairs))]
    if budgets:
        raw = raw[raw["budget"].isin([int(b) for b in budgets])]
    rep.tables["results"] = raw
    if raw.empty:
        rep.notes.append("no finished evaluation cells in this database")
        return rep
    roles = default_roles(raw) if roles is None else roles
    tau = SearchConfig().tau if tau is None else tau
    df = restrict_common(raw) if common_problems else raw
    _add_notes(rep, raw, df)
    cur = curves(df, confidence)
    rep.tables["curves"] = cur
    _add_tables(rep, df, cur, roles, confidence, raw)
    if text := difficulty_markdown(cur, roles):
        rep.markdown["Accuracy against difficulty"] = with_provenance(text, df[df["variant"] == "base"])
    _add_figures(rep, df, cur, roles, confidence)
    if fig2 and (load_nodes is not None or steps is not None):
        if steps is None:
            steps = step_records(load_nodes, df, max_fig2_runs_per_pair)
        elif len(steps) and "cell_key" in steps:
            steps = steps[steps["cell_key"].isin(set(df["cell_key"]))]
        _add_prm_analysis(rep, steps, roles, tau, df)
    if traces is None and load_nodes is not None and fig2:
        sample = select_runs(df, max_fig2_runs_per_pair)
        counts = trace_counts(load_nodes(list(sample["run_id"])))
        traces = counts.assign(cell_key=counts["run_id"].map(dict(zip(sample["run_id"], sample["cell_key"]))))
    if traces is not None and len(traces):
        dup = duplicates_table(df, traces)
        rep.tables["duplicates"] = dup
        if text := duplicates_markdown(dup, roles):
            counted = df[(df["variant"] == "base") & df["cell_key"].isin(set(traces["cell_key"]))]
            rep.markdown["Duplicate candidates"] = with_provenance(text, counted)
    has_finals = traces is not None and "solutions" in traces
    agg = aggregation_table(df, traces[traces["solutions"].notna()] if has_finals else None, confidence)
    rep.tables["aggregation"] = agg
    if text := aggregation_markdown(agg, roles):
        rep.markdown["Answer aggregation"] = with_provenance(text, df)
    if controller is not None and len(controller):
        response = controller_response(raw, controller)
        rep.tables["controller"] = response
        if text := controller_markdown(response, roles):
            rep.markdown["A-UATS's controller"] = with_provenance(text, raw[raw["cell_key"].isin(set(controller["cell_key"]))])
    return rep


def _add_notes(rep: Report, raw: pd.DataFrame, df: pd.DataFrame) -> None:
    dropped = len(raw) - len(df)
    rep.notes.append(f"{len(raw)} finished cells; {len(df)} used"
                     + (f" ({dropped} dropped: their problem is not finished for every method × budget × seed of its group)"
                        if dropped else ""))
    if bool(raw["batched"].any()):
        rep.notes.append(f"{int(raw['batched'].sum())} cells ran under cross-problem batching (valid samples, but "
                         "not reproducible alone: their RNG draws were shared with co-scheduled searches)")
    rep.notes.append("intervals: 95% Student-t over seeds of the per-seed accuracy over problems, shown from "
                     f"{MIN_REPLICATES} seeds up (fewer give an interval wider than it is informative: "
                     "the cell then says how many seeds it has)")


def _of_key(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """The rows of a per-(dataset, variant) table, from its 'dataset|variant' key."""
    dataset, variant = key.split("|", 1)
    return df[(df["dataset"] == dataset) & (df["variant"] == variant)]


def _add_tables(rep: Report, df: pd.DataFrame, cur: pd.DataFrame, roles: dict[str, str], confidence: float,
                raw: pd.DataFrame) -> None:
    """The tables; under each, the code versions of the rows it reads (provenance)."""
    mob = mean_over_budgets(df, "correct", confidence)
    rep.tables["table4"] = mob
    pob = mean_over_budgets(df, "pass_at_n", confidence)
    rep.tables["pass_table4"] = pob
    base = cur[cur["variant"] == "base"]
    bob = mean_over_budgets(df, "naive_correct", confidence)  # the answer of the single best-scored candidate
    rep.tables["table4_best_score"] = bob
    pdiff = paired_differences(df[df["variant"] == "base"], confidence)
    rep.tables["paired_differences"] = pdiff
    keyed = [("Table 4 layout", table4_markdown(mob[mob["variant"] == "base"], roles)),
             ("Table 4 layout, best final score",
              table4_markdown(bob[bob["variant"] == "base"], roles, "accuracy with the best final score as the answer")),
             ("Accuracy by budget (%)", per_budget_markdown(base, roles, "acc")),
             ("Pass@N by budget (%, oracle)", per_budget_markdown(base, roles, "pass_at_n")),
             ("Mean compute spent per search (PRM-pass units, ± 95% t over seeds)", per_budget_markdown(base, roles, "cost")),
             ("UATS against REBASE", against_rebase_markdown(base, roles)),
             ("Paired accuracy differences", paired_markdown(pdiff, roles))]
    for title, texts in keyed:
        for key, text in texts.items():
            rep.markdown[f"{title}: {key}"] = with_provenance(text, _of_key(df, key))
    rebase_base = (df["method"] == "rebase") & (df["variant"] == "base")
    uats = df["method"].isin(UATS_METHODS)
    spend = spend_against_rebase(df, SearchConfig().max_iterations)
    rep.tables["spend"] = spend
    if text := spend_markdown(spend, roles):
        rep.markdown["Compute spent against REBASE"] = with_provenance(text, df[uats | rebase_base])
    vdiff = variant_differences(df, confidence)
    rep.tables["variant_differences"] = vdiff
    if text := variant_markdown(vdiff, roles):
        varied = set(df.loc[uats & (df["variant"] != "base"), "method"])
        rep.markdown["Variants, paired"] = with_provenance(text, df[(uats & df["method"].isin(varied)) | rebase_base])
    abl_df = same_problems_across_variants(df)
    abl = (ablation_table(mean_over_budgets(abl_df, "correct", confidence), roles,
                          base_on_variant_cells(abl_df, confidence)) if len(abl_df) else "")
    if abl:
        rep.markdown["Ablations"] = with_provenance(abl, abl_df)
    # every finished cell: the steps pair cells one by one, so a rung still running needs no common problem set
    ladder = ladder_table(raw, confidence)
    rep.tables["ladder"] = ladder
    if text := ladder_markdown(ladder, roles):
        rungs = pd.Series(False, index=raw.index)
        for method, variant in RUNGS.values():
            rungs |= (raw["method"] == method) & (raw["variant"] == variant)
        rep.markdown["Ablation ladder"] = with_provenance(text, raw[rungs])


def _add_figures(rep: Report, df: pd.DataFrame, cur: pd.DataFrame, roles: dict[str, str], confidence: float) -> None:
    for (dataset, variant), g in cur.groupby(["dataset", "variant"], sort=False):
        suffix = "" if (dataset, variant) == tuple(cur[["dataset", "variant"]].iloc[0]) else f" [{dataset} {variant}]"
        # A file-name tag: letters, digits, '.', '-' and '_' only (a variant holds '=', ',', ':' and '/').
        tag = "" if not suffix else re.sub(r"[^A-Za-z0-9._-]+", "_", f"_{dataset}_{variant}".replace("=", ""))
        n_desc = f"{span(g['n_problems'])} problems × {span(g['n_seeds'])} seeds"
        rep.figures["accuracy_vs_n" + tag] = fig_curves(
            g, "budget", "acc", f"Accuracy vs N<br><sup>{dataset}, {variant} ({n_desc}); dotted: Pass@N (oracle)</sup>",
            roles, dashed_extra="pass_at_n")
        rep.figures["accuracy_vs_cost" + tag] = fig_curves(
            g, "cost", "acc", f"Accuracy vs compute actually spent<br><sup>{dataset}, {variant} ({n_desc}); "
            "compute = generated steps × c + PRM passes</sup>", roles)
        rep.figures["pass_at_n" + tag] = fig_curves(
            g, "budget", "pass_at_n", f"Pass@N<br><sup>oracle: any final candidate correct (an upper bound where the "
            f"table gives a range); {dataset}, {variant}</sup>", roles)
    abl_df = same_problems_across_variants(df)
    abl_fig = fig_ablation(curves(abl_df, confidence), roles) if len(abl_df) else None
    if abl_fig is not None:
        rep.figures["ablations"] = abl_fig


def _add_prm_analysis(rep: Report, steps: pd.DataFrame, roles: dict[str, str], tau: float, df: pd.DataFrame) -> None:
    summ = prm_summary(steps, tau)
    rep.tables["prm_steps"] = steps
    rep.tables["prm_summary"] = summ
    if len(summ):
        rep.figures["prm_analysis"] = fig_prm(steps, summ, roles, tau)
        key = "cell_key" if "cell_key" in steps else "run_id"
        rep.markdown["Figure 2 analysis: PRM on each pair's steps"] = with_provenance(
            prm_markdown(summ, roles, tau), df[df[key].isin(set(steps[key]))])
    sigma = sigma_beside_rbar(steps)
    rep.tables["sigma_beside_rbar"] = sigma
    if text := sigma_markdown(sigma, roles):
        scored = steps[steps["score_kind"] == MC_SCORED]
        rep.markdown["σ² beside R̄"] = with_provenance(text, df[df[key].isin(set(scored[key]))])
