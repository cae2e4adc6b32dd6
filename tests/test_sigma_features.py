"""What the σ features give A-UATS (reports.sigma_features): σ² beside R̄ on scored steps, and what a
controller's knobs follow on the states its searches met."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from reports.sigma_features import checkpoint_of, controller_response, sigma_beside_rbar
from reports.steps import MC_SCORED
from uats_core.controller import ControllerNet, load_checkpoint, save_checkpoint, squash
from uats_core.controller.policy import feature_names
from uats_core.methods.uats import KNOBS, STATE_FEATURES


def _steps(sigma_tells: bool, n: int = 4000) -> pd.DataFrame:
    """Step records whose R̄ is half informative; σ² marks the wrong steps (sigma_tells) or is noise."""
    rng = np.random.default_rng(0)
    wrong = rng.random(n) < 0.4
    rbar = np.clip(0.6 - 0.2 * wrong + rng.normal(0, 0.25, n), 0.001, 0.999)
    var0 = np.exp(rng.normal(-7, 1, n) + (2.0 * wrong if sigma_tells else 0.0))
    return pd.DataFrame(
        {"dataset": "d", "pair": "P:rm", "score_kind": MC_SCORED, "score": rbar, "var0": var0, "correct": ~wrong}
    )


def test_sigma_beside_rbar_finds_what_sigma_adds_and_nothing_where_it_is_noise() -> None:
    tells = sigma_beside_rbar(_steps(True)).iloc[0]
    noise = sigma_beside_rbar(_steps(False)).iloc[0]
    assert tells.n_steps == 4000 and abs(tells.share_wrong - 0.4) < 0.03
    assert tells.auroc_both_fit > tells.auroc_rbar_fit + 0.1 and tells.auroc_sigma > 0.8
    assert min(tells.auroc_sigma_within) > 0.75  # within a fifth of R̄, σ² still tells
    assert abs(noise.auroc_both_fit - noise.auroc_rbar_fit) < 0.02 and abs(noise.auroc_sigma - 0.5) < 0.04
    assert abs(noise.auroc_rbar - noise.auroc_rbar_fit) < 0.01  # a fit of R̄ alone ranks as R̄ does


def _controller(tmp_path: Path, name: str, sigma_blind: bool) -> Path:
    torch.manual_seed(0)
    net = ControllerNet(len(STATE_FEATURES), hidden=16)
    with torch.no_grad():
        net.body[-1].weight.normal_(0, 1.0)  # knobs that follow the state, unlike a fresh net's
        if sigma_blind:
            for f in ("mean_sigma", "max_sigma"):
                net.body[0].weight[:, STATE_FEATURES.index(f)] = 0.0
    return save_checkpoint(net, tmp_path / name, uncertainty_features=True)


def test_controller_response_replays_the_knobs_and_measures_what_moves_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    states = pd.DataFrame(rng.uniform(0, 1, (60, len(STATE_FEATURES))), columns=list(STATE_FEATURES))
    results, steps = [], []
    for name, blind in (("follows-sigma", False), ("sigma-blind", True)):
        path = _controller(tmp_path, name, blind)
        net, _ = load_checkpoint(path)
        with torch.no_grad():
            knobs = squash(
                net(torch.tensor(states[list(feature_names(True))].to_numpy(), dtype=torch.float32))[0]
            ).numpy()
        for cell in range(3):
            key = f"{name}|{cell}"
            results.append({"cell_key": key, "pair": "P:rm", "method": "a-uats", "variant": f"controller={path}"})
            part = states.iloc[cell * 20 : (cell + 1) * 20]
            steps.append(
                part.assign(
                    cell_key=key, iteration=range(1, 21), **dict(zip(KNOBS, knobs[cell * 20 : (cell + 1) * 20].T))
                )
            )
    table = controller_response(pd.DataFrame(results), pd.concat(steps, ignore_index=True)).set_index("controller")
    assert table.loc[["follows-sigma", "sigma-blind"], "n_steps"].tolist() == [60, 60]
    assert table["replay_error"].max() < 1e-5
    assert table.loc["follows-sigma", "sigma_moves"] > 0.01 and table.loc["sigma-blind", "sigma_moves"] == 0.0
    assert (table["rbar_moves"] > 0.01).all() and (table["spread"] > 0.01).all()
    # A recorded knob the checkpoint does not give: another controller ran the cell, and the table says so.
    steps[0].loc[:, "beta"] += 0.5
    worse = controller_response(pd.DataFrame(results), pd.concat(steps, ignore_index=True)).set_index("controller")
    assert worse.loc["follows-sigma", "replay_error"] >= 0.5


def test_checkpoint_of_a_variant() -> None:
    from uats_core.controller import ABLATION_CHECKPOINT, DEFAULT_CHECKPOINT
    from uats_core.paths import ASSETS

    assert checkpoint_of("base") == DEFAULT_CHECKPOINT
    assert checkpoint_of("controller_uncertainty_features=False") == ABLATION_CHECKPOINT
    assert checkpoint_of("controller=assets/models/auats-controller-carry") == ASSETS / "auats-controller-carry"


def test_the_controller_table_is_the_same_text_under_any_thread_count(tmp_path: Path) -> None:
    """The page prints what float64 guarantees: the replay error as its bound, the knobs from a float64 replay,
    so torch's thread count (and the BLAS build, which moves float32 sums by an ulp) changes no character."""
    from reports.sigma_features import REPLAY_BOUND, controller_markdown

    rng = np.random.default_rng(2)
    states = pd.DataFrame(rng.uniform(0, 1, (400, len(STATE_FEATURES))), columns=list(STATE_FEATURES))
    path = _controller(tmp_path, "c", sigma_blind=False)
    net, _ = load_checkpoint(path)
    with torch.no_grad():  # recorded as a search records them: float32
        knobs = squash(net(torch.tensor(states[list(feature_names(True))].to_numpy(), dtype=torch.float32))[0]).numpy()
    results = pd.DataFrame([{"cell_key": "k", "pair": "P:rm", "method": "a-uats", "variant": f"controller={path}"}])
    steps = states.assign(cell_key="k", iteration=range(1, 401), **dict(zip(KNOBS, knobs.T)))
    threads = torch.get_num_threads()
    texts = []
    try:
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            table = controller_response(results, steps)
            texts.append(controller_markdown(table, {}))
    finally:
        torch.set_num_threads(threads)
    assert texts[0] == texts[1] == texts[2]
    assert 0 < table["replay_error"].iloc[0] < REPLAY_BOUND  # float32 against float64: a few ulp, under the bound
    assert f"| < {REPLAY_BOUND:.0e} |" in texts[0] and "e-07" not in texts[0] and "e-08" not in texts[0]
