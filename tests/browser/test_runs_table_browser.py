"""The Runs table with every end a run can have (finished right and wrong, cancelled, failed), at 1280×800 and
1920×1080: every header's words on one line, no word of a cell broken inside a piece ("cancelled" broke as
"cancelle|d" in the outcome column at 1280), nothing cut off. The session's app holds only finished runs, so this
app is the test's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .apps import app_page, imports_app
from .pages import LAPTOP, WIDE, table_fit

pytestmark = pytest.mark.browser

ENDS = {"f0" * 16: None, "c0" * 16: "cancelled", "e0" * 16: "failed"}  # run id -> how it ended (None: finished)


@pytest.fixture(scope="module")
def ended_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from storage import RunStore
    from testkit.doubles import record, record_synthetic
    from testkit.synthetic import synthetic_events

    base = tmp_path_factory.mktemp("ended-runs")
    (base / "imports").mkdir()  # the app's imports folder, empty
    store = RunStore(str(base / "runs.db"))
    for rid, end in ENDS.items():
        if end is None:
            record_synthetic(store, rid, n_nodes=60, seed=3, method="h-uats", problem_id="synthetic-3")
            continue
        events = list(synthetic_events(rid, n_nodes=60, seed=4, method="rebase", problem_id="synthetic-3"))
        record(store, events[:-1])  # no RunEnded: still running, as a search its worker left
        assert store.mark_failed(rid, f"{end} for the test", status=end)
    with imports_app(base, store) as url:
        yield url


@pytest.mark.parametrize("screen", [LAPTOP, WIDE], ids=["1280x800", "1920x1080"])
def test_every_end_of_a_run_fits_the_runs_table(
    context_for: Callable[[dict[str, int]], Any], ended_app: str, screen: dict[str, int]
) -> None:
    with app_page(context_for(screen), ended_app) as page:
        page.locator('button[role="tab"][data-tab-id="runs"]').click()
        page.locator("#runs-table [role=gridcell]", has_text="c0c0c0c0").first.wait_for()
        page.locator("#runs-table [role=gridcell]", has_text="e0e0e0e0").first.wait_for()
        fit = table_fit(page, "#runs-table")
        assert fit["cells"] >= 4 * 15 and not fit["broken"] and not fit["cut"], fit
