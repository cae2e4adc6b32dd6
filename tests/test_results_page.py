"""docs/results.md is what the committed results ledger says: every table the page shows is rebuilt here, from
`results/arith-grid/` alone, and must appear on the page as the report prints it."""

from __future__ import annotations

import re
from pathlib import Path

from uats_core.entrypoints.report import report_from_ledger

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"
LEDGER = ROOT / "results" / "arith-grid"
# The report's sections the page shows, in its order, and the budgets of the report each comes from (None: all).
# The N = 64 ablations are still running, so their sections come from per-budget reports: a variant with
# unfinished N = 64 cells would otherwise be cut to its finished problems at N = 4 and 16 too.
SECTIONS = [("Compute spent against REBASE", (4, 16)), ("Compute spent against REBASE", (64,)),
            ("Table 4 layout: arith-test|base", None), ("Accuracy by budget (%): arith-test|base", None),
            ("Pass@N by budget (%, oracle): arith-test|base", None),
            ("Mean compute spent per search (PRM-pass units, ± 95% t over seeds): arith-test|base", None),
            ("Paired accuracy differences: arith-test|base", None), ("Variants, paired", (4, 16)),
            ("Variants, paired", (64,)), ("Ablations", (4, 16)), ("Duplicate candidates", None),
            ("Figure 2 analysis: PRM on each pair's steps", None)]


def test_every_table_of_the_results_page_is_the_ledgers() -> None:
    page = PAGE.read_text(encoding="utf-8")
    reports = {b: report_from_ledger(LEDGER, budgets=list(b) if b else None, fig2=b is None)
               for b in dict.fromkeys(b for _, b in SECTIONS)}
    positions = []
    for name, budgets in SECTIONS:
        text = reports[budgets].markdown[name].strip()
        assert text in page, f"docs/results.md: the section {name!r} (budgets {budgets or 'all'}) is not the ledger's; " \
                             f"rebuild the page from python -m uats_core.report --ledger results/arith-grid"
        positions.append(page.index(text))
    assert positions == sorted(positions)
    count = re.search(r"The ledger holds ([\d,]+) finished searches", page)
    assert count and int(count.group(1).replace(",", "")) == len(reports[None].tables["results"])
