"""The Reports tab: an evaluation report and the A-UATS controller's training curves, read from a source
picked from a server-side list (ui.views.report_sources: the committed results ledger by default, run logs); the
browser sends a key from that list, never a path."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import StorageError
from uats_core.config import ConfigError

from ..views.charts import training_curve_figure
from ..views.report_sources import ReportSources
from ..views.report_view import REPORT_FIGURES, curve_choices, curve_rows, report_view
from .common import AppContext, fig_json, notice, plot_html

log = logging.getLogger(__name__)


@dataclass
class ReportsTab:
    source: gr.Dropdown
    curve_pick: gr.Dropdown
    on_curve_list: Callable[[str | None, str | None], Any]


def build_reports_tab(ctx: AppContext, sources: ReportSources) -> ReportsTab:
    """The tab's components and handlers; call inside the `gr.Tab`. Returns what the page-level events need."""
    gr.Markdown(
        "Accuracy against N and against compute actually spent, Pass@N, the paper's Table 4 "
        "layout and its Figure 2 analysis, built from the committed results ledger (the arithmetic "
        "grid in `results/`, picked by default) or from an evaluation run log "
        "(`uats eval ... --db PATH`, copied into the folder given as `app.py --reports-dir`; "
        "`uats report` writes the same as offline HTML and PNG). Below: the A-UATS "
        "controller's training curves."
    )
    with gr.Row():
        source = gr.Dropdown(
            sources.choices(),
            value=sources.default_key(),
            label="results ledger or evaluation run log (opened read-only)",
            elem_id="rep-db",
            scale=4,
        )
        rep_refresh = gr.Button("Refresh list", elem_id="rep-refresh", scale=1)
        rep_common = gr.Checkbox(True, label="only problems every method finished", elem_id="rep-common")
        rep_build = gr.Button("Build report", variant="primary", elem_id="rep-build")
    with gr.Row(equal_height=False):
        rep_acc_n = plot_html("rep-acc-n", "Accuracy against N appears here.", 100)
        rep_acc_cost = plot_html("rep-acc-cost", "Accuracy against compute spent appears here.", 100)
    rep_prm = plot_html("rep-prm", "The PRM analysis (Figure 2) appears here.", 100)
    rep_md = gr.Markdown("", elem_id="rep-md")
    gr.Markdown("### A-UATS controller training (REINFORCE)")
    with gr.Row():
        curve_pick = gr.Dropdown([], label="training curve", elem_id="curve-pick", scale=4)
        curve_refresh = gr.Button("Refresh list", elem_id="curve-refresh")
    curve_plot = plot_html("curve-plot", "Pick a training curve.", 100)

    plots = [rep_acc_n, rep_acc_cost, rep_prm]  # in the order of REPORT_FIGURES

    def on_report(key, common, progress=gr.Progress()):  # noqa: B008  Gradio finds its progress bar this way
        try:
            md, figs = report_view(sources, key, bool(common), progress=lambda f, what: progress(f, desc=what))
        except (ConfigError, StorageError, ValueError, OSError) as exc:
            return {rep_md: "", **{plot: "" for plot in plots}, ctx.notice: notice(f"report: {exc}")}
        return {
            rep_md: md,
            **{plot: fig_json(figs.get(n)) for n, plot in zip(REPORT_FIGURES, plots)},
            ctx.notice: notice(""),
        }

    rep_build.click(on_report, [source, rep_common], [rep_md, rep_acc_n, rep_acc_cost, rep_prm, ctx.notice])

    def on_sources(current):
        choices = sources.choices()
        keys = [k for _, k in choices]
        return gr.update(choices=choices, value=current if current in keys else sources.default_key())

    rep_refresh.click(on_sources, [source], [source])

    def on_curve_list(key, current):
        names = curve_choices(sources, key)
        value = current if current in names else (names[0] if names else None)
        return gr.update(choices=names, value=value)

    def on_curve(key, name):
        if not name:
            return {curve_plot: "", ctx.notice: notice("")}
        try:
            fig = training_curve_figure(curve_rows(sources, key, name))
        except (ConfigError, StorageError, ValueError, OSError) as exc:
            return {curve_plot: "", ctx.notice: notice(f"training curve: {exc}")}
        return {
            curve_plot: fig_json(fig),
            ctx.notice: notice("" if fig else f"training curve {name!r} has no rounds yet"),
        }

    curve_refresh.click(on_curve_list, [source, curve_pick], [curve_pick])
    source.change(on_curve_list, [source, curve_pick], [curve_pick])
    curve_pick.change(on_curve, [source, curve_pick], [curve_plot, ctx.notice])
    return ReportsTab(source=source, curve_pick=curve_pick, on_curve_list=on_curve_list)
