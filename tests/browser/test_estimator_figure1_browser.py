"""Figure 1 under two uncertainty estimators (issue 52), measured in Chromium at 1280×800: one real H-UATS search of
the embedded world's policy B with the PRM's MC dropout and one with its deep ensemble, on the same problem. Each
sample is a dot named by what it is (a dropout pass, an ensemble member), the σ² panel and the inspector name the
estimator, and no text of the figure overlaps or is cut off."""

from __future__ import annotations

import json
from typing import Any

import pytest

from uats_core.config import SearchConfig

from .pages import shot, text_layout, wait_idle, wait_plot

pytestmark = pytest.mark.browser

PROBLEM = "arith-test-3"
RUNS = {"mc-dropout": "est52mc" * 4, "ensemble": "est52ens" * 4}


def _ensemble_members() -> int:
    from uats_core.paths import ASSETS

    meta = ASSETS / "arith-prm-ensemble" / "ensemble.json"
    return len(json.loads(meta.read_text())["members"]) if meta.is_file() else 0


@pytest.fixture(scope="module")
def estimator_runs(served: dict[str, Any]) -> dict[str, str]:
    """The two searches, recorded into the served run log by the engine itself (K0 = 7, the default: the ensemble's
    8 members leave one for re-evaluation)."""
    from uats_core.config import SearchConfig
    from uats_core.paths import ASSETS
    from uats_core.runner import build_backends, run_search
    from uats_core.worlds.arith import world

    store = served["store"]
    have = {r["run_id"] for r in store.list_runs(limit=500)}
    problem = world.get_problem(PROBLEM)
    for estimator, rid in RUNS.items():
        if rid in have:
            continue
        config = SearchConfig(method="h-uats", budget=8, seed=1, estimator=estimator, tau="auto").validate()
        from uats_core.calibration import resolve_tau

        config, _ = resolve_tau(config, None)
        policy, prm = build_backends(str(ASSETS / "arith-policy-b"), None, config)
        run_search(problem, config, policy, prm, subscribers=[store.subscriber()], run_id=rid)
    return RUNS


def _busiest_step(served: dict[str, Any], rid: str) -> tuple[int, int]:
    """(t, a node decided at t) for the step with the most candidates."""
    from ui.views.treedata import RunData

    data = RunData.load(served["store"], rid)
    t = max(range(2, data.max_iteration + 1), key=lambda s: len(data.step(s)[0]))
    cands = data.step(t)[0]
    return t, cands[len(cands) // 2].node_id


@pytest.mark.skipif(
    _ensemble_members() < SearchConfig.k0, reason="the embedded PRM's ensemble is not trained in this checkout"
)
@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", ["1280x800"], indirect=True)
def test_figure1_names_each_estimators_samples(
    screen_page: Any, served: dict[str, Any], estimator_runs: dict[str, str]
) -> None:
    pg = screen_page
    for estimator, rid in estimator_runs.items():
        t, nid = _busiest_step(served, rid)
        pg.goto(f"{served['url']}/?run={rid}&node={nid}&t={t}")
        wait_plot(pg, "#figure1", f"e.dataset.run === '{rid}'")
        wait_idle(pg)
        samples = {"mc-dropout": "dropout passes", "ensemble": "ensemble members"}[estimator]
        titles = pg.evaluate(
            "() => { const l = document.querySelector('#figure1 .uats-plot')._fullLayout; "
            "return [l.xaxis.title.text, l.xaxis3.title.text]; }"
        )
        assert titles[0].startswith(samples) and titles[1].endswith("read"), titles
        details = pg.inner_text("#node-details")
        assert f"σ² ({estimator})" in details and samples in details, details[:300]
        seen = text_layout(pg, "#figure1")
        assert not seen["overlaps"] and not seen["clipped"], (seen["overlaps"][:5], seen["clipped"][:5])
        shot(pg, f"figure1-{estimator}-1280x800", "#figure1")
