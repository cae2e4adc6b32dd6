"""Two recordings of the same cells: does a difference replicate?

The original recording (results/arith-grid: batched, many commits) and the rerun (results/arith-rerun: one search at a
time, one clean commit) are different searches of the same (problem, seed) cells. A paired difference *replicates*
when its interval clears zero the same way in both; one that clears zero in one recording only is a *lead*. Pooled:
both recordings' cells together (each recording's seeds kept apart), its interval over problems."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .stats import paired_summary, shown_half
from .verdicts import DOWN, NOISE, UP, side

RECORDINGS = ("original", "rerun")
REPLICATES, CONFLICTS, WITHIN_BOTH = ("replicates", "the recordings conflict", "within noise in both recordings")
LEAD = "a lead"  # clears zero in one recording only


def lead_word(recording: str) -> str:
    """'a lead (original only)'."""
    return f"{LEAD} ({recording} only)"


def replication_word(sides: Sequence[int]) -> str:
    """The verdict over the recordings' sides (UP / NOISE / DOWN, in RECORDINGS order)."""
    clear = [s for s in sides if s != NOISE]
    if not clear:
        return WITHIN_BOTH
    if len(clear) == len(sides):
        return REPLICATES if len(set(clear)) == 1 else CONFLICTS
    return lead_word(RECORDINGS[[s != NOISE for s in sides].index(True)])


def _diffs(rows: pd.DataFrame, x: str, y: str, over_n: bool) -> pd.Series:
    """x − y on `correct` indexed by (problem_id, seed): per budget, or the mean over budgets (over_n)."""
    index = ["problem_id", "seed", "budget"]
    wide = rows.pivot_table(index=index, columns="method", values="correct", aggfunc="first")
    if x not in wide.columns or y not in wide.columns:
        return pd.Series(dtype=float)
    d = (wide[x].astype(float) - wide[y].astype(float)).dropna()
    return d.groupby(level=["problem_id", "seed"]).mean() if over_n else d.droplevel("budget")


def _summary(d: pd.Series, confidence: float) -> tuple[float, float, int]:
    s = paired_summary(d, confidence)
    return s["diff"], shown_half(s["half_problems"], s["n_problems"]), s["n_problems"]


def compare_recordings(
    recordings: dict[str, pd.DataFrame], x: str, y: str, confidence: float, over_n: bool = False
) -> dict[str, Any] | None:
    """x − y in each recording (rows of one pair; of one budget unless over_n), pooled, and the replication verdict;
    None where a recording lacks either method."""
    rec: dict[str, Any] = {"x": x, "y": y}
    pooled = []
    for name in RECORDINGS:
        d = _diffs(recordings[name], x, y, over_n)
        if d.empty:
            return None
        rec[f"{name}_diff"], rec[f"{name}_half"], rec[f"{name}_problems"] = _summary(d, confidence)
        seeds = [f"{name}:{s}" for s in d.index.get_level_values("seed")]  # each recording's seeds apart
        pooled.append(
            d.set_axis(
                pd.MultiIndex.from_arrays([d.index.get_level_values("problem_id"), seeds], names=["problem_id", "seed"])
            )
        )
    rec["pooled_diff"], rec["pooled_half"], rec["pooled_problems"] = _summary(pd.concat(pooled), confidence)
    rec["verdict"] = replication_word([side(rec[f"{n}_diff"], rec[f"{n}_half"]) for n in RECORDINGS])
    return rec


def replication_table(
    original: pd.DataFrame, rerun: pd.DataFrame, comparisons: Sequence[tuple[str, str]], confidence: float = 0.95
) -> pd.DataFrame:
    """Per (pair, budget) and comparison x − y: both recordings, pooled, and the verdict; original and rerun are the
    same (dataset, variant)'s rows, the rerun's restricted to the cells both recorded."""
    rerun = rerun[rerun["cell_key"].isin(set(original["cell_key"]))]
    original = original[original["cell_key"].isin(set(rerun["cell_key"]))]
    rows = []
    for (pair, budget), g in original.groupby(["pair", "budget"], sort=True):
        r = rerun[(rerun["pair"] == pair) & (rerun["budget"] == budget)]
        for x, y in comparisons:
            if (rec := compare_recordings({"original": g, "rerun": r}, x, y, confidence)) is not None:
                rows.append({"pair": pair, "budget": budget, **rec})
    return pd.DataFrame(rows)


def over_n_table(
    original: pd.DataFrame, rerun: pd.DataFrame, comparisons: Sequence[tuple[str, str]], confidence: float = 0.95
) -> pd.DataFrame:
    """As replication_table, paired on the mean over N (the paper's Table 4 comparison), per pair."""
    rerun = rerun[rerun["cell_key"].isin(set(original["cell_key"]))]
    original = original[original["cell_key"].isin(set(rerun["cell_key"]))]
    rows = []
    for pair, g in original.groupby("pair", sort=True):
        r = rerun[rerun["pair"] == pair]
        for x, y in comparisons:
            if (rec := compare_recordings({"original": g, "rerun": r}, x, y, confidence, over_n=True)) is not None:
                rows.append({"pair": pair, **rec})
    return pd.DataFrame(rows)


def sides(rec: Any) -> dict[str, int]:
    """Each recording's side and the pooled one, of a replication row (a dict or a namedtuple)."""
    get = rec.get if isinstance(rec, dict) else lambda k: getattr(rec, k)
    return {n: side(get(f"{n}_diff"), get(f"{n}_half")) for n in (*RECORDINGS, "pooled")}


__all__ = [
    "RECORDINGS",
    "REPLICATES",
    "CONFLICTS",
    "WITHIN_BOTH",
    "LEAD",
    "UP",
    "DOWN",
    "NOISE",
    "lead_word",
    "replication_word",
    "compare_recordings",
    "replication_table",
    "over_n_table",
    "sides",
]
