"""Assembling a Report from an evaluation's rows: the tables, the Markdown and the figures.

The rows (one per finished evaluation cell, from storage.eval_results.load_results) and the node loader of
the Figure 2 analysis are handed in, so building a report needs no database here; the entry point
uats.report.build_report(store_or_url) opens the run log and calls assemble_report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from uats_core.config import SearchConfig
from uats_core.methods import uncertainty_methods

from .aggregation import aggregation_markdown, aggregation_table
from .answer import answer_markdown, answer_table
from .claims import claims_markdown
from .compare import contrast_markdown, contrast_table, growth_markdown, growth_table, order_markdown, order_table
from .difficulty import difficulty_markdown, difficulty_order
from .duplicates import duplicates_markdown, duplicates_table, trace_counts
from .figures import fig_ablation, fig_curves, fig_prm
from .ladder import RUNGS, ladder_markdown, ladder_table
from .protocol_variants import protocol_markdown, protocol_table
from .provenance import sources_markdown, with_provenance
from .rerun import Rerun, ordering_markdown, ordering_table, rerun_sections
from .sigma_features import controller_markdown, controller_response, sigma_beside_rbar, sigma_markdown
from .stats import (
    CELL,
    MIN_REPLICATES,
    base_on_variant_cells,
    curves,
    mean_over_budgets,
    paired_differences,
    restrict_common,
    same_problems_across_variants,
    spend_against_rebase,
    variant_differences,
)
from .steps import MC_SCORED, NodeLoader, prm_summary, select_runs, step_records
from .tables import (
    ablation_table,
    against_rebase_markdown,
    paired_markdown,
    per_budget_markdown,
    prm_markdown,
    span,
    spend_markdown,
    table4_markdown,
    variant_markdown,
)


@dataclass
class Report:
    figures: dict[str, Any] = field(default_factory=dict)  # name -> plotly Figure
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    markdown: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)  # pair -> 'ID' / 'OOD'
    confidence: float = 0.95
    rerun_plan: dict[str, Any] | None = None  # the recipe planning the rerun-protocol variants' cells

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
    from uats_core.eval.grid import BUILTIN_MODELS, BUILTIN_ROLES
    from uats_core.paths import portable_path

    roles = {}
    for pair, g in df.groupby("pair"):
        # a ledger keeps model paths relative to the repository, a run log absolute: compare them alike
        if pair in BUILTIN_ROLES and portable_path(str(g["policy"].iloc[0])) == portable_path(
            BUILTIN_MODELS[pair.split(":")[0]]
        ):
            roles[pair] = BUILTIN_ROLES[pair]
    return roles


def assemble_report(
    raw: pd.DataFrame,
    load_nodes: NodeLoader | None = None,
    *,
    common_problems: bool = True,
    confidence: float = 0.95,
    roles: dict[str, str] | None = None,
    fig2: bool = True,
    max_fig2_runs_per_pair: int = 600,
    tau: float | None = None,
    methods: Sequence[str] | None = None,
    pairs: Sequence[str] | None = None,
    budgets: Sequence[int] | None = None,
    steps: pd.DataFrame | None = None,
    traces: pd.DataFrame | None = None,
    controller: pd.DataFrame | None = None,
    rerun: Rerun | None = None,
    figures: bool = True,
    rerun_variants: tuple[str, pd.DataFrame, dict[str, Any] | None] | None = None,
) -> Report:
    """Every figure and table of an evaluation, from its rows (storage.eval_results.load_results).

    figures: accuracy_vs_n, accuracy_vs_cost, pass_at_n, prm_analysis (Figure 2), ablations (when any);
    tables (DataFrames): results (one row per cell), curves, table4, pass_table4, prm_summary;
    markdown: table4 / per-budget / Pass@N / cost / PRM / ablation tables, ready for docs.
    load_nodes: run ids -> their nodes, for the Figure 2 analysis and the duplicates table (both skipped without
    it); or steps and traces: the step records and duplicate counts already read (a results ledger keeps them),
    traces with a `solutions` column where final solutions are known (the answer aggregation table).
    controller: A-UATS's controller steps by cell (a ledger keeps them), for what its knobs follow.
    rerun: a ledger of the same cells run again keeping their final solutions (rerun.Rerun): every answer rule for
    them, compared with the first recording on the same cells, and its controller steps.
    figures: False leaves the plotly figures out (the results page needs the tables alone).
    rerun_variants: (name, rows, plan) of a ledger of variants run under the rerun's protocol (e.g. the gate's
    literal reading, results/arith-gate), set beside the rerun's base cells (protocol_variants.py); needs `rerun`.
    plan: the recipe that plans its cells ({"command", "budgets"}), or None.
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
    rep.roles, rep.confidence = roles, confidence
    tau = SearchConfig().tau if tau is None else tau
    df = restrict_common(raw) if common_problems else raw
    _add_notes(rep, raw, df)
    cur = curves(df, confidence)
    rep.tables["curves"] = cur
    _add_tables(rep, df, cur, roles, confidence, raw)
    _add_comparisons(rep, df, roles, confidence)
    if text := difficulty_markdown(cur, roles):
        rep.markdown["Accuracy against difficulty"] = with_provenance(text, df[df["variant"] == "base"])
    if figures:  # the results page reads tables only
        _add_figures(rep, df, cur, roles, confidence)
    if fig2 and (load_nodes is not None or steps is not None):
        if steps is None:
            steps = step_records(load_nodes, df, max_fig2_runs_per_pair)
        elif len(steps) and "cell_key" in steps:
            steps = steps[steps["cell_key"].isin(set(df["cell_key"]))]
        _add_prm_analysis(rep, steps, roles, tau, df, figures)
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
    # cells a rerun covers get every rule from the rerun (its own section), the others stay here
    others = df if rerun is None else df[~rerun.covers(df)]
    agg = aggregation_table(others, traces[traces["solutions"].notna()] if has_finals else None, confidence)
    rep.tables["aggregation"] = agg
    if text := aggregation_markdown(agg, roles):
        rep.markdown["Answer aggregation"] = with_provenance(text, others)
    if rerun is not None:
        tables, markdown = rerun_sections(df, rerun, roles, confidence)
        rep.tables.update(tables)
        rep.markdown.update(markdown)
    if rerun is not None and rerun_variants is not None:
        _add_rerun_variants(rep, rerun, rerun_variants, roles, confidence)
    _add_controller(rep, raw, controller, rerun, roles)
    beside = rerun_variants[1] if rerun is not None and rerun_variants is not None else None
    if text := sources_markdown(raw, None if rerun is None else rerun.results, beside):
        rep.markdown["Sources"] = text
    _add_verdict_tables(rep, df, roles, confidence)
    return rep


def _add_rerun_variants(
    rep: Report,
    rerun: Rerun,
    rerun_variants: tuple[str, pd.DataFrame, dict[str, Any] | None],
    roles: dict[str, str],
    confidence: float,
) -> None:
    """The variants run under the rerun's protocol beside the rerun's base cells of their method and REBASE."""
    name, rows, rep.rerun_plan = rerun_variants
    table = protocol_table(rerun.results, rows, confidence)
    rep.tables["rerun_variants"] = table
    if text := protocol_markdown(table, roles, name, rerun.name):
        read = rerun.results[
            (rerun.results["variant"] == "base") & rerun.results["method"].isin({*rows["method"], "rebase"})
        ]
        read = read[pd.MultiIndex.from_frame(read[CELL]).isin(pd.MultiIndex.from_frame(rows[CELL]))]
        rep.markdown["Variants under the rerun's protocol"] = with_provenance(
            text, pd.concat([rows, read], ignore_index=True)
        )


def main_and_harder(df: pd.DataFrame) -> tuple[str, list[str]]:
    """The dataset of the full grid (most base cells) and the others, hardest last (by mean accuracy)."""
    base = df[df["variant"] == "base"]
    main = str(base["dataset"].value_counts().idxmax())
    harder = [d for d in base.groupby("dataset")["correct"].mean().sort_values(ascending=False).index if d != main]
    return main, harder


def _add_verdict_tables(rep: Report, df: pd.DataFrame, roles: dict[str, str], confidence: float) -> None:
    """The tables the page's first answer and its claims read (answer.py, claims.py)."""
    if df[df["variant"] == "base"].empty:
        return
    main, harder = main_and_harder(df)
    if "rule_ordering" not in rep.tables:  # no rerun: the original recording's two rules alone
        original = df[(df["dataset"] == main) & (df["variant"] == "base")]
        rep.tables["rule_ordering"] = ordering_table(original, pd.DataFrame(), confidence)
        if text := ordering_markdown(rep.tables["rule_ordering"], roles):
            rep.markdown["Which rule orders the methods"] = with_provenance(text, original)
    again = rep.tables.get("rerun_rows")
    answer = answer_table(df, again, rep.tables["paired_differences"], main, confidence)
    rep.tables["answer"] = answer
    if text := answer_markdown(answer, roles):
        compared = ["rebase", *uncertainty_methods()]
        read = df[(df["dataset"] == main) & (df["variant"] == "base") & df["method"].isin(compared)]
        if again is not None and len(again):  # the rerun's rows of the same cells
            again = again[again["cell_key"].isin(set(read["cell_key"]))]
            read = pd.concat([read[read["cell_key"].isin(set(again["cell_key"]))], again], ignore_index=True)
        rep.markdown["Does UATS beat REBASE"] = with_provenance(text, read)
    # the claims read the original rows and, where there is one, every finished row of the rerun (its rule ordering)
    claimed = df if again is None else pd.concat([df, rep.tables["rerun_rows"]], ignore_index=True)
    rep.markdown["Claims"] = with_provenance(claims_markdown(rep.tables, main, harder, roles, confidence), claimed)


def _add_controller(
    rep: Report, raw: pd.DataFrame, controller: pd.DataFrame | None, rerun: Rerun | None, roles: dict[str, str]
) -> None:
    """The controller table over every A-UATS cell with recorded controller steps: the ledgers' and a rerun's (whose
    cells ran the shipped controllers the first recording kept no steps for)."""
    parts = [(raw, controller)] + ([(rerun.results, rerun.controller)] if rerun is not None else [])
    parts = [(rows, steps) for rows, steps in parts if steps is not None and len(steps)]
    if not parts:
        return
    steps = pd.concat([s for _, s in parts], ignore_index=True)
    rows = pd.concat([r[r["cell_key"].isin(set(s["cell_key"]))] for r, s in parts], ignore_index=True)
    response = controller_response(rows, steps)
    rep.tables["controller"] = response
    if text := controller_markdown(response, roles):
        rep.markdown["A-UATS's controller"] = with_provenance(text, rows)


def _add_comparisons(rep: Report, df: pd.DataFrame, roles: dict[str, str], confidence: float) -> None:
    """The comparisons the page states in words (compare.py): methods paired over N, accuracy across N, and the
    order of the methods on every dataset that ran two or more of them."""
    base = df[df["variant"] == "base"]
    contrast = contrast_table(df, confidence)
    rep.tables["contrasts"] = contrast
    for dataset, text in contrast_markdown(contrast, roles).items():
        rep.markdown[f"Methods paired over N: {dataset}"] = with_provenance(text, base[base["dataset"] == dataset])
    growth = growth_table(df, confidence)
    rep.tables["growth"] = growth
    for dataset, text in growth_markdown(growth, roles).items():
        rep.markdown[f"Accuracy across N: {dataset}"] = with_provenance(text, base[base["dataset"] == dataset])
    several = [d for d, g in base.groupby("dataset", sort=False) if g["method"].nunique() > 1]
    if len(several) > 1:
        cur = rep.tables["curves"]
        datasets = [d for d in difficulty_order(cur[cur["variant"] == "base"]) if d in several]
        places = order_table(df, datasets)
        rep.tables["order"] = places
        if text := order_markdown(places, datasets, roles):
            rows = base[
                base["dataset"].isin(datasets)
                & base["method"].isin(set(places["method"]))
                & base["budget"].isin({int(b) for b in places["budgets"].iloc[0].split(",")})
            ]
            rep.markdown["Order on every dataset"] = with_provenance(text, rows)


def _add_notes(rep: Report, raw: pd.DataFrame, df: pd.DataFrame) -> None:
    dropped = len(raw) - len(df)
    rep.notes.append(
        f"{len(raw)} finished cells; {len(df)} used"
        + (
            f" ({dropped} dropped: their problem is not finished for every method × budget × seed of its group)"
            if dropped
            else ""
        )
    )
    if bool(raw["batched"].any()):
        rep.notes.append(
            f"{int(raw['batched'].sum())} cells ran under cross-problem batching (valid samples, but "
            "not reproducible alone: their RNG draws were shared with co-scheduled searches)"
        )
    rep.notes.append(
        "intervals: 95% Student-t over seeds of the per-seed accuracy over problems, shown from "
        f"{MIN_REPLICATES} seeds up (fewer give an interval wider than it is informative: "
        "the cell then says how many seeds it has)"
    )


def _of_key(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """The rows of a per-(dataset, variant) table, from its 'dataset|variant' key."""
    dataset, variant = key.split("|", 1)
    return df[(df["dataset"] == dataset) & (df["variant"] == variant)]


def _add_tables(
    rep: Report, df: pd.DataFrame, cur: pd.DataFrame, roles: dict[str, str], confidence: float, raw: pd.DataFrame
) -> None:
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
    keyed = [
        ("Table 4 layout", table4_markdown(mob[mob["variant"] == "base"], roles)),
        (
            "Table 4 layout, best final score",
            table4_markdown(bob[bob["variant"] == "base"], roles, "accuracy with the best final score as the answer"),
        ),
        ("Accuracy by budget (%)", per_budget_markdown(base, roles, "acc")),
        ("Pass@N by budget (%, oracle)", per_budget_markdown(base, roles, "pass_at_n")),
        (
            "Mean compute spent per search (PRM-pass units, ± 95% t over seeds)",
            per_budget_markdown(base, roles, "cost"),
        ),
        ("UATS against REBASE", against_rebase_markdown(base, roles)),
        ("Paired accuracy differences", paired_markdown(pdiff, roles)),
    ]
    for title, texts in keyed:
        for key, text in texts.items():
            rep.markdown[f"{title}: {key}"] = with_provenance(text, _of_key(df, key))
    rebase_base = (df["method"] == "rebase") & (df["variant"] == "base")
    uats = df["method"].isin(uncertainty_methods())
    spend = spend_against_rebase(df, SearchConfig().max_iterations)
    rep.tables["spend"] = spend
    if text := spend_markdown(spend, roles):
        rep.markdown["Compute spent against REBASE"] = with_provenance(text, df[uats | rebase_base])
    vdiff = variant_differences(df, confidence)
    rep.tables["variant_differences"] = vdiff
    if text := variant_markdown(vdiff, roles):
        rep.markdown["Variants, paired"] = with_provenance(text, variant_rows_read(df))
    abl_df = same_problems_across_variants(df)
    abl = (
        ablation_table(
            mean_over_budgets(abl_df, "correct", confidence), roles, base_on_variant_cells(abl_df, confidence)
        )
        if len(abl_df)
        else ""
    )
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


def variant_rows_read(df: pd.DataFrame) -> pd.DataFrame:
    """The rows the variants table reads: every UATS variant's, and the base rows it is paired with (its method's,
    H-UATS's for an A-UATS variant, and REBASE's) on the cells the variants ran."""
    read = df["method"].isin(uncertainty_methods()) & (df["variant"] != "base")
    cells = pd.MultiIndex.from_frame(df[CELL])
    for method, g in df[read].groupby("method", sort=False):
        ran = pd.MultiIndex.from_frame(g[CELL].drop_duplicates())
        refs = [method, *(("h-uats",) if method == "a-uats" else ()), "rebase"]
        read |= (df["variant"] == "base") & df["method"].isin(refs) & cells.isin(ran)
    return df[read]


def _add_figures(rep: Report, df: pd.DataFrame, cur: pd.DataFrame, roles: dict[str, str], confidence: float) -> None:
    for (dataset, variant), g in cur.groupby(["dataset", "variant"], sort=False):
        suffix = "" if (dataset, variant) == tuple(cur[["dataset", "variant"]].iloc[0]) else f" [{dataset} {variant}]"
        # A file-name tag: letters, digits, '.', '-' and '_' only (a variant holds '=', ',', ':' and '/').
        tag = "" if not suffix else re.sub(r"[^A-Za-z0-9._-]+", "_", f"_{dataset}_{variant}".replace("=", ""))
        n_desc = f"{span(g['n_problems'])} problems × {span(g['n_seeds'])} seeds"
        rep.figures["accuracy_vs_n" + tag] = fig_curves(
            g,
            "budget",
            "acc",
            f"Accuracy vs N<br><sup>{dataset}, {variant} ({n_desc}); dotted: Pass@N (oracle)</sup>",
            roles,
            dashed_extra="pass_at_n",
        )
        rep.figures["accuracy_vs_cost" + tag] = fig_curves(
            g,
            "cost",
            "acc",
            f"Accuracy vs compute actually spent<br><sup>{dataset}, {variant} ({n_desc}); "
            "compute = generated steps × c + PRM passes</sup>",
            roles,
        )
        rep.figures["pass_at_n" + tag] = fig_curves(
            g,
            "budget",
            "pass_at_n",
            f"Pass@N<br><sup>oracle: any final candidate correct (an upper bound where the "
            f"table gives a range); {dataset}, {variant}</sup>",
            roles,
        )
    abl_df = same_problems_across_variants(df)
    abl_fig = fig_ablation(curves(abl_df, confidence), roles) if len(abl_df) else None
    if abl_fig is not None:
        rep.figures["ablations"] = abl_fig


def _add_prm_analysis(
    rep: Report, steps: pd.DataFrame, roles: dict[str, str], tau: float, df: pd.DataFrame, figures: bool = True
) -> None:
    summ = prm_summary(steps, tau)
    rep.tables["prm_steps"] = steps
    rep.tables["prm_summary"] = summ
    if len(summ):
        if figures:
            rep.figures["prm_analysis"] = fig_prm(steps, summ, roles, tau)
        key = "cell_key" if "cell_key" in steps else "run_id"
        rep.markdown["Figure 2 analysis: PRM on each pair's steps"] = with_provenance(
            prm_markdown(summ, roles, tau), df[df[key].isin(set(steps[key]))]
        )
    sigma = sigma_beside_rbar(steps)
    rep.tables["sigma_beside_rbar"] = sigma
    if text := sigma_markdown(sigma, roles):
        scored = steps[steps["score_kind"] == MC_SCORED]
        rep.markdown["σ² beside R̄"] = with_provenance(text, df[df[key].isin(set(scored[key]))])
