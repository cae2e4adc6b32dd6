"""The results ledger: an evaluation's outcomes as gzip-compressed CSV files committed with the code.

A run log lives in `runs/`, which no fresh machine has; the ledger is what survives. It is a folder (e.g.
`results/arith-grid/`) holding
- `results.csv.gz`: one row per finished evaluation search (the cell's axes, answer, correctness, Pass@N, compute
  spent, iterations, nodes, wall seconds and the code version that wrote it), the rows the report's tables read;
- `steps.csv.gz`: the Figure 2 step records (score, initial-pass variance, step label) of a fixed 1-in-8 sample of
  the base-variant cells, chosen by a hash of the cell key, so the sample never depends on what else has run;
- `traces.csv.gz`: per cell, its candidates and the distinct partial solutions among them (the duplicates table);
- `candidates.csv.gz`: per cell, its final solutions (answer, correctness, copies, final scores), from which the
  report recomputes the answer under every aggregation rule (cells recorded before this file have none);
- `controller.csv.gz`: per A-UATS cell and step, the state its controller read and the six knobs it set (cells
  recorded before this file have none);
- `voted.csv.gz`: the cells whose run marked its final candidates (uats_core.tree.Node.voted), so their Pass@N
  and n_final count those alone. A cell recorded before this file counted every solution its search ended, which
  for beam search and DVTS includes some they did not vote on (reports.stats.pass_lower).

Rows are appended as gzip members (a gzip file of several members is one valid gzip stream), so a growing grid
rewrites nothing; `uats eval --ledger DIR` skips every cell the ledger holds (resume on any machine)
and `uats report --ledger DIR` builds every table and figure from it alone."""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: one appending process per ledger
    fcntl = None  # type: ignore[assignment]

import pandas as pd

from uats_core.methods import REGISTRY
from uats_core.methods.uats import current_feature_names

from .eval_results import CELL_COLUMNS, CONTROLLER_COLUMNS

log = logging.getLogger(__name__)

RESULTS_FILE, STEPS_FILE, TRACES_FILE, LOCK_FILE = "results.csv.gz", "steps.csv.gz", "traces.csv.gz", ".lock"
CANDIDATES_FILE, VOTED_FILE, CONTROLLER_FILE = "candidates.csv.gz", "voted.csv.gz", "controller.csv.gz"
LEDGER_COLUMNS = [
    *CELL_COLUMNS,
    "answer",
    "correct",
    "naive_correct",
    "pass_at_n",
    "n_final",
    "cost",
    "iterations",
    "n_nodes",
    "wall_s",
    "batched",
    "code_version",
]
STEP_COLUMNS = ["cell_key", "pair", "dataset", "method", "score_kind", "label_kind", "score", "var0", "correct"]
TRACE_COLUMNS = ["cell_key", "n_candidates", "n_distinct", "steps", "candidates_per_step", "distinct_per_step"]
CANDIDATE_COLUMNS = ["cell_key", "solutions"]  # solutions: JSON, reports.duplicates.final_solutions
VOTED_COLUMNS = ["cell_key"]
LEDGER_CONTROLLER_COLUMNS = ["cell_key", *CONTROLLER_COLUMNS[1:]]  # the run log's run_id becomes the cell
STEP_SAMPLE = 8  # one base-variant cell in 8 keeps its step records


def in_step_sample(cell_key: str, variant: str) -> bool:
    digest = hashlib.blake2b(cell_key.encode(), digest_size=8).digest()
    return variant == "base" and int.from_bytes(digest, "big") % STEP_SAMPLE == 0


class ResultsLedger:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.results_path = self.folder / RESULTS_FILE
        self.steps_path = self.folder / STEPS_FILE
        self.traces_path = self.folder / TRACES_FILE
        self.candidates_path = self.folder / CANDIDATES_FILE
        self.voted_path = self.folder / VOTED_FILE
        self.controller_path = self.folder / CONTROLLER_FILE
        self._keys: set[str] | None = None

    def keys(self) -> set[str]:
        """Cell keys with a row in the ledger: cells an evaluation need not run again."""
        if self._keys is None:
            self._keys = set(self.results()["cell_key"]) if self.results_path.exists() else set()
        return self._keys

    def results(self) -> pd.DataFrame:
        """The result rows, typed as storage.eval_results.load_results returns them (the report's input), with
        `finals_marked`: the cell's Pass@N and n_final count only its final candidates (voted.csv.gz)."""
        if not self.results_path.exists():
            return pd.DataFrame(columns=LEDGER_COLUMNS + ["finals_marked"])
        # read as text what only looks like a number: a commit whose 12-hex short hash is all digits (1377029528…)
        # came back an integer, and a leading zero would be lost
        text = {"problem_id": str, "answer": str, "variant": str, "code_version": str}
        df = pd.read_csv(self.results_path, dtype=text)
        for col in ("correct", "naive_correct", "pass_at_n", "batched"):
            df[col] = df[col].astype(str).str.lower().eq("true")
        df["budget"] = df["budget"].astype(int)
        df["seed"] = df["seed"].astype(int)
        df["cost"] = df["cost"].astype(float)
        df["finals_marked"] = df["cell_key"].isin(set(self.voted()["cell_key"]))
        return df.drop_duplicates("cell_key", keep="first").reset_index(drop=True)

    def voted(self) -> pd.DataFrame:
        """The cells recorded with their final candidates marked (cells recorded before this file have none)."""
        if not self.voted_path.exists():
            return pd.DataFrame(columns=VOTED_COLUMNS)
        return pd.read_csv(self.voted_path).drop_duplicates("cell_key", keep="first").reset_index(drop=True)

    def steps(self) -> pd.DataFrame:
        if not self.steps_path.exists():
            return pd.DataFrame(columns=STEP_COLUMNS)
        df = pd.read_csv(self.steps_path)
        df["correct"] = df["correct"].astype(str).str.lower().eq("true")
        return df

    def traces(self) -> pd.DataFrame:
        """Per cell: candidates and distinct partial solutions (cells from before this file have none)."""
        if not self.traces_path.exists():
            return pd.DataFrame(columns=TRACE_COLUMNS)
        return pd.read_csv(self.traces_path).drop_duplicates("cell_key", keep="first").reset_index(drop=True)

    def candidates(self) -> pd.DataFrame:
        """Per cell: its final solutions as JSON (cells recorded before this file have none)."""
        if not self.candidates_path.exists():
            return pd.DataFrame(columns=CANDIDATE_COLUMNS)
        df = pd.read_csv(self.candidates_path, dtype={"solutions": str}, keep_default_na=False)
        return df.drop_duplicates("cell_key", keep="first").reset_index(drop=True)

    def controller(self) -> pd.DataFrame:
        """Per A-UATS cell and step: the controller's state and knobs (cells recorded before this file have none)."""
        if not self.controller_path.exists():
            return pd.DataFrame(columns=LEDGER_CONTROLLER_COLUMNS)
        df = pd.read_csv(self.controller_path)
        df.columns = current_feature_names(df.columns)  # a ledger written before a feature's rename keeps loading
        return df.drop_duplicates(["cell_key", "iteration"]).reset_index(drop=True)

    def append(
        self,
        rows: pd.DataFrame,
        steps: pd.DataFrame | None = None,
        traces: pd.DataFrame | None = None,
        controller: pd.DataFrame | None = None,
    ) -> int:
        """Append the rows whose cell is not in the ledger yet (with their step records, duplicate counts and
        controller steps); returns how many.

        Several processes may append to one ledger: each append holds an exclusive lock on the folder's `.lock`
        and re-reads the keys under it, so gzip members never interleave and no cell is written twice."""
        if rows.empty:
            return 0
        self.folder.mkdir(parents=True, exist_ok=True)
        with _locked(self.folder / LOCK_FILE):
            self._keys = None  # another process may have appended since we last looked
            new = rows[~rows["cell_key"].isin(self.keys())].drop_duplicates("cell_key")
            if new.empty:
                return 0
            # Step records first: a crash between the two writes leaves a cell to redo, never a row without steps.
            if steps is not None and len(steps):
                _append_csv(self.steps_path, steps[steps["cell_key"].isin(set(new["cell_key"]))][STEP_COLUMNS])
            if traces is not None and len(traces):
                held = traces[traces["cell_key"].isin(set(new["cell_key"]))]
                _append_csv(self.traces_path, held[TRACE_COLUMNS])
                if "solutions" in held:
                    _append_csv(self.candidates_path, held[CANDIDATE_COLUMNS])
            if controller is not None and len(controller):
                _append_csv(
                    self.controller_path,
                    controller[controller["cell_key"].isin(set(new["cell_key"]))][LEDGER_CONTROLLER_COLUMNS],
                )
            if "finals_marked" in new and new["finals_marked"].any():
                _append_csv(self.voted_path, new[new["finals_marked"].astype(bool)][VOTED_COLUMNS])
            _append_csv(self.results_path, new[LEDGER_COLUMNS])
            self.keys().update(new["cell_key"])
        return len(new)

    def append_traces(self, traces: pd.DataFrame) -> int:
        """Append duplicate counts (and final solutions, when `traces` has them) for cells the ledger holds
        without them (cells recorded before they were kept; storage.results_ledger.fill_traces); returns how many
        cells got either."""
        if traces.empty:
            return 0
        files = [(self.traces_path, TRACE_COLUMNS, self.traces)]
        if "solutions" in traces:
            files.append((self.candidates_path, CANDIDATE_COLUMNS, self.candidates))
        added: set[str] = set()
        with _locked(self.folder / LOCK_FILE):
            self._keys = None
            for path, columns, read in files:
                have = set(read()["cell_key"])
                new = traces[traces["cell_key"].isin(self.keys()) & ~traces["cell_key"].isin(have)]
                new = new.drop_duplicates("cell_key")
                if len(new):
                    _append_csv(path, new[columns])
                    added.update(new["cell_key"])
        return len(added)

    def append_controller(self, controller: pd.DataFrame) -> int:
        """Append controller steps for cells the ledger holds without them (storage.results_ledger.fill_controller);
        returns how many cells got them."""
        with _locked(self.folder / LOCK_FILE):
            self._keys = None
            have = set(self.controller()["cell_key"])
            new = controller[controller["cell_key"].isin(self.keys()) & ~controller["cell_key"].isin(have)]
            if len(new):
                _append_csv(self.controller_path, new[LEDGER_CONTROLLER_COLUMNS])
        return int(new["cell_key"].nunique())


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as fh:
        if fcntl is not None:
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(fh, fcntl.LOCK_UN)


def _append_csv(path: Path, df: pd.DataFrame) -> None:
    buf = io.StringIO()
    df.to_csv(buf, index=False, header=not path.exists())
    with gzip.open(path, "at", encoding="utf-8", newline="") as fh:
        fh.write(buf.getvalue())


def sync_ledger(
    ledger: ResultsLedger,
    source: Any,
    code_version: str,
    step_records: Callable[[Callable[[list[str]], pd.DataFrame], pd.DataFrame], pd.DataFrame] | None = None,
    portable: Callable[[str], str] = str,
    trace_counts: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
) -> int:
    """Copy the finished evaluation cells of a run log (a RunStore, engine, path or URL) that the ledger lacks,
    with the step records of the sampled ones (step_records(load_nodes, rows), the report's Figure 2 reader) and
    every cell's duplicate counts (trace_counts(nodes) by run_id, the report's duplicates table)."""
    from functools import partial

    from .eval_results import engine_of, load_nodes, load_results

    engine = engine_of(source)
    rows = load_results(engine)
    rows = rows[~rows["cell_key"].isin(ledger.keys())]
    if rows.empty:
        return 0
    rows = rows.assign(code_version=code_version, policy=rows["policy"].map(portable), prm=rows["prm"].map(portable))
    loader: Callable[[list[str]], pd.DataFrame] = partial(load_nodes, engine)
    traces = None
    if trace_counts is not None:
        # Every new cell's nodes, read once: the duplicate counts need them all, the step records a sample of them.
        runs = list(rows["run_id"])
        nodes = pd.concat([load_nodes(engine, runs[i : i + 200]) for i in range(0, len(runs), 200)], ignore_index=True)
        if len(nodes):
            loader = lambda ids: nodes[nodes["run_id"].isin(set(ids))]  # noqa: E731
            counts = trace_counts(nodes)
            traces = counts.assign(cell_key=counts["run_id"].map(dict(zip(rows["run_id"], rows["cell_key"]))))
    steps = None
    sampled = rows[[in_step_sample(k, v) for k, v in zip(rows["cell_key"], rows["variant"])]]
    if step_records is not None and len(sampled):
        steps = step_records(loader, sampled)
        if len(steps):
            steps = steps.assign(cell_key=steps["run_id"].map(dict(zip(sampled["run_id"], sampled["cell_key"]))))
    added = ledger.append(rows, steps, traces, _controller_of(engine, rows))
    log.info("results ledger %s: %d rows added (%d in all)", ledger.folder, added, len(ledger.keys()))
    return added


def controlled_methods() -> list[str]:
    """The methods whose steps a learned controller sets (their cells' controller steps are kept)."""
    return [name for name, cls in REGISTRY.items() if cls.needs_controller]


def _controller_of(engine: Any, rows: pd.DataFrame) -> pd.DataFrame:
    """The controller steps of the A-UATS cells among `rows` (ledger rows with the run log's run_id), by cell."""
    from .eval_results import load_controller_steps

    cell_of = dict(zip(rows["run_id"], rows["cell_key"]))
    steps = load_controller_steps(engine, list(rows.loc[rows["method"].isin(controlled_methods()), "run_id"]))
    return steps.assign(cell_key=steps["run_id"].map(cell_of))


def _same_searches(ledger_rows: pd.DataFrame, engine: Any) -> pd.DataFrame:
    """The run log's rows (with run_id) that are the very searches `ledger_rows` recorded: same cell, answer,
    compute, iterations and node count (a cell run again elsewhere is another search)."""
    from .eval_results import load_results

    axes = ["cell_key", "answer", "cost", "iterations", "n_nodes"]
    both = load_results(engine).merge(ledger_rows[axes], on="cell_key", suffixes=("", "_ledger"))
    same = both["answer"].fillna("").astype(str).eq(both["answer_ledger"].fillna("").astype(str))
    same &= (both["cost"].astype(float) - both["cost_ledger"].astype(float)).abs().le(1e-6)
    for col in ("iterations", "n_nodes"):
        same &= pd.to_numeric(both[col]).eq(pd.to_numeric(both[col + "_ledger"]))
    return both[same]


def fill_traces(
    ledger: ResultsLedger, source: Any, trace_counts: Callable[[pd.DataFrame], pd.DataFrame], chunk: int = 200
) -> int:
    """Duplicate counts and final solutions, read from a run log (a RunStore, engine, path or URL), for the cells the
    ledger holds without them. Only the very searches the ledger recorded count: the log's row must have the ledger's
    answer, compute, iterations and node count (a cell run again elsewhere is another search). Returns how many
    cells."""
    from .eval_results import engine_of, load_nodes

    mine = ledger.results()
    have_both = set(ledger.traces()["cell_key"]) & set(ledger.candidates()["cell_key"])
    mine = mine[~mine["cell_key"].isin(have_both)]
    if mine.empty:
        return 0
    engine = engine_of(source)
    both = _same_searches(mine, engine)
    cell_of = dict(zip(both["run_id"], both["cell_key"]))
    runs, added = list(both["run_id"]), 0
    for i in range(0, len(runs), chunk):  # a chunk's nodes at a time: old run logs hold millions
        counts = trace_counts(load_nodes(engine, runs[i : i + chunk]))
        added += ledger.append_traces(counts.assign(cell_key=counts["run_id"].map(cell_of)))
    log.info(
        "results ledger %s: duplicate counts or final solutions for %d cells from %s (%d of its cells matched)",
        ledger.folder,
        added,
        source,
        len(both),
    )
    return added


def fill_controller(ledger: ResultsLedger, source: Any) -> int:
    """The controller steps, read from a run log (a RunStore, engine, path or URL), of the A-UATS cells the ledger
    holds without them, where the log's search is the ledger's (_same_searches). Returns how many cells."""
    from .eval_results import engine_of

    mine = ledger.results()
    mine = mine[
        mine["method"].isin(controlled_methods()) & ~mine["cell_key"].isin(set(ledger.controller()["cell_key"]))
    ]
    if mine.empty:
        return 0
    engine = engine_of(source)
    added = ledger.append_controller(_controller_of(engine, _same_searches(mine, engine)))
    log.info("results ledger %s: controller steps for %d cells from %s", ledger.folder, added, source)
    return added
