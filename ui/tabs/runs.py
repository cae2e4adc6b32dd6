"""The Runs tab: every stored run, filtered by method, problem and outcome; selecting a row opens the run
in the Search tab."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr

from .run_form import method_choices

from ..views.run_status import RUN_COLUMNS, run_rows
from .common import AppContext, notice, row_of, skips
from .search import SearchPage

OUTCOMES = ["(any)", "right", "wrong", "running", "queued", "failed", "cancelled", "finished"]


@dataclass
class RunsTab:
    """What the page-level events need: the filters, and the outputs of list_runs."""

    r_method: gr.Dropdown
    r_problem: gr.Dropdown
    r_outcome: gr.Dropdown
    outputs: list[Any]
    list_runs: Callable[[str | None, str | None, str | None], tuple[Any, ...]]


def build_runs_tab(ctx: AppContext, search: SearchPage) -> RunsTab:
    """The tab's components and events; call inside its `gr.Tab`."""
    run_ids_state = gr.State([])  # the run id of each table row, in order
    with gr.Row():
        r_method = gr.Dropdown(["(any)"] + method_choices(), value="(any)", label="method", elem_id="r-method")
        r_problem = gr.Dropdown(["(any)"], value="(any)", label="problem", allow_custom_value=True,
                                elem_id="r-problem")
        r_outcome = gr.Dropdown(OUTCOMES, value="(any)", label="outcome", elem_id="r-outcome")
        r_refresh = gr.Button("Refresh", elem_id="r-refresh")
    runs_table = gr.Dataframe(headers=RUN_COLUMNS, interactive=False, elem_id="runs-table", wrap=True)
    gr.Markdown("Select a row to open the run in **Search**.")

    def list_runs(m, p, o):
        status = o if o in ("running", "queued", "failed", "cancelled", "finished") else None
        correct = {"right": True, "wrong": False}.get(o)
        runs = ctx.store.list_runs(method=None if m in (None, "(any)") else m,
                                   problem_id=None if p in (None, "(any)", "") else p,
                                   status="finished" if correct is not None else status, correct=correct, limit=500)
        problems = ["(any)"] + ctx.store.distinct_values("problem_id")
        return (gr.update(value=run_rows(runs)), [r["run_id"] for r in runs], gr.update(choices=problems))

    outputs = [runs_table, run_ids_state, r_problem]
    for comp in (r_method, r_problem, r_outcome):
        comp.input(list_runs, [r_method, r_problem, r_outcome], outputs)
    r_refresh.click(list_runs, [r_method, r_problem, r_outcome], outputs)

    viewer = search.viewer
    assert viewer is not None

    def on_runs_select(s, ids, evt: gr.SelectData, **view):
        row = row_of(evt)
        if row is None or row >= len(ids):
            return (s, notice("that row is no longer in the list; refresh"), *skips(9))
        return viewer.open_run(s, ids[row], **view)

    runs_table.select(on_runs_select, [ctx.st, run_ids_state], viewer.open_outputs, inputs_kwargs=search.filters)
    return RunsTab(r_method=r_method, r_problem=r_problem, r_outcome=r_outcome, outputs=outputs, list_runs=list_runs)
