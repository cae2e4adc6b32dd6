"""UATS Studio's notebook API: a stored run as pandas DataFrames and Plotly figures, with no Gradio and no server.

    from uats_studio import list_runs, open_run

    runs = list_runs("runs/uats.db")            # one row per run, newest first
    run = open_run("runs/uats.db", runs.run_id[0])  # an id or a unique prefix of one
    run.nodes        # one row per node: its step, status, R̄ (mean), σ² (var), K, ... and its shadow R̄/σ²/K
    run.decisions    # one row per (iteration, node decided on): children granted, extra passes, the δ rule's numbers
    run.passes       # one row per MC pass: node, which pass, score, and whether the run paid for it ("run") or
                     # shadow scoring added it ("shadow")
    run.tree()       # the tree after the last iteration as a plotly Figure (run.tree(3): after iteration 3)
    run.figure1(7)   # the paper's Figure 1 for node 7's step

The figures are the app's own (ui/views: treefig, figure1), so a notebook shows what the app shows. The run log is
opened read-only when it is a SQLite file (nothing a notebook does can change it); an SQLAlchemy URL is opened as
given. docs/notebooks/open_run.ipynb is an example CI executes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from storage import RunStore, StorageError, open_read_only
from storage.damage import READ_ERRORS, damaged, find_damage, raw_run_ids
from storage.shadow import read_shadow
from ui.views.cases import StepJudge
from ui.views.decisions import step_of
from ui.views.figure1 import PER_PAGE, step_figure
from ui.views.run_status import RUN_COLUMNS, run_rows
from ui.views.treedata import RunData, TreeState
from ui.views.treefig import tree_figure
from ui.views.treeview import ViewOptions

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["Run", "open_run", "list_runs"]

NODE_COLUMNS = [
    "node_id",
    "parent_id",
    "depth",
    "step",
    "status",
    "mean",
    "var",
    "k",
    "ucb",
    "ood",
    "logit_var",
    "created_iter",
    "scored_iter",
    "reeval_iter",
    "expanded_iter",
    "extra_passes",
    "children_granted",
    "num_tokens",
    "finish_reason",
    "answer",
    "correct",
    "voted",
    "shadow_mean",
    "shadow_var",
    "shadow_k",
    "shadow_ood",
]
_INT_COLUMNS = (
    "parent_id",
    "depth",
    "k",
    "created_iter",
    "scored_iter",
    "reeval_iter",
    "expanded_iter",
    "extra_passes",
    "children_granted",
    "num_tokens",
    "shadow_k",
)
DECISION_COLUMNS = [
    "iteration",
    "node_id",
    "children",
    "status",
    "extra_passes",
    "ood",
    "reeval_candidate",
    "mean_before",
    "var_before",
    "ucb_before",
    "k_before",
    "mean",
    "var",
    "ucb",
    "k",
    "child_score",
]
PASS_COLUMNS = ["node_id", "source", "pass_index", "initial", "score"]


def _store(db: str | Path) -> RunStore:
    spec = str(db)
    return RunStore(spec) if "://" in spec else open_read_only(spec)


def list_runs(db: str | Path, limit: int = 500) -> pd.DataFrame:
    """The runs of a run log, newest first: the Runs tab's columns with the full run id."""
    store = _store(db)
    try:
        runs = store.list_runs(limit=limit)
    finally:
        store.close()
    frame = pd.DataFrame(run_rows(runs), columns=RUN_COLUMNS)
    frame["run"] = [r["run_id"] for r in runs]
    return frame.rename(columns={"run": "run_id"})


@dataclass
class Run:
    """One stored run, loaded once (RunData); every table and figure is built from it, none touches the log."""

    data: RunData
    shadow: dict[int, dict[str, Any]]

    @property
    def info(self) -> dict[str, Any]:
        """The run's row: method, problem, question, config, answer, correct, cost, status, ..."""
        return dict(self.data.run)

    @property
    def max_iteration(self) -> int:
        return self.data.max_iteration

    def state(self, iteration: int | None = None) -> TreeState:
        """The tree after `iteration` (None: as stored at the end), replayed from the log."""
        return self.data.state_at(iteration)

    @property
    def nodes(self) -> pd.DataFrame:
        rows = []
        for nid, n in sorted(self.data.nodes.items()):
            sh = self.shadow.get(nid) or {}
            rows.append(
                {
                    **{c: n.get(c) for c in NODE_COLUMNS},
                    "node_id": nid,
                    "k": len(n.get("mc_scores") or []),
                    "shadow_mean": sh.get("mean"),
                    "shadow_var": sh.get("var"),
                    "shadow_k": len(sh.get("mc_scores") or []) if sh else None,
                    "shadow_ood": sh.get("ood"),
                }
            )
        frame = pd.DataFrame(rows, columns=NODE_COLUMNS)
        for col in _INT_COLUMNS:  # pandas' nullable integers: the root has no parent, a node no shadow passes
            frame[col] = frame[col].astype("Int64")
        return frame.set_index("node_id")

    @property
    def decisions(self) -> pd.DataFrame:
        rows = [{"iteration": t, **d.to_dict()} for t in sorted(self.data.iterations) for d in self.data.step(t)[0]]
        return pd.DataFrame(rows, columns=DECISION_COLUMNS)

    @property
    def passes(self) -> pd.DataFrame:
        rows = []
        for nid, n in sorted(self.data.nodes.items()):
            first = int(n.get("initial_passes") or 0)
            rows += [
                {"node_id": nid, "source": "run", "pass_index": i, "initial": i < first, "score": float(s)}
                for i, s in enumerate(n.get("mc_scores") or [])
            ]
        for nid, sh in sorted(self.shadow.items()):
            rows += [
                {"node_id": nid, "source": "shadow", "pass_index": i, "initial": False, "score": float(s)}
                for i, s in enumerate(sh.get("mc_scores") or [])
            ]
        return pd.DataFrame(rows, columns=PASS_COLUMNS)

    def tree(self, iteration: int | None = None, view: ViewOptions | None = None, height: int = 600) -> go.Figure:
        """The tree after `iteration` as the app draws it (shadow marks included), as a plotly Figure."""
        fig = tree_figure(
            self.state(iteration),
            view,
            height=height,
            shadow=self.shadow or None,
            title=f"{self.data.run.get('method')} on {self.data.run.get('problem_id')}",
        )
        return _figure(fig)

    def figure1(
        self, node_id: int, iteration: int | None = None, sort_by: str = "parent", per_page: int = PER_PAGE
    ) -> go.Figure:
        """The paper's Figure 1 for node_id's step, as the app draws it: every candidate of the step, one row each
        (grouped by parent, or sorted by mean / stat / ucb), its passes, their shape, the σ² its gate read
        against τ and its numbers and decision."""
        state = self.state(iteration)
        step = step_of(self.data, node_id, state.iteration) if node_id in state.nodes and node_id != 0 else None
        if step is None:
            raise KeyError(
                f"node {node_id}: no scored step at iteration {state.iteration}; pick one of run.nodes.index"
            )
        judge = StepJudge(self.state(None))
        return _figure(
            step_figure(
                step,
                selected=node_id,
                truth={c.node_id: judge(c.node_id) for c in step.candidates},
                sort_by=sort_by,
                per_page=per_page,
            )
        )


def _figure(spec: dict[str, Any]) -> go.Figure:
    import plotly.graph_objects as go

    return go.Figure(data=spec["data"], layout=spec["layout"])


def open_run(db: str | Path, run_id: str | None = None) -> Run:
    """The run `run_id` (an id or a unique prefix; None: the newest) of the run log `db` (a SQLite path, opened
    read-only, or an SQLAlchemy URL). storage.StorageError names the fix when the log or the run is missing, and
    the table, row and column when a row of the run is damaged (checked before anything is built from it, so the
    run's tables and figures never meet one)."""
    store = _store(db)
    try:
        ids = raw_run_ids(store, (run_id or "").strip() or None)
        if run_id and len(ids) == 1:
            rid = ids[0]
        elif run_id:
            rid = store.find_run(run_id)["run_id"]  # its one-line error: no such run, or an ambiguous prefix
        elif not ids:
            raise StorageError(
                f"the run log {db} holds no run yet; run `uats search` or `uats import` first", field="run"
            )
        else:
            rid = ids[0]
        said = find_damage(store, [rid])
        if said is not None:
            raise StorageError(said, field="db")
        try:
            return Run(RunData.load(store, rid), read_shadow(store, rid))
        except READ_ERRORS as exc:
            raise damaged(store, [rid], exc) from None
    finally:
        store.close()
