"""The Figure 2 analysis: how reliable the PRM is on each pair's own steps, and how its MC variance spreads.

The nodes come from the run log through a loader the caller hands in (storage.eval_results.load_nodes in
the report's entry point), so this stays free of SQL; labels come from the arithmetic world's exact step
checker, or elsewhere from a terminal node's graded answer."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from uats_core.estimation import auroc, is_ood, mean_var
from uats_core.methods import uncertainty_methods
from uats_core.tree import TERMINAL

from .stats import wilson

NodeLoader = Callable[[list[str]], pd.DataFrame]  # run ids -> their nodes (run_id, node_id, parent_id, depth, ...)
_CHUNK = 200  # runs per node query
MC_SCORED = "MC mean of K0 passes (UATS)"  # a step record's score_kind: R̄ over K0 passes, var0 their σ²


def select_runs(df: pd.DataFrame, max_runs_per_pair: int) -> pd.DataFrame:
    """Base-variant runs, spread evenly over each pair's sorted cell keys (deterministic)."""
    base = df[df["variant"] == "base"].sort_values("cell_key")
    parts = []
    for _, g in base.groupby(["dataset", "pair"], sort=False):
        if len(g) > max_runs_per_pair:
            idx = np.linspace(0, len(g) - 1, max_runs_per_pair).round().astype(int)
            g = g.iloc[np.unique(idx)]
        parts.append(g)
    return pd.concat(parts) if parts else base


def step_records(load_nodes: NodeLoader, df: pd.DataFrame, max_runs_per_pair: int = 600) -> pd.DataFrame:
    """One row per scored node of the selected runs: its pair, method, score, initial-pass variance and
    whether the step is correct. Labels: the arithmetic world's exact checker on the node's whole prefix;
    elsewhere only terminal nodes get a label (their graded answer)."""
    runs = select_runs(df, max_runs_per_pair)
    if runs.empty:
        return pd.DataFrame()
    info = runs.set_index("run_id")[["pair", "dataset", "method", "problem_id"]].to_dict("index")
    problems: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    run_ids = list(info)
    try:
        from tqdm import tqdm

        chunks = tqdm(
            range(0, len(run_ids), _CHUNK),
            desc="figure 2: nodes",
            unit="chunk",
            leave=False,
            disable=len(run_ids) < 400,
        )
    except ImportError:
        chunks = range(0, len(run_ids), _CHUNK)
    for i in chunks:
        nodes = load_nodes(run_ids[i : i + _CHUNK])
        if nodes.empty:
            continue
        for run_id, g in nodes.groupby("run_id", sort=False):
            meta = info[run_id]
            problem = _arith_problem(meta, problems) if str(meta["dataset"]).startswith("arith") else None
            rows += _run_steps(g, meta, problem, run_id)
    return pd.DataFrame(rows)


def _arith_problem(meta: dict[str, Any], problems: dict[str, Any]) -> Any:
    """The arithmetic-world problem of a run (cached; None for an id the world does not know)."""
    pid = meta["problem_id"]
    if pid not in problems:
        from uats_core.worlds.arith.world import get_problem

        try:
            problems[pid] = get_problem(pid)
        except (ValueError, IndexError):
            problems[pid] = None
    return problems[pid]


def _run_steps(g: pd.DataFrame, meta: dict[str, Any], problem: Any, run_id: str) -> list[dict[str, Any]]:
    from uats_core.worlds.arith.solutions import label_steps

    rows = []
    by_id = {int(r.node_id): r for r in g.itertuples(index=False)}
    for r in g.itertuples(index=False):
        if r.depth < 1 or r.mean is None or (isinstance(r.mean, float) and math.isnan(r.mean)):
            continue
        passes = list(r.mc_scores or [])
        k0 = int(r.initial_passes or 0)
        uats = meta["method"] in uncertainty_methods() and k0 >= 2
        if uats:  # the first K0 passes: what the search's OOD gate read
            score, var0 = mean_var(passes[:k0])
        else:
            score, var0 = float(passes[0] if passes else r.mean), float("nan")
        label: bool | None = None
        if problem is not None:
            chain: list[str] = []
            cur = by_id.get(int(r.node_id))
            while cur is not None and cur.depth >= 1:
                chain.append(cur.step)
                cur = by_id.get(int(cur.parent_id)) if cur.parent_id is not None else None
            chain.reverse()
            label = bool(label_steps(problem, [s.strip() for s in chain])[-1])
        elif r.status in TERMINAL and r.correct is not None:
            label = bool(r.correct)
        if label is None:
            continue
        rows.append(
            {
                "run_id": run_id,
                "pair": meta["pair"],
                "dataset": meta["dataset"],
                "method": meta["method"],
                "score_kind": MC_SCORED if uats else "deterministic (baselines)",
                "label_kind": "step" if problem is not None else "outcome",
                "score": score,
                "var0": var0,
                "correct": label,
            }
        )
    return rows


def prm_summary(steps: pd.DataFrame, tau: float) -> pd.DataFrame:
    rows = []
    if steps.empty:
        return pd.DataFrame()
    for (dataset, pair, kind), g in steps.groupby(["dataset", "pair", "score_kind"], sort=False):
        y = g["correct"].to_numpy(bool)
        pred = g["score"].to_numpy() >= 0.5
        k = int((pred == y).sum())
        lo, hi = wilson(k, len(g))
        var = g["var0"].dropna()
        rows.append(
            {
                "dataset": dataset,
                "pair": pair,
                "score_kind": kind,
                "label_kind": g["label_kind"].iloc[0],
                "n_steps": len(g),
                "share_correct": float(y.mean()),
                "accuracy": k / len(g),
                "acc_lo": lo,
                "acc_hi": hi,
                "auroc": auroc(g["score"], y),
                "mean_score_correct": float(g.loc[g["correct"], "score"].mean()) if y.any() else float("nan"),
                "mean_score_wrong": float(g.loc[~g["correct"], "score"].mean()) if (~y).any() else float("nan"),
                "var_median": float(var.median()) if len(var) else float("nan"),
                "var_mean": float(var.mean()) if len(var) else float("nan"),
                # the share the gate flags when τ thresholds σ² (the default) and when it thresholds σ
                "share_var_over_tau": float(np.mean([is_ood(v, tau, "var") for v in var]))
                if len(var)
                else float("nan"),
                "share_std_over_tau": float(np.mean([is_ood(v, tau, "std") for v in var]))
                if len(var)
                else float("nan"),
                "var_median_correct": float(g.loc[g["correct"], "var0"].median()) if len(var) else float("nan"),
                "var_median_wrong": float(g.loc[~g["correct"], "var0"].median()) if len(var) else float("nan"),
            }
        )
    return pd.DataFrame(rows)
