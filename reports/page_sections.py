"""The later sections of the generated results page (page.py): duplicate candidates, answer aggregation, the harder
split, Figure 2 and the A-UATS controller, each its tables and the sentences that read them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from .prose import ONE_RECORDING_LEAD, growth_lines, name, pass_line, ranged, section
from .rerun import RULE_DIFFS, RULE_NAMES, claim_groups
from .sigma_features import checkpoint_of
from .tables import pair_name
from .verdicts import (
    DOWN,
    NOISE,
    NOT_REPRODUCED,
    POINT_ONLY,
    REPRODUCED,
    REVERSED,
    UP,
    diff_text,
    listing,
    masked,
    side,
    trend,
    zero_word,
)

if TYPE_CHECKING:
    from .build import Report


def duplicates_section(rep: Report, main: str) -> list[str]:
    out = ["## Duplicate candidates", "", *section(rep, "Duplicate candidates")]
    dup = rep.tables.get("duplicates", pd.DataFrame())
    if dup.empty:
        return out
    dup = dup[dup["dataset"] == main]
    top = dup[dup["budget"] == dup["budget"].max()]
    out.append(
        f"- **The tiny policies repeat themselves**: at N = {top['budget'].iloc[0]} a step's "
        f"{ranged(top['candidates_per_step'], '.1f')} candidates hold {ranged(top['distinct_per_step'], '.1f')} "
        "distinct partial solutions, and in every row the distinct share is lower at the larger N"
        if _share_falls(dup)
        else "- The distinct share does not fall with N in every row"
    )
    out[-1] += " (cells without counts are left out; the cells column says how many each row reads)."
    growth = rep.tables.get("growth", pd.DataFrame())
    dora = masked(growth[(growth["dataset"] == main) & (growth["method"] == "dora")]) if len(growth) else growth
    if len(dora):
        said = listing(
            [
                f"{trend(r.diff, r.half_problems)} on {r.pair} ({diff_text(r.diff, r.half_problems)} from N = "
                f"{r.lo} to {r.hi})"
                for r in dora.itertuples()
            ]
        )
        out.append(
            f"- **DORA's accuracy** {said}. Its uniqueness weights are shared among exact duplicates, so a right "
            "step proposed many times keeps the weight of one while one-off wrong steps keep theirs; Best-of-N's "
            "copies of a solution are independent samples that agree."
        )
    fewer = [_fewer(dup, m) for m in ("h-uats", "a-uats")]
    out.append(
        "- **UATS proposes fewer candidates a step than REBASE at the same compute** "
        + ("in every (pair, N) row" if all(fewer) else "not in every (pair, N) row")
        + ": a UATS candidate costs its generation plus K0 passes against REBASE's one pass, and re-evaluation "
        "takes its share of the step."
    )
    return out + [""]


def _share_falls(dup: pd.DataFrame) -> bool:
    for _, g in dup.groupby(["pair", "method"]):
        shares = g.sort_values("budget")["distinct_share"].to_numpy()
        if len(shares) > 1 and not (shares[1:] < shares[:-1]).all():
            return False
    return True


def _fewer(dup: pd.DataFrame, method: str) -> bool:
    both = dup[dup["method"] == method].merge(
        dup[dup["method"] == "rebase"], on=["pair", "budget"], suffixes=("", "_r")
    )
    return bool(len(both)) and bool((both["candidates_per_step"] < both["candidates_per_step_r"]).all())


def aggregation_section(rep: Report, main: str) -> list[str]:
    rerun = "Rerun coverage" in rep.markdown
    out = [
        "## Answer aggregation",
        "",
        'Every method answers with the weighted vote over its final candidates (docs/engine.md, "Answers"); each '
        "cell also records the answer of the single best-scored candidate. Plain majority and the vote that counts "
        "each distinct final solution once need the final solutions themselves, which the original recording of the "
        "test split's base cells did not keep. "
        + (
            "The rerun keeps them, so every rule below is computed on its cells. The rerun and the original are two "
            "recordings of the same cells, different searches (the original ran batched, across many commits; the "
            "rerun one search at a time, at one commit); the tables say which recording each number comes from."
            if rerun
            else "A rerun that keeps them (`--rerun`, the ledger `results/arith-rerun`) gives every rule for "
            "those cells once the repository holds it; until then only the original recording's two rules are shown "
            "for them."
        ),
        "",
        *section(rep, "Rerun coverage"),
        *section(rep, "Rerun against the original"),
    ]
    rec = rep.tables.get("rerun_recordings", pd.DataFrame())
    if len(rec):
        said = [f"under the {RULE_NAMES[n]} it {_where(rec, f'{n}_diff', f'{n}_half')}" for n in ("weighted", "best")]
        out += [
            f"- **Rerun − original** on the same cells: {'; '.join(said)}. The two recordings agree cell by cell "
            "only as often as the coverage table says: a cell's answer is one draw of its search, so the tables "
            "compare accuracies over cells, never single cells.",
            "",
        ]
    out += [*section(rep, "Every answer rule")]
    rules = rep.tables.get("rerun_rules", pd.DataFrame())
    if len(rules):
        out += [
            f"- **{RULE_NAMES[a]} − {RULE_NAMES[b]}** {_where(rules, f'{a}_minus_{b}', f'{a}_minus_{b}_half')}."
            for a, b in RULE_DIFFS
        ]
        out.append("")
    out += [
        *section(rep, "Which rule orders the methods"),
        *_ordering_lines(rep),
        "",
        "The other cells that keep their final solutions (the ladder's new rungs, the retrained controllers and "
        "the harder split), and the recorded two rules of the cells that do not:",
        "",
        *section(rep, "Answer aggregation"),
    ]
    return out


def _where(table: pd.DataFrame, diff: str, half: str) -> str:
    """Where a column of paired differences clears zero, row by row (method, pair, N), in words and the table's
    numbers."""
    clear = {UP: [], DOWN: []}
    for r in table.itertuples():
        d, h = getattr(r, diff), getattr(r, half)
        if (s := side(d, h)) != NOISE:
            clear[s].append(f"{name(r.method)} on {r.pair} at N = {r.budget} ({diff_text(d, h)})")
    if not clear[UP] and not clear[DOWN]:
        return "is within noise in every row"
    said = [
        f"clears zero {word} for {listing(clear[s])}" for s, word in ((UP, "upward"), (DOWN, "downward")) if clear[s]
    ]
    return f"{' and '.join(said)}, and is within noise in every other row"


def _ordering_lines(rep: Report) -> list[str]:
    ordering = rep.tables.get("rule_ordering", pd.DataFrame())
    if ordering.empty:
        return []
    out = []
    for col, what in (("h_claim", "H-UATS above every baseline"), ("a_claim", "A-UATS above H-UATS")):
        by = claim_groups(ordering, col)
        said = [f"{word} under {listing(by[word])}" for word in (REPRODUCED, POINT_ONLY, REVERSED) if word in by]
        out.append(
            f"- **{what}**: "
            + "; ".join(said or [f"{REPRODUCED} under no rule"])
            + ("; not reproduced under the others" if NOT_REPRODUCED in by else "")
            + "."
        )
    weighted = ordering[(ordering["recording"] == "original") & (ordering["rule"] == "weighted")]
    if len(weighted) and (weighted["h_claim"] != "reproduced").any():
        out.append(
            "- Under the weighted vote, this grid's rule (the paper takes the answer from one selected trace "
            "and names no vote), H-UATS is not above every baseline here; an order that appears under another "
            "rule may mean its PRMs make the search behave like that rule, or that its numbers come from another "
            "rule. This ledger cannot tell which."
        )
    return out


def harder_section(rep: Report, main: str, harder: list[str]) -> list[str]:
    out = [
        "## A harder split: where search should matter",
        "",
        "Search should matter more where problems are harder. The grid also ran on harder splits of the same world "
        "(docs/arith_world.md, `--difficulty`): "
        "`o4-6v40a9f5` (more operations, larger values) with Best-of-N, REBASE, H-UATS and A-UATS, and the world's own "
        "`hard` with Best-of-N alone, each into `results/arith-hard`. With two seeds an interval over seeds means "
        "nothing; the paired differences give theirs over problems.",
        "",
        *section(rep, "Accuracy against difficulty"),
        *section(rep, "Order on every dataset"),
    ]
    for dataset in harder:
        key = f"{dataset}|base"
        out += [
            f"### `{dataset}`",
            "",
            *section(rep, f"Table 4 layout: {key}"),
            *section(rep, f"Accuracy by budget (%): {key}"),
            *section(rep, f"Pass@N by budget (%, oracle): {key}"),
            *section(rep, f"Paired accuracy differences: {key}"),
            *section(rep, f"Methods paired over N: {dataset}"),
            *section(rep, f"Accuracy across N: {dataset}"),
            *_harder_lines(rep, main, dataset),
        ]
    return out


def _harder_lines(rep: Report, main: str, dataset: str) -> list[str]:
    out = []
    pdiff = rep.tables["paired_differences"]
    pdiff = masked(pdiff[pdiff["dataset"] == dataset])
    if len(pdiff):
        clear = [
            f"{name(r.x)} − {name(r.y)} on {r.pair} at N = {r.budget} ({diff_text(r.diff, r.half_problems)})"
            for r in pdiff.itertuples()
            if side(r.diff, r.half_problems) != NOISE
        ]
        out.append(f"- **Paired differences that clear zero** ({ONE_RECORDING_LEAD}): {listing(clear)}.")
    order = rep.tables.get("order", pd.DataFrame())
    if len(order) and f"{dataset}_place" in order:
        for pair, g in order.groupby("pair", sort=True):
            before = [name(m) for m in g.sort_values(f"{main}_place")["method"]]
            after = [name(m) for m in g.sort_values(f"{dataset}_place")["method"]]
            out.append(
                f"- **The order on {pair}** (point estimates, the table above): `{main}` {', '.join(before)}; "
                f"`{dataset}` {', '.join(after)}" + ("; the same order." if before == after else "; it changes.")
            )
    out += growth_lines(rep, dataset)
    cur = rep.tables["curves"]
    if (cur["dataset"] == dataset).any():
        out.append(pass_line(rep, dataset))
    return out + [""]


def figure2_section(rep: Report, main: str) -> list[str]:
    out = [
        "## Figure 2: the PRM on each pair's steps",
        "",
        *section(rep, "Figure 2 analysis: PRM on each pair's steps"),
        "The grid's steps are the ones its searches generated, a population the PRM itself selected: the searches "
        "expand the prefixes it scored high, so they generate many more steps below its confident mistakes than "
        "independent sampling does (the world's own measurement scores independent samples: docs/log.md). "
        "The claims table reads the test split's rows.",
        "",
        "### What σ² says that R̄ does not",
        "",
        "A-UATS's σ features can only help if σ² tells something about a step that R̄ does not. On the steps UATS "
        "scored (the ledger's one-in-eight sample of cells):",
        "",
        *section(rep, "σ² beside R̄"),
    ]
    sigma = rep.tables.get("sigma_beside_rbar", pd.DataFrame())
    for r in sigma.itertuples():
        below = sum(v < 0.5 for v in r.auroc_sigma_within)
        share = (
            "every"
            if below == len(r.auroc_sigma_within)
            else "most"
            if 2 * below > len(r.auroc_sigma_within)
            else "no"
            if below == 0
            else "some"
        )
        out.append(
            f"- **{pair_name(r.pair, rep.roles)}, `{r.dataset}`**: a fit of R̄ alone {r.auroc_rbar_fit:.3f}, of R̄ "
            f"and σ² {r.auroc_both_fit:.3f}; σ²'s AUROC for a wrong step is below 0.5 (the right steps have the "
            f"higher σ²) in {share} {'fifth' if share in ('every', 'no') else 'fifths'} of R̄."
        )
    return out + [""]


def controller_section(rep: Report) -> list[str]:
    out = [
        "## The shipped A-UATS controller",
        "",
        "The shipped controllers (`assets/models/auats-controller`, and `auats-controller-no-uncertainty` for the "
        "ablation) were trained on the shipped PRM with the state as specified; the controllers retrained under the "
        "carry spending rule are `auats-controller-carry` and `auats-controller-carry-no-uncertainty`. How each was "
        "trained, and its training curves, are in [log.md](log.md). What a controller does with its state, from the "
        "controller steps the ledgers recorded"
        + (
            " (the rerun's A-UATS cells ran the shipped `auats-controller`):"
            if "Rerun coverage" in rep.markdown
            else ":"
        ),
        "",
        *section(rep, "A-UATS's controller"),
    ]
    table = rep.tables.get("controller", pd.DataFrame())
    if table.empty:
        return out
    for checkpoint, g in table.groupby("controller", sort=True):
        sigma = g["sigma_moves"].dropna()
        out.append(
            f"- **`{checkpoint}`**: its knobs move at most {100 * g['spread'].max():.2f}% of a knob's range over the "
            f"states its searches met; moving the R̄ features moves them {ranged(100 * g['rbar_moves'], '.2f')}%"
            + (f", the σ features {ranged(100 * sigma, '.2f')}%" if len(sigma) else "")
            + f"; the log standard deviation of its actions is {ranged(g['log_std'], '.2f')}."
        )
    results = rep.tables["results"]
    ran = {checkpoint_of(v).name for v in results.loc[results["method"] == "a-uats", "variant"]}
    missing = sorted(ran - set(table["controller"]))
    if missing:
        one = len(missing) == 1
        out.append(
            f"- No controller steps are recorded for {listing([f'`{m}`' for m in missing])}, which "
            f"ran A-UATS cells of the tables above; what {'its' if one else 'their'} knobs "
            "follow is not measured here."
        )
    return out + [""]


def gate_section(rep: Report) -> list[str]:
    """The OOD gate's two readings: the paper's rule as written (σ > τ) and this grid's default (σ² > τ), with the
    evidence for the default, and the literal reading's cells beside the rerun's (protocol_variants.py)."""
    summary = rep.tables.get("prm_summary", pd.DataFrame())
    scored = summary[summary["share_var_over_tau"].notna()] if len(summary) else summary
    out = [
        "### The OOD gate: σ² > τ (this grid's default) or σ > τ (the paper's rule as written)",
        "",
        "The paper defines σ_R²(h) as the sample variance of a candidate's K passes and partitions the candidates "
        "on σ_R(h) ≤ τ: as written, τ thresholds the standard deviation. This grid's default gate thresholds the "
        "variance, σ² > τ (`--set uncertainty=var`), with the paper's τ: a reading, chosen because the spreads the "
        "paper's Figure 1 prints are of the size of variances"
        + (
            f", and because σ > τ holds for {ranged(100 * scored['share_std_over_tau'], '.1f')}% of the steps UATS "
            f"scored here against {ranged(100 * scored['share_var_over_tau'], '.1f')}% for σ² > τ (the Figure 2 "
            "table), so read as written the gate would call most candidates out of distribution"
            if len(scored)
            else ""
        )
        + ". The literal reading is `--set uncertainty=std`.",
        "",
    ]
    table = rep.tables.get("rerun_variants", pd.DataFrame())
    if table.empty:
        return out + ["No cells of the literal reading are in the ledgers this page reads.", ""]
    plan = rep.rerun_plan or {}
    if plan:
        out += [
            "Its cells are recorded from a clean commit, one search at a time, as the rerun's were, by",
            "",
            "```bash",
            plan["command"],
            "```",
            "",
        ]
    out += [*section(rep, "Variants under the rerun's protocol")]
    own = table[table["reference"] != "rebase (base)"]
    cells, of = int(own["cells"].sum()), int(own["of_cells"].sum())
    missing = [b for b in plan.get("budgets", []) if b not in set(own["budget"])]
    out.append(
        f"- **Cells read**: {cells:,} of the {of:,} cells of the rerun's that these rows are set beside"
        + ("; the ledger is not complete, so each row reads the cells it has" if cells < of else "")
        + (f"; none yet at the N the recipe also plans ({', '.join(f'`{b}`' for b in missing)})" if missing else "")
        + "."
    )
    for (variant, reference), g in table[table["cells"] > 0].groupby(["variant", "reference"], sort=False):
        said = [
            f"{r.pair} at N = {r.budget} {diff_text(r.diff, r.half_problems)} ({zero_word(r.diff, r.half_problems)})"
            for r in g.itertuples()
        ]
        out.append(
            f"- **`{variant}` − {reference}**: {listing(said)}; one recording of the variant, so a difference "
            "that clears zero is a lead."
        )
    return out + [""]
