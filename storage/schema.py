"""Tables of the run log (SQLAlchemy 2 Core, portable types only so SQLite and PostgreSQL both work), as they are
now: storage/migrations.py brings a run log written by an earlier version up to them.

One row per run, one per node (its latest snapshot), one per (iteration, node) in node_history (what the
node looked like after that iteration: replay needs the statistics *before* a later re-evaluation and
the status decided at each step), one per iteration (the step's decisions and its numbers, step_info), one per
starred/annotated case, the app's pool jobs that are not runs, and the evaluation's cells.
"""

from __future__ import annotations

from dataclasses import fields

import sqlalchemy as sa

from uats_core.problems import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS
from uats_core.tree import Node

metadata = sa.MetaData()
# Bounds of the Text and JSON columns a client or a dataset fills (info["max_chars"], read by storage/bounds.py):
# the databases themselves would take text of any size, a client's included.
MAX_NOTE_CHARS = 10_000
MAX_MODEL_OPTIONS_CHARS = 20_000  # a system prompt among them


runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("method", sa.String(32), nullable=False),
    sa.Column("problem_id", sa.String(200), nullable=False),
    sa.Column("question", sa.Text, nullable=False, info={"max_chars": MAX_QUESTION_CHARS}),
    sa.Column("gold_answer", sa.Text, info={"max_chars": MAX_ANSWER_CHARS}),
    sa.Column("seed", sa.Integer),
    sa.Column("config", sa.JSON),
    sa.Column("policy", sa.String(200)),
    sa.Column("prm", sa.String(200)),
    # how the models were loaded: {"policy_opts": {...}, "prm_opts": {...}, "prm_kind": ...} (NULL before it was kept)
    sa.Column("model_options", sa.JSON, info={"max_chars": MAX_MODEL_OPTIONS_CHARS}),
    # queued: registered by a front end before its worker emitted RunStarted
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("answer", sa.Text),
    sa.Column("naive_answer", sa.Text),
    sa.Column("correct", sa.Boolean),
    sa.Column("naive_correct", sa.Boolean),
    sa.Column("cost", sa.Float, nullable=False, default=0.0),
    sa.Column("iterations", sa.Integer, nullable=False, default=0),
    sa.Column("n_nodes", sa.Integer, nullable=False, default=0),
    sa.Column("error", sa.Text),
    sa.Column("extra", sa.JSON),
    sa.Column("label", sa.String(200)),  # free text a front end may attach (e.g. "compare A")
    sa.Column("started_at", sa.Float),  # unix seconds
    sa.Column("updated_at", sa.Float),  # last write by the worker: a heartbeat for stale-run checks
    sa.Column("ended_at", sa.Float),
    sa.Column("cancel_requested", sa.Boolean, nullable=False, default=False),
    # step mode: a paused run's worker waits before its next iteration; each granted step lets one through
    sa.Column("paused", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Column("step_credits", sa.Integer, nullable=False, default=0, server_default="0"),
    sa.Column("worker_pid", sa.Integer),
    sa.Column("worker_host", sa.String(200)),
    # who started the run in the app: 'user:<name>' signed in, 'session:<hash>' of a page without a login; None:
    # the CLI, an evaluation or an older version. Only the owner may control, star or annotate it (ui/access.py).
    sa.Column("owner", sa.String(200)),
    # the process that registered the run and answers for it (connection.this_process: host|pid|start token):
    # a restarted app ends the runs of a server that is gone, even while an orphaned worker lives on
    sa.Column("server", sa.String(200)),
    sa.Index("ix_runs_method", "method"),
    sa.Index("ix_runs_problem", "problem_id"),
    sa.Index("ix_runs_status", "status"),
    sa.Index("ix_runs_started", "started_at"),
)

# Columns of `nodes` that mirror uats_core.tree.Node fields one to one (Node.id is stored as node_id).
NODE_FIELDS = tuple(f.name for f in fields(Node) if f.name != "id")

nodes = sa.Table(
    "nodes",
    metadata,
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("node_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("parent_id", sa.Integer),
    sa.Column("depth", sa.Integer, nullable=False),
    sa.Column("step", sa.Text, nullable=False),
    sa.Column("num_tokens", sa.Integer, nullable=False, default=0),
    sa.Column("finish_reason", sa.String(32)),
    sa.Column("created_iter", sa.Integer, nullable=False, default=0),
    sa.Column("subtree", sa.Integer),
    sa.Column("mc_scores", sa.JSON),  # every pass, initial ones first
    sa.Column("initial_passes", sa.Integer, nullable=False, default=0),
    sa.Column("mean", sa.Float),
    sa.Column("var", sa.Float),
    sa.Column("k", sa.Integer, nullable=False, default=0),
    sa.Column("ucb", sa.Float),
    sa.Column("ood", sa.Boolean),
    # the passes as logits log(p/(1-p)): what the OOD gate reads under uncertainty_space='logit'
    sa.Column("logit_mean", sa.Float),
    sa.Column("logit_var", sa.Float),
    sa.Column("scored_iter", sa.Integer),
    sa.Column("reeval_iter", sa.Integer),
    sa.Column("expanded_iter", sa.Integer),
    sa.Column("extra_passes", sa.Integer, nullable=False, default=0),
    sa.Column("children_granted", sa.Integer, nullable=False, default=0),
    sa.Column("uniqueness", sa.Float),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("answer", sa.Text),
    sa.Column("correct", sa.Boolean),
    sa.Column("voted", sa.Boolean),  # Node.voted: what Pass@N reads (NULL in run logs from before it was kept)
    sa.Column("extra", sa.JSON),  # snapshot keys this schema does not know yet (a newer core)
    sa.Column("updated_iter", sa.Integer, nullable=False, default=0),  # iteration of the latest snapshot
)

node_history = sa.Table(
    "node_history",
    metadata,
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("iteration", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("node_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("k", sa.Integer, nullable=False),  # passes so far: mc_scores[:k] of the final row
    sa.Column("mean", sa.Float),
    sa.Column("var", sa.Float),
    sa.Column("ucb", sa.Float),
    sa.Column("ood", sa.Boolean),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("extra_passes", sa.Integer, nullable=False, default=0),
    sa.Column("children_granted", sa.Integer, nullable=False, default=0),
    sa.Column("logit_mean", sa.Float),
    sa.Column("logit_var", sa.Float),
)
# What node_history keeps of a node after each iteration: the fields a later step can change (k: passes so far).
HISTORY_FIELDS = tuple(c.name for c in node_history.columns if c.name not in ("run_id", "iteration", "node_id"))

iterations = sa.Table(
    "iterations",
    metadata,
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("iteration", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("decisions", sa.JSON),
    sa.Column("step_info", sa.JSON),
    sa.Column("cost_step", sa.Float, nullable=False, default=0.0),
    sa.Column("cost_total", sa.Float, nullable=False, default=0.0),
    sa.Column("n_nodes_updated", sa.Integer, nullable=False, default=0),
    sa.Column("written_at", sa.Float),  # unix seconds at commit: the start of the UI's update latency
)

stars = sa.Table(
    "stars",
    metadata,
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    # -1 = the run as a whole (primary keys cannot hold NULL on PostgreSQL)
    sa.Column("node_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("starred", sa.Boolean, nullable=False, default=False),
    sa.Column("note", sa.Text, nullable=False, default="", info={"max_chars": MAX_NOTE_CHARS}),
    sa.Column("case_kind", sa.String(64)),  # e.g. "high score / high variance"
    sa.Column("updated_at", sa.Float),
)

RUN_LEVEL = -1

# Training curves (A-UATS's controller): one row per (curve, step), the row's numbers as JSON.
curves = sa.Table(
    "curves",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("written_at", sa.Float),
)

# Shadow scoring: MC-dropout passes run afterwards on a baseline's candidates (e.g. REBASE, which does no
# MC passes), outside its compute count, so its choices can be read against the uncertainty. A separate
# table: the run's own nodes and cost stay exactly what the search did.
shadow_scores = sa.Table(
    "shadow_scores",
    metadata,
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("node_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("mc_scores", sa.JSON),
    sa.Column("mean", sa.Float),
    sa.Column("var", sa.Float),
    sa.Column("ucb", sa.Float),
    sa.Column("ood", sa.Boolean),
    sa.Column("tau", sa.Float),
    sa.Column("prm", sa.String(200)),
    sa.Column("written_at", sa.Float),
)

# Shadow scoring runs as a job of the app's worker pool: queued, cancellable, its progress here; the scores
# land in shadow_scores batch by batch. Statuses as runs': queued, running, finished, failed, cancelled.
shadow_jobs = sa.Table(
    "shadow_jobs",
    metadata,
    sa.Column("job_id", sa.String(64), primary_key=True),
    sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    sa.Column("k", sa.Integer, nullable=False),
    sa.Column("prm", sa.String(200)),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("done", sa.Integer, nullable=False, default=0),  # nodes scored so far
    sa.Column("total", sa.Integer, nullable=False, default=0),
    sa.Column("error", sa.Text),
    sa.Column("cancel_requested", sa.Boolean, nullable=False, default=False),
    sa.Column("server", sa.String(200)),
    sa.Column("worker_pid", sa.Integer),
    sa.Column("created_at", sa.Float),
    sa.Column("updated_at", sa.Float),
    sa.Column("ended_at", sa.Float),
    sa.Index("ix_shadow_jobs_run", "run_id"),
)

# A case batch (the Compare tab's case finder) runs as one job of the app's worker pool: a list of searches,
# one after another in one worker, each a run of its own (runs.label names the batch); its progress here.
batch_jobs = sa.Table(
    "batch_jobs",
    metadata,
    sa.Column("job_id", sa.String(64), primary_key=True),
    sa.Column("spec", sa.JSON),  # what the batch runs, for the page: problems, policies, methods, budget, seed
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("done", sa.Integer, nullable=False, default=0),  # runs ended so far
    sa.Column("total", sa.Integer, nullable=False, default=0),
    sa.Column("failed", sa.Integer, nullable=False, default=0),  # of them, runs that ended failed
    sa.Column("current_run", sa.String(64)),  # the run the worker is on
    sa.Column("error", sa.Text),
    sa.Column("cancel_requested", sa.Boolean, nullable=False, default=False),
    sa.Column("owner", sa.String(200)),
    sa.Column("server", sa.String(200)),
    sa.Column("worker_pid", sa.Integer),
    sa.Column("created_at", sa.Float),
    sa.Column("updated_at", sa.Float),
    sa.Column("ended_at", sa.Float),
)

# The evaluation's cells (storage/eval_cells.py's CellLedger): one row per grid cell, its latest attempt's run.
eval_cells = sa.Table(
    "eval_cells",
    metadata,
    sa.Column("cell_key", sa.String(600), primary_key=True),
    sa.Column("pair", sa.String(200), nullable=False),
    sa.Column("policy", sa.String(400), nullable=False),
    sa.Column("prm", sa.String(400), nullable=False),
    sa.Column("dataset", sa.String(200), nullable=False),
    sa.Column("problem_id", sa.String(200), nullable=False),
    sa.Column("method", sa.String(32), nullable=False),
    sa.Column("budget", sa.Integer, nullable=False),
    sa.Column("seed", sa.Integer, nullable=False),
    sa.Column("variant", sa.String(400), nullable=False),
    sa.Column("overrides", sa.JSON),
    sa.Column("status", sa.String(16), nullable=False),  # running | finished | failed
    sa.Column("run_id", sa.String(64)),  # the latest attempt (earlier attempts stay in `runs`, failed)
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("batched", sa.Boolean, nullable=False, default=False),  # ran under cross-problem batching
    sa.Column("worker_pid", sa.Integer),
    sa.Column("worker_host", sa.String(200)),
    sa.Column("started_at", sa.Float),
    sa.Column("ended_at", sa.Float),
    sa.Column("wall_s", sa.Float),
    sa.Column("error", sa.Text),
    sa.Index("ix_eval_cells_group", "pair", "dataset", "method", "budget"),
    sa.Index("ix_eval_cells_status", "status"),
)
