"""The results page's section on searching with each uncertainty estimator (issue 52, item 4), generated from the
grid's own ledger (results/arith-estimators, recipes/arith-estimators.toml): H-UATS under each estimator against
REBASE on the (problem, seed) cells both ran, per pair and N, under the page's verdict rule (verdicts.side on the
printed interval over problems). Seeds 0–2 and 3–5 are two recordings of the grid: a difference *replicates* when it
clears zero the same way in both, and one that clears zero in one seed set only is a lead."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from uats_core.config import SearchConfig

from .prose import section
from .provenance import with_provenance
from .stats import paired_summary, shown_half
from .verdicts import DOWN, NOISE, UP, diff_text, side

if TYPE_CHECKING:
    from .build import Report

LEDGER = Path(__file__).resolve().parents[1] / "results" / "arith-estimators"
TABLE_NAME = "Searching with each uncertainty estimator"
SEED_SETS = {"seeds 0–2": (0, 1, 2), "seeds 3–5": (3, 4, 5)}  # the grid's recording and its replication
GOAL_PAIR, GOAL_BUDGETS = "B:prm", (16, 64)  # the issue's bar: a gain over REBASE on B that replicates at N = 16, 64
_ESTIMATOR = re.compile(r"(?:^|,)estimator=([^,]+)")


def estimator_of(variant: str) -> str:
    """The estimator of a cell from its variant ("estimator=ensemble,tau=auto"); the default's when unnamed."""
    found = _ESTIMATOR.search(str(variant))
    return found.group(1) if found else SearchConfig.estimator


def grid_differences(results: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """H-UATS(estimator) − REBASE accuracy per (pair, N, estimator, seed set), paired on (problem, seed): the
    difference, its printed half-width over problems (nan under too few problems) and the problems behind it."""
    rebase = results[results["method"] == "rebase"][["pair", "budget", "problem_id", "seed", "correct"]]
    uats = results[results["method"] == "h-uats"].assign(estimator=lambda d: d["variant"].map(estimator_of))
    rows = []
    for (pair, budget, estimator), g in uats.groupby(["pair", "budget", "estimator"], sort=True):
        both = g.merge(rebase, on=["pair", "budget", "problem_id", "seed"], suffixes=("", "_ref"))
        for name, seeds in SEED_SETS.items():
            m = both[both["seed"].isin(seeds)]
            if m.empty:
                continue
            d = (m["correct"].astype(float) - m["correct_ref"].astype(float)).set_axis(
                pd.MultiIndex.from_frame(m[["problem_id", "seed"]])
            )
            s = paired_summary(d, confidence)
            rows.append(
                {
                    "pair": pair,
                    "budget": int(budget),
                    "estimator": estimator,
                    "seeds": name,
                    "diff": s["diff"],
                    "half": shown_half(s["half_problems"], s["n_problems"]),
                    "n_problems": s["n_problems"],
                }
            )
    return pd.DataFrame(rows)


def seed_set_verdict(sides: dict[str, int]) -> str:
    """The verdict over the seed sets present (UP / NOISE / DOWN each), by the rule stated on the page."""
    word = {UP: "above zero", DOWN: "below zero"}
    if len(sides) < len(SEED_SETS):
        ((name, s),) = sides.items()
        return f"a lead ({name} only: {word[s]})" if s != NOISE else f"within noise ({name} only)"
    clear = {s for s in sides.values() if s != NOISE}
    if not clear:
        return "within noise in both seed sets"
    if len(clear) == 2:
        return "the seed sets conflict"
    if all(s != NOISE for s in sides.values()):
        return f"replicates ({word[clear.pop()]})"
    return f"a lead ({next(n for n, s in sides.items() if s != NOISE)} only)"


def _cleared_first(diffs: pd.DataFrame) -> pd.DataFrame:
    """The first seed set's differences that cleared zero: the ones the protocol runs the second seed set for."""
    first = diffs[diffs["seeds"] == next(iter(SEED_SETS))]
    return first[[side(d, h) != NOISE for d, h in zip(first["diff"], first["half"], strict=True)]]


def _unreplicated(diffs: pd.DataFrame, cleared: pd.DataFrame) -> list[str]:
    """The `cleared` differences (_cleared_first) that have not run on the second seed set on as many problems:
    "pair N=… estimator" each."""
    second = list(SEED_SETS)[1]
    ran = {
        (r["pair"], r["budget"], r["estimator"]): r["n_problems"] for _, r in diffs[diffs["seeds"] == second].iterrows()
    }
    return [
        f"{r['pair']} N={r['budget']} {r['estimator']}"
        for _, r in cleared.iterrows()
        if ran.get((r["pair"], r["budget"], r["estimator"]), 0) < r["n_problems"]
    ]


def _replication_state(diffs: pd.DataFrame) -> str:
    """What the verdict stands on: the whole protocol, or the cells run so far and what is still to run."""
    first, second = SEED_SETS
    cleared = _cleared_first(diffs)
    if cleared.empty:
        return f" (no difference cleared zero on {first}, so none is for {second} to replicate)"
    missing = _unreplicated(diffs, cleared)
    if not missing:
        return f" (every difference that cleared zero on {first} has run on {second}, on as many problems)"
    return f" on the cells run so far ({second} still to run in full for {', '.join(missing)})"


def grid_markdown(results: pd.DataFrame, confidence: float = 0.95) -> str:
    """The section's text: what the grid holds, the table (one row per pair, N and estimator), the rule and the
    verdict on the issue's bar."""
    diffs = grid_differences(results, confidence)
    if diffs.empty:
        return "The ledger holds no (problem, seed) cell that both H-UATS and REBASE ran yet."
    problems = results["problem_id"].nunique()
    lines = [
        f"H-UATS under each estimator minus REBASE, accuracy in points on the same (problem, seed) cells, ± the "
        f"{confidence:.0%} interval over problems (problems in brackets); the ledger holds {len(results):,} cells "
        f"over {problems} problems (seeds 0–2: `uats eval --spec recipes/arith-estimators.toml`; seeds 3–5, for each "
        "difference that cleared zero on seeds 0–2: `recipes/arith-estimators-seeds-3-5-*.toml`; each grid is "
        "problem-major, so every method and estimator ran on the same problems, and a seed set's column counts the "
        "problems it has reached). τ is each estimator's own `auto`, K0 = 7.",
        "",
    ]
    head = ["pair", "N", "estimator", *SEED_SETS, "verdict"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    met = []
    for (pair, budget, estimator), g in diffs.groupby(["pair", "budget", "estimator"], sort=True):
        by_set = {r["seeds"]: r for _, r in g.iterrows()}
        sides = {n: side(r["diff"], r["half"]) for n, r in by_set.items()}
        verdict = seed_set_verdict(sides)
        cells = [
            f"{diff_text(r['diff'], r['half'])} ({r['n_problems']})" if (r := by_set.get(n)) is not None else "–"
            for n in SEED_SETS
        ]
        lines.append(f"| {pair} | {budget} | {estimator} | " + " | ".join(cells) + f" | {verdict} |")
        if pair == GOAL_PAIR and budget in GOAL_BUDGETS and verdict == "replicates (above zero)":
            met.append((estimator, budget))
    winners = sorted({e for e, _ in met if all((e, b) in met for b in GOAL_BUDGETS)})
    lines += [
        "",
        f"**Rule**: a difference clears zero when its printed interval lies on one side of zero; it "
        f"*replicates* when it clears zero the same way in both seed sets, and is a lead when it clears zero in "
        f"one only (or only one seed set has run). The bar: an estimator whose H-UATS gain over REBASE on "
        f"{GOAL_PAIR} replicates at N = {' and '.join(map(str, GOAL_BUDGETS))}. **Verdict**: "
        + (f"met by {', '.join(winners)}." if winners else "no estimator meets it" + _replication_state(diffs) + "."),
    ]
    return with_provenance("\n".join(lines), results)


def grid_section(rep: Report) -> list[str]:
    """The page's section: its heading and the grid's table as the report holds it (`uats report` reads the ledger
    with storage.results_ledger's reader and puts grid_markdown's text in it); none while the report has none."""
    return [f"## {TABLE_NAME}", "", *section(rep, TABLE_NAME)] if rep.markdown.get(TABLE_NAME) else []
