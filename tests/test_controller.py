"""A-UATS controller: behaviour cloning reproduces H-UATS, REINFORCE moves toward reward, checkpoints
fail loudly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
from uats.train_controller import behaviour_clone, hats_knobs, reinforce_update
from uats_core.config import SearchConfig
from uats_core.controller import (
    ABLATION_CHECKPOINT,
    DEFAULT_CHECKPOINT,
    ControllerNet,
    LearnedController,
    load_checkpoint,
    load_controller,
    save_checkpoint,
    squash,
    unsquash,
)
from uats_core.controller.policy import Step, feature_names
from uats_core.errors import ControllerError
from uats_core.problems import Problem
from uats_core.runner import run_search


def test_squash_round_trips():
    knobs = hats_knobs(SearchConfig())
    assert squash(unsquash(knobs)).tolist() == pytest.approx(knobs, rel=1e-5)


def test_behaviour_cloning_reproduces_h_uats_trees():
    torch.manual_seed(0)
    cfg = SearchConfig(method="h-uats", budget=16, seed=5)
    features = feature_names(True)
    net = ControllerNet(len(features))
    states = torch.rand(256, len(features))
    worst = behaviour_clone(net, states, cfg, steps=50)
    assert worst < 1e-4
    problem = Problem("bc", "What is 2 + 6?", "8")
    trees = []
    for method, controller in (("h-uats", None), ("a-uats", LearnedController(net))):
        res = run_search(
            problem,
            SearchConfig(method=method, budget=16, seed=5),
            ScriptedPolicyDouble(depth=5),
            HashedPRMDouble(5),
            controller=controller,
        )
        trees.append(
            [(n.id, n.parent_id, n.children_granted, n.extra_passes, n.status) for n in res.tree.nodes.values()]
        )
    assert trees[0] == trees[1]
    assert any(extra for *_, extra, _ in trees[0])  # the comparison covers re-evaluation too


def test_reinforce_moves_toward_the_rewarded_action():
    # Two actions: the sign of the first raw action dimension. Positive pays 1, negative pays 0.
    torch.manual_seed(0)
    net = ControllerNet(1, hidden=16, init_log_std=0.0)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    x = torch.ones(1, 1)
    before = float(net(x)[0][0, 0].detach())
    for _ in range(60):
        dist = net.distribution(x.expand(32, 1))
        actions = dist.sample()
        episodes = [[Step(x[0], a)] for a in actions]
        rewards = [float(a[0] > 0) for a in actions]
        reinforce_update(net, opt, episodes, rewards)
    after = float(net(x)[0][0, 0].detach())
    assert after > before + 0.5
    assert torch.distributions.Normal(net(x)[0][0, 0], net.log_std[0].exp()).cdf(torch.tensor(0.0)) < 0.3


def test_corrupt_or_mismatched_checkpoint_names_the_file(tmp_path):
    net = ControllerNet(len(feature_names(True)), hidden=32)
    folder = save_checkpoint(net, tmp_path / "ok", uncertainty_features=True)
    loaded, meta = load_checkpoint(folder)
    assert meta["hidden"] == 32
    # garbled weights
    bad = save_checkpoint(net, tmp_path / "corrupt", uncertainty_features=True)
    (bad / "controller.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(ControllerError, match="controller.safetensors"):
        load_checkpoint(bad)
    # weights of another shape than the metadata claims
    mismatch = save_checkpoint(net, tmp_path / "mismatch", uncertainty_features=True)
    meta = json.loads((mismatch / "controller.json").read_text())
    meta["hidden"] = 64
    (mismatch / "controller.json").write_text(json.dumps(meta))
    with pytest.raises(ControllerError, match="does not match"):
        load_checkpoint(mismatch)
    # the ablation checkpoint asked for as the full one
    abl = save_checkpoint(
        ControllerNet(len(feature_names(False)), hidden=32), tmp_path / "abl", uncertainty_features=False
    )
    with pytest.raises(ControllerError, match="uncertainty_features"):
        load_controller(abl, SearchConfig(method="a-uats"))
    with pytest.raises(ControllerError, match="missing"):
        load_checkpoint(tmp_path / "nowhere")


def test_interrupted_training_leaves_a_loadable_checkpoint_with_the_rounds_done(tmp_path):
    from uats.train_controller import train
    from uats_core.runner import ASSETS

    def stop_after_two(row: dict) -> None:
        if row["round"] == 1:
            raise KeyboardInterrupt

    out = tmp_path / "ctrl"
    pairs = [(str(ASSETS / "arith-policy-a"), str(ASSETS / "arith-prm"))]
    result = train(
        rounds=50,
        searches_per_round=2,
        seed=0,
        budgets=[2],
        uncertainty_features=True,
        out=out,
        pairs_spec=pairs,
        on_round=stop_after_two,
        bc_searches=1,
        checkpoint_every=0,
    )
    assert result["meta"]["rounds_completed"] == 2 and result["meta"]["rounds"] == 50
    assert [r["round"] for r in json.loads((out / "training_curve.json").read_text())] == [0, 1]
    net, meta = load_checkpoint(out)
    assert meta["rounds_completed"] == 2
    assert meta["pairs"] == [["assets/models/arith-policy-a", "assets/models/arith-prm"]]  # no trainer's home dir
    assert not net.training


@pytest.mark.parametrize("uncertainty", [True, False])
def test_shipped_checkpoints_load_with_their_feature_sets(uncertainty):
    """Both shipped controllers: the full one, and the ablation that reads no σ features."""
    ctrl = load_controller(None, SearchConfig(method="a-uats", controller_uncertainty_features=uncertainty))
    _, meta = load_checkpoint(DEFAULT_CHECKPOINT if uncertainty else ABLATION_CHECKPOINT)
    folder = DEFAULT_CHECKPOINT if uncertainty else ABLATION_CHECKPOINT
    curve = json.loads((Path(folder) / "training_curve.json").read_text())
    # A checkpoint may ship part-way through its schedule (training resumes from it): its meta says how far.
    assert ctrl.uncertainty_features is uncertainty and 1 <= meta["rounds_completed"] <= meta["rounds"]
    assert len(curve) == meta["rounds_completed"] and [r["round"] for r in curve] == list(range(len(curve)))
    assert meta["features"] == list(feature_names(uncertainty))
    assert ("max_sigma" in meta["features"]) is uncertainty
    assert all(not Path(p).is_absolute() for pair in meta["pairs"] for p in pair)


def test_training_is_reproducible_from_its_seed(tmp_path):
    """The same seed writes the same checkpoint, byte for byte: how the shipped ones can be reproduced."""
    from uats.train_controller import train
    from uats_core.runner import ASSETS

    pairs = [(str(ASSETS / "arith-policy-a"), str(ASSETS / "arith-prm"))]
    for out in ("first", "second"):
        train(
            rounds=2,
            searches_per_round=2,
            seed=3,
            budgets=[2],
            uncertainty_features=True,
            out=tmp_path / out,
            pairs_spec=pairs,
            bc_searches=1,
            checkpoint_every=0,
        )
    for name in ("controller.safetensors", "training_curve.json"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()


def test_resumed_training_equals_an_uninterrupted_one(tmp_path):
    """Training stopped after 2 rounds and resumed (another process, another machine: only the checkpoint
    folder carries over) writes the same controller as one run of all 4 rounds."""
    from uats.train_controller import train
    from uats_core.runner import ASSETS

    pairs = [(str(ASSETS / "arith-policy-a"), str(ASSETS / "arith-prm"))]
    kw = dict(
        searches_per_round=2,
        seed=5,
        budgets=[2],
        uncertainty_features=True,
        pairs_spec=pairs,
        bc_searches=1,
        checkpoint_every=0,
    )
    train(rounds=4, out=tmp_path / "whole", **kw)

    def stop_after_two(row: dict) -> None:
        if row["round"] == 1:
            raise KeyboardInterrupt

    train(rounds=4, out=tmp_path / "parts", on_round=stop_after_two, **kw)
    assert load_checkpoint(tmp_path / "parts")[1]["rounds_completed"] == 2
    result = train(rounds=4, out=tmp_path / "parts", resume=True, **kw)
    assert result["meta"]["rounds_completed"] == 4 and "optimizer_restarts" not in result["meta"]
    for name in ("controller.safetensors", "training_curve.json"):
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "parts" / name).read_bytes(), name
    with pytest.raises(SystemExit, match="resume: .* with the uncertainty features"):
        train(rounds=4, out=tmp_path / "parts", resume=True, **(kw | {"uncertainty_features": False}))
