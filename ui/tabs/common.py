"""What every tab shares: the plot component that draws figure JSON with Plotly.react, the notice line,
the cache of loaded runs, and AppContext, the handful of page-level objects the tabs wire their events to."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import gradio as gr

from storage import RunStore
from uats_core.config import SearchConfig
from uats_core.status import LIVE

from ..choices import ServerChoices
from ..views.treefig import ViewOptions
from ..views.safe_text import hide_server_paths, md_text
from ..views.treedata import RunData
from ..views.export import ExportQuota, ExportTarget
from ..access import requester
from ..jobs.worker import WorkerPool
from .treelod import LOD_JS
from ..web_guard import PLOTLY_URL

PLOTLY_HEAD = f'<script src="{PLOTLY_URL}"></script>'  # served by ui/web_guard.py: the page names no server path
TICK_S = 0.5  # poll period while a run is live: new nodes drawn within 2 s of being written (none once all ended)
DEFAULTS = SearchConfig()
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False},
         {"left": "\\(", "right": "\\)", "display": False}, {"left": "\\[", "right": "\\]", "display": True}]

# Draws a figure JSON (the component's value) with Plotly.react: same div, fixed uirevision, so zoom and
# pan survive live updates. The template never contains ${value}, so Gradio never re-renders the div.
# Trees switch between compact glyphs and full boxplots as the view changes (LOD_JS, ui/tabs/treelod.py).
PLOT_JS = LOD_JS + r"""
const host = element.querySelector('.uats-plot');
const empty = element.querySelector('.uats-empty');
function ringAt(id) {
  // the ring is a layout shape: relayout redraws shapes only (restyle recomputed the whole tree)
  if (!host.data) return;
  for (const tr of host.data) {
    if (!tr.customdata || tr.mode !== 'markers') continue;
    for (let i = 0; i < tr.customdata.length; i++) {
      const c = tr.customdata[i];
      const cid = Array.isArray(c) ? c[0] : c;
      if (cid === id) {
        const shapes = (host.layout && host.layout.shapes) || [];
        let k = shapes.findIndex(s => s.name === 'selected');
        if (k < 0) k = shapes.length;
        // one item of the array: Plotly redraws that shape only (the whole array redraws the plot)
        Plotly.relayout(host, {[`shapes[${k}]`]: {type: 'circle', name: 'selected', xref: 'x', yref: 'y',
          xsizemode: 'pixel', ysizemode: 'pixel', xanchor: tr.x[i], yanchor: tr.y[i], x0: -15, x1: 15, y0: -15,
          y1: 15, line: {color: '#111', width: 2.5}}});
        return;
      }
    }
  }
}
async function show(spec) {
  host.style.display = 'block'; empty.style.display = 'none';
  const t0 = performance.now();
  host.dataset.lodPending = '1';
  lodInject(host, spec);
  host._uatsMeta = spec.meta || {};
  // a figure that needs a least width (Figure 1's labels, panels and table) scrolls sideways below it
  const minW = (spec.meta || {}).min_width;
  host.style.minWidth = minW ? minW + 'px' : '';
  element.style.overflowX = minW ? 'auto' : '';
  await Plotly.react(host, spec.data, spec.layout, spec.config || {});
  const m = spec.meta || {};
  host._uatsRev = (spec.layout || {}).uirevision;
  lodRefresh(host);
  host.dataset.drawMs = (performance.now() - t0).toFixed(1);
  host.dataset.nodes = m.n_nodes; host.dataset.shown = m.n_shown; host.dataset.iteration = m.iteration;
  host.dataset.run = m.run_id || ''; host.dataset.status = m.status || '';
  host.dataset.pinned = m.pinned ? '1' : '';  // an iteration the user chose (not "the latest")
  if (m.written_at) host.dataset.latencyMs = (Date.now() - m.written_at * 1000).toFixed(0);
  host.dataset.drawnAt = String(Date.now());
  host.dataset.draws = String(Number(host.dataset.draws || 0) + 1);
  // a short in-page log of draws for benchmarks/app.py and the browser tests (bounded: pages stay open long)
  const log = (window.__uatsDraws = window.__uatsDraws || []);
  log.push({el: host.dataset.owner || '', iteration: m.iteration, nodes: m.n_nodes, status: m.status || '',
            run: m.run_id || '', drawMs: Number(host.dataset.drawMs),
            latencyMs: m.written_at ? Number(host.dataset.latencyMs) : null, at: Date.now()});
  if (log.length > 2000) log.splice(0, log.length - 2000);
  if (!host._uatsBound) {
    host.on('plotly_click', (ev) => {
      const p = ev.points && ev.points[0];
      if (!p || p.customdata == null) return;
      const id = Array.isArray(p.customdata) ? p.customdata[0] : p.customdata;
      if (typeof id !== 'number') return;
      trigger('select', {node_id: id});  // the request first: nothing drawn here may delay it
      setTimeout(() => ringAt(id), 0);
    });
    // a zoom, a pan, a reset or a resize ended: the level of detail may change (not during a drag)
    host.on('plotly_relayout', () => requestAnimationFrame(() => lodRefresh(host)));
    host._uatsBound = true;
  }
}
async function drain() {
  // one figure at a time, in order; a frame stays on screen a moment before the next replaces it, and
  // a page that fell behind (several frames waiting) paints each once and goes on, so it catches up;
  // a plot out of view waits, keeping only the latest frame
  if (host._uatsBusy) return;
  host._uatsBusy = true;
  try {
    while (host._uatsQueue.length) {
      if (!element.isConnected) { host._uatsQueue.length = 0; break; }  // the component is gone
      if (!element.getClientRects().length) {
        // in a tab not shown (or a closed accordion): nobody watches these frames, and drawing them took the
        // page's time from the tab in view (a click there waited up to a second); the latest is drawn once shown
        host._uatsQueue.splice(0, host._uatsQueue.length - 1);
        await new Promise(r => setTimeout(r, 200));
        continue;
      }
      await show(host._uatsQueue.shift());
      const behind = host._uatsQueue.length;
      if (behind) await new Promise(r => requestAnimationFrame(() => setTimeout(r, behind > 1 ? 0 : 80)));
    }
  } catch (e) { console.error('uats: draw failed', e); }
  finally { host._uatsBusy = false; }
}
function draw() {
  const raw = props.value;
  host._uatsQueue = host._uatsQueue || [];
  if (!raw) {
    host._uatsQueue.length = 0; host._uatsRaw = raw;
    host.style.display = 'none'; empty.style.display = 'flex'; host.dataset.nodes = '0'; return;
  }
  if (typeof Plotly === 'undefined') { setTimeout(draw, 50); return; }
  // the same figure again (an event that lists this plot as an output and skips it): parsing and reacting
  // to a 2,000-node tree for nothing took a second of the page's time on every node click
  if (raw === host._uatsRaw && host.data) return;
  host._uatsRaw = raw;
  let spec;
  try { spec = JSON.parse(raw); } catch (e) { console.error('uats: bad figure', e); return; }
  // a live poll's frames (every new iteration, oldest first) queue behind those still being drawn;
  // any other figure (a step back, a filter, another run) replaces the frames not drawn yet
  if (spec.frames) host._uatsQueue.push(...spec.frames);
  else host._uatsQueue.splice(0, host._uatsQueue.length, spec);
  drain();
}
draw();
watch('value', draw);
"""


def plot_html(elem_id: str, empty_text: str, min_height: int = 140) -> gr.HTML:
    """A figure slot: shows `empty_text` until its value (figure JSON) arrives, then draws it in place."""
    return gr.HTML(value="", elem_id=elem_id, js_on_load=PLOT_JS, head=PLOTLY_HEAD, padding=False,
                   html_template=f'<div class="uats-empty" style="display:flex">{empty_text}</div>'
                                 f'<div class="uats-plot" data-owner="{elem_id}" style="display:none"></div>',
                   min_height=min_height)


def with_meta(fig: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """The figure with `meta` added to its own (what the page records of each draw)."""
    return {**fig, "meta": {**fig.get("meta", {}), **meta}} if meta else fig


def fig_json(fig: dict[str, Any] | None, **meta: Any) -> str:
    """A figure dict as the plot component's value; "" (the empty slot) for None."""
    if fig is None:
        return ""
    return json.dumps(with_meta(fig, **meta), ensure_ascii=False, separators=(",", ":"))


def frames_json(figs: list[dict[str, Any]]) -> str:
    """Figures the plot component draws one after another, in order ({"frames": [...]}): a live poll's
    new iterations. Any other value drawn later replaces the frames not yet drawn."""
    return json.dumps({"frames": figs}, ensure_ascii=False, separators=(",", ":"))


def lines(text: str | None) -> list[str]:
    """The non-blank lines of a multi-line option box."""
    return [line for line in str(text or "").splitlines() if line.strip()]


def notice(msg: str = "", ok: bool = False) -> Any:
    """The message line under the title: problems in orange, confirmations in green, hidden when empty."""
    if not msg:
        return gr.update(value="", visible=False)
    # messages quote what the user typed or a dataset holds: shown literally, never as HTML; where the server
    # keeps a file (a model folder, a dataset, the run log) is no client's business: its name only
    return gr.update(value=md_text(hide_server_paths(msg)), visible=True, elem_classes=["ok"] if ok else ["bad"])


def skips(n: int) -> list[Any]:
    """`n` outputs left as they are."""
    return [gr.skip()] * n


def row_of(evt: gr.SelectData) -> int | None:
    """The row a Dataframe select names (its index is [row, column] for a cell)."""
    return evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index


def view_of(score_min: Any = 0.0, score_max: Any = 1.0, high_variance_only: Any = False, hide_pruned: Any = False,
            depth_max: Any = 0, search: Any = "", glyphs: Any = True, show_decisions: Any = True,
            collapsed: Any = (), collapse_pruned: Any = False, focus: Any = "whole tree") -> ViewOptions:
    """ViewOptions from the view filters' raw values (sliders may arrive swapped, depth 0 means all)."""
    lo, hi = float(score_min or 0.0), float(score_max if score_max is not None else 1.0)
    if lo > hi:
        lo, hi = hi, lo
    dmax = int(depth_max) if depth_max else None
    return ViewOptions(score_min=lo, score_max=hi, high_variance_only=bool(high_variance_only),
                       hide_pruned=bool(hide_pruned), depth_max=dmax, search=search or "", glyphs=bool(glyphs),
                       show_decisions=bool(show_decisions), collapsed=frozenset(collapsed or ()),
                       collapse_pruned=bool(collapse_pruned), focus=str(focus or "whole tree"))


class RunCache:
    """The latest RunData of each recent run: one load serves every tab following the same run, and a
    live run's newer version grows from the one held (RunData.grown: the rows written since), never
    reloading the whole run on each poll."""

    def __init__(self, store: RunStore, size: int = 12) -> None:
        self.store = store
        self.size = size
        self._items: OrderedDict[str, tuple[Any, RunData]] = OrderedDict()  # run id -> (version, data)
        self._lock = threading.Lock()
        self.loads = {"full": 0, "grown": 0}  # how each miss was served (the benchmark and tests read it)

    def get(self, run_id: str, version: Any = None) -> RunData:
        version = version if version is not None else self.store.run_version(run_id)
        with self._lock:
            held = self._items.get(run_id)
            if held is not None:
                self._items.move_to_end(run_id)
                if held[0] == version:
                    return held[1]
        if held is not None and held[1].run.get("status") in LIVE:
            data, how = held[1].grown(self.store), "grown"
        else:  # a run that had ended changes only by a rewrite: read it again whole
            data, how = RunData.load(self.store, run_id), "full"
        with self._lock:
            self.loads[how] += 1
            self._items[run_id] = (version, data)
            self._items.move_to_end(run_id)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return data


@dataclass
class PollPart:
    fn: Callable[..., Sequence[Any]]
    inputs: list[Any]
    outputs: list[Any]
    kwargs: dict[str, Any]
    with_request: bool  # fn takes the tick's gr.Request as `request`


@dataclass
class PollParts:
    """What runs on each tick, in registration order (a later part sees what an earlier one wrote in place)."""

    parts: list[PollPart] = field(default_factory=list)

    def add(self, fn: Callable[..., Sequence[Any]], inputs: Sequence[Any], outputs: Sequence[Any],
            inputs_kwargs: Mapping[str, Any] | None = None, with_request: bool = False) -> None:
        self.parts.append(PollPart(fn, list(inputs), list(outputs), dict(inputs_kwargs or {}), with_request))


@dataclass
class AppContext:
    """The page-level objects every tab reads or writes: passed whole, so tab builders and their handlers
    need no long positional argument lists. `st` is the open run (Search), `cst` the compared pair; `choices`
    the models and problem sets this server offers (nothing else is loaded for a client)."""

    store: RunStore
    pool: WorkerPool
    cache: RunCache
    export_dir: Path
    notice: gr.Markdown
    timer: gr.Timer
    tabs: gr.Tabs
    st: gr.State
    cst: gr.State
    choices: ServerChoices
    poll: PollParts = field(default_factory=PollParts)  # what each timer tick runs (ui/tabs/poll.py)
    export_quota: ExportQuota = field(default_factory=ExportQuota)

    def export_target(self, request: gr.Request | None) -> ExportTarget:
        """Where the requester's exports go (their own folder under export_dir) and the quota they count against;
        AccessDenied for a request without a session."""
        return ExportTarget(self.export_dir, requester(request), self.export_quota)
