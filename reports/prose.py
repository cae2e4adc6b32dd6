"""Sentences of the results page, each built from a report table and the verdict rule (verdicts.py): a number in
them is a number of the table they describe, printed the way that table prints it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from .replication import LEAD, REPLICATES
from .tables import pair_name
from .verdicts import NOISE, UP, diff_text, listing, masked, side, trend

if TYPE_CHECKING:
    from .build import Report


ONE_RECORDING_LEAD = f"the original recording alone: {LEAD}"
NAMES = {
    "best-of-n": "Best-of-N",
    "beam": "beam search",
    "dvts": "DVTS",
    "rebase": "REBASE",
    "dora": "DORA",
    "h-uats": "H-UATS",
    "a-uats": "A-UATS",
}


def name(method: str) -> str:
    """A method as sentences name it (tables keep its id)."""
    return NAMES.get(method, method)


def section(rep: Report, key: str) -> list[str]:
    """A report table as the page shows it ([] when the report has none)."""
    return [rep.markdown[key], ""] if key in rep.markdown else []


def at_n(rows: pd.DataFrame) -> str:
    """'+5.0 ± 4.7, +5.3 ± 3.9 and +3.2 ± 3.0 at N = 4, 16 and 64' (rows: budget, diff, half_problems)."""
    rows = masked(rows).sort_values("budget")
    return (
        f"{listing([diff_text(d, h) for d, h in zip(rows['diff'], rows['half_problems'])])} at N = "
        f"{listing([str(b) for b in rows['budget']])}"
    )


def clearing(rows: pd.DataFrame, one_recording: bool = True) -> str:
    """Where the differences clear zero: 'clears zero at N = 64 only', '... at every N', 'is within noise at every N';
    one_recording: the rows are of the original recording alone, so what clears zero is named a lead."""
    rows = masked(rows).sort_values("budget")
    clear = [str(b) for b, d, h in zip(rows["budget"], rows["diff"], rows["half_problems"]) if side(d, h) != NOISE]
    if not clear:
        return "is within noise at every N"
    said = "clears zero at every N" if len(clear) == len(rows) else f"clears zero at N = {listing(clear)} only"
    return said + (f" ({ONE_RECORDING_LEAD})" if one_recording else "")


def replication_said(rows: pd.DataFrame) -> str:
    """Where differences of both recordings replicate (replication.py's rows of one comparison, one per N): 'replicates
    upward at N = 64, is a lead (original only) at N = 4 and 16'; and where the pooled difference clears zero."""
    rows = rows.sort_values("budget")
    groups: dict[str, list[str]] = {}
    for r in rows.itertuples():
        word = r.verdict
        if word == REPLICATES:
            word += " upward" if side(r.original_diff, r.original_half) == UP else " downward"
        groups.setdefault(word, []).append(str(r.budget))
    said = [
        f"{'' if word.startswith(REPLICATES) else 'is '}{word} "
        + ("at every N" if len(budgets) == len(rows) else f"at N = {listing(budgets)}")
        for word, budgets in sorted(groups.items(), key=lambda kv: not kv[0].startswith(REPLICATES))
    ]
    text = ", ".join(said)
    if "pooled_diff" in rows:
        pooled = rows.rename(columns={"pooled_diff": "diff", "pooled_half": "half_problems"})[
            ["budget", "diff", "half_problems"]
        ]
        text += f" (pooled, it {clearing(pooled, one_recording=False)})"
    return text


def by_pair(rows: pd.DataFrame, roles: dict[str, str], what: str) -> list[str]:
    """Per pair: '**A:prm (ID)**: <what> <values at N>, <where they clear zero>'."""
    return [
        f"**{pair_name(pair, roles)}**: {what} {at_n(g)}: {clearing(g)}." for pair, g in rows.groupby("pair", sort=True)
    ]


def ranged(values: Iterable[float], fmt: str) -> str:
    """'0.94–1.09' (or one value) in a table's own format."""
    texts = sorted({format(v, fmt) for v in values}, key=float)
    return texts[0] if len(texts) == 1 else f"{texts[0]}–{texts[-1]}"


def clear_steps(ladder: pd.DataFrame, roles: dict[str, str]) -> list[str]:
    """The ladder steps (rows of `ladder`) that clear zero, such as
    'REBASE, MC mean − REBASE on A:prm (ID) at N = 64 (+3.2 ± 2.4)'."""
    return [
        f"{r.upper} − {r.lower} on {pair_name(r.pair, roles)} at N = {r.budget} ({diff_text(r.diff, r.half_problems)})"
        for r in masked(ladder).itertuples()
        if side(r.diff, r.half_problems) != NOISE
    ]


def step_rows(ladder: pd.DataFrame, upper: str, lower: str) -> pd.DataFrame:
    return ladder[(ladder["upper"] == upper) & (ladder["lower"] == lower)]


def path_text(ladder: pd.DataFrame, pair: str, budget: int, path: list[tuple[str, str]]) -> str:
    """The steps of one path up the ladder at (pair, N), each with its verdict."""
    parts, ladder = [], masked(ladder)
    for upper, lower in path:
        hit = ladder[
            (ladder["pair"] == pair)
            & (ladder["budget"] == budget)
            & (ladder["upper"] == upper)
            & (ladder["lower"] == lower)
        ]
        if len(hit):
            r = hit.iloc[0]
            word = "clears zero" if side(r["diff"], r["half_problems"]) != NOISE else "within noise"
            parts.append(f'"{r["change"]}" {diff_text(r["diff"], r["half_problems"])} ({word})')
    return listing(parts, empty="")


def growth_lines(rep: Report, dataset: str) -> list[str]:
    """Per pair: the methods whose accuracy grows, falls or stays flat from the smallest to the largest N."""
    growth = rep.tables.get("growth", pd.DataFrame())
    out = []
    for pair, g in masked(growth[growth["dataset"] == dataset]).groupby("pair", sort=True) if len(growth) else []:
        words = {
            w: [name(r.method) for r in g.itertuples() if trend(r.diff, r.half_problems) == w]
            for w in ("grows with N", "falls with N", "flat within noise")
        }
        said = [
            f"{verb} for {listing(words[w])}"
            for w, verb in (
                ("grows with N", "grows"),
                ("falls with N", "falls"),
                ("flat within noise", "is flat within noise"),
            )
            if words[w]
        ]
        if len(words["flat within noise"]) == len(g):
            said = ["is flat within noise for every method"]
        out.append(
            f"- **{pair_name(pair, rep.roles)}**, from N = {g['lo'].iloc[0]} to {g['hi'].iloc[0]}: accuracy "
            f"{listing(said)}."
        )
    return out


def pass_line(rep: Report, dataset: str) -> str:
    """Which method has the highest Pass@N at each (pair, N), and where Pass@N (at its upper end) is no higher than
    accuracy: the rows where choosing the answer loses nothing the search found."""
    cur = rep.tables["curves"]
    cur = cur[(cur["dataset"] == dataset) & (cur["variant"] == "base")]
    tops = []
    for (pair, budget), g in cur.groupby(["pair", "budget"], sort=True):
        top = g.sort_values("pass_at_n", ascending=False, kind="stable").iloc[0]
        tops.append(f"{name(top['method'])} on {pair} at N = {budget} ({100 * top['pass_at_n']:.1f})")
    level = [
        f"{name(r.method)} on {r.pair} at N = {r.budget}"
        for r in cur.itertuples()
        if f"{100 * r.pass_at_n:.1f}" == f"{100 * r.acc:.1f}"
    ]
    return (
        f"- **Pass@N** (a range counted at its upper end): the highest is {listing(tops)}. Pass@N is above "
        + (f"accuracy in every row but {listing(level)}, where they are equal" if level else "accuracy in every row")
        + ": some final candidate was right more often than the answer chosen."
    )
