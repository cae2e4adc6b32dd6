"""Shareable, keyboard-driven views: the address bar carries what the user chose (the open run, the node they
picked, the iteration they stepped to: ?run=…&node=…&t=…) and opening such an address restores that view, with
a message that stays for a run or node that does not exist; ← and → step iterations.
Also keeps the Compare pickers' run labels current while their runs move on from queued."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..views.run_status import outcome, run_label
from ..views.scripts import page_script
from .common import LIVE, AppContext, RunReads, notice
from .page_state import ComparedPair, OpenRun
from .search import SearchPage

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


def address_sync() -> gr.HTML:
    """A hidden component whose script keeps the address bar on the view shown (and binds ←/→)."""
    return gr.HTML(value="", elem_id="url-sync", js_on_load=LINKS_JS, html_template="<span></span>", padding=False)


def wire_links(demo: gr.Blocks, ctx: AppContext, search: SearchPage) -> None:
    """The address-bar sync and arrow keys (a hidden component's script) and opening ?run=&node=&t=."""
    address_sync()
    viewer = search.viewer
    assert viewer is not None

    def open_from_url(s: OpenRun, request: gr.Request, **view: Any) -> Any:
        params = request.query_params if request is not None else {}
        run_ref = (params.get("run") or "").strip()
        if not run_ref:
            return gr.skip()
        try:
            t, node = int_param(params, "t"), int_param(params, "node")
        except ValueError as exc:
            return {ctx.notice: notice(str(exc))}
        found = viewer.find_run(s, run_ref)
        if isinstance(found, dict):  # the run was not found: the message says why
            return found
        s = found
        data = ctx.cache.get(s.run_id)
        if t is not None:
            t = max(0, min(t, data.max_iteration))
            s.t = None if (t >= data.max_iteration and data.run["status"] in LIVE) else t
        missing = None if node is None else viewer.missing_node(s.run_id, data.state_at(s.t), node)
        s.selected = None if missing else node
        if s.selected is not None:  # the node first; its tree in the answer after (the_rest)
            return viewer.node_first(s)
        out = viewer.opened_view(s, view)
        out[ctx.notice] = notice(missing or "")
        return out

    def the_rest(s: OpenRun, request: gr.Request, **view: Any) -> Any:
        """A link's tree, status and charts, once its node's Figure 1 is on its way (node_first)."""
        try:
            node = int_param(request.query_params if request is not None else {}, "node")
        except ValueError:
            return gr.skip()  # the first answer said why
        if not s.run_id or s.selected is None or node != s.selected:
            return gr.skip()  # no node linked: the first answer opened the whole run (or said why not)
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
