"""Shareable, keyboard-driven views: the address bar carries what the user chose (the open run, the node they
picked, the iteration they stepped to: ?run=…&node=…&t=…) and opening such an address restores that view, with
a message that stays for a run or node that does not exist; ← and → step iterations.
Also keeps the Compare pickers' run labels current while their runs move on from queued."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import StorageError

from ..views.run_status import outcome, run_label
from ..views.scripts import page_script
from ..views.treedata import RunData
from .common import LIVE, AppContext, RunReads, notice
from .page_state import ComparedPair, OpenRun
from .search import SearchPage
from .viewer import RunViewer

LINKS_JS = page_script("links.js")  # the address bar follows the view; ←/→ step iterations

LINKS_CSS = "#url-sync { display: none; }\n"


def int_param(params: Any, name: str) -> int | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(
            f"{name}: {raw!r} in the address is not a whole number; remove it or give e.g. {name}=3"
        ) from None


@dataclass(frozen=True)
class LinkedView:
    """What a studio address names: the run opened at its iteration and the node selected; `missing` the message
    for a node the tree there does not hold (then none is selected); `data` the run as read to find both."""

    s: OpenRun
    missing: str | None
    data: RunData


def linked_view(ctx: AppContext, s: OpenRun, params: Mapping[str, str]) -> LinkedView | None:
    """The view the studio's address (?run=…&node=…&t=…, `params`) opens from `s`: its page load's (wire_links) and
    the prefetch of its Figure 1 (ui/tabs/node_page.py NodeViews.linked_figure1) alike. None when it names no run;
    ValueError (a number that is not one) or StorageError (no such run) with the line to show."""
    run_ref = (params.get("run") or "").strip()
    if not run_ref:
        return None
    t, node = int_param(params, "t"), int_param(params, "node")
    s = s.opened(ctx.store.find_run(run_ref)["run_id"])
    data = ctx.cache.get(s.run_id)
    if t is not None:
        t = max(0, min(t, data.max_iteration))
        s.t = None if (t >= data.max_iteration and data.run["status"] in LIVE) else t
    missing = None if node is None else RunViewer.missing_node(str(s.run_id), data.state_at(s.t), node)
    s.selected = None if missing else node
    return LinkedView(s, missing, data)


def address_sync() -> gr.HTML:
    """A hidden component whose script keeps the address bar on the view shown (and binds ←/→)."""
    return gr.HTML(value="", elem_id="url-sync", js_on_load=LINKS_JS, html_template="<span></span>", padding=False)


def wire_links(demo: gr.Blocks, ctx: AppContext, search: SearchPage) -> None:
    """The address-bar sync and arrow keys (a hidden component's script) and opening ?run=&node=&t=."""
    address_sync()
    viewer = search.viewer
    assert viewer is not None

    def open_from_url(s: OpenRun, request: gr.Request, **view: Any) -> Any:
        try:
            linked = linked_view(ctx, s, request.query_params if request is not None else {})
        except (ValueError, StorageError) as exc:  # a bad number, or no such run: the message says why
            return {ctx.notice: notice(str(exc))}
        if linked is None:
            return gr.skip()
        s = linked.s
        if s.selected is not None:  # the node first; its tree in the answer after (the_rest)
            return viewer.node_first(s)
        out = viewer.opened_view(s, view)
        out[ctx.notice] = notice(linked.missing or "")
        return out

    def the_rest(s: OpenRun, request: gr.Request, **view: Any) -> Any:
        """A link's tree, status and charts, once its node's Figure 1 is on its way (node_first)."""
        try:
            node = int_param(request.query_params if request is not None else {}, "node")
        except ValueError:
            return gr.skip()  # the first answer said why
        if node is None or not s.run_id or s.selected is None:
            return gr.skip()  # no node linked: the first answer opened the whole run (or said why not)
        # the node selected may be another by now (a row of the linked Figure 1 clicked as the first answer came:
        # ui/js/plot.js sends it then): the page is completed all the same, its tree ringed on the node selected
        return viewer.link_rest(s, view)

    every = list(dict.fromkeys([*viewer.open_outputs, *viewer.link_outputs]))
    demo.load(open_from_url, [ctx.run_state], every, inputs_kwargs=search.filters).then(
        the_rest, [ctx.run_state], viewer.link_rest_outputs, inputs_kwargs=search.filters
    )


def wire_compare_labels(ctx: AppContext, cmp_a: gr.Dropdown, cmp_b: gr.Dropdown) -> None:
    """Refresh the Compare pickers' labels when a picked run's outcome changes (queued → running → …)."""
    seen = gr.State({})

    def on_tick(cs: ComparedPair, last: dict[str, Any], reads: RunReads) -> Any:
        ids = [r for r in (cs.a, cs.b) if r]
        if not ids:
            return gr.skip()
        try:
            now = {r: outcome(reads.run(r)) for r in ids}
        except Exception:  # noqa: BLE001 - a run deleted meanwhile: leave the pickers as they are
            return gr.skip()
        if now == last:
            return gr.skip()
        choices = [(run_label(r), r["run_id"]) for r in ctx.store.list_runs(limit=300)]
        return {seen: now, cmp_a: gr.update(choices=choices), cmp_b: gr.update(choices=choices)}

    ctx.poll.add(on_tick, [ctx.pair_state, seen], [seen, cmp_a, cmp_b], with_reads=True)
