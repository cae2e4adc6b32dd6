"""One problem under two uncertainty estimators, side by side in Compare (issue 52, item 5): the pair is started
from the form (H-UATS under the form's estimator and under a second one, both refused before either is queued), and
every panel of the comparison names each run's estimator, where "h-uats" twice would be two runs nobody can tell
apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from testkit.run_pairs import TAU, needs_models
from testkit.serving import app_client, form_args, outcome_text, served_app
from uats_core.config import SearchConfig
from uats_core.errors import ConfigError
from uats_core.paths import WORLD_PRM
from uats_core.request import SearchRequest, validate_request
from uats_core.runner import build_backends, run_search
from uats_core.worlds.arith import world
from ui.views.bundles import compare_bundle
from ui.views.comparison import compare_figures, compare_rows, pair_labels
from ui.views.treedata import RunData

MEMBERS = len(json.loads((Path(f"{WORLD_PRM}-ensemble") / "ensemble.json").read_text())["members"])


@pytest.fixture(scope="module")
def estimator_pair() -> tuple[RunData, RunData]:
    """H-UATS on one arithmetic problem, seed and budget under MC dropout and under the PRM's deep ensemble, searched
    for real with the embedded models, as the Compare tab's estimator pair runs them."""
    store = RunStore("sqlite://")
    ids = []
    for estimator in ("mc-dropout", "ensemble"):
        cfg = SearchConfig(
            method="h-uats", budget=8, seed=0, tau=TAU, max_iterations=8, k0=2, estimator=estimator
        ).validate()
        policy, prm = build_backends(None, None, cfg)
        ids.append(
            run_search(world.get_problem("arith-test-0"), cfg, policy, prm, subscribers=[store.subscriber()]).run_id
        )
    return RunData.load(store, ids[0]), RunData.load(store, ids[1])


@needs_models
def test_every_panel_of_an_estimator_pair_names_each_runs_estimator(estimator_pair: tuple[RunData, RunData]) -> None:
    a, b = estimator_pair
    assert (a.run["config"]["estimator"], b.run["config"]["estimator"]) == ("mc-dropout", "ensemble")
    names = ("h-uats (mc-dropout)", "h-uats (ensemble)")
    assert pair_labels(a.run, b.run) == names
    rows, _ = compare_rows(a, b)
    assert (rows[0][1], rows[1][1]) == names  # the summary table's method column
    fa, fb, _ = compare_figures(a, b, None)
    assert names[0] in fa["layout"]["title"]["text"] and names[1] in fb["layout"]["title"]["text"]
    bundle = compare_bundle(a, b)  # the export read on its own
    assert f"{names[0]} vs {names[1]}" in bundle.caption
    answers = dict(bundle.text_sections)["Answers"]
    assert f"A ({names[0]})" in answers and f"B ({names[1]})" in answers
    assert [r["method"] for r in bundle.data["summary"]] == list(names)
    assert names[0] in bundle.more_tables[0].caption and names[1] in bundle.more_tables[0].caption
    # the ensemble run's samples are its members: never more per node than the ensemble holds
    assert all(len(n.get("mc_scores") or []) <= MEMBERS for n in b.nodes.values())


@needs_models
def test_a_pair_of_one_estimator_or_of_two_methods_keeps_the_plain_names(
    real_pair: tuple[RunData, RunData], estimator_pair: tuple[RunData, RunData]
) -> None:
    uats, rebase = real_pair
    assert pair_labels(uats.run, rebase.run) == ("h-uats", "rebase")  # REBASE reads no estimator
    a, _ = estimator_pair
    assert pair_labels(a.run, a.run) == ("h-uats", "h-uats")
    legacy = {**a.run, "config": {k: v for k, v in a.run["config"].items() if k != "estimator"}}
    assert pair_labels(legacy, a.run) == ("h-uats", "h-uats")  # a run logged before the setting: the default's


def test_an_ensemble_smaller_than_k0_is_refused_before_anything_loads() -> None:
    problem = world.get_problem("arith-test-0")
    with pytest.raises(ConfigError) as err:
        validate_request(SearchRequest(problem, SearchConfig(method="h-uats", estimator="ensemble", k0=MEMBERS + 1)))
    assert err.value.field == "k0" and f"has {MEMBERS} members" in str(err.value)
    assert (
        validate_request(
            SearchRequest(problem, SearchConfig(method="h-uats", estimator="ensemble", k0=min(MEMBERS, 2)))
        ).config.estimator
        == "ensemble"
    )


def test_the_estimator_pair_starts_both_runs_or_neither(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPoolDouble(store)
    try:
        with served_app(store, pool, tmp_path) as url:
            client = app_client(url)
            args = form_args(client, "/on_estimator_pair", k0=2, second="ensemble")
            said = outcome_text(client.predict(**args, api_name="/on_estimator_pair"))
            assert "started H-UATS" in said and "estimators mc-dropout and ensemble" in said, said
            assert [(r.search.config.method, r.search.config.estimator) for r in pool.submitted] == [
                ("h-uats", "mc-dropout"),
                ("h-uats", "ensemble"),
            ]
            assert {r.search.problem.id for r in pool.submitted} == {"arith-test-0"}
            same = outcome_text(client.predict(**{**args, "second": "mc-dropout"}, api_name="/on_estimator_pair"))
            assert "second estimator: choose one of" in same, same
            too_many = outcome_text(client.predict(**{**args, "k0": MEMBERS + 1}, api_name="/on_estimator_pair"))
            assert "k0" in too_many and f"{MEMBERS} members" in too_many, too_many
            assert len(pool.submitted) == 2  # neither refusal queued a run, not even the first of its pair
        assert len(store.list_runs(limit=10)) == 2
    finally:
        store.close()
