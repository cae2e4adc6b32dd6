"""Verdicts by one rule: every word the results page says about a difference ("clears zero", "within noise"), a claim
("reproduced", "reversed"), a trend ("grows with N") or a ranking ("leads", "the order") is computed here from the
interval and the table it describes, and `rule_text` states the rule once, on the page.

Verdicts are taken on the printed numbers (a tenth of a point), so a reader checks each one against the table beside
it, and float noise under the last printed digit can never flip one."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from .stats import method_key, shown_half

UP, NOISE, DOWN = 1, 0, -1
REPRODUCED, POINT_ONLY, NOT_REPRODUCED, REVERSED = (
    "reproduced",
    "on point estimates only",
    "not reproduced",
    "reversed",
)
CLEARS, WITHIN = "clears zero", "within noise"


def masked(rows: pd.DataFrame) -> pd.DataFrame:
    """Paired-difference rows (diff, half_problems, n_problems) as the tables print them: no interval over fewer than
    MIN_REPLICATES problems, so a verdict never rests on an interval the table does not show."""
    if rows.empty or "n_problems" not in rows:
        return rows
    return rows.assign(half_problems=shown_half(rows["half_problems"], rows["n_problems"]))


def points(share: float) -> float:
    """A share (0.032) as the tables print it in points (3.2): the number every verdict is taken on."""
    return float(f"{100 * share:.1f}")


def side(diff: float, half: float) -> int:
    """UP when the printed interval diff ± half lies above zero, DOWN when below, NOISE when it reaches zero (or
    there is no interval: too few problems)."""
    if half is None or math.isnan(half) or math.isnan(diff):
        return NOISE
    d, h = points(diff), points(half)
    return UP if d > h else DOWN if -d > h else NOISE


def diff_text(diff: float, half: float) -> str:
    """'+3.2 ± 2.4' in points, as the paired tables print a difference and its interval over problems; '–' for none."""
    if diff is None or math.isnan(diff):
        return "–"
    return f"{100 * diff:+.1f}" + ("" if half is None or math.isnan(half) else f" ± {100 * half:.1f}")


def zero_word(diff: float, half: float) -> str:
    return CLEARS if side(diff, half) != NOISE else WITHIN


def claim(diffs: Iterable[tuple[float, float]]) -> str:
    """A claim that X is above each of several others, from the differences X − other and their intervals (a missing
    difference, nan, names no other: that method did not run)."""
    pairs = [(d, h) for d, h in diffs if d is not None and not math.isnan(d)]
    sides = [side(d, h) for d, h in pairs]
    if not pairs:
        return NOT_REPRODUCED
    if DOWN in sides:
        return REVERSED
    if all(s == UP for s in sides):
        return REPRODUCED
    return POINT_ONLY if all(points(d) > 0 for d, _ in pairs) else NOT_REPRODUCED


def trend(diff: float, half: float) -> str:
    """Accuracy from the smallest to the largest N: the paired difference largest − smallest and its interval."""
    return {UP: "grows with N", DOWN: "falls with N", NOISE: "flat within noise"}[side(diff, half)]


def order(means: dict[str, float]) -> list[str]:
    """Methods by point estimate, highest first (ties in the paper's method order)."""
    return sorted(means, key=lambda m: (-points(means[m]), method_key(m)))


def lead(first_minus_others: Sequence[tuple[float, float]]) -> str:
    """The first method by point estimate leads when its difference to every other method clears zero."""
    return (
        "leads"
        if first_minus_others and all(side(d, h) == UP for d, h in first_minus_others)
        else "first on point estimates"
    )


def listing(items: Sequence[str], empty: str = "none") -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if not items:
        return empty
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def rule_text(confidence: float, two_recordings: bool = False) -> str:
    """The rule, printed once on the page; two_recordings: the test split's base cells were recorded twice (a rerun)."""
    return (
        f"**The verdict rule.** Every verdict on this page is computed by the report from the numbers it stands "
        f"beside (`reports/verdicts.py`), on the printed values. A paired difference *clears zero* when "
        f"its {100 * confidence:g}% t-interval over problems lies on one side of zero; otherwise it is *within "
        f"noise*. A claim that one method is above others is *{REPRODUCED}* when every difference it names clears "
        f"zero upward, holds *{POINT_ONLY}* when every one is positive but some are within noise, is "
        f"*{NOT_REPRODUCED}* when some difference is zero or negative within noise, and is *{REVERSED}* when "
        "some difference clears zero downward. A method *leads* when it has the highest mean and its difference "
        "to every other method clears zero; otherwise it is *first on point estimates*. Accuracy *grows with N* "
        "(*falls with N*) when the paired difference from the smallest to the largest N clears zero upward "
        "(downward); otherwise it is *flat within noise*. *The order* of methods is by point estimate. Comparisons "
        "without an interval (AUROC, shares of steps) are of point estimates and say so. Where a table has many "
        f"rows, {'about one in twenty' if confidence == 0.95 else 'a share'} of those with no true difference "
        "clear zero by chance alone, so a single row that clears zero is a lead to follow, not a finding. "
        + (
            "**Replication.** The test split's base cells were recorded twice, by different searches (the original "
            "recording and the rerun). A difference *replicates* only when it clears zero the same way in both "
            "recordings; one that clears zero in one recording only is *a lead*, and so is every difference, or "
            "claim reproduced or reversed, that rests on one recording (every section below the claims reads the "
            'original recording alone, except the rerun\'s own tables in "Answer aggregation"). *Pooled* puts both '
            "recordings' cells together (each recording's seeds apart); it is shown, not voted on."
            if two_recordings
            else "**Replication.** With one recording of the cells, every difference that clears zero, and every "
            "claim reproduced or reversed, is *a lead*: a difference *replicates* only when a second recording of "
            "the same cells clears zero the same way."
        )
    )
