"""Train A-UATS's controller: behaviour cloning of H-UATS, then REINFORCE with a batch-mean baseline.

    uats train --seed 0 --rounds 500 --out assets/models/auats-controller

Reward = 1[answer correct] − λ·cost_used/cost_total (λ = 0.05), cost_total being what the matched
budget allowed over the iterations the search ran (N·(c+1) per step). Each round samples a training
problem and a policy/PRM pair and runs `--searches` (10) searches with the current, sampling controller.
Training problems come from the arithmetic world's train split; evaluation uses its test split, which
never overlaps it."""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from uats_core.config import SearchConfig
from uats_core.controller.policy import (
    KNOBS,
    ControllerNet,
    LearnedController,
    Step,
    feature_names,
    save_checkpoint,
    squash,
    unsquash,
)
from uats_core.interrupts import sigterm_as_interrupt
from uats_core.methods.uats import Knobs
from uats_core.paths import portable_path
from uats_core.request import SearchRequest, validate_request
from uats_core.runner import ASSETS, run_search
from uats_core.status import RunStatus

log = logging.getLogger(__name__)

LAMBDA = 0.05
OPTIMIZER_FILE = "optimizer.pt"  # AdamW's state, so a resumed run continues the same optimisation


def hats_knobs(config: SearchConfig) -> list[float]:
    k = Knobs.from_config(config)
    return [getattr(k, name) for name in KNOBS]


def behaviour_clone(
    net: ControllerNet,
    states: torch.Tensor,
    config: SearchConfig,
    steps: int = 200,
    lr: float = 1e-3,
    ridge: float = 1e-3,
) -> float:
    """Regress the controller's mean action onto H-UATS's constants (β=γ=1, the config's τ, δ, ν1, ν2) on
    the given states: a few Adam steps on the whole network, then the output layer is refit exactly by
    ridge regression on the body's features (bias unpenalised), which for constant targets puts them in
    the bias and the weights at zero, so every state, seen or not, gets H-UATS's knobs. Returns the worst
    relative knob error over the states."""
    target_raw = unsquash(hats_knobs(config))
    target = torch.tensor(hats_knobs(config))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    for _ in range(steps):
        loss = ((net(states)[0] - target_raw) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        feats = net.body[:-1](states)
        mu = feats.mean(0, keepdim=True)
        h = feats - mu
        y = target_raw.expand(len(states), -1)
        y_mean = y.mean(0, keepdim=True)
        w = torch.linalg.solve(h.T @ h + ridge * torch.eye(h.shape[1]), h.T @ (y - y_mean))
        net.body[-1].weight.copy_(w.T)
        net.body[-1].bias.copy_((y_mean - mu @ w)[0])
        knobs = squash(net(states)[0])
        worst = float(((knobs - target).abs() / target.clamp_min(1e-6)).max())
    net.eval()
    return worst


def reinforce_update(
    net: ControllerNet, optimizer: torch.optim.Optimizer, episodes: Sequence[Sequence[Step]], rewards: Sequence[float]
) -> float:
    """One REINFORCE step with the batch-mean baseline: ascend Σ_i (r_i − r̄) Σ_t log π(a_t | s_t)."""
    baseline = float(np.mean(rewards))
    terms = []
    for steps, r in zip(episodes, rewards):
        if not steps:
            continue
        states = torch.stack([s.state for s in steps])
        actions = torch.stack([s.raw_action for s in steps])
        logp = net.distribution(states).log_prob(actions).sum()
        terms.append(-(r - baseline) * logp)
    if not terms:
        return 0.0
    loss = torch.stack(terms).sum() / len(episodes)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def reward_of(correct: bool | None, cost: float, budget: int, cost_ratio: float, iterations: int) -> float:
    cost_total = budget * (cost_ratio + 1.0) * max(iterations, 1)
    return float(bool(correct)) - LAMBDA * cost / cost_total


def collect_states(problems, pairs, config: SearchConfig, n_searches: int) -> torch.Tensor:
    """States H-UATS actually visits (for behaviour cloning): run it with a recording default controller."""
    seen: list[dict[str, float]] = []

    def recorder(state: Mapping[str, float]) -> Knobs:
        seen.append(dict(state))
        return Knobs.from_config(config)

    for i in range(n_searches):
        policy, prm = pairs[i % len(pairs)]
        run_search(
            problems[i % len(problems)], replace(config, method="a-uats", seed=i), policy, prm, controller=recorder
        )
    return seen


def train(
    rounds: int,
    searches_per_round: int,
    seed: int,
    budgets: Sequence[int],
    uncertainty_features: bool,
    out: Path,
    pairs_spec: Sequence[tuple[str, str]],
    on_round: Callable[[dict], None] | None = None,
    bc_searches: int = 8,
    checkpoint_every: int = 25,
    resume: bool = False,
) -> dict:
    """Returns {"meta", "curve"}. The checkpoint and its curve are written every `checkpoint_every` rounds and
    when training is interrupted (Ctrl-C), so a long run can be stopped early and still leave a usable
    controller; `meta["rounds_completed"]` says how far it got. resume: continue the checkpoint in `out` (its
    weights, optimizer state when saved, and curve) up to `rounds`, on this machine or another."""

    from uats_core.backends import load_policy, load_prm
    from uats_core.worlds.arith.world import load_split

    torch.manual_seed(seed)
    base = SearchConfig(method="a-uats", budget=budgets[0], seed=seed)
    problems = load_split("train", 2000, seed=0)
    for b in budgets:  # bad flags end here, before a model loads; each search is then checked as it starts (run_search)
        validate_request(
            SearchRequest(problems[0], replace(base, budget=b), policy=pairs_spec[0][0], prm=pairs_spec[0][1])
        )
    pairs = [
        (load_policy(p), load_prm(r, dropout_p=base.dropout_p, dropout_mode=base.dropout_mode)) for p, r in pairs_spec
    ]
    features = feature_names(uncertainty_features)
    t0 = time.time()
    if resume:
        net, meta, curve, opt = _resumed(out, uncertainty_features, rounds)
        spent_before = float(meta.get("train_seconds", 0.0))
    else:
        net = ControllerNet(len(features))
        states = collect_states(problems[:bc_searches], pairs, base, bc_searches)
        x = torch.tensor([[s[f] for f in features] for s in states], dtype=torch.float32)
        x = torch.cat([x, x + 0.05 * torch.randn_like(x)])  # a little around the visited states, for robustness
        bc_error = behaviour_clone(net, x, base)
        log.info("behaviour cloning on %d states: worst relative knob error %.2e", len(x), bc_error)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
        curve, spent_before = [], 0.0
        meta = {
            "seed": seed,
            "rounds": rounds,
            "searches_per_round": searches_per_round,
            "budgets": list(budgets),
            "pairs": [[portable_path(x) for x in p] for p in pairs_spec],
            "bc_states": len(x),
            "bc_worst_rel_error": bc_error,
            "lambda": LAMBDA,
            "lr": 1e-4,
        }
    ctrl = LearnedController(net, uncertainty_features, sample=True, generator=torch.Generator().manual_seed(seed))

    def checkpoint() -> None:
        meta.update(rounds_completed=len(curve), train_seconds=round(spent_before + time.time() - t0, 1))
        net.eval()
        save_checkpoint(net, out, uncertainty_features, meta)
        (out / "training_curve.json").write_text(json.dumps(curve))
        torch.save(opt.state_dict(), out / OPTIMIZER_FILE)
        net.train()

    try:
        _reinforce_rounds(
            rounds,
            searches_per_round,
            problems,
            pairs,
            budgets,
            base,
            seed,
            net,
            opt,
            ctrl,
            curve,
            on_round,
            checkpoint,
            checkpoint_every,
        )
    except KeyboardInterrupt:
        log.warning("interrupted after %d of %d rounds; saving the checkpoint so far", len(curve), rounds)
    checkpoint()
    return {"meta": meta, "curve": curve}


def _resumed(out: Path, uncertainty_features: bool, rounds: int) -> tuple[ControllerNet, dict, list[dict], Any]:
    """The checkpoint in `out` to continue: its network, meta, curve and (when saved) optimizer state."""
    from uats_core.controller.policy import load_checkpoint

    net, meta = load_checkpoint(out)
    if bool(meta.get("uncertainty_features", True)) != uncertainty_features:
        raise SystemExit(
            f"error: resume: {out} was trained {'with' if meta.get('uncertainty_features', True) else 'without'}"
            " the uncertainty features; pass the same --no-uncertainty setting"
        )
    curve = json.loads((out / "training_curve.json").read_text()) if (out / "training_curve.json").exists() else []
    opt = torch.optim.AdamW(net.parameters(), lr=float(meta.get("lr", 1e-4)))
    if (out / OPTIMIZER_FILE).exists():
        opt.load_state_dict(torch.load(out / OPTIMIZER_FILE, weights_only=True))
    else:  # a checkpoint from before optimizer states were saved: Adam's moments start again
        meta["optimizer_restarts"] = int(meta.get("optimizer_restarts", 0)) + 1
    meta["rounds"] = rounds
    log.info("resuming %s at round %d of %d", out, len(curve), rounds)
    net.train()
    return net, meta, curve, opt


def _reinforce_rounds(
    rounds: int,
    searches_per_round: int,
    problems: Sequence,
    pairs: Sequence,
    budgets: Sequence[int],
    base: SearchConfig,
    seed: int,
    net: ControllerNet,
    opt: torch.optim.Optimizer,
    ctrl: LearnedController,
    curve: list[dict],
    on_round: Callable[[dict], None] | None,
    checkpoint: Callable[[], None],
    checkpoint_every: int,
) -> None:
    from tqdm import tqdm

    for rnd in tqdm(range(len(curve), rounds), desc="REINFORCE", unit="round", initial=len(curve), total=rounds):
        # Each round's draws depend on (seed, round) alone, so a resumed run draws what an uninterrupted one would.
        rng = random.Random(f"{seed}:{rnd}")
        ctrl.generator.manual_seed(rng.randrange(2**63))
        problem = problems[rng.randrange(len(problems))]
        pair_idx = rng.randrange(len(pairs))
        policy, prm = pairs[pair_idx]
        budget = rng.choice(list(budgets))
        episodes, rewards, correct, costs = [], [], [], []
        for _ in range(searches_per_round):
            ctrl.reset()
            cfg = replace(base, budget=budget, seed=rng.randrange(2**31))
            res = run_search(problem, cfg, policy, prm, controller=ctrl)
            if res.status == RunStatus.CANCELLED:  # Ctrl-C or `kill` inside the search: stop, keep the rounds
                raise KeyboardInterrupt
            episodes.append(list(ctrl.episode))
            rewards.append(reward_of(res.correct, res.cost, budget, cfg.cost_ratio, res.iterations))
            correct.append(bool(res.correct))
            costs.append(res.cost)
        loss = reinforce_update(net, opt, episodes, rewards)
        row = {
            "round": rnd,
            "problem_id": problem.id,
            "pair": pair_idx,
            "budget": budget,
            "mean_reward": float(np.mean(rewards)),
            "accuracy": float(np.mean(correct)),
            "mean_cost": float(np.mean(costs)),
            "loss": loss,
            "log_std": net.log_std.detach().tolist(),
        }
        curve.append(row)
        if on_round is not None:
            on_round(row)
        if checkpoint_every and len(curve) % checkpoint_every == 0 and len(curve) < rounds:
            checkpoint()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="uats train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rounds", type=int, default=500)
    p.add_argument("--searches", type=int, default=10, help="searches per round")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budgets", default="4,16", help="budgets N sampled per round")
    p.add_argument("--no-uncertainty", action="store_true", help="ablation: drop the σ features from the state")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--pairs",
        default=f"{ASSETS / 'arith-policy-a'}:{ASSETS / 'arith-prm'},"
        f"{ASSETS / 'arith-policy-b'}:{ASSETS / 'arith-prm'}",
        help="policy:prm pairs, comma-separated",
    )
    p.add_argument("--db", default=None, help="also write the training curve to this run database")
    p.add_argument("--checkpoint-every", type=int, default=25, help="save the checkpoint every this many rounds")
    p.add_argument("--resume", action="store_true", help="continue the checkpoint in --out up to --rounds")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = args.out or (ASSETS / ("auats-controller-no-uncertainty" if args.no_uncertainty else "auats-controller"))
    pairs = [tuple(x.rsplit(":", 1)) for x in args.pairs.split(",")]
    on_round = None
    if args.db:
        from storage import RunStore

        store = RunStore(args.db)
        name = f"controller-{out.name}-seed{args.seed}"
        on_round = lambda row: store.append_curve(name, row)  # noqa: E731
    with sigterm_as_interrupt():  # `kill` saves the checkpoint so far, as Ctrl-C does
        result = train(
            args.rounds,
            args.searches,
            args.seed,
            [int(b) for b in args.budgets.split(",")],
            not args.no_uncertainty,
            out,
            pairs,
            on_round,
            checkpoint_every=args.checkpoint_every,
            resume=args.resume,
        )
    print(json.dumps(result["meta"], indent=2))


if __name__ == "__main__":
    main()
