"""The paper's claims against the grid, claim by claim: each row's numbers are read from the report's tables and its
verdict is computed by the rule (verdicts.py), so the table says only what those numbers say."""

from __future__ import annotations

import pandas as pd

from .ladder import SCORE_FIRST, UNCERTAINTY_ABLATION
from .replication import CONFLICTS, RECORDINGS, REPLICATES, lead_word, over_n_table
from .rerun import BASELINES, RULE_NAMES, claim_groups
from .sigma_features import checkpoint_of
from .stats import CELL, paired_summary
from .tables import markdown_table, pair_name
from .verdicts import NOISE, NOT_REPRODUCED, POINT_ONLY, REPRODUCED, REVERSED, claim, diff_text, listing, masked, side

# the paper's claims, as the paper states them (its tables and figures by number)
PAPER = {
    "order": "H-UATS is above every baseline on every pair (Table 4, mean over N)",
    "a_over_h": "A-UATS is above H-UATS on every pair (Table 4, mean over N)",
    "h_uncertainty": 'Uncertainty adds accuracy to H-UATS (Table 5, "w/o Uncert.": one deterministic pass)',
    "a_uncertainty": "Uncertainty adds accuracy to A-UATS (Table 5, the controller without σ features)",
    "harder": "Search beats sampling where problems are harder (the paper's premise)",
    "figure2": "Out of distribution the PRM is less reliable and its MC-dropout variance higher (Figure 2)",
    "reeval": "Re-evaluating uncertain candidates is where the gain comes from (the method's design)",
    "scope": "Results on many policy/PRM pairs, math benchmarks, LLM PRMs, GPU compute",
}
NO_SIGMA_VARIANT = "controller_uncertainty_features=False"  # A-UATS with the controller trained without σ
SCORE_KINDS = ("deterministic (baselines)", "MC mean of K0 passes (UATS)")  # steps.prm_summary's score kinds


def controller_name(variant: str) -> str:
    """An A-UATS variant's controller folder name ('auats-controller-carry'), else ''."""
    settings = dict(part.split("=", 1) for part in variant.split(",") if "=" in part)
    return settings["controller"].rstrip("/").split("/")[-1] if "controller" in settings else ""


def per_n(rows: pd.DataFrame, roles: dict[str, str], sign: float = 1.0) -> tuple[list[str], list[str]]:
    """Per pair: 'A:prm (ID) +1.0 ± 2.0, ... at N = 4 / 16 / 64' (rows: diff, half_problems, budget) and its claim,
    which rests on one recording (the original): a claim it reproduces or reverses is a lead, not a finding."""
    here, verdict = [], []
    for pair, g in masked(rows).groupby("pair", sort=True):
        g = g.sort_values("budget")
        values = [(sign * d, h) for d, h in zip(g["diff"], g["half_problems"])]
        budgets = " / ".join(str(b) for b in g["budget"])
        here.append(f"{pair_name(pair, roles)} {', '.join(diff_text(d, h) for d, h in values)} at N = {budgets}")
        verdict.append(f"{pair_name(pair, roles)}: {one_recording(claim(values))}")
    return here, verdict


def one_recording(word: str, recording: str = "original") -> str:
    """A claim's verdict from one recording: reproduced or reversed there is a lead (replication.py)."""
    return f"{word}, {lead_word(recording)}" if word in (REPRODUCED, REVERSED) else word


def replicated(claims: dict[str, str]) -> str:
    """A claim's verdicts in both recordings ({recording: verdict}) as one replication verdict: a finding only when
    both reproduce it (or both reverse it)."""
    found = {n: c for n, c in claims.items() if c in (REPRODUCED, REVERSED)}
    if not found:
        return "no finding in either recording"
    if len(found) == len(RECORDINGS) and len(set(found.values())) == 1:
        return f"{REPLICATES} ({next(iter(found.values()))} in both recordings)"
    if len(found) == len(RECORDINGS):
        return CONFLICTS
    ((recording, word),) = found.items()
    return f"{word} in the {recording} recording only: {lead_word(recording)}"


def both_recordings(values: dict[str, list[tuple[float, float]]]) -> str:
    """'original: reversed; rerun: not reproduced; pooled: ...; <replication verdict>' from each recording's
    differences (and the pooled ones), or the original's claim alone as a lead where there is no rerun."""
    claims = {n: claim(v) for n, v in values.items() if v}
    if set(RECORDINGS) - set(claims):
        return one_recording(claims.get("original", NOT_REPRODUCED))
    parts = [f"{n}: {claims[n]}" for n in (*RECORDINGS, "pooled") if n in claims]
    return "; ".join(parts) + f"; {replicated({n: claims[n] for n in RECORDINGS})}"


def order_row(ordering: pd.DataFrame, over: pd.DataFrame, roles: dict[str, str]) -> list[str] | None:
    """H-UATS above every baseline under the weighted vote: each recording's differences (and pooled, `over`:
    replication.over_n_table's rows) and the replication verdict, and under which other rules it holds; None without
    H-UATS and a baseline beside it."""
    here, verdict = [], []
    baselines = [c[2:] for c in ordering.columns if c.startswith("h-") and not c.endswith("_half")]
    weighted = ordering[ordering["rule"] == "weighted"]
    for pair, g in weighted.groupby("pair", sort=True):
        values: dict[str, list[tuple[float, float]]] = {}
        for _, row in g.iterrows():
            values[row["recording"]] = [
                (row[f"h-{y}"], row[f"h-{y}_half"]) for y in baselines if pd.notna(row[f"h-{y}"])
            ]
            found = sorted(
                ((row[f"h-{y}"], row[f"h-{y}_half"], y) for y in baselines if pd.notna(row[f"h-{y}"])),
                key=lambda t: t[0],
            )
            if found:
                (lo, lo_half, lo_name), (hi, hi_half, hi_name) = found[0], found[-1]
                here.append(
                    f"{pair_name(pair, roles)}, {row['recording']}: H-UATS − each baseline from "
                    f"{diff_text(lo, lo_half)} ({lo_name}) to {diff_text(hi, hi_half)} ({hi_name})"
                )
        pooled = over[(over["pair"] == pair) & (over["x"] == "h-uats")] if len(over) else over
        values["pooled"] = [(r.pooled_diff, r.pooled_half) for r in pooled.itertuples()]
        if any(values.values()):
            verdict.append(f"{pair_name(pair, roles)}, weighted vote: {both_recordings(values)}")
    if not here:
        return None
    others = claim_groups(ordering[ordering["rule"] != "weighted"], "h_claim")
    here.append('every rule: "Which rule orders the methods" ("Answer aggregation")')
    verdict += [
        f"{word} under another rule (looked at after the results: a lead): "
        f"{listing(others.get(word, []), empty='no rule')}"
        for word in (REPRODUCED, POINT_ONLY)
    ]
    for _, row in ordering[(ordering["h_claim"] == POINT_ONLY) & (ordering["rule"] != "weighted")].iterrows():
        noise = [
            f"{y} {diff_text(row[f'h-{y}'], row[f'h-{y}_half'])}"
            for y in baselines
            if pd.notna(row[f"h-{y}"]) and side(row[f"h-{y}"], row[f"h-{y}_half"]) == NOISE
        ]
        verdict.append(
            f"{row['recording']} {RULE_NAMES[row['rule']]} on {row['pair']}: within noise of {listing(noise)}"
        )
    return [PAPER["order"], "; ".join(here), "; ".join(verdict)]


def a_over_h_row(contrasts: pd.DataFrame, over: pd.DataFrame, vdiff: pd.DataFrame, roles: dict[str, str]) -> list[str]:
    """A-UATS above H-UATS by the paper's definition, on the mean over N: each recording (contrasts: the original's;
    over: both and pooled, replication.over_n_table) and the replication verdict; the retrained controllers per N,
    from the original recording."""
    here, verdict = [], []
    ah = masked(contrasts[(contrasts["x"] == "a-uats") & (contrasts["y"] == "h-uats")]) if len(contrasts) else contrasts
    for pair, g in ah.groupby("pair", sort=True):
        o = over[(over["pair"] == pair) & (over["x"] == "a-uats")] if len(over) else over
        if len(o):
            r = o.iloc[0]
            values = {n: [(r[f"{n}_diff"], r[f"{n}_half"])] for n in (*RECORDINGS, "pooled")}
        else:
            values = {"original": [(g["diff"].iloc[0], g["half_problems"].iloc[0])]}
        here.append(
            f"{pair_name(pair, roles)}, mean over N: " + ", ".join(f"{n} {diff_text(*v[0])}" for n, v in values.items())
        )
        verdict.append(f"{pair_name(pair, roles)}: {both_recordings(values)}")
    if vdiff.empty:
        return [PAPER["a_over_h"], "; ".join(here), "; ".join(verdict)]
    retrained = vdiff[
        (vdiff["method"] == "a-uats")
        & (vdiff["reference"] == "h-uats (base)")
        & vdiff["variant"].map(controller_name).ne("")
        & ~vdiff["variant"].str.contains(NO_SIGMA_VARIANT)
    ]
    for variant, g in retrained.groupby("variant", sort=True):
        h, v = per_n(g, roles)
        here.append(f"the retrained `{controller_name(variant)}` (the original recording, N = 16 alone): {listing(h)}")
        verdict.append(f"`{controller_name(variant)}`: {listing(v)}")
    return [PAPER["a_over_h"], "; ".join(here), "; ".join(verdict)]


def ladder_row(ladder: pd.DataFrame, upper: str, lower: str, key: str, roles: dict[str, str]) -> list[str]:
    rows = ladder[(ladder["upper"] == upper) & (ladder["lower"] == lower)]
    here, verdict = per_n(rows, roles)
    return [PAPER[key], f"{upper} − {lower}: " + "; ".join(here), "; ".join(verdict)]


def variants_paired(results: pd.DataFrame, x: str, y: str, confidence: float) -> pd.DataFrame | None:
    """Variant x − variant y of A-UATS on the (problem, seed) cells both ran, per (pair, budget)."""
    a = results[(results["method"] == "a-uats") & (results["variant"] == x)][[*CELL, "correct"]]
    b = results[(results["method"] == "a-uats") & (results["variant"] == y)][[*CELL, "correct"]]
    both = a.merge(b, on=CELL, suffixes=("", "_ref"))
    rows = []
    for (pair, budget), m in both.groupby(["pair", "budget"], sort=True):
        d = (m["correct"].astype(float) - m["correct_ref"].astype(float)).set_axis(
            pd.MultiIndex.from_frame(m[["problem_id", "seed"]])
        )
        rows.append({"pair": pair, "budget": budget, **paired_summary(d, confidence)})
    return pd.DataFrame(rows) if rows else None


def a_uncertainty_row(
    vdiff: pd.DataFrame,
    results: pd.DataFrame,
    controller: pd.DataFrame | None,
    roles: dict[str, str],
    confidence: float,
) -> list[str]:
    """With σ − without σ: the shipped controllers (the ablation's variant against A-UATS's base, negated) and the
    retrained ones paired directly; and what the controller table says about the controllers behind them."""
    shipped = vdiff[
        (vdiff["method"] == "a-uats") & (vdiff["variant"] == NO_SIGMA_VARIANT) & (vdiff["reference"] == "a-uats (base)")
    ]
    here, verdict = per_n(shipped, roles, sign=-1.0)
    here, verdict = [f"with σ − without σ, shipped controllers: {listing(here)}"], [f"shipped: {listing(verdict)}"]
    retrained = sorted({v for v in results.loc[results["method"] == "a-uats", "variant"] if controller_name(v)})
    with_sigma = [v for v in retrained if NO_SIGMA_VARIANT not in v]
    without = [v for v in retrained if NO_SIGMA_VARIANT in v]
    if (
        with_sigma
        and without
        and (paired := variants_paired(results, with_sigma[0], without[0], confidence)) is not None
    ):
        h, v = per_n(paired, roles)
        here.append(f"retrained (`{controller_name(with_sigma[0])}` − `{controller_name(without[0])}`): {listing(h)}")
        verdict.append(f"retrained: {listing(v)}")
    measured = set()
    if controller is not None and len(controller):
        for name, g in controller.groupby("controller", sort=True):
            sigma = g["sigma_moves"].dropna()
            measured.add(name)
            here.append(
                f"`{name}`'s knobs move at most {100 * g['spread'].max():.2f}% of a knob's range over the states "
                f"its searches met" + (f", its σ features at most {100 * sigma.max():.2f}%" if len(sigma) else "")
            )
    unmeasured = sorted(
        {checkpoint_of(v).name for v in results.loc[results["method"] == "a-uats", "variant"]} - measured
    )
    if unmeasured:
        here.append(f"no controller steps are recorded for {listing([f'`{m}`' for m in unmeasured])}")
    return [PAPER["a_uncertainty"], "; ".join(here), "; ".join(verdict)]


def harder_row(contrasts: pd.DataFrame, harder: list[str], roles: dict[str, str]) -> list[str]:
    """Each tree search − Best-of-N on the harder datasets, paired on the mean over N."""
    here, verdict, contrasts = [], [], masked(contrasts)
    for dataset in harder:
        g = contrasts[(contrasts["dataset"] == dataset) & (contrasts["y"] == "best-of-n")]
        g = pd.concat(
            [
                g,
                contrasts[(contrasts["dataset"] == dataset) & (contrasts["x"] == "best-of-n")].assign(
                    diff=lambda t: -t["diff"], x=lambda t: t["y"], y="best-of-n"
                ),
            ]
        )
        for pair, p in g.groupby("pair", sort=True):
            values = [(r.diff, r.half_problems) for r in p.itertuples()]
            here.append(
                f"`{dataset}`, {pair_name(pair, roles)}: "
                + ", ".join(f"{r.x} − best-of-n {diff_text(r.diff, r.half_problems)}" for r in p.itertuples())
            )
            verdict.append(f"{pair_name(pair, roles)}: {claim(values)}")
    return [PAPER["harder"], "; ".join(here), "; ".join(verdict)]


def figure2_row(summary: pd.DataFrame, dataset: str, roles: dict[str, str]) -> list[str]:
    """Point estimates from the Figure 2 table: AUROC of the deterministic scores, σ² over τ, σ² of wrong and right
    steps out of distribution."""
    s = summary[summary["dataset"] == dataset].set_index(["pair", "score_kind"])
    pairs = sorted(summary.loc[summary["dataset"] == dataset, "pair"].unique())
    ood = [p for p in pairs if roles.get(p) == "OOD"]
    ind = [p for p in pairs if roles.get(p) == "ID"]
    if not (ood and ind) or any((p, k) not in s.index for p in (ood[0], ind[0]) for k in SCORE_KINDS):
        return [PAPER["figure2"], "–", "not testable here: no ID and OOD pair with both kinds of score"]
    o, i = ood[0], ind[0]
    det, mc = SCORE_KINDS
    auroc_o, auroc_i = s.loc[(o, det), "auroc"], s.loc[(i, det), "auroc"]
    over_o, over_i = s.loc[(o, mc), "share_var_over_tau"], s.loc[(i, mc), "share_var_over_tau"]
    wrong, right = s.loc[(o, mc), "var_median_wrong"], s.loc[(o, mc), "var_median_correct"]
    here = [
        f"step AUROC {auroc_i:.3f} on {pair_name(i, roles)} against {auroc_o:.3f} on {pair_name(o, roles)}",
        f"σ² over τ for {100 * over_o:.1f}% of {o}'s steps and {100 * over_i:.1f}% of {i}'s",
        f"median σ² of {o}'s wrong steps {wrong:.2e} against {right:.2e} for its right ones",
    ]
    style = auroc_o < auroc_i and over_o > over_i
    errors = wrong > right
    verdict = (
        ("reproduced for the style" if style else "not reproduced for the style")
        + (", and for the errors" if errors else f", not for the errors: σ² flags {o}'s steps, not its wrong ones")
        + " (point estimates)"
    )
    return [PAPER["figure2"], "; ".join(here), verdict]


def claims_markdown(
    rep_tables: dict[str, pd.DataFrame], main: str, harder: list[str], roles: dict[str, str], confidence: float
) -> str:
    """The claims table from the report's tables (main: the dataset of the full grid; harder: the harder ones)."""
    t = rep_tables
    vdiff = t.get("variant_differences", pd.DataFrame())
    vdiff = vdiff[vdiff["dataset"] == main] if len(vdiff) else vdiff
    ladder = t.get("ladder", pd.DataFrame())
    ladder = ladder[ladder["dataset"] == main] if len(ladder) else ladder
    over = pd.DataFrame()
    again = t.get("rerun_rows")
    if again is not None and len(again):
        results = t["results"]
        original = results[(results["dataset"] == main) & (results["variant"] == "base")]
        again = again[(again["dataset"] == main) & (again["variant"] == "base")]
        over = over_n_table(original, again, [*[("h-uats", y) for y in BASELINES], ("a-uats", "h-uats")], confidence)
    first = order_row(t["rule_ordering"], over, roles) if len(t.get("rule_ordering", [])) else None
    rows = [first] if first else []
    contrasts = t.get("contrasts", pd.DataFrame())
    contrasts = contrasts[contrasts["dataset"] == main] if len(contrasts) else contrasts
    if len(contrasts) and ((contrasts["x"] == "a-uats") & (contrasts["y"] == "h-uats")).any():
        rows.append(a_over_h_row(contrasts, over, vdiff, roles))
    if len(ladder):
        rows.append(ladder_row(ladder, *UNCERTAINTY_ABLATION, "h_uncertainty", roles))
    if len(vdiff):
        rows.append(
            a_uncertainty_row(
                vdiff, t["results"][t["results"]["dataset"] == main], t.get("controller"), roles, confidence
            )
        )
    if harder and len(t.get("contrasts", [])):
        rows.append(harder_row(t["contrasts"], harder, roles))
    if "prm_summary" in t and len(t["prm_summary"]):
        rows.append(figure2_row(t["prm_summary"], main, roles))
    if len(ladder):
        rows.append(ladder_row(ladder, *SCORE_FIRST[-1], "reeval", roles))
    rows.append([PAPER["scope"], "two tiny pairs, arithmetic problems, CPU", "not testable here"])
    return (
        "The paper's claims against this grid: what the report's tables give for each (differences in points, "
        f"paired on the same (problem, seed) cells, ± {100 * confidence:g}% t over problems), in each recording that "
        "holds the cells (the rerun holds the test split's base cells alone; every other row rests on the original "
        "recording) and pooled, and the verdict by the rule, with the replication verdict\n\n"
        + markdown_table(["the paper's claim", "here", "verdict"], rows)
    )
