"""The results page's estimator-grid section (issue 52, item 4): H-UATS under each estimator minus REBASE per pair and
N, with a verdict per seed set and the replication across seeds 0–2 and 3–5, read from a ledger of known cells."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from reports.build import Report
from reports.estimator_grid import TABLE_NAME, estimator_of, grid_differences, grid_markdown, grid_section
from storage.results_ledger import LEDGER_COLUMNS, ResultsLedger

PROBLEMS = [f"arith-test-{i}" for i in range(40)]


def _ledger(seeds: range, ensemble_gain: float) -> pd.DataFrame:
    """REBASE right on every other problem; H-UATS under MC dropout exactly as REBASE; under the ensemble right on
    REBASE's wrong problems too for the first `ensemble_gain` share of them."""
    rows = []
    gained = set(PROBLEMS[1::2][: int(ensemble_gain * len(PROBLEMS[1::2]))])
    for budget in (16, 64):
        for seed in seeds:
            for i, pid in enumerate(PROBLEMS):
                right = i % 2 == 0
                cell = {
                    "pair": "B:prm",
                    "budget": budget,
                    "seed": seed,
                    "problem_id": pid,
                    "code_version": "b9109b0f6ac4",
                }
                rows.append({**cell, "method": "rebase", "variant": "base", "correct": right})
                rows.append({**cell, "method": "h-uats", "variant": "tau=auto", "correct": right})
                rows.append(
                    {
                        **cell,
                        "method": "h-uats",
                        "variant": "estimator=ensemble,tau=auto",
                        "correct": right or pid in gained,
                    }
                )
    return pd.DataFrame(rows)


def test_the_variant_names_the_estimator_or_the_default() -> None:
    assert estimator_of("estimator=ensemble,tau=auto") == "ensemble"
    assert estimator_of("k0=3,estimator=laplace") == "laplace"
    assert estimator_of("tau=auto") == "mc-dropout" and estimator_of("base") == "mc-dropout"


def test_a_gain_in_both_seed_sets_replicates_and_meets_the_bar() -> None:
    text = grid_markdown(_ledger(range(6), 0.5))
    ens = [line for line in text.splitlines() if line.startswith("| B:prm") and "| ensemble |" in line]
    assert len(ens) == 2 and all(line.endswith("| replicates (above zero) |") for line in ens), ens
    assert all("+25.0 ±" in line for line in ens)  # half of REBASE's wrong half gained: 25 points
    mc = [line for line in text.splitlines() if "| mc-dropout |" in line]
    assert all("+0.0" in line and line.endswith("| within noise in both seed sets |") for line in mc), mc
    assert "**Verdict**: met by ensemble." in text


def test_one_seed_set_is_a_lead_and_the_bar_waits_for_the_second() -> None:
    text = grid_markdown(_ledger(range(3), 0.5))
    ens = [line for line in text.splitlines() if "| ensemble |" in line]
    assert all(line.endswith("| a lead (seeds 0–2 only: above zero) |") and "| – |" in line for line in ens), ens
    assert (
        "no estimator meets it on the cells run so far (seeds 3–5 still to run in full for B:prm N=16 ensemble, "
        "B:prm N=64 ensemble)." in text
    )


def test_the_verdict_says_when_the_replication_has_run_in_full() -> None:
    whole = grid_markdown(_ledger(range(6), 0.1))
    assert "+5.0 ±" in whole and "| within noise in both seed sets |" in whole  # 2 of 40 problems gained: noise
    assert "no estimator meets it (no difference cleared zero on seeds 0–2, so none is for seeds 3–5" in whole
    done = grid_markdown(_ledger(range(6), 1.0))
    assert "met by ensemble." in done
    gained = _ledger(range(6), 1.0)
    # seeds 3–5 on half the problems at N = 16, not yet at 64
    half = gained["problem_id"].isin(PROBLEMS[:20]) & (gained["budget"] == 16)
    partial = grid_markdown(gained[(gained["seed"] < 3) | half])
    assert "still to run in full for B:prm N=16 ensemble, B:prm N=64 ensemble" in partial


@pytest.mark.parametrize("gain", [0.0, 0.1, 0.5])
def test_every_verdict_follows_the_printed_interval(gain: float) -> None:
    diffs = grid_differences(_ledger(range(6), gain))
    text = grid_markdown(_ledger(range(6), gain))
    for line in text.splitlines():
        if not line.startswith("| B:prm"):
            continue
        printed = re.findall(r"([+-]\d+\.\d) ± (\d+\.\d)", line)
        clear = [abs(float(d)) > float(h) for d, h in printed]
        verdict = line.rstrip(" |").rsplit("| ", 1)[1]
        assert verdict.startswith("replicates") == all(clear), line
        assert verdict.startswith("within noise") == (not any(clear)), line
    assert set(diffs["seeds"]) == {"seeds 0–2", "seeds 3–5"}


def test_the_section_names_a_code_version_of_digits_as_it_was_written(tmp_path: Path) -> None:
    """A commit whose short hash is all digits, with a leading zero: read back as a number it lost the zero in the
    section's provenance line. The grid's ledger written and read by storage.results_ledger, as `uats eval` writes
    it and `uats report` reads it (uats/report.py), its table put in the report the page is made from."""
    rows = _ledger(range(6), 0.5).assign(code_version="012345678901")
    filler = {c: "x" for c in LEDGER_COLUMNS if c not in rows}
    filler.update(naive_correct=False, pass_at_n=False, n_final=1, cost=1.0, iterations=1, n_nodes=1, wall_s=0.0)
    rows = rows.assign(**{**filler, "batched": False, "cell_key": [f"c{i}" for i in range(len(rows))]})
    assert ResultsLedger(tmp_path).append(rows[LEDGER_COLUMNS]) == len(rows)
    rep = Report(markdown={TABLE_NAME: grid_markdown(ResultsLedger(tmp_path).results())})
    assert "`012345678901`" in "\n".join(grid_section(rep))
    assert grid_section(Report()) == []  # no grid in the report: no section
