"""A node's own page, /node?run=…&node=…&t=…: the link a researcher shares to point at one step's decision.

The server writes the whole page in one streamed answer: the node's Figure 1 and the run's tree as figure JSON
inside it, drawn by the studio's own plot script (ui/js/plot.js) as soon as plotly.js has loaded, with the head,
the Why and the node's text as HTML. A Gradio page spent 1–2 s starting Gradio's client before its first event left
(docs/log.md); this page has no client to start. Everything on it comes from the studio's view functions, so its
figures and text are the studio's, value for value. Clicking a node opens that node's page (the address is the
link to share). "Open in the studio" goes to the same view in the full app. Anyone who may use the app may view
every run (ui/access.py): this page changes nothing; with a login, it is answered only to a signed-in user
(ui/app_ui.py guarded_app)."""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from storage import StorageError
from storage.shadow import read_shadow

from ..views.page_html import allowed_html, markdown_html
from ..views.run_status import run_status_md
from ..views.safe_text import hide_server_paths
from ..views.scripts import page_script
from .common import (
    LATEX,
    LIVE,
    NODE_PAGE,
    PLOT_JS,
    PLOT_SLOT_CSS,
    AppContext,
    fig_json,
    node_address,
    plot_slot,
    view_of,
)
from .links import int_param, linked_view
from .page_state import OpenRun
from .search_layout import EMPTY_WHY, FIGURE1_MAX_HEIGHT, INSPECTOR_WIDTH
from .step_panel import why_html
from .viewer import RunViewer, run_tree_figure, with_link

log = logging.getLogger(__name__)

NODE_PATH = f"/{NODE_PAGE}"
# the Figure 1 a studio address opens with, as JSON (NodeViews.linked_figure1), and the studio page's head script that
# asks for it as the page starts (ui/js/link_prefetch.js), relative to the page as the page's other links
LINKED_FIGURE1_PATH = f"{NODE_PATH}/figure1"
LINK_PREFETCH_HEAD = f"<script>({page_script('link_prefetch.js')})({json.dumps('.' + LINKED_FIGURE1_PATH)});</script>"
# this page draws once: a run still going is shown as it was when the page opened (the studio follows it live)
LIVE_NOTE = "The run is still going: this page shows it as it was when opened; the studio follows it live."
NO_RUN = "no run in the address: give ?run=<run id>&node=<node id>, e.g. from the studio"
EMPTY_FIGURE1 = "The node's step appears here."
EMPTY_TREE = "The run's tree appears here."


@dataclass
class NodeAnswer:
    """What the node page shows for one address: Markdown for the head and the node's text, HTML for the Why,
    figure JSON ("" for none) for Figure 1 and the tree."""

    title: str
    head: str
    figure1: str = ""
    why: str = EMPTY_WHY
    node_md: str = ""
    tree: str = ""


def _head(s: OpenRun, status: str, message: str = "", live: bool = False) -> str:
    studio = f"[Open in the studio]({node_address(str(s.run_id), s.selected, s.t, page='')})" if s.run_id else ""
    lines = [f"**{message}**" if message else "", status, LIVE_NOTE if live and s.t is None else "", studio]
    return "\n\n".join(x for x in lines if x)


class NodeViews:
    """The node page's answer for an address, from the studio's view functions."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def answer(self, params: Mapping[str, str]) -> NodeAnswer:
        """The linked node (its Figure 1, Why, text) and the run's tree at the linked iteration with the node ringed,
        or one line saying what in the address is wrong."""
        run_ref = (params.get("run") or "").strip()
        if not run_ref:
            return NodeAnswer("UATS Studio: a node", f"**{NO_RUN}**")
        try:
            t, node = int_param(params, "t"), int_param(params, "node")
            run = self.ctx.store.find_run(run_ref)
        except (ValueError, StorageError) as exc:
            return NodeAnswer("UATS Studio: a node", f"**{hide_server_paths(exc)}**")
        s = OpenRun().opened(run["run_id"])
        reads = self.ctx.reads()
        data = reads.data(s.run_id)
        s.t = None if t is None else max(0, min(t, data.max_iteration))
        state, shadow = data.state_at(s.t), read_shadow(self.ctx.store, s.run_id)
        missing = None if node is None else RunViewer.missing_node(str(s.run_id), state, node)
        s.selected = None if missing or node is None else node
        status = run_status_md(data.run, state, shadow)
        head = _head(s, status, missing or "", live=data.run["status"] in LIVE)
        title = f"Run {str(s.run_id)[:8]}" + (f" · node {s.selected}" if s.selected is not None else "")
        title += " · UATS Studio"

        tree = fig_json(run_tree_figure(s, data, state, view_of(), reads.version(s.run_id), shadow))
        if s.selected is None:
            return NodeAnswer(title, head, tree=tree)
        fig, md = RunViewer.node_view(data, state, s.selected, s.fig1, shadow)
        why = why_html(self.ctx, s, s.selected, s.t, reads)
        return NodeAnswer(title, head, fig, why, with_link(md, s, s.selected), tree)

    def linked_figure1(self, params: Mapping[str, str]) -> tuple[int | None, str]:
        """The Figure 1 the studio's address `params` opens with, as its page load's first answer
        (RunViewer.node_first) draws it: (node, figure JSON), or (None, "") when the address selects no node.
        The studio's page fetches it as it starts (ui/js/link_prefetch.js) and draws it when its inspector is
        mounted, before Gradio's client has sent the load. ValueError or StorageError for a bad address."""
        linked = linked_view(self.ctx, OpenRun(), params)
        if linked is None or linked.s.selected is None:
            return None, ""
        s, data = linked.s, linked.data  # the run as the address was read: not read a second time
        fig, _ = RunViewer.node_view(
            data, data.state_at(s.t), s.selected, s.fig1, read_shadow(self.ctx.store, s.run_id)
        )
        return s.selected, fig


@dataclass(frozen=True)
class Katex:
    """Gradio's own KaTeX, which renders the studio's LaTeX: its frontend's auto-render module and stylesheet
    (served under assets/), and the class its stylesheet's rules are scoped under."""

    script: str
    sheet: str
    scope: str


@cache
def katex_assets() -> Katex | None:
    """This Gradio's KaTeX files; None (the page shows LaTeX as written, logged once) when it has no such files."""
    import gradio

    folder = Path(gradio.__file__).resolve().parent / "templates" / "frontend" / "assets"
    scripts, sheets = sorted(folder.glob("auto-render-*.js")), sorted(folder.glob("katex-*.css"))
    if len(scripts) != 1 or len(sheets) != 1:
        log.warning("node page: no single KaTeX module in %s; LaTeX is shown as written", folder)
        return None
    # Gradio's CSS scopes KaTeX's rules to its container (.gradio-container-6-31-0 .katex …)
    scope = "gradio-container-" + str(gradio.__version__).replace(".", "-")
    return Katex(f"assets/{scripts[0].name}", f"assets/{sheets[0].name}", scope)


NODE_PAGE_CSS = (
    f"""
body {{ font-family: 'Source Sans Pro', ui-sans-serif, system-ui, sans-serif; margin: 0; padding: 10px 16px;
       color: #1f2937; font-size: 15px; }}
#node-head p {{ margin: 4px 0; }}
#search-row {{ display: flex; gap: 12px; align-items: flex-start; }}
#tree-col {{ flex: 1 1 0; min-width: 0; }}
#inspector-panel {{ flex: 0 0 {INSPECTOR_WIDTH}; min-width: 0; display: flex; flex-direction: column; gap: 6px;
  position: sticky; top: 6px; max-height: calc(100vh - 12px); overflow-y: auto; padding: 4px 6px;
  border: 1px solid #e5e5e5; border-radius: 8px; }}
#inspector-panel > * {{ flex-shrink: 0; }}
#figure1 {{ max-height: {FIGURE1_MAX_HEIGHT}; overflow: auto; }}
#tree {{ min-height: 440px; }}
#node-details blockquote {{ margin: 6px 0; padding-left: 10px; border-left: 3px solid #ddd; color: #444; }}
#node-details code {{ background: #f3f4f6; border-radius: 3px; padding: 0 3px; }}
"""
    + PLOT_SLOT_CSS
)

# the page's own script: plot.js runs as a Gradio HTML component's js_on_load does (its element, props.value, a
# trigger), once per figure slot; a node clicked opens that node's page at the same iteration
PAGE_JS = page_script("node_page.js")


def _slot(elem_id: str, empty: str) -> str:
    return f'<div id="{elem_id}">{plot_slot(elem_id, html.escape(empty))}</div>'


def _data(elem_id: str, value: object) -> str:
    """`value` as JSON in an inert script element (its text can never close the element)."""
    return f'<script type="application/json" id="{elem_id}">{_js(value)}</script>'


def node_page_parts(answer: Callable[[], NodeAnswer], plotly_src: str) -> Iterator[str]:
    """The node page in the order the browser needs it: the head, which loads plotly.js, before anything is read
    (plotly.js compiles while the server reads the run); the node's text and Figure 1 with the script that draws
    them; last the tree, drawn once Figure 1 is. `answer` reads the run; `plotly_src`: plotly.js's address,
    relative to the page. A run log that fails mid-page is said on the page (its status line has left already)."""
    katex = katex_assets()
    sheet = f'<link rel="stylesheet" href="{katex.sheet}">' if katex else ""
    options = {"plot_js": PLOT_JS, "katex": katex.script if katex else None, "latex": LATEX}
    yield (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>UATS Studio: a node</title>{sheet}<style>{NODE_PAGE_CSS}</style>"
        f'<script src="{html.escape(plotly_src)}"></script></head><body class="{katex.scope if katex else ""}">'
    )
    try:
        a = answer()  # the whole page read while plotly.js compiles: no read competes with drawing Figure 1
        yield (
            f"<script>document.title = {_js(a.title)};</script>"
            f'<div id="node-head">{markdown_html(a.head)}</div>'
            f'<div id="search-row"><div id="tree-col">{_slot("tree", EMPTY_TREE)}</div>'
            f'<div id="inspector-panel">{_slot("figure1", EMPTY_FIGURE1)}'
            f'<div id="why-panel">{allowed_html(a.why)}</div>'
            f'<div id="node-details">{markdown_html(a.node_md)}</div></div></div>'
            + _data("page-options", options)
            + _data("figure1-json", a.figure1)
            + f"<script>{PAGE_JS}</script>"
            + _data("tree-json", a.tree)
            + "<script>window.__uatsNodePage.tree();</script></body></html>"
        )
    except StorageError as exc:
        log.warning("node page: %s", exc)
        said = html.escape(hide_server_paths(exc))  # the file's name, never the folder the server keeps it in
        yield f"<p id='node-error'><b>The run log could not be read:</b> {said}</p></body></html>"


def _js(value: object) -> str:
    """`value` as a JavaScript literal inside a script element: no `<` at all (only a string can hold one, and
    `\\u003c` is the same string), so no text in it can end the element or change how the parser reads it."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")
