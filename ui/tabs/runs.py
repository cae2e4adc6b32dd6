"""The Runs tab: every stored run, filtered by method, problem and outcome; selecting a row opens the run
in the Search tab. Below, importing another tool's run (llm-reasoners, search-and-learn, TreeQuest) from the files
the server lists (--imports-dir): a job of the worker pool (ui.jobs.import_job)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from uats_core.imports import TOOLS
from uats_core.problems import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS
from uats_core.status import RunStatus

from ..access import requester
from ..jobs.import_job import submit_import
from ..jobs.pool import session_of
from ..views.run_status import RUN_COLUMNS, RUN_WIDTHS, run_rows
from .common import SHOW_SEARCH_JS, AppContext, notice, row_of
from .page_state import OpenRun
from .run_form import method_choices
from .search import SearchPage
from .search_events import DB_ERRORS, FORM_ERRORS, db_failure

OUTCOMES = [
    "(any)",
    "right",
    "wrong",
    *(str(s) for s in (RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.FINISHED)),
]


@dataclass
class RunsTab:
    """What the page-level events need: the filters, and the outputs of list_runs (which returns them by
    component)."""

    r_method: gr.Dropdown
    r_problem: gr.Dropdown
    r_outcome: gr.Dropdown
    outputs: list[Any]
    list_runs: Callable[[str | None, str | None, str | None], dict[Any, Any]]


def build_runs_tab(ctx: AppContext, search: SearchPage) -> RunsTab:
    """The tab's components and events; call inside its `gr.Tab`."""
    run_ids_state = gr.State([])  # the run id of each table row, in order
    with gr.Row():
        r_method = gr.Dropdown(["(any)"] + method_choices(), value="(any)", label="method", elem_id="r-method")
        r_problem = gr.Dropdown(["(any)"], value="(any)", label="problem", allow_custom_value=True, elem_id="r-problem")
        r_outcome = gr.Dropdown(OUTCOMES, value="(any)", label="outcome", elem_id="r-outcome")
        r_refresh = gr.Button("Refresh", elem_id="r-refresh")
    runs_table = gr.Dataframe(
        headers=RUN_COLUMNS, column_widths=RUN_WIDTHS, interactive=False, elem_id="runs-table", wrap=True
    )
    gr.Markdown("Select a row to open the run in **Search**.")

    def list_runs(m, p, o):
        status = o if o in tuple(RunStatus) else None
        correct = {"right": True, "wrong": False}.get(o)
        runs = ctx.store.list_runs(
            method=None if m in (None, "(any)") else m,
            problem_id=None if p in (None, "(any)", "") else p,
            status=RunStatus.FINISHED if correct is not None else status,
            correct=correct,
            limit=500,
        )
        problems = ["(any)"] + ctx.store.distinct_values("problem_id")
        return {
            runs_table: gr.update(value=run_rows(runs)),
            run_ids_state: [r["run_id"] for r in runs],
            r_problem: gr.update(choices=problems),
        }

    outputs = [runs_table, run_ids_state, r_problem]
    for comp in (r_method, r_problem, r_outcome):
        comp.input(list_runs, [r_method, r_problem, r_outcome], outputs)
    r_refresh.click(list_runs, [r_method, r_problem, r_outcome], outputs)

    viewer = search.viewer
    assert viewer is not None

    def on_runs_select(s: OpenRun, ids: list[str], evt: gr.SelectData, **view: Any) -> Any:
        row = row_of(evt)
        if row is None or row >= len(ids):
            return {ctx.notice: notice("that row is no longer in the list; refresh")}
        return viewer.open_run(s, ids[row], **view)

    runs_table.select(
        on_runs_select, [ctx.run_state, run_ids_state], viewer.open_outputs, inputs_kwargs=search.filters
    ).then(None, js=SHOW_SEARCH_JS)
    i_file = _import_section(ctx, [r_method, r_problem, r_outcome], outputs, list_runs)

    def list_files(current: Any) -> Any:  # the import folders again: a file put there since is offered now
        files = ctx.choices.refresh_imports()
        return gr.update(choices=files, value=current if current in files else (files[0] if files else None))

    r_refresh.click(list_files, [i_file], [i_file])
    return RunsTab(r_method=r_method, r_problem=r_problem, r_outcome=r_outcome, outputs=outputs, list_runs=list_runs)


def _import_section(ctx: AppContext, filters: list[Any], outputs: list[Any], list_runs: Callable[..., Any]) -> Any:
    """Import a run another tool wrote, from a file the server lists; the list refreshes with the queued run.
    Returns the file dropdown (Refresh lists the folders again)."""
    files = list(ctx.choices.imports)
    with gr.Accordion("Import a run from another tool", open=bool(files), elem_id="import-box"):
        gr.Markdown(
            "Files of llm-reasoners (its tree log, written with `uats_studio.llm_reasoners."
            "export_llm_reasoners`), search-and-learn (`*_completions.jsonl` or the Hub's Parquet, one row "
            'per problem) and TreeQuest (`treequest.render(state, name, format="json")` or `"yaml"`) in '
            "the server's import folders. llm-reasoners' and TreeQuest's files hold no question: type it (and "
            "the gold answer, to grade). An imported run holds the tool's own score per node and no MC "
            "passes: open it, then **Shadow-score this run** (Search tab) adds R̄ and σ² to every node."
            if files
            else "This server lists no files to import: put one in its import folder (`--imports-dir DIR`) and "
            "press **Refresh**."
        )
        with gr.Row():
            i_file = gr.Dropdown(files, value=files[0] if files else None, label="file", elem_id="import-file", scale=3)
            i_tool = gr.Dropdown(list(TOOLS), value=TOOLS[0], label="written by", elem_id="import-tool", scale=2)
            i_row = gr.Number(0, label="row (search-and-learn)", precision=0, minimum=0, elem_id="import-row", scale=1)
            i_btn = gr.Button("Import", variant="primary", elem_id="import-btn", scale=1)
        with gr.Row():
            i_question = gr.Textbox(
                label="question (llm-reasoners, TreeQuest: their files hold none)",
                lines=2,
                max_length=MAX_QUESTION_CHARS,
                elem_id="import-question",
                scale=3,
            )
            i_gold = gr.Textbox(
                label="gold answer (optional: grades the answers)",
                max_length=MAX_ANSWER_CHARS,
                elem_id="import-gold",
                scale=1,
            )

    def on_import(tool, name, row, question, gold, m, p, o, request: gr.Request):
        try:
            run_id = submit_import(
                ctx.store,
                ctx.pool,
                ctx.choices,
                tool,
                name,
                row,
                owner=requester(request),
                session=session_of(request),
                question=question,
                gold=gold,
            )
        except FORM_ERRORS as exc:
            return {ctx.notice: notice(str(exc))}
        except DB_ERRORS as exc:
            return {ctx.notice: notice(db_failure(exc))}
        return {
            ctx.notice: notice(
                f"import of {name} queued as run {run_id[:8]}; select it in the list to open it", ok=True
            ),
            **list_runs(m, p, o),
        }

    i_btn.click(on_import, [i_tool, i_file, i_row, i_question, i_gold, *filters], [ctx.notice, *outputs])
    return i_file
