"""The Compare tab's components: the two run pickers and the pair buttons, the case finder, the pair's summary, table
and the list of decisions uncertainty changed, both trees stepped in lockstep, shadow scoring, the clicked node's
panels and the export. Its events are ui/tabs/compare.py's, which imports the components from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from uats_core.config import ESTIMATORS, SearchConfig

from ..views.comparison import COMPARE_COLUMNS
from ..views.uncertainty import CHANGED_COLUMNS, CHANGED_WIDTHS
from .case_finder import case_finder_layout
from .common import plot_html
from .exports import export_controls

SECOND_ESTIMATOR = next(e for e in ESTIMATORS if e != SearchConfig.estimator)  # the pair's default: not the form's


@dataclass
class CompareParts:
    """The Compare tab's components (ui/tabs/compare.py wires their events)."""

    cmp_a: gr.Dropdown
    cmp_b: gr.Dropdown
    cmp_load: gr.Button
    cmp_pair: gr.Button
    cmp_est_b: gr.Dropdown
    cmp_est_pair: gr.Button
    cmp_summary: gr.Markdown
    cmp_ood: gr.Button
    cmp_table: gr.Dataframe
    cmp_changed: gr.Dataframe
    cmp_prev: gr.Button
    cmp_next: gr.Button
    cmp_slider: gr.Slider
    cmp_tree_a: gr.HTML
    cmp_tree_b: gr.HTML
    cmp_export_name: gr.Textbox
    cmp_export_build: gr.Button
    cmp_export_btn: gr.DownloadButton
    cmp_shadow_k: gr.Number
    cmp_shadow: gr.Button
    cmp_shadow_cancel: gr.Button
    cmp_shadow_key: gr.Textbox
    cmp_why: gr.HTML
    cmp_inspector: gr.HTML
    finder: Any  # the case finder's parts (ui/tabs/case_finder.py)


def lay_out_compare_tab() -> CompareParts:
    """The tab's components, top to bottom; call inside its `gr.Tab`."""
    gr.Markdown(
        "Two runs side by side, stepped in lockstep, on one colour scale; shared step prefixes "
        "are haloed and laid out first. Default: H-UATS vs REBASE on the same problem, seed and budget."
    )
    c: dict[str, Any] = {}
    with gr.Row():
        c["cmp_a"] = gr.Dropdown([], label="Run A", elem_id="cmp-a", allow_custom_value=True, scale=3)
        c["cmp_b"] = gr.Dropdown([], label="Run B", elem_id="cmp-b", allow_custom_value=True, scale=3)
        c["cmp_load"] = gr.Button("Compare", variant="primary", elem_id="cmp-load", scale=1)
        # the form's settings, as the line above says (a longer label wrapped onto two lines at 1280)
        c["cmp_pair"] = gr.Button("Run H-UATS vs REBASE", elem_id="cmp-pair", scale=2)
    with gr.Row():  # one problem under two uncertainty estimators (issue 52): the form's, and this one
        c["cmp_est_b"] = gr.Dropdown(
            list(ESTIMATORS), value=SECOND_ESTIMATOR, label="second estimator", elem_id="cmp-est-b", scale=2
        )
        c["cmp_est_pair"] = gr.Button(
            "Run H-UATS under the form's estimator and the second (form settings)", elem_id="cmp-est-pair", scale=4
        )
    c["finder"] = case_finder_layout()
    c["cmp_summary"] = gr.Markdown("", elem_id="cmp-summary")
    c["cmp_ood"] = gr.Button(
        "Run the OOD pair: policy B with this pair's PRM, problem, seed and budget",
        elem_id="cmp-ood",
        size="sm",
        visible=False,
    )
    c["cmp_table"] = gr.Dataframe(headers=COMPARE_COLUMNS, interactive=False, elem_id="cmp-table", wrap=True)
    gr.Markdown(
        "**Decisions uncertainty changed**: the UATS candidates the OOD gate and the δ test sent to "
        "re-evaluation, those whose R̄ rank moved after the extra passes, and those whose children differ "
        "from what R̄ of the first K0 passes alone would have given (same C). Click a row: its node in "
        "both trees, at that iteration.",
        elem_id="cmp-changed-intro",
    )
    c["cmp_changed"] = gr.Dataframe(
        headers=CHANGED_COLUMNS,
        interactive=False,
        elem_id="cmp-changed",
        wrap=True,
        max_height=260,
        column_widths=CHANGED_WIDTHS,
    )
    with gr.Row():
        c["cmp_prev"] = gr.Button("◀ prev", elem_id="cmp-prev", size="sm", scale=1)
        c["cmp_next"] = gr.Button("next ▶", elem_id="cmp-next", size="sm", scale=1)
        c["cmp_slider"] = gr.Slider(
            0, 1, value=0, step=1, label="iteration t (both runs)", elem_id="cmp-slider", scale=6
        )
    with gr.Row(equal_height=False):
        with gr.Column():
            c["cmp_tree_a"] = plot_html("cmp-tree-a", "Run A", 560)
        with gr.Column():
            c["cmp_tree_b"] = plot_html("cmp-tree-b", "Run B", 560)
    with gr.Row():
        c["cmp_shadow_k"] = gr.Number(
            7, label="shadow MC passes K", precision=0, minimum=2, elem_id="cmp-shadow-k", scale=1
        )
        c["cmp_shadow"] = gr.Button(
            "Shadow-score the baseline (MC passes on its candidates, not counted in its cost)",
            elem_id="cmp-shadow",
            scale=3,
        )
        c["cmp_shadow_cancel"] = gr.Button("Cancel shadow scoring", elem_id="cmp-shadow-cancel", size="sm", scale=1)
    c["cmp_shadow_key"] = gr.Textbox("", visible=False)  # changes when a shadow job ends: the export follows
    gr.Markdown(
        "Click a node in either tree: its decision in words (and, for a shadow-scored baseline, what the "
        "uncertainty says about it) and every candidate of its step."
    )
    c["cmp_why"] = gr.HTML("", elem_id="cmp-why")
    c["cmp_inspector"] = plot_html("cmp-inspector", "The clicked node's step: every candidate, one row each.", 60)
    ex = export_controls("comparison", "cmp")
    c["cmp_export_name"], c["cmp_export_build"], c["cmp_export_btn"] = ex.name, ex.build, ex.download
    return CompareParts(**c)
