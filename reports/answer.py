"""The results page's first table: does UATS beat REBASE here, in both recordings of the same cells and pooled, and at
what compute (page.py says why, from the ablation ladder). Without a rerun the original recording stands alone, and
every difference that clears zero in it is a lead (replication.py)."""

from __future__ import annotations

import pandas as pd

from uats_core.config import SearchConfig
from uats_core.methods import uncertainty_methods

from .replication import RECORDINGS, lead_word, replication_table
from .stats import dirty, spend_against_rebase
from .tables import UNCOMMITTED, markdown_table, pair_name, share_text
from .verdicts import NOISE, diff_text, masked, side


def _spend(rows: pd.DataFrame, dataset: str) -> pd.DataFrame:
    s = spend_against_rebase(rows, SearchConfig().max_iterations)
    return s[(s["dataset"] == dataset) & (s["variant"] == "base")] if len(s) else s


def _uncommitted(rows: pd.DataFrame, pair: str, budget: int, methods: tuple[str, str]) -> float:
    """The share of the original recording's searches of a row (both methods) that ran uncommitted code."""
    if "code_version" not in rows:
        return float("nan")
    g = rows[(rows["pair"] == pair) & (rows["budget"] == budget) & rows["method"].isin(methods)]
    return float(dirty(g["code_version"]).mean()) if len(g) else float("nan")


def answer_table(
    original: pd.DataFrame, rerun: pd.DataFrame | None, pdiff: pd.DataFrame, dataset: str, confidence: float = 0.95
) -> pd.DataFrame:
    """Per (pair, N, UATS method) of `dataset`'s base cells: method − REBASE in each recording (paired, ± over
    problems), pooled, the replication verdict, and the compute it spent as a share of REBASE's in each recording.
    original: the report's rows; rerun: the rerun's finished rows (None: the original alone, from pdiff)."""
    base = original[(original["dataset"] == dataset) & (original["variant"] == "base")]
    again = None
    if rerun is not None and len(rerun):
        again = rerun[
            (rerun["dataset"] == dataset) & (rerun["variant"] == "base") & rerun["cell_key"].isin(set(base["cell_key"]))
        ]
        table = replication_table(base, again, [(m, "rebase") for m in uncertainty_methods()], confidence)
        spends = {"original": _spend(base, dataset), "rerun": _spend(again, dataset)}
    else:
        if pdiff.empty:
            return pd.DataFrame()
        d = masked(pdiff[(pdiff["dataset"] == dataset) & (pdiff["variant"] == "base") & (pdiff["y"] == "rebase")])
        if d.empty:
            return pd.DataFrame()
        table = d[["pair", "budget", "x", "y"]].assign(
            original_diff=d["diff"],
            original_half=d["half_problems"],
            original_problems=d["n_problems"],
            verdict=[
                lead_word("original") if side(a, b) != NOISE else "within noise"
                for a, b in zip(d["diff"], d["half_problems"])
            ],
        )
        spends = {"original": _spend(base, dataset)}
    if table.empty:
        return table
    for name, rows in {"original": base, "rerun": again}.items():
        if rows is not None:
            table[f"{name}_uncommitted"] = [
                _uncommitted(rows, r.pair, r.budget, (r.x, r.y)) for r in table.itertuples()
            ]
    for name, s in spends.items():
        ratio = {(r.pair, r.budget, r.method): r.spend_ratio for r in s.itertuples()} if len(s) else {}
        table[f"{name}_spend"] = [ratio.get((r.pair, r.budget, r.x), float("nan")) for r in table.itertuples()]
    return table.sort_values(["pair", "budget"], kind="stable").reset_index(drop=True)


def answer_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    both = "rerun_diff" in table
    recordings = RECORDINGS if both else RECORDINGS[:1]
    rows = []
    for r in table.itertuples():
        rec = r._asdict()
        row = [
            pair_name(r.pair, roles),
            r.budget,
            f"{r.x} − {r.y}",
            *[diff_text(rec[f"{n}_diff"], rec[f"{n}_half"]) for n in (*recordings, *(("pooled",) if both else ()))],
            r.verdict,
            *[f"{rec[f'{n}_spend']:.3f}" for n in recordings],
            *[share_text(rec[f"{n}_uncommitted"]) for n in recordings],
        ]
        rows.append(row)
    header = [
        "pair",
        "N",
        "difference",
        *[f"{n}" for n in recordings],
        *(["pooled"] if both else []),
        "verdict",
        *[f"spent / REBASE's ({n})" for n in recordings],
        *[f"{UNCOMMITTED} ({n})" for n in recordings],
    ]
    what = (
        "in the original recording and in the rerun (one search at a time, one clean commit), and both pooled"
        if both
        else "in the original recording alone"
    )
    return (
        "H-UATS and A-UATS against REBASE on the same (problem, seed) cells of the test split (the weighted vote, "
        f"base settings), {what}: accuracy difference in points ± 95% t over problems, the replication verdict, and "
        "the compute each spent as a share of REBASE's (the ratio of the totals) and the share of the searches that "
        "ran uncommitted code, in each recording\n\n" + markdown_table(header, rows)
    )
