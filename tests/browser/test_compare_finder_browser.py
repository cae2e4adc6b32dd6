"""Compare in Debian's Chromium at 1280×800 and 1920×1080, on real runs of the embedded arithmetic world (N = 16,
seed 0, the form's defaults): opening the tab draws the pair already picked (the open run and its stored REBASE
partner) with no click on Compare, and its summary says where the runs first differ and why uncertainty changed
nothing; the case finder lists, over the stored H-UATS runs and their counterfactuals without uncertainty, those
whose answer uncertainty changed, and a click on one opens the run beside its counterfactual at the first decision
where they part. With UATS_SCREENSHOTS=1 both are saved at both sizes (docs/img holds copies)."""

from __future__ import annotations

from typing import Any

import pytest

from .pages import ARTIFACTS, RING_ON_JS, SCREENSHOTS, open_run, wait_idle, wait_plot, wait_text

pytestmark = pytest.mark.browser
SIZES = ["laptop_page", "wide_page"]  # 1280×800 and 1920×1080 (conftest.py)


# problems whose H-UATS answer under policy B differs from its counterfactual's at N = 16, seed 0 (the benchmark's
# batch, docs/app.md: `python -m benchmarks cases`)
CASE_PROBLEMS = ("arith-test-7",)


@pytest.fixture(scope="module")
def world_pairs(served: dict[str, Any]) -> dict[tuple[str, str], tuple[str, str]]:
    """(problem, kind) → (run A, run B), written to the served app's run log: ('arith-test-3', 'rebase'): H-UATS and
    REBASE under policy A (its PRM in distribution); (p, 'counter'): H-UATS and its counterfactual under policy B
    (out of distribution) on CASE_PROBLEMS."""
    from uats_core.config import SearchConfig
    from uats_core.paths import WORLD_POLICY_B
    from uats_core.runner import DEFAULT_PRM, build_backends, run_search
    from uats_core.worlds.arith import world
    from ui.views.counterfactual import counterfactual_config, factual_config

    if not (DEFAULT_PRM / "config.json").is_file():
        pytest.skip("embedded models missing")
    pairs = {}
    base = SearchConfig(method="h-uats", budget=16, seed=0)
    rebase = SearchConfig(method="rebase", budget=16, seed=0)
    for policy, problems, kind, configs in (
        (None, ("arith-test-3",), "rebase", (base, rebase)),
        (str(WORLD_POLICY_B), CASE_PROBLEMS, "counter", (factual_config(base), counterfactual_config(base))),
    ):
        models = build_backends(policy, None, base.validate())
        for pid in problems:
            ids = [
                run_search(
                    world.get_problem(pid), cfg.validate(), *models, subscribers=[served["store"].subscriber()]
                ).run_id
                for cfg in configs
            ]
            pairs[(pid, kind)] = (ids[0], ids[1])
    return pairs


def _screenshot(page: Any, name: str, scroll_js: str) -> None:
    if not SCREENSHOTS:
        return
    ARTIFACTS.mkdir(exist_ok=True)
    wait_idle(page)
    page.evaluate(f"() => {{ {scroll_js}; }}")
    size = page.viewport_size
    page.screenshot(path=str(ARTIFACTS / f"{name}-{size['width']}x{size['height']}.png"))


@pytest.mark.parametrize("screen", SIZES)
def test_opening_compare_draws_the_picked_pair_without_a_click(
    screen: str,
    request: pytest.FixtureRequest,
    served: dict[str, Any],
    world_pairs: dict[tuple[str, str], tuple[str, str]],
) -> None:
    from ui.views.divergence import decision_divergence, divergence_text
    from ui.views.treedata import RunData
    from ui.views.uncertainty import uncertainty_changes, unchanged_reason

    page = request.getfixturevalue(screen)
    a_id, b_id = world_pairs[("arith-test-3", "rebase")]
    a, b = RunData.load(served["store"], a_id), RunData.load(served["store"], b_id)
    open_run(page, a_id)
    page.get_by_role("tab", name="Compare").click()  # and nothing else: no pick, no click on Compare
    wait_plot(page, "#cmp-tree-a", f"e.dataset.run === '{a_id}' && Number(e.dataset.nodes) > 0")
    wait_plot(page, "#cmp-tree-b", f"e.dataset.run === '{b_id}' && Number(e.dataset.nodes) > 0")
    summary = wait_text(page, "#cmp-summary", "Where they first differ")
    said = " ".join(summary.split())
    assert " ".join(divergence_text(decision_divergence(a, b)).split()) in said
    if a.run["answer"] != b.run["answer"]:  # different answers: a divergence is always named
        assert "never diverged" not in said and "node" in said.split("Where they first differ")[1]
    if not uncertainty_changes(a):  # the why line, and the OOD pair offered in one click
        assert unchanged_reason(a) in said
        assert page.locator("#cmp-ood").is_visible()
    for tree in ("#cmp-tree-a", "#cmp-tree-b"):  # both trees drawn in the window's width, side by side
        box = page.locator(f"{tree} .uats-plot").bounding_box()
        assert box and box["width"] > 300 and box["x"] + box["width"] <= page.viewport_size["width"] + 1
    _screenshot(
        page,
        "compare-open",
        "window.scrollBy(0, document.querySelector('#cmp-summary').getBoundingClientRect().top - 8)",
    )


@pytest.mark.parametrize("screen", SIZES)
def test_the_case_finder_lists_stored_pairs_and_opens_one(
    screen: str,
    request: pytest.FixtureRequest,
    served: dict[str, Any],
    world_pairs: dict[tuple[str, str], tuple[str, str]],
) -> None:
    from ui.views.counterfactual import COLUMNS, find_cases, found_summary

    page = request.getfixturevalue(screen)
    found = find_cases(served["store"])
    assert found.cases, "the policy B runs of CASE_PROBLEMS answer otherwise than their counterfactuals"
    page.get_by_role("tab", name="Compare").click()
    page.get_by_text("Case finder: H-UATS searches whose answer uncertainty changed").click()
    page.click("#cf-find")
    wait_text(page, "#cf-summary", found_summary(found))
    cells = page.locator("#cf-table [role=gridcell]")
    page.wait_for_function(
        "n => document.querySelectorAll('#cf-table [role=gridcell]').length >= n",
        arg=len(found.cases) * len(COLUMNS),
    )
    listed = [
        page.locator(f'#cf-table [data-testid="cell-{i}-1"]').inner_text().strip() for i in range(len(found.cases))
    ]
    assert listed == [c.run["problem_id"] for c in found.cases] and cells.count() >= len(found.cases) * len(COLUMNS)
    assert "A case is an H-UATS search whose answer differs" in page.locator("#cf-intro").inner_text()
    _screenshot(page, "case-finder", "document.querySelector('#cf').scrollIntoView({block: 'start'})")
    case = found.cases[0]
    part = case.parting
    assert part is not None and part.node_a is not None  # the two part at a step the run decided
    page.locator('#cf-table [data-testid="cell-0-1"]').click()
    wait_plot(
        page,
        "#cmp-tree-a",
        f"e.dataset.run === '{case.run['run_id']}' && Number(e.dataset.iteration) === {part.iteration}",
    )
    wait_plot(page, "#cmp-tree-b", f"e.dataset.run === '{case.counter['run_id']}'")
    page.wait_for_function(RING_ON_JS, arg=["#cmp-tree-a", part.node_a])
    wait_text(page, "#cmp-why", f"node {part.node_a}")
    assert page.locator("#cmp-tree-a").bounding_box()["y"] < page.viewport_size["height"]  # scrolled into view
    # what the click leaves in the window: the run beside its counterfactual, the step where they part ringed in both
    _screenshot(page, "case-finder-opened", "document.querySelector('#cmp-tree-a').scrollIntoView({block: 'end'})")
