"""UATS Studio's Gradio page: run a search and watch its tree grow, inspect nodes, step through and
compare runs, browse runs, mine qualitative cases, export. Each tab is built by a module of ui.tabs;
this module assembles them and wires the events that span tabs.

Gradio facts this relies on (Gradio 6's component docs): gr.Plot reports no clicks, so trees are drawn by plotly.js
(ui/static/: the plotly package's version, basic build) in gr.HTML components (clicks come back with
trigger('select')); searches live in worker processes and the page polls the database with gr.Timer; gr.DownloadButton
downloads its current value, so export zips are rebuilt when the selection changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi import Request
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

from storage import RunStore, StorageError

from .auth import LoginLimiter
from .choices import ARITH, ServerChoices, server_choices
from .glossary import apply_help, column_tips_head, glossary_md
from .jobs.pool import WorkerPool
from .read_slots import ReadSlots
from .slow_clients import bound_request_heads
from .tabs.case_finder import BATCH_COLUMNS
from .tabs.cases import CASE_COLUMNS, build_cases_tab
from .tabs.common import LIVE, PLOT_JS, PLOT_SLOT_CSS, PLOTLY_HEAD, PLOTLY_PAGE_HEAD, TICK_S, AppContext, RunCache
from .tabs.compare import CompareTab, build_compare_tab
from .tabs.exports import clear_downloads, downloads_folder
from .tabs.idle import wire_idle_timer
from .tabs.links import LINKS_CSS, wire_compare_labels, wire_links
from .tabs.node_page import LINK_PREFETCH_HEAD, LINKED_FIGURE1_PATH, NODE_PATH, NodeViews, node_page_parts
from .tabs.page_state import ComparedPair, OpenRun
from .tabs.poll import wire_poll
from .tabs.reports import ReportsTab, build_reports_tab
from .tabs.runbar import RUN_BAR_CSS
from .tabs.runs import RunsTab, build_runs_tab
from .tabs.search import build_search_tab
from .tabs.search_events import dataset_view_keeping
from .tabs.search_layout import INSPECTOR_CSS
from .views.comparison import COMPARE_COLUMNS
from .views.counterfactual import COLUMNS as FOUND_COLUMNS
from .views.export import ExportQuota, owner_folder
from .views.report_sources import ReportSources
from .views.run_status import RUN_COLUMNS, RUNS_TABLE_CSS
from .views.safe_text import hide_server_paths
from .views.uncertainty import CHANGED_COLUMNS
from .web_guard import PAGE_PLOTLY_JS, PLOTLY_URL, DownloadGuard, WebGuard, WebPolicy

__all__ = ["CSS", "LIVE", "PLOT_JS", "PLOTLY_HEAD", "TICK_S", "RunCache", "build_demo", "launch_kwargs"]

# the attribute of the Blocks that holds its node page's answers (build_demo sets it; the node page's route reads it)
NODE_VIEWS = "uats_node_views"
CSS = (
    """
#notice { border-left: 4px solid #d95f02; background: #fff4ec; padding: 6px 12px; border-radius: 4px; }
#notice.ok { border-left-color: #1b9e77; background: #eefaf5; }
#brand h1 { margin-bottom: 0; font-size: 1.6em; }
#brand p { margin-top: 2px; color: #555; }
/* a dropdown's chosen text ends before its arrow (a long problem's text ran under it) */
.secondary-wrap input { padding-right: 22px !important; text-overflow: ellipsis; }
"""
    + PLOT_SLOT_CSS
    + LINKS_CSS
    + RUN_BAR_CSS
    + INSPECTOR_CSS
    + RUNS_TABLE_CSS
)
# the tables whose column headers get their help as a tooltip (ui.glossary), by elem_id
TABLES = {
    "cmp-table": COMPARE_COLUMNS,
    "cmp-changed": CHANGED_COLUMNS,
    "cf-table": FOUND_COLUMNS,
    "cf-batches": BATCH_COLUMNS,
    "runs-table": RUN_COLUMNS,
    "cases-table": CASE_COLUMNS,
}


def _wire_page(
    demo: gr.Blocks,
    ctx: AppContext,
    runs: RunsTab,
    compare: CompareTab,
    reports: ReportsTab,
    dataset: gr.Dropdown,
    problem: gr.Dropdown,
    question: gr.Markdown,
) -> None:
    """Events that span tabs: the first load fills the problem list, runs and pickers; switching tabs
    refreshes the runs and the training curves (opening Compare refreshes its pickers and draws the pair picked:
    ui/tabs/compare.py)."""

    def on_load(s: OpenRun, cs: ComparedPair, ds: str | None, pid: str | None) -> dict[Any, Any]:
        # the form as it is when this answer is made: a user may have picked a problem set or a problem already
        problems, first, said = dataset_view_keeping(ctx.choices, ds or ARITH, pid)
        pick_a, pick_b = compare.on_tab_compare(s, cs)
        out = {
            problem: problems,
            question: first,
            **runs.list_runs("(any)", "(any)", "(any)"),
            compare.cmp_a: pick_a,
            compare.cmp_b: pick_b,
        }
        if said.get("visible"):  # something wrong; else the message line is left to a link's message
            out[ctx.notice] = said
        return out

    demo.load(
        on_load,
        [ctx.run_state, ctx.pair_state, dataset, problem],
        [problem, question, ctx.notice, *runs.outputs, compare.cmp_a, compare.cmp_b],
    )
    ctx.tabs.change(
        lambda m, p, o, db, cur: {**runs.list_runs(m, p, o), reports.curve_pick: reports.on_curve_list(db, cur)},
        [runs.r_method, runs.r_problem, runs.r_outcome, reports.source, reports.curve_pick],
        [*runs.outputs, reports.curve_pick],
    )


class StudioBlocks(gr.Blocks):
    """Gradio's Blocks whose server, once started, drops a connection whose request head is slower than
    ui/slow_clients.py's HEAD_TIMEOUT_S (Gradio passes no uvicorn setting through launch)."""

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        blocking = not kwargs.get("prevent_thread_lock", False)
        out = super().launch(*args, **{**kwargs, "prevent_thread_lock": True})
        bound_request_heads(getattr(self, "server", None))
        if blocking:
            self.block_thread()
        return out


def build_demo(
    store: RunStore,
    pool: WorkerPool,
    export_dir: str | Path,
    reports_dir: str | Path | None = None,
    choices: ServerChoices | None = None,
    ledgers_dir: str | Path | None = None,
    export_quota: ExportQuota | None = None,
) -> gr.Blocks:
    """The whole page. `store` is the app's reader; workers open their own connection to store.location.
    The Reports tab reads the results ledgers in `ledgers_dir`, the run log and the SQLite files in
    `reports_dir`, nothing a browser names; a search loads only the models and problem sets of `choices`
    (default: the embedded and shipped ones)."""
    # Exports are served from Gradio's cache without a copy of Gradio's (ui.tabs.exports.downloads_folder); anything
    # else Gradio caches goes after an hour, checked every 10 minutes
    with StudioBlocks(title="UATS Studio", delete_cache=(600, 3600)) as demo:
        run_state, pair_state = gr.State(OpenRun()), gr.State(ComparedPair())  # the open run, the compared pair
        gr.Markdown(
            "# UATS Studio\nPRM-guided tree search with Monte-Carlo-dropout uncertainty: watch where the "
            "process reward model is unsure. Symbols (R̄, σ², τ, δ, B, C, …): the Glossary at the bottom; "
            "every knob says what it does.",
            elem_id="brand",
        )
        notice = gr.Markdown("", elem_id="notice", visible=False)
        timer = gr.Timer(TICK_S, active=True)
        with gr.Tabs(selected="search") as tabs:
            ctx = AppContext(
                store=store,
                pool=pool,
                cache=RunCache(store),
                export_dir=Path(export_dir).resolve(),
                notice=notice,
                timer=timer,
                tabs=tabs,
                run_state=run_state,
                pair_state=pair_state,
                choices=choices or server_choices(),
                # a click's reads off the queue: bounded as the node page's are
                off_queue=ReadSlots(NODE_PAGE_READERS, NODE_PAGE_READERS_PER_USER),
                export_quota=export_quota or ExportQuota(),
                downloads=clear_downloads(export_dir),
            )
            with gr.Tab("Search", id="search"):
                search = build_search_tab(ctx)
            with gr.Tab("Compare", id="compare") as compare_tab:
                compare = build_compare_tab(ctx, search, compare_tab)
            with gr.Tab("Runs", id="runs"):
                runs = build_runs_tab(ctx, search)
            with gr.Tab("Cases", id="cases"):
                build_cases_tab(ctx, search)
            with gr.Tab("Reports", id="reports"):
                reports = build_reports_tab(ctx, ReportSources(store, reports_dir, ledgers_dir))
        with gr.Accordion("Glossary: every symbol and term on this page", open=False, elem_id="glossary"):
            gr.Markdown(glossary_md(), elem_id="glossary-text")
        apply_help(demo)
        _wire_page(
            demo, ctx, runs, compare, reports, search.form["dataset"], search.form["problem"], search.question_md
        )
        wire_links(demo, ctx, search)
        wire_compare_labels(ctx, compare.cmp_a, compare.cmp_b)
        wire_idle_timer(ctx)
        wire_poll(ctx)  # last: every part is registered
    setattr(demo, NODE_VIEWS, NodeViews(ctx))  # the node page's answers (guarded_app serves its route)
    return demo


def guarded_app(
    policy: WebPolicy | None = None, logins: LoginLimiter | None = None, downloads: Path | None = None
) -> Any:
    """Gradio's app class with ui/web_guard.py's WebGuard around its whole middleware stack, outside Gradio's own
    CORS handling (a middleware given to Gradio sits inside it, where a preflight never reaches). Blocks.launch
    takes it as `_app`, the way Gradio's own Server mode hands its app over; Gradio adds its routes to it.
    `downloads`: the folder exports are served from, each owner's to them alone (DownloadGuard)."""
    from gradio.routes import App, ORJSONResponse

    chosen, limiter = policy or WebPolicy(), logins or LoginLimiter()

    class GuardedApp(App):
        def signed_in_user(self, cookies: dict[str, str]) -> str | None:
            """Who Gradio's login cookie names (routes.py's get_current_user reads the same two cookies)."""
            token = cookies.get(f"access-token-{self.cookie_id}") or cookies.get(
                f"access-token-unsecure-{self.cookie_id}"
            )
            return self.tokens.get(token) if token else None

        def build_middleware_stack(self) -> Any:
            guard = (
                None
                if downloads is None
                else DownloadGuard(
                    downloads,
                    lambda user: owner_folder(f"user:{user}"),
                    self.signed_in_user,
                    lambda: self.auth is not None,
                )
            )
            return WebGuard(super().build_middleware_stack(), chosen, limiter, PAGE_PLOTLY_JS, guard)

    app = GuardedApp(default_response_class=ORJSONResponse)  # what Gradio's create_app gives its own app
    _add_node_page(app)
    return app


def _add_node_page(app: Any) -> None:
    """The node's own page at NODE_PATH (ui/tabs/node_page.py), written by the server, and the Figure 1 a studio
    address opens with at LINKED_FIGURE1_PATH (JSON): routes of the app, added before Gradio adds its own. With a
    login, a browser that is not signed in is sent to the login form (the Figure 1 answers 401). At most
    NODE_PAGE_READERS of them are read at once, NODE_PAGE_READERS_PER_USER of them one user's (the signed-in user,
    else the client's address: without a login the app listens on loopback alone); others wait their turn. HEAD
    answers the page's headers and reads nothing."""
    slots: list[ReadSlots] = []  # made at the first read: the bounds are read then (tests set them)
    headers = {"Cache-Control": "no-store"}

    def held(reader: str) -> Any:
        if not slots:
            slots.append(ReadSlots(NODE_PAGE_READERS, NODE_PAGE_READERS_PER_USER))
        return slots[0].held(reader)

    def asked(request: Request) -> tuple[Any, str | None]:
        """(the app's NodeViews, or None when it has none; the reader the request counts against, or None for a
        browser that must sign in first)."""
        views = getattr(app.blocks, NODE_VIEWS, None)
        user = app.signed_in_user(dict(request.cookies)) if app.auth is not None else None
        if app.auth is not None and user is None:
            return views, None
        return views, f"user:{user}" if user else f"client:{request.client.host if request.client else '?'}"

    async def bounded(parts: Iterator[str], reader: str) -> AsyncIterator[str]:
        yield next(parts)  # the head, which loads plotly.js: it reads nothing
        async with held(reader):
            rest = await asyncio.to_thread(list, parts)  # the run read and written, off the event loop
        for part in rest:
            yield part

    async def node_page(request: Request) -> Response:
        views, reader = asked(request)
        if views is None:
            return Response("no node page on this app", status_code=404)
        if reader is None:
            return RedirectResponse("./", status_code=303)
        if request.method == "HEAD":
            return Response(media_type=NODE_PAGE_TYPE, headers=headers)
        params = dict(request.query_params)
        # streamed: the page's head leaves before the run is read; plotly.js from the page's own address (the web
        # guard serves it), relative as the page's other links
        parts = node_page_parts(lambda: views.answer(params), "." + PLOTLY_URL)
        return StreamingResponse(bounded(parts, reader), media_type=NODE_PAGE_TYPE, headers=headers)

    async def linked_figure1(request: Request) -> Response:
        views, reader = asked(request)
        if views is None:
            return JSONResponse({"error": "no node page on this app"}, status_code=404, headers=headers)
        if reader is None:
            return JSONResponse({"error": "sign in first"}, status_code=401, headers=headers)
        params = dict(request.query_params)
        try:
            async with held(reader):
                node, figure1 = await asyncio.to_thread(views.linked_figure1, params)
        except (ValueError, StorageError) as exc:  # the page's load says the same in its message line
            return JSONResponse({"error": hide_server_paths(str(exc))}, status_code=400, headers=headers)
        return JSONResponse({"node": node, "figure1": figure1}, headers=headers)

    app.add_api_route(NODE_PATH, node_page, methods=["GET", "HEAD"], include_in_schema=False)
    app.add_api_route(LINKED_FIGURE1_PATH, linked_figure1, methods=["GET"], include_in_schema=False)


NODE_PAGE_TYPE = "text/html; charset=utf-8"
# Gradio's queue as the launcher sets it: up to 8 calls of one event at once (the page's poll, buttons, several
# tabs; a click on a tree node goes off the queue); the benchmarks serve the app with it too, so they time what
# `uats-studio` serves.
QUEUE_KWARGS: dict[str, Any] = {"default_concurrency_limit": 8}
# node pages read at once (ui/tabs/node_page.py), as many as the queue runs calls of one event: a page is one read
# (and a click's reads off the queue, ui/tabs/common.py AppContext.read_off_queue, as many)
NODE_PAGE_READERS: int = QUEUE_KWARGS["default_concurrency_limit"]
# of them one user's: twenty links one user opens at once leave the other places to others' pages
NODE_PAGE_READERS_PER_USER: int = 2


def launch_kwargs(
    export_dir: str | Path, policy: WebPolicy | None = None, logins: LoginLimiter | None = None
) -> dict[str, Any]:
    """Gradio 6 takes css/head at launch(); exports are served from their copies in Gradio's cache
    (ui.tabs.exports.downloads_folder), never from the export folder itself, which Gradio's file route refuses
    (blocked: any user could read another's export by its folder's name). No run history:
    Gradio would copy every event's inputs and outputs (trees of a megabyte) into localStorage, which took
    most of a node click's time on a 2,000-node tree and kept an idle page's main thread busy. The app behind
    WebGuard (`policy`: default loopback names only; `logins`: the failed-login limiter, a fresh one by default): no
    uploads (max_file_size caps them should the route ever be reached), no other origin, no oversized body. No
    error text to the page: an exception's message can quote the run log's SQL; Gradio logs it on the server
    instead. The start-up check is the launcher's (ui.launch.wait_until_answering), patient on a loaded machine."""
    return {
        "css": CSS,
        "head": PLOTLY_PAGE_HEAD + LINK_PREFETCH_HEAD + column_tips_head(TABLES),
        "blocked_paths": [str(Path(export_dir).resolve())],
        "run_history": False,
        "max_file_size": "1kb",
        "show_error": False,
        # no Gradio self-check (one HEAD, 3 s): ui.launch.wait_until_answering waits for the server instead
        "_frontend": False,
        "_app": guarded_app(policy, logins, downloads_folder(export_dir)),
    }
