"""What every tab shares: the plot component that draws figure JSON with Plotly.react, the notice line,
the cache of loaded runs, and AppContext, the handful of page-level objects the tabs wire their events to."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import gradio as gr

from storage import RunStore, RunVersion, StorageError, run_version_of
from uats_core.config import SearchConfig
from uats_core.status import LIVE

from ..access import requester
from ..choices import ServerChoices
from ..jobs.pool import WorkerPool
from ..read_slots import ReadSlots
from ..views.export import ExportQuota, ExportTarget
from ..views.safe_text import hide_server_paths, md_text
from ..views.scripts import page_script
from ..views.treedata import RunData
from ..views.treeview import ViewOptions
from ..web_guard import PLOTLY_URL

R = TypeVar("R")

PLOTLY_HEAD = f'<script src="{PLOTLY_URL}"></script>'  # served by ui/web_guard.py: the page names no server path
# the same script in the page's head (launch's head, added as the page starts): fetched and compiled off the main
# thread while Gradio's own modules load, not once the plots mount (a link's first figure waited 2 s on it); a
# plot's head then finds it in the document and adds no second copy (Gradio's HTML component checks the src)
PLOTLY_PAGE_HEAD = f'<script src="{PLOTLY_URL}" async></script>'
TICK_S = 0.5  # poll period while a run is live: new nodes drawn within 2 s of being written (none once all ended)
DEFAULTS = SearchConfig()
LATEX = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "$", "right": "$", "display": False},
    {"left": "\\(", "right": "\\)", "display": False},
    {"left": "\\[", "right": "\\]", "display": True},
]

# Draws a figure JSON (the component's value) with Plotly.react (ui/js/plot.js); trees switch between compact
# glyphs and full boxplots as the view changes (ui/js/treelod.js, the functions plot.js calls): one js_on_load.
PLOT_JS = page_script("treelod.js") + page_script("plot.js")
SHOW_SEARCH_JS = page_script("show_search.js")  # a run opened from another tab: the Search tab shown


# a figure slot's look (the studio's and the node page's): the empty text's box, the plot, Figure 1's sticky head
PLOT_SLOT_CSS = """
.uats-empty { height: 120px; align-items: center; justify-content: center; color: #888; font-size: 14px;
              border: 1px dashed #ccc; border-radius: 6px; }
.uats-plot { width: 100%; }
.uats-sticky-head { position: sticky; top: 0; z-index: 3; overflow: hidden; background: #fff; }
.uats-sticky-head .svg-container { position: relative; }
"""


def plot_slot(elem_id: str, empty_text: str) -> str:
    """A figure slot's inside: `empty_text` shown until plot.js draws the figure in the plot's div."""
    return (
        f'<div class="uats-empty" style="display:flex">{empty_text}</div>'
        f'<div class="uats-plot" data-owner="{elem_id}" style="display:none"></div>'
    )


def plot_html(elem_id: str, empty_text: str, min_height: int = 140) -> gr.HTML:
    """A figure slot: shows `empty_text` until its value (figure JSON) arrives, then draws it in place."""
    return gr.HTML(
        value="",
        elem_id=elem_id,
        js_on_load=PLOT_JS,
        head=PLOTLY_HEAD,
        padding=False,
        html_template=plot_slot(elem_id, empty_text),
        min_height=min_height,
    )


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


def keyed(out: Mapping[Any, Any]) -> Any:
    """What a handler returns: the outputs it changes, by component (Gradio leaves the others of its outputs as they
    are); nothing changed is one gr.skip() (Gradio would take an empty dict for one output's value)."""
    return dict(out) if out else gr.skip()


def row_of(evt: gr.SelectData) -> int | None:
    """The row a Dataframe select names (its index is [row, column] for a cell)."""
    return evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index


def view_of(
    score_min: Any = 0.0,
    score_max: Any = 1.0,
    high_variance_only: Any = False,
    hide_pruned: Any = False,
    depth_max: Any = 0,
    search: Any = "",
    glyphs: Any = True,
    show_decisions: Any = True,
    collapsed: Any = (),
    collapse_pruned: Any = False,
    focus: Any = "whole tree",
) -> ViewOptions:
    """ViewOptions from the view filters' raw values (sliders may arrive swapped, depth 0 means all)."""
    lo, hi = float(score_min or 0.0), float(score_max if score_max is not None else 1.0)
    if lo > hi:
        lo, hi = hi, lo
    dmax = int(depth_max) if depth_max else None
    return ViewOptions(
        score_min=lo,
        score_max=hi,
        high_variance_only=bool(high_variance_only),
        hide_pruned=bool(hide_pruned),
        depth_max=dmax,
        search=search or "",
        glyphs=bool(glyphs),
        show_decisions=bool(show_decisions),
        collapsed=frozenset(collapsed or ()),
        collapse_pruned=bool(collapse_pruned),
        focus=str(focus or "whole tree"),
    )


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

    def get(self, run_id: str, version: RunVersion | None = None, run: dict[str, Any] | None = None) -> RunData:
        """The run's data at `version` (read when not given); `run`: its row read at that version, which a load
        then need not read again (RunReads)."""
        version = version if version is not None else self.store.run_version(run_id)
        with self._lock:
            held = self._items.get(run_id)
            if held is not None:
                self._items.move_to_end(run_id)
                if held[0] == version:
                    return held[1]
        if held is not None and held[1].run.get("status") in LIVE:
            data, how = held[1].grown(self.store, run), "grown"
        else:  # a run that had ended changes only by a rewrite: read it again whole
            data, how = RunData.load(self.store, run_id, run), "full"
        with self._lock:
            self.loads[how] += 1
            self._items[run_id] = (version, data)
            self._items.move_to_end(run_id)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return data


class RunReads:
    """The runs' rows as one poll tick (or one event) reads them: each run's row at most once, whichever parts ask
    (the live tree, the run bar, the Why panel, the idle check, the Compare pair and its pickers), where each
    part read the open run again (six reads a tick). A run's data (RunCache) at the version read is grown from
    that row, not from a second read of it."""

    def __init__(self, store: RunStore, cache: RunCache) -> None:
        self.store = store
        self.cache = cache
        self._rows: dict[str, dict[str, Any] | StorageError] = {}

    def run(self, run_id: str) -> dict[str, Any]:
        """The run's row (StorageError when there is no such run, every time it is asked)."""
        got = self._rows.get(run_id)
        if got is None:
            try:
                got = self.store.get_run(run_id)
            except StorageError as exc:
                got = exc
            self._rows[run_id] = got
        if isinstance(got, StorageError):
            raise StorageError(str(got), field=got.field)
        return got

    def version(self, run_id: str) -> RunVersion:
        return run_version_of(self.run(run_id))

    def data(self, run_id: str) -> RunData:
        """The run's data as of the row read."""
        return self.cache.get(run_id, self.version(run_id), self.run(run_id))


@dataclass
class PollPart:
    fn: Callable[..., Any]
    inputs: list[Any]
    outputs: list[Any]
    kwargs: dict[str, Any]
    with_request: bool  # fn takes the tick's gr.Request as `request`
    with_reads: bool  # fn takes the tick's RunReads as `reads`


@dataclass
class PollParts:
    """What runs on each tick, in registration order (a later part sees what an earlier one wrote in place). Each
    part returns its outputs by component (keyed), never a page state: it writes those in place."""

    parts: list[PollPart] = field(default_factory=list)

    def add(
        self,
        fn: Callable[..., Any],
        inputs: Sequence[Any],
        outputs: Sequence[Any],
        inputs_kwargs: Mapping[str, Any] | None = None,
        with_request: bool = False,
        with_reads: bool = False,
    ) -> None:
        self.parts.append(
            PollPart(fn, list(inputs), list(outputs), dict(inputs_kwargs or {}), with_request, with_reads)
        )


@dataclass
class AppContext:
    """The page-level objects every tab reads or writes: passed whole, so tab builders and their handlers
    need no long positional argument lists. `run_state` holds the open run (Search, page_state.OpenRun),
    `pair_state` the compared pair (page_state.ComparedPair); `choices` the models and problem sets this server
    offers (nothing else is loaded for a client)."""

    store: RunStore
    pool: WorkerPool
    cache: RunCache
    export_dir: Path
    notice: gr.Markdown
    timer: gr.Timer
    tabs: gr.Tabs
    run_state: gr.State
    pair_state: gr.State
    choices: ServerChoices
    off_queue: ReadSlots  # bounds the reads of the events Gradio runs off its queue (read_off_queue)
    poll: PollParts = field(default_factory=PollParts)  # what each timer tick runs (ui/tabs/poll.py)
    export_quota: ExportQuota = field(default_factory=ExportQuota)
    downloads: Path | None = None  # where exports are served from (ui.tabs.exports.downloads_folder); None: in place

    def reads(self) -> RunReads:
        """Fresh reads of the run log for one event (a poll tick shares one among its parts)."""
        return RunReads(self.store, self.cache)

    async def read_off_queue(self, request: gr.Request | None, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """fn(*args, **kwargs) in a worker thread, for an event Gradio runs off its queue (`queue=False`: no queue
        join, and three status messages instead of five, each a round of the page's bookkeeping), within the
        off_queue bounds: the requester's own, then a shared place. AccessDenied for a request without a session."""
        async with self.off_queue.held(requester(request)):
            return await asyncio.to_thread(fn, *args, **kwargs)

    def export_target(self, request: gr.Request | None) -> ExportTarget:
        """Where the requester's exports go (their own folder under export_dir) and the quota they count against;
        AccessDenied for a request without a session."""
        return ExportTarget(self.export_dir, requester(request), self.export_quota, self.downloads)


# the node's own page (ui/tabs/node_page.py) is served at /NODE_PAGE: its links, the inspector's "link to this node"
# (ui/js/inspector.js finds it by the prefix the head's template carries) and the benchmark all read this one name
NODE_PAGE = "node"


def node_address(run_id: str, node: int | None, t: int | None, page: str = NODE_PAGE) -> str:
    """A link to a node, relative to the app's root: `page` NODE_PAGE is the node's own page, "" the studio's."""
    params: dict[str, Any] = {"run": run_id}
    if node is not None:
        params["node"] = node
    if t is not None:
        params["t"] = t
    return address_prefix(page) + urlencode(params)


def address_prefix(page: str = NODE_PAGE) -> str:
    """How every address of `page` begins (node_address writes it)."""
    return f"./{page}?"


def node_link_md(run_id: str, node: int, t: int | None) -> str:
    """The inspector's line linking to the node's own page: the link to share (it opens faster than the studio)."""
    return f"[Link to this node]({node_address(run_id, node, t)}): its tree, Figure 1 and Why on a page of their own"
