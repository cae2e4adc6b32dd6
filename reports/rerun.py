"""A rerun ledger: the same cells as another ledger's, run again keeping what the first recording lost (the final
solutions, hence every aggregation rule), e.g. results/arith-rerun for results/arith-grid's base cells.

The two recordings are different searches of the same cells (here batched runs across many commits against one
unbatched commit), so the report never mixes them: the rerun gives the answer under every rule on the problems it has
finished, and a comparison table says how its recorded weighted vote and best score relate to the original's on the
same cells (agreement share, and the paired difference with its interval)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from uats_core.config import AGGREGATIONS
from uats_core.methods import method_names, uncertainty_methods

from .aggregation import KEYS, aggregation_from_votes, vote_rows
from .compare import paired_mean_over_n
from .provenance import with_provenance
from .stats import paired_summary, shown_half, sort_by_method
from .tables import half_text, markdown_table, mean_pm, pair_name
from .verdicts import claim, diff_text

AXES = ["pair", "method", "budget", "seed"]  # a problem is finished when the rerun has every one of these
RULE_NAMES = {
    "weighted": "weighted vote",
    "best": "best final score",
    "majority": "majority",
    "distinct": "distinct solutions",
}
# (rule a, rule b): the differences the aggregation table shows, a − b on the same cells
RULE_DIFFS = [("best", "weighted"), ("majority", "weighted"), ("distinct", "best")]
BASELINES = [m for m in method_names() if m not in uncertainty_methods()]  # what H-UATS is held against


@dataclass
class Rerun:
    """A rerun ledger's rows (`solutions`: each cell's final solutions, candidates.csv.gz) and controller steps."""

    name: str
    results: pd.DataFrame
    controller: pd.DataFrame

    def covers(self, rows: pd.DataFrame) -> pd.Series:
        """Which of `rows` are in a (dataset, variant) group the rerun runs again."""
        groups = pd.MultiIndex.from_frame(self.results[["dataset", "variant"]].drop_duplicates())
        return pd.Series(pd.MultiIndex.from_frame(rows[["dataset", "variant"]]).isin(groups), index=rows.index)


def rerun_sections(
    df: pd.DataFrame, rerun: Rerun, roles: dict[str, str], confidence: float
) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """The rerun's tables and their Markdown: its coverage, the two recordings side by side, every rule, and the rule
    ordering. df: the report's rows (the first recording)."""
    original = df[rerun.covers(df)]
    done, cov = finished_rerun(original, rerun.results)
    rec = recordings(original, done, confidence)
    votes = vote_rows(done, done[["cell_key", "solutions"]].dropna())  # every rule, once per cell
    rules = rule_table(votes, confidence) if len(done) else pd.DataFrame()
    ordering = ordering_table(original, votes, confidence)
    tables = {
        "rerun_coverage": pd.DataFrame([cov]),
        "rerun_recordings": rec,
        "rerun_rules": rules,
        "rule_ordering": ordering,
        "rerun_rows": done,
    }
    markdown = {"Rerun coverage": with_provenance(coverage_markdown(cov, rec, rerun.name), rerun.results)}
    if text := recordings_markdown(rec, roles):
        both = pd.concat([done, original[original["cell_key"].isin(set(done["cell_key"]))]], ignore_index=True)
        markdown["Rerun against the original"] = with_provenance(text, both)
    if text := rule_markdown(rules, roles):
        markdown["Every answer rule"] = with_provenance(text, done)
    if text := ordering_markdown(ordering, roles):
        markdown["Which rule orders the methods"] = with_provenance(
            text, pd.concat([original, done], ignore_index=True)
        )
    return tables, markdown


def finished_rerun(original: pd.DataFrame, rerun: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rerun's rows of the problems it has finished (every (pair, method, budget, seed) the original ran for them;
    `original`: the first recording's rows of the groups the rerun runs again) and its coverage: cells, cells of the
    original, problems finished and their cells."""
    same = rerun[rerun["cell_key"].isin(set(original["cell_key"]))]
    keep = []
    for (dataset, variant), g in same.groupby(["dataset", "variant"], sort=False):
        ref = original[(original["dataset"] == dataset) & (original["variant"] == variant)]
        wanted = len(ref[AXES].drop_duplicates())
        per_problem = g.groupby("problem_id").size()
        keep.append(g[g["problem_id"].isin(set(per_problem[per_problem == wanted].index))])
    done = pd.concat(keep, ignore_index=True) if keep else same.iloc[:0]
    return done, {
        "cells": len(rerun),
        "of_original": len(same),
        "original_cells": len(original),
        "problems": int(done["problem_id"].nunique()),
        "problems_original": int(original["problem_id"].nunique()),
        "cells_finished": len(done),
    }


def recordings(original: pd.DataFrame, done: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per (pair, method, budget), on the cells both recorded: the original's and the rerun's accuracy under the
    recorded weighted vote and best score, the paired difference rerun − original and the share of cells where the
    two recordings' answers are both right or both wrong."""
    both = done.merge(original[["cell_key", "correct", "naive_correct"]], on="cell_key", suffixes=("", "_orig"))
    rows = []
    for key, g in both.groupby(["pair", "method", "budget"], sort=False):
        rec: dict[str, Any] = {
            **dict(zip(["pair", "method", "budget"], key)),
            "cells": len(g),
            "n_seeds": int(g["seed"].nunique()),
        }
        index = pd.MultiIndex.from_frame(g[["problem_id", "seed"]])
        for col, name in (("correct", "weighted"), ("naive_correct", "best")):
            new, old = g[col].astype(float), g[f"{col}_orig"].astype(float)
            rec[f"{name}_orig"] = float(old.groupby(g["seed"]).mean().mean())
            rec[f"{name}_rerun"] = float(new.groupby(g["seed"]).mean().mean())
            s = paired_summary((new - old).set_axis(index), confidence)  # an interval only as the table prints it
            rec[f"{name}_diff"], rec[f"{name}_half"] = s["diff"], shown_half(s["half_problems"], s["n_problems"])
            rec["n_problems"] = s["n_problems"]
            rec[f"{name}_agree"] = float((new == old).mean())
        rows.append(rec)
    return sort_by_method(pd.DataFrame(rows), ["pair", "method", "budget"]) if rows else pd.DataFrame()


def coverage_markdown(cov: dict[str, Any], rec: pd.DataFrame, name: str) -> str:
    agree = {
        n: (f"{100 * (rec[f'{n}_agree'] * rec['cells']).sum() / rec['cells'].sum():.1f}%" if len(rec) else "–")
        for n in ("weighted", "best")
    }
    row = [
        f"`{name}`",
        f"{cov['cells']:,}",
        f"{cov['of_original']:,} of {cov['original_cells']:,}",
        f"{cov['problems']:,} of {cov['problems_original']:,}",
        f"{cov['cells_finished']:,}",
        agree["weighted"],
        agree["best"],
    ]
    return (
        "The rerun: its cells, those that are cells of the original recording, the problems it has finished (every "
        "pair, method, N and seed) and their cells, the ones every table of the rerun reads; and on those cells the "
        "share where its recorded weighted vote, and its best final score, are right exactly when the original "
        "recording's are\n\n"
        + markdown_table(
            [
                "ledger",
                "cells",
                "of the original's",
                "problems finished",
                "cells read",
                "weighted vote agrees",
                "best score agrees",
            ],
            [row],
        )
    )


def recordings_markdown(rec: pd.DataFrame, roles: dict[str, str]) -> str:
    if rec.empty:
        return ""
    rows = []
    for r in rec.itertuples():
        row = [pair_name(r.pair, roles), r.method, r.budget, r.cells]
        for n in ("weighted", "best"):
            row += [
                mean_pm(getattr(r, f"{n}_orig"), float("nan")),
                mean_pm(getattr(r, f"{n}_rerun"), float("nan")),
                f"{100 * getattr(r, f'{n}_diff'):+.1f}",
                half_text(getattr(r, f"{n}_half"), r.n_problems, "problems"),
                f"{100 * getattr(r, f'{n}_agree'):.1f}%",
            ]
        rows.append(row)
    return (
        "The two recordings of the same cells, on the problems the rerun has finished: accuracy (%) under the "
        "recorded weighted vote and best final score in the original recording and in the rerun, the paired "
        "difference rerun − original in points with its 95% t-interval over problems, and the share of cells "
        "where both recordings are right or both wrong\n\n"
        + markdown_table(
            [
                "pair",
                "method",
                "N",
                "cells",
                "weighted: original",
                "rerun",
                "rerun − original",
                "± over problems",
                "agree",
                "best score: original",
                "rerun",
                "rerun − original",
                "± over problems",
                "agree",
            ],
            rows,
        )
    )


def rule_table(votes: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Every aggregation rule on the rerun's finished cells (aggregation.vote_rows' rows), with the paired differences
    between rules (RULE_DIFFS) on the same cells."""
    table = aggregation_from_votes(votes, confidence)
    diffs = []
    for key, g in votes.groupby(KEYS, sort=False):
        index = pd.MultiIndex.from_frame(g[["problem_id", "seed"]])
        rec = dict(zip(KEYS, key))
        for a, b in RULE_DIFFS:
            s = paired_summary((g[f"{a}_re"] - g[f"{b}_re"]).set_axis(index).dropna(), confidence)
            rec[f"{a}_minus_{b}"], rec["n_problems"] = s["diff"], s["n_problems"]
            rec[f"{a}_minus_{b}_half"] = shown_half(s["half_problems"], s["n_problems"])  # as the table prints it
        diffs.append(rec)
    return table.merge(pd.DataFrame(diffs), on=KEYS) if diffs else table


def rule_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    rows = []
    for r in table.itertuples():
        rec = r._asdict()
        row = [
            pair_name(r.pair, roles),
            r.method,
            r.budget,
            r.cells_re,
            *[mean_pm(rec[f"{rule}_re"], rec[f"{rule}_re_half"], n=r.n_seeds_re) for rule in AGGREGATIONS],
        ]
        row += [
            f"{100 * rec[f'{a}_minus_{b}']:+.1f} {half_text(rec[f'{a}_minus_{b}_half'], r.n_problems, 'problems')}"
            for a, b in RULE_DIFFS
        ]
        row.append(f"{100 * r.agree:.1f}%")
        rows.append(row)
    return (
        "Accuracy (%) under every answer rule, the rerun's cells of the problems it has finished: the weighted vote, "
        "the best final score, plain majority and the weighted vote counting each distinct final solution once, "
        "recomputed from each cell's final solutions (± 95% t over seeds); differences between rules in points on the "
        "same cells (± 95% t over problems); and the share of cells where the recomputed weighted vote is the one "
        "the rerun recorded\n\n"
        + markdown_table(
            [
                "pair",
                "method",
                "N",
                "cells",
                *[RULE_NAMES[r] for r in AGGREGATIONS],
                *[f"{RULE_NAMES[a]} − {RULE_NAMES[b]}" for a, b in RULE_DIFFS],
                "agrees",
            ],
            rows,
        )
    )


def ordering_table(original: pd.DataFrame, votes: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per (recording, rule, pair): H-UATS − each baseline and A-UATS − H-UATS, paired on the mean over N (± over
    problems), and the claims they make: H-UATS above every baseline, A-UATS above H-UATS (the paper's Table 4
    order). The original recording has the weighted vote and the best score; the rerun (`votes`: vote_rows' rows of
    its finished cells) every rule."""
    sources = [("original", "weighted", original, "correct"), ("original", "best", original, "naive_correct")]
    sources += [("rerun", rule, votes, f"{rule}_re") for rule in AGGREGATIONS] if len(votes) else []
    rows = []
    for recording, rule, frame, col in sources:
        for pair, g in frame.groupby("pair", sort=True):
            rec: dict[str, Any] = {
                "recording": recording,
                "rule": rule,
                "pair": pair,
                "n_problems": int(g["problem_id"].nunique()),
            }
            for name, (x, y) in {**{f"h-{y}": ("h-uats", y) for y in BASELINES}, "a-h": ("a-uats", "h-uats")}.items():
                s = paired_mean_over_n(g, x, y, col, confidence)
                rec[name], rec[f"{name}_half"] = (
                    (s["diff"], shown_half(s["half_problems"], s["n_problems"])) if s else (float("nan"), float("nan"))
                )
            rec["h_claim"] = claim((rec[f"h-{y}"], rec[f"h-{y}_half"]) for y in BASELINES)
            rec["a_claim"] = claim([(rec["a-h"], rec["a-h_half"])])
            rows.append(rec)
    return pd.DataFrame(rows)


def claim_groups(ordering: pd.DataFrame, column: str, skip: tuple[str, str] | None = None) -> dict[str, list[str]]:
    """Per verdict in `column` (h_claim, a_claim): the rules it holds under, as 'original best final score (A:prm,
    B:prm)', in the table's order; `skip`: a (recording, rule) left out."""
    found: dict[str, dict[str, list[str]]] = {}
    for _, r in ordering.iterrows():
        if (r["recording"], r["rule"]) != skip:
            rule = f"{r['recording']} {RULE_NAMES[r['rule']]}"
            found.setdefault(r[column], {}).setdefault(rule, []).append(r["pair"])
    return {word: [f"{rule} ({', '.join(pairs)})" for rule, pairs in rules.items()] for word, rules in found.items()}


def ordering_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    rows = [
        [
            r["recording"],
            RULE_NAMES[r["rule"]],
            pair_name(r["pair"], roles),
            r["n_problems"],
            *[diff_text(r[f"h-{y}"], r[f"h-{y}_half"]) for y in BASELINES],
            r["h_claim"],
            diff_text(r["a-h"], r["a-h_half"]),
            r["a_claim"],
        ]
        for _, r in table.iterrows()
    ]
    return (
        "Which answer rule orders the methods as the paper's Table 4 does: H-UATS against each baseline and A-UATS "
        "against H-UATS, paired on the mean accuracy over N (points, ± 95% t over problems), under each rule of "
        "each recording (the original recording keeps the weighted vote and the best final score, the rerun every "
        "rule, on the problems it has finished), and the claim's verdict\n\n"
        + markdown_table(
            [
                "recording",
                "rule",
                "pair",
                "problems",
                *[f"H-UATS − {y}" for y in BASELINES],
                "H-UATS above every baseline",
                "A-UATS − H-UATS",
                "A-UATS above H-UATS",
            ],
            rows,
        )
    )
