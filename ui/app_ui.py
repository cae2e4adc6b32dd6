"""UATS Studio's Gradio page: run a search and watch its tree grow, inspect nodes, step through and
compare runs, browse runs, mine qualitative cases, export.

Gradio facts this relies on (reference.md §8): gr.Plot reports no clicks, so trees are drawn by the
plotly.min.js inside the plotly package in gr.HTML components (clicks come back with trigger('select'));
searches live in worker processes and the page polls the database with gr.Timer; gr.DownloadButton
downloads its current value, so export zips are rebuilt when the selection changes."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

import gradio as gr
import plotly

from storage import RunStore, StorageError
from uats_core.config import (DROPOUT_MODES_HELP, PRM_KINDS, ConfigError, SearchConfig, check_model_choice,
                               parse_options)
from uats_core.problems import ProblemError

from . import service as svc
from .cases import QUADRANTS, StepJudge, cases_table, mine_cases
from .export import ExportError, safe_name, write_bundle
from .figures import ViewOptions, cost_figure, inspector_figure, knobs_figure, tree_figure
from .report_sources import ReportSources
from .reports_tab import build_reports_tab
from .safe_text import md_inline, md_text
from .treedata import RunData
from .worker import RunRequest, WorkerPool, request_dict

log = logging.getLogger(__name__)

PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"
PLOTLY_HEAD = f'<script src="/gradio_api/file={PLOTLY_DIR / "plotly.min.js"}"></script>'
TICK_S = 0.7  # poll period: new nodes must be drawn within 2 s of being written
LIVE = ("queued", "running")
DEFAULTS = SearchConfig()

# Draws a figure JSON (the component's value) with Plotly.react: same div, fixed uirevision, so zoom and
# pan survive live updates. The template never contains ${value}, so Gradio never re-renders the div.
PLOT_JS = r"""
const host = element.querySelector('.uats-plot');
const empty = element.querySelector('.uats-empty');
function ringAt(id) {
  if (!host.data) return;
  const last = host.data.length - 1;
  if (last < 0 || host.data[last].name !== 'selected') return;
  for (const tr of host.data) {
    if (!tr.customdata) continue;
    for (let i = 0; i < tr.customdata.length; i++) {
      const c = tr.customdata[i];
      const cid = Array.isArray(c) ? c[0] : c;
      if (cid === id) { Plotly.restyle(host, {x: [[tr.x[i]]], y: [[tr.y[i]]]}, [last]); return; }
    }
  }
}
function draw() {
  const raw = props.value;
  if (!raw) { host.style.display = 'none'; empty.style.display = 'flex'; host.dataset.nodes = '0'; return; }
  if (typeof Plotly === 'undefined') { setTimeout(draw, 50); return; }
  let spec;
  try { spec = JSON.parse(raw); } catch (e) { console.error('uats: bad figure', e); return; }
  host.style.display = 'block'; empty.style.display = 'none';
  const t0 = performance.now();
  Plotly.react(host, spec.data, spec.layout, spec.config || {}).then(() => {
    const m = spec.meta || {};
    host.dataset.drawMs = (performance.now() - t0).toFixed(1);
    host.dataset.nodes = m.n_nodes; host.dataset.shown = m.n_shown; host.dataset.iteration = m.iteration;
    host.dataset.run = m.run_id || ''; host.dataset.status = m.status || '';
    if (m.written_at) host.dataset.latencyMs = (Date.now() - m.written_at * 1000).toFixed(0);
    host.dataset.drawnAt = String(Date.now());
    host.dataset.draws = String(Number(host.dataset.draws || 0) + 1);
    // a short in-page log of draws for ui/bench.py and the browser tests (bounded: pages stay open long)
    const log = (window.__uatsDraws = window.__uatsDraws || []);
    log.push({el: host.dataset.owner || '', iteration: m.iteration, nodes: m.n_nodes, status: m.status || '',
              drawMs: Number(host.dataset.drawMs), latencyMs: m.written_at ? Number(host.dataset.latencyMs) : null,
              at: Date.now()});
    if (log.length > 2000) log.splice(0, log.length - 2000);
  });
  if (!host._uatsBound) {
    host.on('plotly_click', (ev) => {
      const p = ev.points && ev.points[0];
      if (!p || p.customdata == null) return;
      const id = Array.isArray(p.customdata) ? p.customdata[0] : p.customdata;
      if (typeof id !== 'number') return;
      ringAt(id);
      trigger('select', {node_id: id});
    });
    host._uatsBound = true;
  }
}
draw();
watch('value', draw);
"""

CSS = """
#notice { border-left: 4px solid #d95f02; background: #fff4ec; padding: 6px 12px; border-radius: 4px; }
#notice.ok { border-left-color: #1b9e77; background: #eefaf5; }
.uats-empty { height: 120px; align-items: center; justify-content: center; color: #888; font-size: 14px;
              border: 1px dashed #ccc; border-radius: 6px; }
.uats-plot { width: 100%; }
#brand h1 { margin-bottom: 0; }
#brand p { margin-top: 2px; color: #555; }
"""


def _plot_html(elem_id: str, empty_text: str, min_height: int = 140) -> gr.HTML:
    return gr.HTML(value="", elem_id=elem_id, js_on_load=PLOT_JS, head=PLOTLY_HEAD, padding=False,
                   html_template=f'<div class="uats-empty" style="display:flex">{empty_text}</div>'
                                 f'<div class="uats-plot" data-owner="{elem_id}" style="display:none"></div>',
                   min_height=min_height)


def _fig_json(fig: dict[str, Any] | None, **meta: Any) -> str:
    if fig is None:
        return ""
    if meta:
        fig = {**fig, "meta": {**fig.get("meta", {}), **meta}}
    return json.dumps(fig, ensure_ascii=False, separators=(",", ":"))


def _lines(text: str | None) -> list[str]:
    """The non-blank lines of a multi-line option box."""
    return [line for line in str(text or "").splitlines() if line.strip()]


def _notice(msg: str = "", ok: bool = False) -> Any:
    """The message line under the title: problems in orange, confirmations in green, hidden when empty."""
    if not msg:
        return gr.update(value="", visible=False)
    # messages quote what the user typed or a dataset holds: shown literally, never as HTML
    return gr.update(value=md_text(msg), visible=True, elem_classes=["ok"] if ok else ["bad"])


class RunCache:
    """RunData by (run id, version): one load serves every tab following the same run."""

    def __init__(self, store: RunStore, size: int = 12) -> None:
        self.store = store
        self.size = size
        self._items: OrderedDict[tuple[str, Any], RunData] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run_id: str, version: Any = None) -> RunData:
        version = version if version is not None else self.store.run_version(run_id)
        key = (run_id, version)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        data = RunData.load(self.store, run_id)
        with self._lock:
            self._items[key] = data
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return data


def build_demo(store: RunStore, pool: WorkerPool, export_dir: str | Path,
               reports_dir: str | Path | None = None) -> gr.Blocks:
    """The whole page. `store` is the app's reader; workers open their own connection to store.location.
    The Reports tab reads the run log and the SQLite files in `reports_dir`, nothing a browser names."""
    export_dir = Path(export_dir).resolve()
    cache = RunCache(store)
    gr.set_static_paths([str(PLOTLY_DIR)])

    # ---------------------------------------------------------------------------------- helpers
    def view_of(score_min, score_max, high_var, hide_pruned, depth_max, search, glyphs, decisions, collapsed) -> ViewOptions:
        lo, hi = float(score_min or 0.0), float(score_max if score_max is not None else 1.0)
        if lo > hi:
            lo, hi = hi, lo
        dmax = int(depth_max) if depth_max else None
        return ViewOptions(score_min=lo, score_max=hi, high_variance_only=bool(high_var), hide_pruned=bool(hide_pruned),
                           depth_max=dmax, search=search or "", glyphs=bool(glyphs), show_decisions=bool(decisions),
                           collapsed=frozenset(collapsed or ()))

    def written_at(data: RunData, t: int) -> float | None:
        row = data.iterations.get(t)
        return row.get("written_at") if row else data.run.get("updated_at")

    def draw_tree(st: dict[str, Any], filters: list[Any]) -> tuple[str, RunData, Any]:
        version = store.run_version(st["run_id"])
        data = cache.get(st["run_id"], version)
        state = data.state_at(st.get("t"))
        view = view_of(*filters, st.get("collapsed"))
        fig = tree_figure(state, view, selected=st.get("selected"), uirevision=f"tree-{st['run_id']}",
                          title="")
        st["version"] = version
        return _fig_json(fig, written_at=written_at(data, state.iteration), version=list(version)), data, state

    def slider_update(data: RunData, t: int | None) -> Any:
        mx = max(1, data.max_iteration)
        return gr.update(maximum=mx, value=data.max_iteration if t is None else t, interactive=data.max_iteration > 0)

    def export_run_zip(run_id: str | None, name: str | None) -> tuple[Any, str]:
        if not run_id:
            return gr.update(value=None), ""
        data = cache.get(run_id)
        bundle = svc.run_bundle(data, name=safe_name(name) if (name or "").strip() else None,
                                stars=store.list_stars(run_id))
        path = write_bundle(bundle, export_dir)
        return gr.update(value=str(path), label=f"Download {path.name}"), f"export ready: {path.name}"

    # ---------------------------------------------------------------------------------- page
    with gr.Blocks(title="UATS Studio") as demo:
        st = gr.State({"run_id": None, "version": None, "t": None, "selected": None, "collapsed": []})
        cst = gr.State({"a": None, "b": None, "t": None, "versions": None})
        case_state = gr.State({"rows": [], "pools": None})
        run_ids_state = gr.State([])
        gr.Markdown("# UATS Studio\nPRM-guided tree search with Monte-Carlo-dropout uncertainty: watch where the "
                    "process reward model is unsure.", elem_id="brand")
        notice = gr.Markdown("", elem_id="notice", visible=False)
        timer = gr.Timer(TICK_S, active=True)
        with gr.Tabs(selected="search") as tabs:
            # ============================================================== search tab
            with gr.Tab("Search", id="search"):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=1, min_width=300):
                        dataset = gr.Dropdown(list(svc.DATASETS), value=svc.ARITH, label="Problems", elem_id="dataset")
                        dataset_path = gr.Textbox(label="File (.jsonl) or hub name", visible=False, elem_id="dataset-path")
                        problem = gr.Dropdown([], label="Problem", allow_custom_value=True, elem_id="problem")
                        question_md = gr.Markdown("", elem_id="question",
                                                  latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                                                                    {"left": "$", "right": "$", "display": False},
                                                                    {"left": "\\(", "right": "\\)", "display": False},
                                                                    {"left": "\\[", "right": "\\]", "display": True}])
                        method = gr.Dropdown(svc.method_choices(), value="h-uats", label="Method", elem_id="method")
                        with gr.Row():
                            budget = gr.Number(DEFAULTS.budget, label="Budget N", precision=None, elem_id="budget")
                            seed = gr.Number(DEFAULTS.seed, label="Seed", precision=None, elem_id="seed")
                        with gr.Accordion("UATS knobs (paper defaults)", open=False):
                            with gr.Row():
                                k0 = gr.Number(DEFAULTS.k0, label="K0 passes", min_width=80, elem_id="k0")
                                dropout_p = gr.Number(DEFAULTS.dropout_p, label="dropout p", min_width=80, elem_id="dropout-p")
                            dropout_mode = gr.Textbox(DEFAULTS.dropout_mode, label=f"dropout mode ({DROPOUT_MODES_HELP})",
                                                      elem_id="dropout-mode")
                            with gr.Row():
                                alpha = gr.Number(DEFAULTS.alpha, label="α (UCB)", min_width=80, elem_id="alpha")
                                tau = gr.Textbox(str(DEFAULTS.tau), label="τ: a number, or auto[:q] (calibrated quantile)",
                                                 min_width=140, elem_id="tau")
                                delta = gr.Number(DEFAULTS.delta, label="δ", min_width=80, elem_id="delta")
                            with gr.Row():
                                uncertainty = gr.Dropdown(["var", "std"], value=DEFAULTS.uncertainty,
                                                          label="τ thresholds σ² (var) or σ (std)", elem_id="uncertainty")
                                uncertainty_space = gr.Dropdown(["prob", "logit"], value=DEFAULTS.uncertainty_space,
                                                                label="OOD gate reads scores or logits",
                                                                elem_id="uncertainty-space")
                            with gr.Row():
                                nu1 = gr.Number(DEFAULTS.nu1, label="ν1 (re-eval softmax)", min_width=80, elem_id="nu1")
                                nu2 = gr.Number(DEFAULTS.nu2, label="ν2 (children softmax)", min_width=80, elem_id="nu2")
                            with gr.Row():
                                cost_ratio = gr.Number(DEFAULTS.cost_ratio, label="c (step cost in PRM passes)", min_width=80,
                                                       elem_id="cost-ratio")
                                max_iterations = gr.Number(DEFAULTS.max_iterations, label="max iterations", min_width=80,
                                                           elem_id="max-iterations")
                                reeval_share = gr.Number(DEFAULTS.reeval_share, label="re-eval share", min_width=80,
                                                         elem_id="reeval-share")
                        with gr.Accordion("Models", open=False):
                            policy_spec = gr.Textbox("", label="Policy (empty = embedded arithmetic policy)",
                                                     elem_id="policy")
                            prm_spec = gr.Textbox("", label="PRM (empty = embedded arithmetic PRM)", elem_id="prm")
                            prm_kind = gr.Dropdown(["detect", *PRM_KINDS], value="detect", label="PRM kind",
                                                   elem_id="prm-kind")
                            policy_opts = gr.Textbox("", label="Policy options (KEY=VALUE per line, JSON values)",
                                                     lines=2, elem_id="policy-opts")
                            prm_opts = gr.Textbox("", label="PRM options (KEY=VALUE per line)", lines=2, elem_id="prm-opts")
                        model_inputs = [policy_spec, prm_spec, prm_kind, policy_opts, prm_opts]
                        with gr.Row():
                            run_btn = gr.Button("Run search", variant="primary", elem_id="run-btn")
                            cancel_btn = gr.Button("Cancel", variant="stop", elem_id="cancel-btn")
                        # step mode: watch a search one iteration at a time, as it is computed
                        start_paused = gr.Checkbox(False, label="start paused (step mode)", elem_id="start-paused")
                        with gr.Row():
                            pause_btn = gr.Button("❚❚ Pause", elem_id="pause-btn", size="sm")
                            step_btn = gr.Button("▶❚ Step", elem_id="step-btn", size="sm")
                            resume_btn = gr.Button("▶ Resume", elem_id="resume-btn", size="sm")
                        with gr.Row():
                            open_id = gr.Textbox(label="Open run id", placeholder="paste a run id (or a prefix)",
                                                 elem_id="open-id", scale=3)
                            open_btn = gr.Button("Open", elem_id="open-btn", scale=1)
                    with gr.Column(scale=3):
                        status_md = gr.Markdown("No run open. Start a search on the left, or open one from **Runs**.",
                                                elem_id="run-status")
                        with gr.Accordion("View: filters, search, collapse", open=False):
                            with gr.Row():
                                f_min = gr.Slider(0, 1, value=0, step=0.01, label="min R̄", elem_id="f-min")
                                f_max = gr.Slider(0, 1, value=1, step=0.01, label="max R̄", elem_id="f-max")
                                f_depth = gr.Slider(0, 60, value=0, step=1, label="max depth (0 = all)", elem_id="f-depth")
                            with gr.Row():
                                f_search = gr.Textbox(label="Search steps", placeholder="text in a step, or a node id",
                                                      elem_id="f-search")
                                f_hv = gr.Checkbox(False, label="high variance only (σ² > τ)", elem_id="f-hv")
                                f_pruned = gr.Checkbox(False, label="hide pruned", elem_id="f-pruned")
                                f_glyph = gr.Checkbox(True, label="boxplot glyphs", elem_id="f-glyph")
                                f_dec = gr.Checkbox(True, label="highlight decisions", elem_id="f-dec")
                        tree = _plot_html("tree", "The tree appears here as the search writes it.", 440)
                        with gr.Row():
                            follow = gr.Checkbox(True, label="follow live", elem_id="follow", scale=1)
                            prev_btn = gr.Button("◀ prev", elem_id="prev-btn", scale=1, size="sm")
                            play_btn = gr.Button("▶ play", elem_id="play-btn", scale=1, size="sm")
                            next_btn = gr.Button("next ▶", elem_id="next-btn", scale=1, size="sm")
                            t_slider = gr.Slider(0, 1, value=0, step=1, label="iteration t", elem_id="t-slider",
                                                 scale=6, interactive=False)
                        cost_plot = _plot_html("cost-plot", "Cost per iteration appears here.", 60)
                        knobs_plot = _plot_html("knobs-plot", "For H-UATS and A-UATS runs: the six knobs used at each "
                                                "step against depth, coloured by the step's max σ (A-UATS: the "
                                                "controller's choices).", 40)
                        gr.Markdown("### Node inspector\nClick a node in the tree (or type its id).")
                        with gr.Row():
                            node_box = gr.Number(None, label="node id", precision=0, elem_id="node-id", scale=1)
                            go_node = gr.Button("Inspect", elem_id="inspect-btn", scale=1)
                            collapse_btn = gr.Button("Collapse / expand subtree", elem_id="collapse-btn", scale=2)
                            expand_all = gr.Button("Expand all", elem_id="expand-all", scale=1)
                        with gr.Row(equal_height=False):
                            with gr.Column(scale=3):
                                inspector = _plot_html("inspector", "The node's and its siblings' MC-dropout boxplots.", 120)
                            with gr.Column(scale=2):
                                node_md = gr.Markdown("", elem_id="node-details", max_height=560,
                                                      latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                                                                        {"left": "$", "right": "$", "display": False},
                                                                        {"left": "\\(", "right": "\\)", "display": False},
                                                                        {"left": "\\[", "right": "\\]", "display": True}])
                                with gr.Row():
                                    star_box = gr.Checkbox(False, label="★ star this node", elem_id="star")
                                note_box = gr.Textbox(label="note", lines=2, elem_id="note")
                                save_note = gr.Button("Save star and note", elem_id="save-note", size="sm")
                        with gr.Accordion("Export this run", open=False):
                            with gr.Row():
                                run_export_name = gr.Textbox(label="export name (optional)", elem_id="run-export-name")
                                run_export_btn = gr.DownloadButton("Download run export (zip)", value=None,
                                                                   elem_id="run-export")
                        play_timer = gr.Timer(1.0, active=False)
                        export_key = gr.Textbox("", visible=False)
            # ============================================================== compare tab
            with gr.Tab("Compare", id="compare"):
                gr.Markdown("Two runs side by side, stepped in lockstep, on one colour scale; shared step prefixes "
                            "are haloed and laid out first. Default: H-UATS vs REBASE on the same problem, seed and budget.")
                with gr.Row():
                    cmp_a = gr.Dropdown([], label="Run A", elem_id="cmp-a", allow_custom_value=True, scale=3)
                    cmp_b = gr.Dropdown([], label="Run B", elem_id="cmp-b", allow_custom_value=True, scale=3)
                    cmp_load = gr.Button("Compare", variant="primary", elem_id="cmp-load", scale=1)
                    cmp_pair = gr.Button("Run H-UATS vs REBASE (form settings)", elem_id="cmp-pair", scale=2)
                cmp_summary = gr.Markdown("", elem_id="cmp-summary")
                cmp_table = gr.Dataframe(headers=svc.COMPARE_COLUMNS, interactive=False, elem_id="cmp-table",
                                         wrap=True)
                with gr.Row():
                    cmp_prev = gr.Button("◀ prev", elem_id="cmp-prev", size="sm", scale=1)
                    cmp_next = gr.Button("next ▶", elem_id="cmp-next", size="sm", scale=1)
                    cmp_slider = gr.Slider(0, 1, value=0, step=1, label="iteration t (both runs)", elem_id="cmp-slider",
                                           scale=6)
                with gr.Row(equal_height=False):
                    with gr.Column():
                        cmp_tree_a = _plot_html("cmp-tree-a", "Run A", 560)
                    with gr.Column():
                        cmp_tree_b = _plot_html("cmp-tree-b", "Run B", 560)
                with gr.Row():
                    cmp_export_name = gr.Textbox(label="export name (optional)", elem_id="cmp-export-name")
                    cmp_export_btn = gr.DownloadButton("Download comparison export (zip)", value=None, elem_id="cmp-export")
            # ============================================================== runs tab
            with gr.Tab("Runs", id="runs"):
                with gr.Row():
                    r_method = gr.Dropdown(["(any)"] + svc.method_choices(), value="(any)", label="method", elem_id="r-method")
                    r_problem = gr.Dropdown(["(any)"], value="(any)", label="problem", allow_custom_value=True,
                                            elem_id="r-problem")
                    r_outcome = gr.Dropdown(["(any)", "right", "wrong", "running", "queued", "failed", "cancelled",
                                             "finished"], value="(any)", label="outcome", elem_id="r-outcome")
                    r_refresh = gr.Button("Refresh", elem_id="r-refresh")
                runs_table = gr.Dataframe(headers=svc.RUN_COLUMNS, interactive=False, elem_id="runs-table", wrap=True)
                gr.Markdown("Select a row to open the run in **Search**.")
            # ============================================================== cases tab
            with gr.Tab("Cases", id="cases"):
                gr.Markdown("The four cases of the paper's appendix, mined from stored runs: score (R̄ ≥ split) × "
                            "variance (σ² > τ), each with whether the step is right — exact in the arithmetic world, "
                            "otherwise whether any answer below it is right. Disagreements first.")
                with gr.Row():
                    c_scope = gr.Radio(["open run", "all runs"], value="all runs", label="mine", elem_id="c-scope")
                    c_split = gr.Slider(0.05, 0.95, value=0.5, step=0.05, label="score split", elem_id="c-split")
                    c_per = gr.Slider(1, 50, value=8, step=1, label="cases per quadrant", elem_id="c-per")
                    c_starred = gr.Checkbox(False, label="starred only", elem_id="c-starred")
                    c_mine = gr.Button("Mine cases", variant="primary", elem_id="c-mine")
                cases_df = gr.Dataframe(headers=["quadrant", "run", "node", "R̄", "σ²", "K", "step is", "step text"],
                                        interactive=False, elem_id="cases-table", wrap=True)
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3):
                        case_fig = _plot_html("case-fig", "Select a case to see it with its siblings.", 120)
                    with gr.Column(scale=2):
                        case_md = gr.Markdown("", elem_id="case-details", max_height=560,
                                              latex_delimiters=[{"left": "$$", "right": "$$", "display": True},
                                                                {"left": "$", "right": "$", "display": False}])
                        case_star = gr.Checkbox(False, label="★ star this case", elem_id="case-star")
                        case_note = gr.Textbox(label="note", lines=2, elem_id="case-note")
                        case_save = gr.Button("Save star and note", size="sm", elem_id="case-save")
                        case_open = gr.Button("Open in Search", size="sm", elem_id="case-open")
                        case_export_name = gr.Textbox(label="export name (optional)", elem_id="case-export-name")
                        case_export_btn = gr.DownloadButton("Download case export (zip)", value=None, elem_id="case-export")
            # ============================================================== reports tab
            with gr.Tab("Reports", id="reports"):
                reports = build_reports_tab(ReportSources(store, reports_dir), notice, _plot_html, _fig_json, _notice)

        filters = [f_min, f_max, f_hv, f_pruned, f_depth, f_search, f_glyph, f_dec]
        form = [method, budget, seed, k0, dropout_p, dropout_mode, alpha, tau, delta, nu1, nu2, cost_ratio,
                max_iterations, reeval_share, uncertainty, uncertainty_space]
        form_names = ["method", "budget", "seed", "k0", "dropout_p", "dropout_mode", "alpha", "tau", "delta", "nu1",
                      "nu2", "cost_ratio", "max_iterations", "reeval_share", "uncertainty", "uncertainty_space"]

        # ---------------------------------------------------------------------------------- problems
        def on_dataset(ds: str, path: str):
            show_path = ds != svc.ARITH
            path = path if (path and ds == svc.CUSTOM) else svc.default_dataset_path(ds)
            try:
                probs = svc.dataset_problems(ds, path)
            except (ProblemError, ValueError, OSError) as exc:
                return (gr.update(visible=show_path, value=path), gr.update(choices=[], value=None), "",
                        _notice(str(exc)))
            choices = svc.problem_choices(probs)
            first = choices[0][1] if choices else None
            return (gr.update(visible=show_path, value=path), gr.update(choices=choices, value=first),
                    _question_md(probs[0]) if probs else "", _notice(""))

        def _question_md(p) -> str:
            return f"**{md_inline(p.id, 120)}** — {md_text(p.question)}\n\n_gold answer: {md_inline(p.answer)}_"

        def on_problem(ds: str, path: str, pid: str):
            try:
                p = svc.pick_problem(svc.dataset_problems(ds, path), pid)
            except (ProblemError, ValueError, OSError) as exc:
                return "", _notice(str(exc))
            return _question_md(p), _notice("")

        dataset.change(on_dataset, [dataset, dataset_path], [dataset_path, problem, question_md, notice])
        dataset_path.submit(on_dataset, [dataset, dataset_path], [dataset_path, problem, question_md, notice])
        problem.change(on_problem, [dataset, dataset_path, problem], [question_md, notice])

        # ---------------------------------------------------------------------------------- runs
        def submit_run(ds, path, pid, models: tuple, values: dict[str, Any], label: str | None = None,
                       paused: bool = False) -> str:
            policy, prm, kind, p_opts, r_opts = models
            config = svc.search_config(values, (prm or "").strip() or None)
            prob = svc.pick_problem(svc.dataset_problems(ds, path), pid)
            check_model_choice(policy, prm, ds == svc.ARITH)
            model_fields = {"prm_kind": None if kind in (None, "", "detect") else kind,
                            "policy_opts": parse_options(_lines(p_opts), "policy options"),
                            "prm_opts": parse_options(_lines(r_opts), "PRM options"),
                            "world_problem": ds == svc.ARITH}
            run_id = uuid.uuid4().hex
            store.register_run(run_id, method=config.method, problem_id=prob.id, question=prob.question,
                               gold_answer=prob.answer, seed=config.seed, config=config.to_dict(),
                               policy=(policy or "").strip() or "embedded arith policy",
                               prm=(prm or "").strip() or "embedded arith PRM", label=label, paused=paused)
            pool.submit(RunRequest(run_id=run_id, db=store.location, problem=request_dict(prob), config=config.to_dict(),
                                   policy=(policy or "").strip() or None, prm=(prm or "").strip() or None, **model_fields))
            log.info("run %s submitted (%s on %s)", run_id, config.method, prob.id)
            return run_id

        def on_run(s, ds, path, pid, policy, prm, kind, p_opts, r_opts, paused, *vals):
            values = dict(zip(form_names, vals))
            try:
                run_id = submit_run(ds, path, pid, (policy, prm, kind, p_opts, r_opts), values, paused=bool(paused))
            except (ConfigError, ProblemError, StorageError, ValueError, TypeError) as exc:
                return s, _notice(str(exc)), gr.skip(), gr.skip(), gr.skip()
            s = {"run_id": run_id, "version": None, "t": None, "selected": None, "collapsed": []}
            run = store.get_run(run_id)
            return (s, _notice(f"run {run_id[:8]} queued: {values['method']} on {run['problem_id']}", ok=True),
                    "", svc.run_status_md(run), gr.update(value=True))

        run_btn.click(on_run, [st, dataset, dataset_path, problem, *model_inputs, start_paused, *form],
                      [st, notice, tree, status_md, follow])

        def run_control(verb: str, control: Callable[[str], bool], done: str):
            """A button that sets a control flag of the open run (cancel, pause, step, resume)."""
            def handler(s):
                if not s.get("run_id"):
                    return _notice(f"no run is open to {verb}")
                rid = s["run_id"]
                try:
                    ok = control(rid)
                except StorageError as exc:
                    return _notice(str(exc))
                return _notice(done.format(run=rid[:8]) if ok else f"run {rid[:8]} had already ended", ok=ok)
            return handler

        cancel_btn.click(run_control("cancel", store.request_cancel,
                                     "cancel requested for run {run}; it stops within a second or two"), [st], [notice])
        pause_btn.click(run_control("pause", store.pause_run, "run {run} pauses after its current iteration"),
                        [st], [notice])
        step_btn.click(run_control("step", store.step_run, "run {run}: one more iteration, then it waits"),
                       [st], [notice])
        resume_btn.click(run_control("resume", store.resume_run, "run {run} resumed"), [st], [notice])

        def open_run(s, run_ref, *fvals):
            try:
                run = store.find_run(str(run_ref or ""))
            except StorageError as exc:
                return (s, _notice(str(exc)), *[gr.skip()] * 9)
            s = {"run_id": run["run_id"], "version": None, "t": None, "selected": None, "collapsed": []}
            fig, data, state = draw_tree(s, list(fvals))
            return (s, _notice(""), fig, svc.run_status_md(data.run, state), slider_update(data, None),
                    _fig_json(cost_figure(list(data.iterations.values()))), "", "",
                    f"{run['run_id']}:{run['status']}", gr.update(selected="search"),
                    _fig_json(knobs_figure(list(data.iterations.values()))))

        open_outputs = [st, notice, tree, status_md, t_slider, cost_plot, inspector, node_md, export_key, tabs, knobs_plot]
        open_btn.click(open_run, [st, open_id, *filters], open_outputs)
        open_id.submit(open_run, [st, open_id, *filters], open_outputs)

        # ---------------------------------------------------------------------------------- live polling
        def on_tick(s, follow_live, *fvals):
            outs = [gr.skip()] * 8
            pool.pump()
            if s.get("run_id"):
                try:
                    version = store.run_version(s["run_id"])
                except StorageError as exc:
                    s["run_id"] = None
                    outs[0], outs[1] = s, _notice(str(exc))
                    return tuple(outs)
                if version != s.get("version"):
                    run = store.get_run(s["run_id"])
                    if follow_live or s.get("t") is None:
                        s["t"] = None
                        fig, data, state = draw_tree(s, list(fvals))
                        outs[2] = fig
                        outs[5] = _fig_json(cost_figure(list(data.iterations.values())))
                        outs[7] = _fig_json(knobs_figure(list(data.iterations.values())))
                    else:
                        data = cache.get(s["run_id"], version)
                        state = data.state_at(s.get("t"))
                        s["version"] = version
                    outs[0] = s
                    outs[3] = svc.run_status_md(run, state)
                    outs[4] = slider_update(data, s.get("t"))
                    if run["status"] not in LIVE:
                        outs[6] = f"{run['run_id']}:{run['status']}"
            return tuple(outs)

        timer.tick(on_tick, [st, follow, *filters], [st, notice, tree, status_md, t_slider, cost_plot, export_key, knobs_plot],
                   show_progress="hidden")

        # ---------------------------------------------------------------------------------- step-through
        def goto_t(s, t, *fvals):
            if not s.get("run_id"):
                return s, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            data = cache.get(s["run_id"])
            t = max(0, min(int(t or 0), data.max_iteration))
            s["t"] = None if (t >= data.max_iteration and data.run["status"] in LIVE) else t
            fig, data, state = draw_tree(s, list(fvals))
            return (s, fig, svc.run_status_md(data.run, state), gr.update(value=t),
                    gr.update(value=s["t"] is None),
                    _fig_json(cost_figure(list(data.iterations.values()), current=state.iteration)))

        step_outputs = [st, tree, status_md, t_slider, follow, cost_plot]
        # input covers dragging and typing in the slider's box; always_last drops the stale steps of a drag
        t_slider.input(goto_t, [st, t_slider, *filters], step_outputs, trigger_mode="always_last",
                       show_progress="hidden")
        prev_btn.click(lambda s, t, *f: goto_t(s, (t or 0) - 1, *f), [st, t_slider, *filters], step_outputs)
        next_btn.click(lambda s, t, *f: goto_t(s, (t or 0) + 1, *f), [st, t_slider, *filters], step_outputs)

        def on_play(s, t, active_label):
            if not s.get("run_id"):
                return gr.skip(), gr.skip(), gr.skip()
            data = cache.get(s["run_id"])
            playing = active_label.startswith("❚❚")
            if playing:
                return gr.update(active=False), gr.update(value="▶ play"), gr.skip()
            start = 0 if (t or 0) >= data.max_iteration else int(t or 0)
            return gr.update(active=True), gr.update(value="❚❚ pause"), gr.update(value=start)

        play_btn.click(on_play, [st, t_slider, play_btn], [play_timer, play_btn, t_slider])

        def on_play_tick(s, t, *fvals):
            if not s.get("run_id"):
                return (gr.update(active=False), gr.update(value="▶ play"), *[gr.skip()] * 6)
            data = cache.get(s["run_id"])
            nxt = int(t or 0) + 1
            if nxt > data.max_iteration:
                return (gr.update(active=False), gr.update(value="▶ play"), *[gr.skip()] * 6)
            return (gr.skip(), gr.skip(), *goto_t(s, nxt, *fvals))

        play_timer.tick(on_play_tick, [st, t_slider, *filters], [play_timer, play_btn, *step_outputs],
                        show_progress="hidden")

        def on_follow(s, follow_live, *fvals):
            if not follow_live or not s.get("run_id"):
                return gr.skip(), gr.skip(), gr.skip()
            s["t"] = None
            fig, data, state = draw_tree(s, list(fvals))
            return s, fig, slider_update(data, None)

        follow.input(on_follow, [st, follow, *filters], [st, tree, t_slider])

        def redraw(s, *fvals):
            if not s.get("run_id"):
                return gr.skip()
            fig, _, _ = draw_tree(s, list(fvals))
            return fig

        for comp in (f_min, f_max, f_depth):
            comp.release(redraw, [st, *filters], [tree])
        for comp in (f_hv, f_pruned, f_glyph, f_dec):
            comp.input(redraw, [st, *filters], [tree])
        f_search.submit(redraw, [st, *filters], [tree])
        f_search.blur(redraw, [st, *filters], [tree])

        # ---------------------------------------------------------------------------------- inspector
        def inspect(s, node_id, *fvals, redraw_tree: bool = False):
            if not s.get("run_id"):
                return s, _notice("open a run first"), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            data = cache.get(s["run_id"])
            state = data.state_at(s.get("t"))
            try:
                nid = int(node_id)
            except (TypeError, ValueError):
                return s, _notice(f"node: {node_id!r} is not a node id"), *[gr.skip()] * 6
            if nid not in state.nodes:
                return (s, _notice(f"node: run {s['run_id'][:8]} has no node {nid} at iteration {state.iteration}"),
                        *[gr.skip()] * 6)
            s["selected"] = nid
            judge = StepJudge(data.state_at(None))
            fig = None
            if nid != 0:
                sibs = [x for x in state.siblings(nid) if x != 0]
                fig = inspector_figure(state, nid, step_truth={x: judge(x) for x in sibs})
            star = store.get_star(s["run_id"], nid) if nid != 0 else None
            tree_val = draw_tree(s, list(fvals))[0] if redraw_tree else gr.skip()
            return (s, _notice(""), _fig_json(fig), svc.node_details_md(state, nid, judge),
                    gr.update(value=nid), bool(star and star["starred"]), (star or {}).get("note", ""), tree_val)

        inspect_outputs = [st, notice, inspector, node_md, node_box, star_box, note_box, tree]

        # Gradio finds the event argument by its annotation among named parameters (not after *args)
        def on_tree_select(s, f1, f2, f3, f4, f5, f6, f7, f8, evt: gr.EventData):
            node_id = (getattr(evt, "_data", None) or {}).get("node_id")
            return inspect(s, node_id, f1, f2, f3, f4, f5, f6, f7, f8)

        tree.select(on_tree_select, [st, *filters], inspect_outputs)
        go_node.click(lambda s, n, *f: inspect(s, n, *f, redraw_tree=True), [st, node_box, *filters], inspect_outputs)
        node_box.submit(lambda s, n, *f: inspect(s, n, *f, redraw_tree=True), [st, node_box, *filters], inspect_outputs)

        def on_collapse(s, *fvals):
            if not s.get("run_id") or s.get("selected") is None:
                return s, _notice("select a node first, then collapse or expand its subtree"), gr.skip()
            collapsed = set(s.get("collapsed") or [])
            collapsed ^= {s["selected"]}
            s["collapsed"] = sorted(collapsed)
            return s, _notice(""), draw_tree(s, list(fvals))[0]

        collapse_btn.click(on_collapse, [st, *filters], [st, notice, tree])

        def on_expand_all(s, *fvals):
            s["collapsed"] = []
            return s, (draw_tree(s, list(fvals))[0] if s.get("run_id") else gr.skip())

        expand_all.click(on_expand_all, [st, *filters], [st, tree])

        def on_save_note(s, starred, note):
            if not s.get("run_id") or s.get("selected") in (None, 0):
                return _notice("select a node to star or annotate")
            try:
                store.star_case(s["run_id"], s["selected"], starred=bool(starred))
                store.set_note(s["run_id"], s["selected"], note or "")
            except StorageError as exc:
                return _notice(str(exc))
            return _notice(f"saved star and note for node {s['selected']}", ok=True)

        save_note.click(on_save_note, [st, star_box, note_box], [notice])

        # ---------------------------------------------------------------------------------- run export
        def on_export_key(s, name):
            try:
                btn, msg = export_run_zip(s.get("run_id"), name)
            except (ExportError, StorageError) as exc:
                return gr.update(value=None), _notice(str(exc))
            return btn, gr.skip()

        export_key.change(on_export_key, [st, run_export_name], [run_export_btn, notice])
        run_export_name.submit(on_export_key, [st, run_export_name], [run_export_btn, notice])
        run_export_name.blur(on_export_key, [st, run_export_name], [run_export_btn, notice])

        # ---------------------------------------------------------------------------------- runs browser
        def list_runs(m, p, o):
            status = o if o in ("running", "queued", "failed", "cancelled", "finished") else None
            correct = {"right": True, "wrong": False}.get(o)
            runs = store.list_runs(method=None if m in (None, "(any)") else m,
                                   problem_id=None if p in (None, "(any)", "") else p,
                                   status="finished" if correct is not None else status, correct=correct, limit=500)
            problems = ["(any)"] + store.distinct_values("problem_id")
            return (gr.update(value=svc.run_rows(runs)), [r["run_id"] for r in runs],
                    gr.update(choices=problems))

        runs_outputs = [runs_table, run_ids_state, r_problem]
        for comp in (r_method, r_problem, r_outcome):
            comp.input(list_runs, [r_method, r_problem, r_outcome], runs_outputs)
        r_refresh.click(list_runs, [r_method, r_problem, r_outcome], runs_outputs)

        def on_runs_select(s, ids, f1, f2, f3, f4, f5, f6, f7, f8, evt: gr.SelectData):
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            if row is None or row >= len(ids):
                return (s, _notice("that row is no longer in the list; refresh"), *[gr.skip()] * 9)
            return open_run(s, ids[row], f1, f2, f3, f4, f5, f6, f7, f8)

        runs_table.select(on_runs_select, [st, run_ids_state, *filters], open_outputs)

        # ---------------------------------------------------------------------------------- compare
        def run_choices() -> list[tuple[str, str]]:
            return [(svc.run_label(r), r["run_id"]) for r in store.list_runs(limit=300)]

        def compare_view(cs, t):
            a, b = cache.get(cs["a"]), cache.get(cs["b"])
            fa, fb, crange = svc.compare_figures(a, b, t)
            rows, div = svc.compare_rows(a, b)
            same = (a.run.get("problem_id") == b.run.get("problem_id") and a.run.get("seed") == b.run.get("seed")
                    and (a.run.get("config") or {}).get("budget") == (b.run.get("config") or {}).get("budget"))
            summary = (f"**{md_text(a.run.get('method'))}** ({svc.outcome(a.run)}, answer {md_inline(a.run.get('answer'), 80)}, "
                       f"cost {float(a.run.get('cost') or 0):,.0f}) vs **{md_text(b.run.get('method'))}** "
                       f"({svc.outcome(b.run)}, answer {md_inline(b.run.get('answer'), 80)}, cost "
                       f"{float(b.run.get('cost') or 0):,.0f}) · "
                       + (f"first diverging iteration: **{div}**" if div is not None else "never diverged")
                       + f" · shared colour scale R̄ ∈ [{crange[0]:.2f}, {crange[1]:.2f}]"
                       + ("" if same else " · ⚠ different problem, seed or budget"))
            mx = max(1, a.max_iteration, b.max_iteration)
            return (_fig_json(fa), _fig_json(fb), summary, gr.update(value=rows),
                    gr.update(maximum=mx, value=mx if t is None else t))

        def on_compare(cs, a_id, b_id):
            try:
                ra, rb = store.find_run(a_id or ""), store.find_run(b_id or "")
            except StorageError as exc:
                return (cs, _notice(str(exc)), *[gr.skip()] * 5)
            if ra["run_id"] == rb["run_id"]:
                return (cs, _notice("pick two different runs to compare"), *[gr.skip()] * 5)
            cs = {"a": ra["run_id"], "b": rb["run_id"], "t": None,
                  "versions": [store.run_version(ra["run_id"]), store.run_version(rb["run_id"])]}
            return (cs, _notice(""), *compare_view(cs, None))

        def on_compare_export(cs, name):
            if not cs.get("a") or not cs.get("b"):
                return gr.update(value=None), gr.skip()
            try:
                bundle = svc.compare_bundle(cache.get(cs["a"]), cache.get(cs["b"]),
                                            name=safe_name(name) if (name or "").strip() else None)
                path = write_bundle(bundle, export_dir)
            except (ExportError, StorageError) as exc:
                return gr.update(value=None), _notice(str(exc))
            return gr.update(value=str(path), label=f"Download {path.name}"), gr.skip()

        cmp_outputs = [cst, notice, cmp_tree_a, cmp_tree_b, cmp_summary, cmp_table, cmp_slider]
        # the figures first, then the zip (kaleido takes a moment): the page never waits on the export
        cmp_load.click(on_compare, [cst, cmp_a, cmp_b], cmp_outputs).then(
            on_compare_export, [cst, cmp_export_name], [cmp_export_btn, notice])
        cmp_export_name.submit(on_compare_export, [cst, cmp_export_name], [cmp_export_btn, notice])
        cmp_export_name.blur(on_compare_export, [cst, cmp_export_name], [cmp_export_btn, notice])

        def cmp_step(cs, t):
            if not cs.get("a"):
                return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            cs["t"] = max(0, int(t or 0))
            return (cs, *compare_view(cs, cs["t"]))

        cmp_step_outputs = [cst, cmp_tree_a, cmp_tree_b, cmp_summary, cmp_table, cmp_slider]
        cmp_slider.input(cmp_step, [cst, cmp_slider], cmp_step_outputs, trigger_mode="always_last",
                         show_progress="hidden")
        cmp_prev.click(lambda cs, t: cmp_step(cs, (t or 0) - 1), [cst, cmp_slider], cmp_step_outputs)
        cmp_next.click(lambda cs, t: cmp_step(cs, (t or 0) + 1), [cst, cmp_slider], cmp_step_outputs)

        def on_pair(cs, ds, path, pid, policy, prm, kind, p_opts, r_opts, *vals):
            values = dict(zip(form_names, vals))
            ids = []
            try:
                for m in ("h-uats", "rebase"):
                    ids.append(submit_run(ds, path, pid, (policy, prm, kind, p_opts, r_opts), {**values, "method": m},
                                          label="compare"))
            except (ConfigError, ProblemError, StorageError, ValueError, TypeError) as exc:
                return (cs, _notice(str(exc)), *[gr.skip()] * 7)
            cs = {"a": ids[0], "b": ids[1], "t": None, "versions": None}
            choices = run_choices()
            return (cs, _notice(f"started H-UATS {ids[0][:8]} and REBASE {ids[1][:8]}; both trees follow live", ok=True),
                    gr.update(choices=choices, value=ids[0]), gr.update(choices=choices, value=ids[1]),
                    *compare_view(cs, None)[:4])

        cmp_pair.click(on_pair, [cst, dataset, dataset_path, problem, *model_inputs, *form],
                       [cst, notice, cmp_a, cmp_b, cmp_tree_a, cmp_tree_b, cmp_summary, cmp_table])

        def on_cmp_tick(cs):
            if not cs.get("a") or not cs.get("b") or cs.get("t") is not None:
                return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            versions = [store.run_version(cs["a"]), store.run_version(cs["b"])]
            if versions == cs.get("versions"):
                return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            cs["versions"] = versions
            return (cs, *compare_view(cs, None))

        timer.tick(on_cmp_tick, [cst], cmp_step_outputs, show_progress="hidden")

        def on_tab_compare(s, cs):
            choices = run_choices()
            a = cs.get("a")
            b = cs.get("b")
            if a is None and s.get("run_id"):
                a = s["run_id"]
                b = svc.find_partner(store, store.get_run(a))
            return gr.update(choices=choices, value=a), gr.update(choices=choices, value=b)

        # ---------------------------------------------------------------------------------- cases
        def on_mine(s, scope, split, per, starred_only):
            if scope == "open run" and not s.get("run_id"):
                return case_state.value, gr.update(value=[]), _notice("open a run first, or mine all runs")
            run_ids = [s["run_id"]] if scope == "open run" else None
            pools = mine_cases(store, run_ids, per_quadrant=int(per), score_split=float(split))
            if starred_only:
                starred = {(x["run_id"], x["node_id"]) for x in store.list_stars(starred_only=True)}
                pools = {q: [c for c in cs if (c.run_id, c.node_id) in starred] for q, cs in pools.items()}
            rows = cases_table(pools)
            flat = [c for q in QUADRANTS for c in pools.get(q, ())]
            n = len(flat)
            msg = "" if n else "no scored nodes with K ≥ 2 passes in these runs (UATS methods record them)"
            return {"rows": [(c.run_id, c.node_id) for c in flat], "pools": pools}, gr.update(value=rows), _notice(msg)

        c_mine.click(on_mine, [st, c_scope, c_split, c_per, c_starred], [case_state, cases_df, notice])

        def on_case_select(cstate, name, evt: gr.SelectData):
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            if row is None or row >= len(cstate["rows"]):
                return cstate, *[gr.skip()] * 4, _notice("mine cases again; the list changed")
            run_id, nid = cstate["rows"][row]
            cstate = {**cstate, "current": (run_id, nid)}
            return (cstate, *case_view(run_id, nid, cstate, name))

        def case_view(run_id, nid, cstate, name):
            data = cache.get(run_id)
            state = data.state_at(None)
            judge = StepJudge(state)
            sibs = [x for x in state.siblings(nid) if x != 0]
            fig = inspector_figure(state, nid, step_truth={x: judge(x) for x in sibs})
            star = store.get_star(run_id, nid)
            case = next((c for q in QUADRANTS for c in (cstate.get("pools") or {}).get(q, ())
                         if c.run_id == run_id and c.node_id == nid), None)
            md = (f"**{case.quadrant}** · run {md_text(run_id[:8])} ({md_text(data.run.get('method'))} on "
                  f"{md_inline(data.run.get('problem_id'), 80)})\n\n"
                  if case else "") + svc.node_details_md(state, nid, judge)
            try:
                bundle = svc.case_bundle(data, nid, case, name=safe_name(name) if (name or "").strip() else None,
                                         star=star)
                path = write_bundle(bundle, export_dir)
                btn, note = gr.update(value=str(path), label=f"Download {path.name}"), _notice("")
            except ExportError as exc:
                btn, note = gr.update(value=None), _notice(str(exc))
            return (_fig_json(fig), md, bool(star and star["starred"]), (star or {}).get("note", ""), btn, note)

        cases_df.select(on_case_select, [case_state, case_export_name],
                        [case_state, case_fig, case_md, case_star, case_note, case_export_btn, notice])

        def on_case_rename(cstate, name):
            if not cstate.get("current"):
                return gr.skip(), gr.skip()
            run_id, nid = cstate["current"]
            out = case_view(run_id, nid, cstate, name)
            return out[4], out[5]

        case_export_name.submit(on_case_rename, [case_state, case_export_name], [case_export_btn, notice])
        case_export_name.blur(on_case_rename, [case_state, case_export_name], [case_export_btn, notice])

        def on_case_save(cstate, starred, note):
            if not cstate.get("current"):
                return _notice("select a case first")
            run_id, nid = cstate["current"]
            case = next((c for q in QUADRANTS for c in (cstate.get("pools") or {}).get(q, ())
                         if c.run_id == run_id and c.node_id == nid), None)
            store.star_case(run_id, nid, starred=bool(starred), case_kind=case.quadrant if case else None)
            store.set_note(run_id, nid, note or "")
            return _notice(f"saved star and note for node {nid} of run {run_id[:8]}", ok=True)

        case_save.click(on_case_save, [case_state, case_star, case_note], [notice])

        def on_case_open(s, cstate, *fvals):
            if not cstate.get("current"):
                return (s, _notice("select a case first"), *[gr.skip()] * 9)
            run_id, nid = cstate["current"]
            out = list(open_run(s, run_id, *fvals))
            out[0]["selected"] = nid
            out[2] = draw_tree(out[0], list(fvals))[0]
            return tuple(out)

        case_open.click(on_case_open, [st, case_state, *filters], open_outputs).then(
            lambda s, *f: inspect(s, s.get("selected"), *f), [st, *filters], inspect_outputs)

        # ---------------------------------------------------------------------------------- load
        def on_load(s, cs):
            ds_out = on_dataset(svc.ARITH, "")
            runs = list_runs("(any)", "(any)", "(any)")
            a, b = on_tab_compare(s, cs)
            return (*ds_out, *runs, a, b)

        demo.load(on_load, [st, cst], [dataset_path, problem, question_md, notice, *runs_outputs, cmp_a, cmp_b])
        tabs.change(lambda s, cs, m, p, o, db, cur: (*on_tab_compare(s, cs), *list_runs(m, p, o),
                                                     reports.on_curve_list(db, cur)),
                    [st, cst, r_method, r_problem, r_outcome, reports.source, reports.curve_pick],
                    [cmp_a, cmp_b, *runs_outputs, reports.curve_pick])
    return demo


def launch_kwargs(export_dir: str | Path) -> dict[str, Any]:
    """Gradio 6 takes css/head at launch(); exports must be downloadable from their folder."""
    return {"css": CSS, "allowed_paths": [str(Path(export_dir).resolve())]}
