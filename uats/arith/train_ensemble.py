"""Train the arithmetic PRM's deep ensemble: M members for the `ensemble` uncertainty estimator.

    python -m uats.arith.train_ensemble [--members 8] [--steps 250] [--out assets/models/arith-prm-ensemble]

Each member is the shipped PRM (assets/models/arith-prm) with its top decoder layer, final norm and scoring head
re-initialised from the member's own seed and trained again on a bootstrap resample of the train split (problems
drawn with replacement, solved in style A with slips at the PRM's rates, labelled step by step by the exact checker),
with the PRM's dropout (p=0.1 after every decoder layer) on. The lower layers stay the shipped PRM's: a full deep
ensemble from scratch is ~80 min a member on this machine, this is minutes, and the members still differ where the
score is made (the top layer reads the shared trunk). Only the retrained tensors are saved, one safetensors file a
member (~0.6 MB each), with `ensemble.json` naming the base PRM, the seeds and the recipe. Style B is never shown.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see train.py: spinning OpenMP threads stall a shared machine

import argparse
import json
import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from uats_core.worlds.arith import solutions, world
from uats_core.worlds.arith.modeling import MODELS_DIR, PRM_DIR, PRM_SIDECAR

from .train import prm_example
from .training_loop import Example, cls_loss, train_loop

log = logging.getLogger(__name__)

ENSEMBLE_DIR = MODELS_DIR / "arith-prm-ensemble"
ENSEMBLE_FILE = "ensemble.json"
SLIP_RATES = (0.0, 0.15, 0.3, 0.5)  # the PRM's written solutions use these (train.py: train_prm)


def member_prefixes(num_layers: int) -> tuple[str, ...]:
    """The state-dict prefixes a member retrains (and stores): the top decoder layer, the final norm, the head."""
    return (f"model.layers.{num_layers - 1}.", "model.norm.", "score.")


def bootstrap(problems: Sequence[world.Problem], seed: int) -> list[world.Problem]:
    """len(problems) problems drawn with replacement (the member's bootstrap resample)."""
    rng = random.Random(f"bootstrap-{seed}")
    return [problems[rng.randrange(len(problems))] for _ in problems]


def train_member(
    base: Path, problems: Sequence[world.Problem], seed: int, steps: int, batch_size: int, lr: float
) -> dict[str, torch.Tensor]:
    """One member's retrained tensors."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(base)
    prm = AutoModelForTokenClassification.from_pretrained(base)
    prefixes = member_prefixes(prm.config.num_hidden_layers)
    for name, param in prm.named_parameters():
        train = name.startswith(prefixes)
        param.requires_grad_(train)
        if train:  # a fresh start per seed: the members' diversity comes from here and from the resample
            if name.endswith("norm.weight") or "layernorm" in name:
                torch.nn.init.ones_(param.data)
            else:
                torch.nn.init.normal_(param.data, std=prm.config.initializer_range)
    sample = bootstrap(problems, seed)

    def make(epoch: int) -> list[Example]:
        rng = random.Random(f"{seed}-member-{epoch}")
        out = []
        for p in sample:
            steps_, _ = solutions.solve(p, "A", rng.choice(SLIP_RATES), rng)
            out.append(prm_example(tok, p.question, steps_, solutions.label_steps(p, steps_)))
        return out

    train_loop(
        prm,
        make,
        steps,
        batch_size,
        lr,
        seed,
        tok.pad_token_id,
        f"member seed {seed}",
        cls_loss,
        dropout_p=PRM_SIDECAR["dropout_p"],
        bf16=False,
    )
    return {k: v.detach().clone().contiguous() for k, v in prm.state_dict().items() if k.startswith(prefixes)}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=8)
    ap.add_argument("--steps", type=int, default=250, help="training steps per member")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--problems", type=int, default=6000, help="train-split problems each member resamples")
    ap.add_argument("--seed", type=int, default=0, help="member j trains with seed + j")
    ap.add_argument("--base", type=Path, default=PRM_DIR)
    ap.add_argument("--out", type=Path, default=ENSEMBLE_DIR)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    for flag in ("members", "steps", "batch_size", "problems", "threads"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag.replace('_', '-')} must be at least 1; got {getattr(args, flag)}")
    if args.members < 2:
        ap.error("--members must be at least 2 (the sample variance needs two members)")
    if not (args.base / "config.json").is_file():
        ap.error(f"--base must be a saved PRM folder such as assets/models/arith-prm; got {args.base}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    torch.set_num_threads(args.threads)
    from safetensors.torch import save_file

    problems = world.load_split("train", args.problems, seed=0)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    files = []
    for j in range(args.members):
        name = f"member-{j}.safetensors"
        files.append(name)
        if (args.out / name).is_file():  # resumable: a member already trained (same seed, same recipe) is kept
            log.info("member %d already trained: kept", j)
            continue
        t = time.time()
        tensors = train_member(args.base, problems, args.seed + j, args.steps, args.batch_size, args.lr)
        save_file(tensors, str(args.out / name))
        log.info("member %d saved (%.0f s)", j, time.time() - t)
    meta = {
        "base": args.base.name,
        "members": files,
        "seeds": [args.seed + j for j in range(args.members)],
        "steps": args.steps,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "problems": args.problems,
        "retrained": ["model.layers.<top>.", "model.norm.", "score."],
        "bootstrap": True,
    }
    (args.out / ENSEMBLE_FILE).write_text(json.dumps(meta, indent=1) + "\n")
    log.info("ensemble of %d members in %.0f s -> %s", args.members, time.time() - t0, args.out)


if __name__ == "__main__":
    main()
