"""The Search tab's components: the run form (problem, method, knobs, models) on the left; on the right
the run bar (Run, Cancel, Pause, Step, Resume and the run's status, sticky above the tree: runbar.py), the
live tree, step-through controls, view filters, cost and knob charts, the node inspector and the run's
export. Its events are wired by search_events and inspector (search.build_search_tab wires them); these modules
import the tab's components from here, which imports none of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from uats_core.config import PRM_KINDS

from ..choices import ARITH, EMBEDDED, ServerChoices
from ..views.bigtree import FOCUS_CHOICES
from ..views.figure1 import PER_PAGE
from ..views.frontier import SORT_KEYS
from ..views.scripts import page_script
from .common import LATEX, AppContext, address_prefix, plot_html
from .runbar import build_run_bar
from .settings_form import CONFIG_FIELDS, build_settings, settings_sections

Component = gr.components.Component

MODEL_FIELDS = ("policy", "prm", "prm_kind", "policy_opts", "prm_opts")
PROBLEM_FIELDS = ("dataset", "problem", "free_question", "free_answer")
# The view filters by ViewOptions name (see common.view_of), in the order the tree's events list them.
FILTER_FIELDS = (
    "score_min",
    "score_max",
    "high_variance_only",
    "hide_pruned",
    "depth_max",
    "search",
    "glyphs",
    "show_decisions",
    "collapse_pruned",
    "focus",
)


@dataclass
class SearchTab:
    """The tab's components. `form` holds every field a run is started from, by name (problem, models,
    start_paused, config); `filters` the tree's view filters by name. Handlers take both as keywords."""

    form: dict[str, Component]
    filters: dict[str, Component]
    question_md: gr.Markdown
    run_btn: gr.Button
    cancel_btn: gr.Button
    pause_btn: gr.Button
    step_btn: gr.Button
    resume_btn: gr.Button
    open_id: gr.Textbox
    open_btn: gr.Button
    status_md: gr.Markdown
    run_hint: gr.Markdown
    tree: gr.HTML
    follow: gr.Checkbox
    prev_btn: gr.Button
    play_btn: gr.Button
    next_btn: gr.Button
    t_slider: gr.Slider
    cost_plot: gr.HTML
    shadow_box: gr.Accordion
    shadow_k: gr.Number
    shadow_btn: gr.Button
    shadow_cancel: gr.Button
    knobs_plot: gr.HTML
    node_box: gr.Textbox
    go_node: gr.Button
    collapse_btn: gr.Button
    expand_all: gr.Button
    figure1: gr.HTML
    fig1_sort: gr.Dropdown
    fig1_per_page: gr.Dropdown
    fig1_siblings: gr.Checkbox
    fig1_prev: gr.Button
    fig1_next: gr.Button
    fig1_export: gr.Button
    fig1_files: gr.File
    node_md: gr.Markdown
    star_box: gr.Checkbox
    note_box: gr.Textbox
    save_note: gr.Button
    run_export_name: gr.Textbox
    run_export_btn: gr.DownloadButton
    play_timer: gr.Timer
    export_key: gr.Textbox
    export_box: gr.Accordion
    export_open: gr.State

    def run_inputs(self, with_paused: bool = True) -> dict[str, Component]:
        """The form as keyword inputs; without `start_paused` for runs that never start paused."""
        return {k: v for k, v in self.form.items() if with_paused or k != "start_paused"}


def _models(f: dict[str, Component], choices: ServerChoices) -> None:
    """The models this server offers (ui/choices.py: the launcher's --models-dir and --allow-hub-cache)."""
    with gr.Accordion("Models", open=False):
        f["policy"] = gr.Dropdown(list(choices.policies), value=EMBEDDED, label="Policy", elem_id="policy")
        f["prm"] = gr.Dropdown(list(choices.prms), value=EMBEDDED, label="PRM", elem_id="prm")
        f["prm_kind"] = gr.Dropdown(["detect", *PRM_KINDS], value="detect", label="PRM kind", elem_id="prm-kind")
        f["policy_opts"] = gr.Textbox(
            "",
            label="Policy options (KEY=VALUE per line: temperature, top_p, seed, dtype, device, ...)",
            lines=2,
            elem_id="policy-opts",
        )
        f["prm_opts"] = gr.Textbox(
            "", label="PRM options (KEY=VALUE per line: dtype, device, ...)", lines=2, elem_id="prm-opts"
        )


def _form_column(c: dict[str, Any], choices: ServerChoices) -> None:
    """The left column; fills `c` with its components (the form's fields under c["form"])."""
    f: dict[str, Component] = {}
    f["dataset"] = gr.Dropdown(list(choices.datasets), value=ARITH, label="Problems", elem_id="dataset")
    f["problem"] = gr.Dropdown([], label="Problem", allow_custom_value=True, elem_id="problem")
    with gr.Accordion("…or type a problem", open=False, elem_id="free-problem"):
        # a typed question replaces the picked one while it is not empty
        f["free_question"] = gr.Textbox(
            "", label="Question (used instead of the list while not empty)", lines=2, elem_id="free-question"
        )
        f["free_answer"] = gr.Textbox("", label="Gold answer (optional: grades the run)", elem_id="free-answer")
    c["question_md"] = gr.Markdown("", elem_id="question", latex_delimiters=LATEX)
    build_settings(f, "run")  # method, budget (the next run's: an open run's own N is in its status line), seed
    for section in settings_sections():
        build_settings(f, section)
    _models(f, choices)
    with gr.Row():
        c["open_id"] = gr.Textbox(
            label="Open run id", placeholder="paste a run id (or a prefix)", elem_id="open-id", scale=3
        )
        c["open_btn"] = gr.Button("Open", elem_id="open-btn", scale=1)
    c["form"] = {k: f[k] for k in (*PROBLEM_FIELDS, *MODEL_FIELDS, *CONFIG_FIELDS)}  # + start_paused (run bar)


def _filters() -> dict[str, Component]:
    f: dict[str, Component] = {}
    with gr.Accordion("View: filters, search, collapse", open=False):
        with gr.Row():
            f["score_min"] = gr.Slider(0, 1, value=0, step=0.01, label="min R̄", elem_id="f-min")
            f["score_max"] = gr.Slider(0, 1, value=1, step=0.01, label="max R̄", elem_id="f-max")
            f["depth_max"] = gr.Slider(0, 60, value=0, step=1, label="max depth (0 = all)", elem_id="f-depth")
        with gr.Row():
            f["search"] = gr.Textbox(
                label="Search steps", placeholder="text in a step, or a node id", elem_id="f-search"
            )
            f["high_variance_only"] = gr.Checkbox(False, label="high variance only (σ² > τ)", elem_id="f-hv")
            f["hide_pruned"] = gr.Checkbox(False, label="hide pruned", elem_id="f-pruned")
            f["glyphs"] = gr.Checkbox(True, label="boxplot glyphs", elem_id="f-glyph")
            f["show_decisions"] = gr.Checkbox(True, label="highlight decisions", elem_id="f-dec")
        with gr.Row():  # big trees: draw less, on purpose
            f["collapse_pruned"] = gr.Checkbox(False, label="collapse pruned branches", elem_id="f-dead")
            f["focus"] = gr.Dropdown(list(FOCUS_CHOICES), value="whole tree", label="focus", elem_id="f-focus")
    return {k: f[k] for k in FILTER_FIELDS}


def _tree_column(c: dict[str, Any]) -> None:
    """Beside the inspector, under the run bar: the tree, the node id box, shadow scoring, filters, cost and knob
    charts."""
    c["tree"] = plot_html("tree", "The tree appears here as the search writes it.", 440)
    with gr.Row(elem_id="node-row"):  # a node by its id, also while the inspector is closed
        # a text box: a Number showed 0 before any node was chosen (Gradio draws its None as 0)
        c["node_box"] = gr.Textbox(
            "", label="node id", placeholder="id, Enter", max_lines=1, elem_id="node-id", scale=1, min_width=90
        )
        c["go_node"] = gr.Button("Inspect", elem_id="inspect-btn", scale=1, interactive=False, min_width=80)
        c["collapse_btn"] = gr.Button("Collapse / expand subtree", elem_id="collapse-btn", scale=2, interactive=False)
        c["expand_all"] = gr.Button("Expand all", elem_id="expand-all", scale=1, interactive=False, min_width=90)
    with (
        gr.Accordion(
            "Shadow scoring: R̄ and σ² for every node from MC passes this run never made",
            open=False,
            elem_id="shadow-box",
        ) as c["shadow_box"],
        gr.Row(),
    ):
        c["shadow_k"] = gr.Number(7, label="MC passes K", precision=0, minimum=2, elem_id="shadow-k", scale=1)
        c["shadow_btn"] = gr.Button("Shadow-score this run (PRM: the form's)", elem_id="shadow-btn", scale=3)
        c["shadow_cancel"] = gr.Button("Cancel", elem_id="shadow-cancel", size="sm", scale=1)
    c["filters"] = _filters()
    c["cost_plot"] = plot_html("cost-plot", "Cost per iteration appears here.", 60)
    c["knobs_plot"] = plot_html(
        "knobs-plot",
        "For H-UATS and A-UATS runs: the six knobs used at each step against "
        "depth, coloured by the step's max σ (A-UATS: the controller's choices).",
        40,
    )


# The inspector beside the tree (ui/js/inspector.js opens it: #search-row.uats-inspecting), sticky under the run bar
# with its own scroll, so a click's answer is on the first screen with the tree; the run form folds away while it
# is open (✕ brings it back), leaving the tree and the inspector the width of the page. Figure 1 scrolls in its own
# box, its header stuck on top (ui/js/plot.js stickyHead). The tree column's plots are clipped at its edge while
# their resize waits for a click's Figure 1 (ui/js/inspector.js). The node page (ui/tabs/node_page.py) lays out the
# same two.
INSPECTOR_WIDTH = "clamp(520px, 62%, 1000px)"
FIGURE1_MAX_HEIGHT = "46vh"
INSPECTOR_CSS = f"""
#inspector-panel {{ display: none !important; }}
#search-row.uats-inspecting #inspector-panel {{
  display: flex !important; flex-direction: column !important; flex-wrap: nowrap !important; gap: 6px;
  position: sticky; align-self: flex-start; overflow-y: auto;
  top: calc(var(--uats-notice-h, 0px) + var(--uats-bar-h, 0px) + 6px);
  max-height: calc(100vh - var(--uats-notice-h, 0px) - var(--uats-bar-h, 0px) - 12px);
  flex: 0 0 {INSPECTOR_WIDTH} !important; min-width: 0 !important; padding: 4px 6px;
  border: 1px solid var(--border-color-primary, #e5e5e5); border-radius: 8px; }}
#search-row.uats-inspecting #inspector-panel > * {{ flex-shrink: 0 !important; }}
#search-row.uats-inspecting #tree-col {{ flex: 1 1 0 !important; min-width: 0 !important; overflow-x: clip; }}
#search-row.uats-inspecting #form-col {{ display: none !important; }}
#inspector-panel #figure1 {{ max-height: {FIGURE1_MAX_HEIGHT}; overflow: auto !important; }}
.uats-inspector-head {{ display: flex; align-items: center; gap: 4px; font-size: 14px; padding: 2px 4px; }}
.uats-inspector-head .uats-share {{ margin-left: 12px; font-size: 13px; }}
.uats-inspector-head .uats-close {{ margin-left: auto; padding: 2px 10px; border-radius: 6px; cursor: pointer;
  border: 1px solid var(--border-color-primary, #ccc); background: var(--background-fill-secondary, #f6f6f6); }}
#fig1-intro {{ font-size: 12px; color: var(--body-text-color-subdued, #666); }}
"""
PER_PAGE_CHOICES = (16, 32, PER_PAGE, 128)
EMPTY_WHY = "<p class='uats-why-empty'>Select a node: its decision at its step is explained here.</p>"


def build_why_panel() -> gr.HTML:
    """The Why accordion's panel (ui/tabs/step_panel.py fills it); in the inspector, under Figure 1."""
    with gr.Accordion("Why: the decision and where the step's spend went", open=True, elem_id="why-box"):
        return gr.HTML(EMPTY_WHY, elem_id="why-panel")


def _figure1_controls(c: dict[str, Any]) -> None:
    """Figure 1's order, pages and PNG/SVG export, under the node's text (the figure itself heads the inspector)."""
    with gr.Row(elem_id="fig1-controls"):
        c["fig1_sort"] = gr.Dropdown(
            list(SORT_KEYS),
            value=next(iter(SORT_KEYS)),
            label="Figure 1 rows",
            elem_id="fig1-sort",
            scale=2,
            min_width=150,
        )
        c["fig1_per_page"] = gr.Dropdown(
            [str(v) for v in PER_PAGE_CHOICES],
            value=str(PER_PAGE),
            label="rows per page",
            elem_id="fig1-per-page",
            scale=1,
            min_width=90,
        )
        c["fig1_siblings"] = gr.Checkbox(
            False, label="siblings of the inspected node only", elem_id="fig1-siblings", scale=2, min_width=150
        )
    with gr.Row(elem_id="fig1-pages"):
        c["fig1_prev"] = gr.Button("◀ page", elem_id="fig1-prev", size="sm", scale=1, interactive=False)
        c["fig1_next"] = gr.Button("page ▶", elem_id="fig1-next", size="sm", scale=1, interactive=False)
        c["fig1_export"] = gr.Button("Export PNG + SVG", elem_id="fig1-export", size="sm", scale=1, interactive=False)
    c["fig1_files"] = gr.File(
        label="Figure 1 images", file_count="multiple", visible=False, elem_id="fig1-files", interactive=False
    )
    gr.Markdown(
        "Figure 1: every candidate of the inspected node's step, one row each: its samples (MC-dropout "
        "passes, ensemble members or posterior draws: the run's estimator names them), their spread around its "
        "own R̄ on one scale for the whole step, the σ² the ID/OOD test read against τ, and its numbers and "
        "decision. The image export is drawn from the figure as shown.",
        elem_id="fig1-intro",
    )


def _inspector_panel(c: dict[str, Any]) -> gr.HTML:
    """The inspector beside the tree (INSPECTOR_CSS; ui/js/inspector.js shows it while a node is inspected, sticky
    under the run bar): Figure 1 scrolled to the node's row, the Why panel, then the node's text, its star and note,
    and Figure 1's controls. Returns the Why panel."""
    gr.HTML(
        "",
        elem_id="inspector-head",
        js_on_load=page_script("inspector.js"),
        padding=False,
        html_template='<div class="uats-inspector-head"><b>Node inspector</b><span class="uats-inspected">'
        f'</span><a class="uats-share" data-prefix="{address_prefix()}" target="_blank" rel="noopener" '
        'style="display:none" title="This node on a page '
        'of its own: the link to share">link to this node ↗</a><button type="button" class="uats-close" '
        'title="Close the inspector (the run form comes back)">✕ close</button></div>',
    )
    c["figure1"] = plot_html("figure1", "Click a node in the tree: every candidate of its step appears here.", 120)
    why = build_why_panel()
    c["node_md"] = gr.Markdown("", elem_id="node-details", max_height=560, latex_delimiters=LATEX)
    with gr.Row(equal_height=False):
        c["star_box"] = gr.Checkbox(False, label="★ star this node", elem_id="star", scale=1, min_width=120)
        c["note_box"] = gr.Textbox(label="note", lines=1, elem_id="note", scale=3)
        c["save_note"] = gr.Button("Save star and note", elem_id="save-note", size="sm", scale=1, min_width=100)
    _figure1_controls(c)
    return why


def _export_box(c: dict[str, Any]) -> None:
    with gr.Accordion("Export this run", open=False) as c["export_box"], gr.Row():
        c["run_export_name"] = gr.Textbox(label="export name (optional)", elem_id="run-export-name")
        c["run_export_btn"] = gr.DownloadButton("Download run export (zip)", value=None, elem_id="run-export")
    c["play_timer"] = gr.Timer(1.0, active=False)
    c["export_key"] = gr.Textbox("", visible=False)
    # the zip (with its Chromium-rendered PNG/SVG) is built only while this is open: never behind the user's clicks
    c["export_open"] = gr.State(False)


def lay_out_search_tab(ctx: AppContext) -> tuple[SearchTab, gr.HTML]:
    """The tab's components, unwired; call inside its `gr.Tab` (search.build_search_tab wires them)."""
    c: dict[str, Any] = {}
    with gr.Row(equal_height=False, elem_id="search-row"):
        with gr.Column(scale=1, min_width=300, elem_id="form-col"):
            _form_column(c, ctx.choices)
        with gr.Column(scale=3, elem_id="main-col"):
            build_run_bar(c)  # with the replay controls: the tree stays in view while a run is stepped or replayed
            with gr.Row(equal_height=False, elem_id="tree-row"):
                with gr.Column(scale=3, min_width=280, elem_id="tree-col"):
                    _tree_column(c)
                with gr.Column(scale=2, min_width=280, elem_id="inspector-panel"):
                    why = _inspector_panel(c)
            _export_box(c)
    c["form"]["start_paused"] = c.pop("start_paused")
    return SearchTab(**c), why
