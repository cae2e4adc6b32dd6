"""Train the arithmetic world's models from scratch: policy A, policy B, then the PRM.

    python -m uats.arith.train [--seed 0] [--out assets/models]

1. The shared tokenizer is built from the world's texts.
2. Policy A / policy B: small Llama LMs on train-split solutions in style A / style B, where each step
   slips with a fixed probability and the rest of the solution carries on from the slip, so that sampled
   solutions go wrong at a realistic rate. Policy A is trained with the PRM's dropout (p=0.1 after every
   decoder layer): its trunk becomes the PRM's, and a trunk trained without dropout lost half its accuracy
   under it (37% -> 17% solved), which left the PRM fine-tuning stuck.
3. The PRM: a Llama token classifier whose trunk starts from policy A's (it already reads the world's
   arithmetic), trained on policy-A samples plus written style-A solutions with slips, labelled step by
   step by the exact checker, with dropout p=0.1 after every decoder layer so that MC dropout at
   inference is native. Style B is never shown to it. `--prm-init` fine-tunes a saved PRM instead, and
   `--prm-finetune` stages fine-tune the new one further in the same run. The last default stage adds a
   penalty on the PRM's dropout variance over its (style-A) training steps, which keeps it low in
   distribution while style B, never seen, keeps its variance: the gap MC dropout is there to show.

The defaults train the shipped models (the PRM's three stages take about 80 min on the 2 cores).
"""

from __future__ import annotations

import os

# Before torch loads: OpenMP threads that spin while waiting made a training step ~13x slower when
# other processes share the two cores (measured: 3.5 s vs 0.26 s a step); passive waiting avoids that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from uats_core.worlds.arith import solutions, world
from uats_core.worlds.arith.modeling import (
    MODELS_DIR,
    PRM_SIDECAR,
    ModelShape,
    new_policy,
    new_prm,
    prm_ids,
    sample_solutions,
    write_prm_sidecar,
)
from uats_core.worlds.arith.tokenizer import DELIMITER, STEP_TAG, build_tokenizer

from .training_loop import Example, cls_loss, lm_loss, train_loop

log = logging.getLogger(__name__)

DRILL_GROUP = 4  # problems whose steps make one drill sequence


def policy_example(tok, question: str, steps: Sequence[str]) -> Example:
    """[bos] question "\\n\\n" step_1 "\\n\\n" ... step_n [eos]; loss on the solution and eos only."""
    prompt = [tok.bos_token_id] + tok.encode(question + DELIMITER, add_special_tokens=False)
    sol = tok.encode(solutions.solution_text(steps), add_special_tokens=False) + [tok.eos_token_id]
    return prompt + sol, [-100] * len(prompt) + sol


def drill_example(tok, steps: Sequence[str]) -> Example:
    """Bare computation steps without a question: many arithmetic facts per token, which is what a small
    model from scratch needs most (the words around them are learnt quickly)."""
    ids = [tok.bos_token_id] + tok.encode(DELIMITER.join(steps) + DELIMITER, add_special_tokens=False)
    return ids, [-100] + ids[1:]


def prm_example(tok, question: str, steps: Sequence[str], labels: Sequence[bool]) -> Example:
    ids = prm_ids(tok, question, steps)
    tag = tok.convert_tokens_to_ids(STEP_TAG)
    it = iter(labels)
    lab = [int(next(it)) if t == tag else -100 for t in ids]
    return ids, lab


def train_policy(
    tok,
    style: str,
    problems: Sequence[world.Problem],
    slip_rate: float,
    steps: int,
    shape: ModelShape,
    seed: int,
    batch_size: int = 64,
    lr: float = 5e-3,
    drill_share: float = 0.5,
    dropout_p: float = 0.0,
):
    torch.manual_seed(seed)
    model = new_policy(tok, shape)
    log.info(
        "policy %s: %.2fM parameters, %d problems, slip rate %.2f",
        style,
        sum(p.numel() for p in model.parameters()) / 1e6,
        len(problems),
        slip_rate,
    )

    def make(epoch: int) -> list[Example]:
        rng = random.Random(f"{seed}-{style}-{epoch}")  # new slips, new drill/problem split every epoch
        order = list(problems)
        rng.shuffle(order)
        n_drill = int(len(order) * drill_share)
        out = [policy_example(tok, p.question, solutions.solve(p, style, slip_rate, rng)[0]) for p in order[n_drill:]]
        # Drills: the clean computation steps of DRILL_GROUP problems in a row. Arithmetic is what a small
        # model learns slowest; bare steps carry ~3x more of it per token than whole problems, and clean
        # ones teach the table crisply (the slips are learnt from the problem examples).
        for i in range(0, n_drill - DRILL_GROUP + 1, DRILL_GROUP):
            out.append(
                drill_example(tok, [s for p in order[i : i + DRILL_GROUP] for s in solutions.solve(p, style)[0][:-1]])
            )
        return out

    train_loop(
        model, make, steps, batch_size, lr, seed, tok.pad_token_id, f"policy {style}", lm_loss, dropout_p=dropout_p
    )
    return model


def sample_prm_traces(
    policy, tok, problems: Sequence[world.Problem], per_problem: int, seed: int
) -> list[tuple[world.Problem, list[str]]]:
    """Policy samples at the search policies' temperature (prompting.TEMPERATURE), batched."""
    gen = torch.Generator().manual_seed(seed)
    qs = [p for p in problems for _ in range(per_problem)]
    out: list[tuple[world.Problem, list[str]]] = []
    bs = 512
    for s in tqdm(range(0, len(qs), bs), desc="sampling policy A", mininterval=2.0):
        chunk = qs[s : s + bs]
        sols = sample_solutions(policy, tok, [p.question for p in chunk], generator=gen, batch_size=bs)
        out += list(zip(chunk, sols))
    return out


def _prm_from_policy(tok, policy_a, shape: ModelShape, extra_layers: int):
    n_policy = policy_a.config.num_hidden_layers
    prm = new_prm(tok, replace(shape, layers=n_policy + extra_layers))
    # Start from policy A's trunk: it already computes the world's arithmetic in style A; its next-token
    # log-probabilities alone rank first errors with AUROC ~0.94. But a token's surprise only exists at the
    # trunk's top, one position earlier, out of reach of the trunk's own attention; the extra layers on top
    # can read it (measured: fine-tuning the bare trunk plateaued at AUROC ~0.85).
    missing, unexpected = prm.model.load_state_dict(policy_a.model.state_dict(), strict=False)
    assert not unexpected and all(k.startswith("layers.") and int(k.split(".")[1]) >= n_policy for k in missing), (
        missing
    )
    with torch.no_grad():  # the new layers start as the identity, so the PRM starts as policy A's trunk
        for layer in prm.model.layers[n_policy:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    return prm


def train_prm(
    tok,
    policy_a,
    traces: Sequence[tuple[world.Problem, list[str]]],
    written: Sequence[world.Problem],
    steps: int,
    shape: ModelShape,
    seed: int,
    batch_size: int = 64,
    lr: float = 2e-3,
    extra_layers: int = 2,
    freeze_trunk: bool = False,
    init: Path | torch.nn.Module | None = None,
    variance_penalty: float = 0.0,
):
    """The PRM trained on policy-A traces and written solutions; with init (a saved PRM folder or a PRM in
    memory), that PRM fine-tuned further instead of a new one on policy A's trunk."""
    torch.manual_seed(seed)
    if init is None:
        prm = _prm_from_policy(tok, policy_a, shape, extra_layers)
    elif isinstance(init, torch.nn.Module):
        prm = init
        log.info("PRM: fine-tuning the PRM just trained")
    else:
        from transformers import AutoModelForTokenClassification

        prm = AutoModelForTokenClassification.from_pretrained(init)
        log.info("PRM: fine-tuning %s (%d layers)", init, prm.config.num_hidden_layers)
    if freeze_trunk:  # only the layers above policy A's depth, the final norm and the head learn; the trunk
        # (policy A's, or the init PRM's lower layers) stays as it is
        prm.model.embed_tokens.requires_grad_(False)
        for layer in prm.model.layers[: policy_a.config.num_hidden_layers]:
            layer.requires_grad_(False)
    sampled = [prm_example(tok, p.question, s, solutions.label_steps(p, s)) for p, s in traces if s]
    labels = [y for _, lab in sampled for y in lab if y >= 0]
    log.info("PRM data: %d sampled traces, %d steps, %.1f%% correct", len(sampled), len(labels), 100 * np.mean(labels))

    def make(epoch: int) -> list[Example]:
        rng = random.Random(f"{seed}-prm-{epoch}")
        written_ex = []
        for p in written:
            steps_, _ = solutions.solve(p, "A", rng.choice([0.0, 0.15, 0.3, 0.5]), rng)
            written_ex.append(prm_example(tok, p.question, steps_, solutions.label_steps(p, steps_)))
        return sampled + written_ex

    train_loop(
        prm,
        make,
        steps,
        batch_size,
        lr,
        seed,
        tok.pad_token_id,
        "PRM",
        cls_loss,
        dropout_p=PRM_SIDECAR["dropout_p"],
        variance_penalty=variance_penalty,
    )
    return prm


@dataclass(frozen=True)
class FinetuneStage:
    steps: int
    lr: float
    variance_penalty: float = 0.0


# The shipped PRM: after its first training, a second cycle at a higher learning rate (AUROC on A 0.917
# -> 0.950, but its dropout variance on A grew with it), then a cycle that penalises that variance.
DEFAULT_FINETUNE = (FinetuneStage(1800, 3e-3), FinetuneStage(900, 1e-3, 20.0))
FINETUNE_FORMAT = "STEPS:LR[:VARIANCE_PENALTY], such as 900:1e-3:20"


def parse_finetune_stage(text: str) -> FinetuneStage | None:
    """ "900:1e-3:20" -> FinetuneStage(900, 1e-3, 20.0); "0" or "none" -> None (no fine-tuning)."""
    if text.strip().lower() in ("0", "none"):
        return None
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError
        stage = FinetuneStage(int(parts[0]), float(parts[1]), float(parts[2]) if len(parts) == 3 else 0.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes {FINETUNE_FORMAT} (or none); got {text!r}") from None
    if stage.steps < 1 or not stage.lr > 0 or stage.variance_penalty < 0:
        raise argparse.ArgumentTypeError(
            f"needs at least 1 step, a positive learning rate and a penalty of 0 or "
            f"more ({FINETUNE_FORMAT}); got {text!r}"
        )
    return stage


def prm_slices(
    train_problems: int, prm_problems: int, prm_written: int, seed: int = 0
) -> tuple[list[world.Problem], list[world.Problem], list[world.Problem]]:
    """The train-split problems for the policies, for the PRM's policy-A samples and for its written
    solutions. The two PRM slices are disjoint, so no problem is both sampled and written; the split is
    generated as long as the longest slice needs (problem i does not depend on the length)."""
    train = world.load_split("train", max(train_problems, prm_problems + prm_written), seed=seed)
    return train[:train_problems], train[:prm_problems], train[prm_problems : prm_problems + prm_written]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=MODELS_DIR)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train-problems", type=int, default=20000, help="train problems the policies learn from")
    ap.add_argument("--policy-steps", type=int, default=1200)
    ap.add_argument("--policy-lr", type=float, default=5e-3)
    ap.add_argument("--drill-share", type=float, default=0.5, help="share of train problems used as bare drills")
    ap.add_argument("--slip-rate-a", type=float, default=0.15)
    ap.add_argument("--slip-rate-b", type=float, default=0.1)
    ap.add_argument("--prm-problems", type=int, default=48000, help="train problems sampled from policy A for the PRM")
    ap.add_argument("--prm-samples", type=int, default=4, help="policy-A samples per PRM problem")
    ap.add_argument("--prm-written", type=int, default=6000, help="written style-A solutions with slips per epoch")
    ap.add_argument("--prm-steps", type=int, default=4000)
    ap.add_argument("--prm-batch-size", type=int, default=128)
    ap.add_argument("--prm-lr", type=float, default=2e-3)
    ap.add_argument(
        "--prm-variance-penalty",
        type=float,
        default=0.0,
        help="add this times the PRM's MC-dropout variance on its training steps to the loss (0: off)",
    )
    ap.add_argument("--prm-extra-layers", type=int, default=2, help="PRM decoder layers on top of policy A's trunk")
    ap.add_argument(
        "--prm-freeze-trunk",
        action="store_true",
        help="train only the PRM's extra layers and head on top of policy A's frozen trunk",
    )
    ap.add_argument(
        "--prm-init",
        type=Path,
        default=None,
        help="fine-tune this saved PRM folder instead of starting from policy A's trunk",
    )
    ap.add_argument(
        "--prm-finetune",
        type=parse_finetune_stage,
        action="append",
        metavar="STEPS:LR[:PENALTY]",
        help="after the PRM's training, fine-tune it for STEPS at LR with PENALTY as its "
        "--prm-variance-penalty (default 0); repeat for more stages, in order, or give none. "
        "Each stage trains on the traces of the first --prm-finetune-problems problems, as a run "
        "with --prm-init and --prm-problems set to them would. Default: "
        + " ".join(f"{st.steps}:{st.lr:g}:{st.variance_penalty:g}" for st in DEFAULT_FINETUNE),
    )
    ap.add_argument("--prm-finetune-problems", type=int, default=12000)
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument(
        "--only",
        choices=["policy-a", "policy-b", "prm"],
        action="append",
        help="train only these (others are loaded from --out); repeatable",
    )
    return ap


def _check(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """One line naming the flag and its fix for a value training cannot use, before anything is loaded."""
    for flag in (
        "train_problems",
        "prm_problems",
        "prm_written",
        "prm_steps",
        "prm_batch_size",
        "prm_finetune_problems",
    ):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag.replace('_', '-')} must be at least 1; got {getattr(args, flag)}")
    if args.prm_variance_penalty < 0:
        ap.error(f"--prm-variance-penalty must be 0 (off) or more; got {args.prm_variance_penalty}")
    if not args.prm_lr > 0:
        ap.error(f"--prm-lr must be a positive learning rate such as 2e-3; got {args.prm_lr}")
    if args.prm_init is not None and not (args.prm_init / "config.json").is_file():
        ap.error(
            f"--prm-init must be a saved PRM folder (with config.json), such as assets/models/arith-prm; "
            f"got {args.prm_init}"
        )


def _train_and_save_prm(
    args: argparse.Namespace,
    tok: Any,
    policy_a: Any,
    shape: ModelShape,
    data: tuple[Any, Any],
    finetune: Sequence[Any],
    dirs: dict[str, Path],
) -> None:
    """The PRM on policy A's sampled traces of `data` (its problems, written solutions), its fine-tuning stages in
    order, then saved with its sidecar."""
    prm_problems, written = data
    from transformers import AutoModelForCausalLM

    policy_a = policy_a or AutoModelForCausalLM.from_pretrained(dirs["A"])
    t = time.time()
    traces = sample_prm_traces(policy_a, tok, prm_problems, args.prm_samples, args.seed)
    log.info("sampled %d policy-A traces in %.0f s", len(traces), time.time() - t)
    t = time.time()
    prm = train_prm(
        tok,
        policy_a,
        traces,
        written,
        args.prm_steps,
        shape,
        args.seed,
        batch_size=args.prm_batch_size,
        lr=args.prm_lr,
        extra_layers=args.prm_extra_layers,
        freeze_trunk=args.prm_freeze_trunk,
        init=args.prm_init,
        variance_penalty=args.prm_variance_penalty,
    )
    ft_traces = ft_written = None
    for i, stage in enumerate(finetune, 1):
        log.info("PRM fine-tuning stage %d/%d: %s", i, len(finetune), stage)
        if ft_traces is None:
            # Its own slices, so that this equals a run with --prm-init (the stage-by-stage recipe).
            _, ft_problems, ft_written = prm_slices(
                args.train_problems, args.prm_finetune_problems, args.prm_written, args.seed
            )
            ft_traces = (
                traces
                if args.prm_finetune_problems == args.prm_problems  # the same draw: no resampling
                else sample_prm_traces(policy_a, tok, ft_problems, args.prm_samples, args.seed)
            )
        prm = train_prm(
            tok,
            policy_a,
            ft_traces,
            ft_written,
            stage.steps,
            shape,
            args.seed,
            batch_size=args.prm_batch_size,
            lr=stage.lr,
            freeze_trunk=args.prm_freeze_trunk,
            init=prm,
            variance_penalty=stage.variance_penalty,
        )
    prm.save_pretrained(dirs["prm"])
    tok.save_pretrained(dirs["prm"])
    write_prm_sidecar(dirs["prm"])
    log.info("PRM saved to %s (%.0f s)", dirs["prm"], time.time() - t)


def main(argv: Sequence[str] | None = None) -> None:
    ap = _parser()
    args = ap.parse_args(argv)
    _check(ap, args)
    finetune = DEFAULT_FINETUNE if args.prm_finetune is None else [st for st in args.prm_finetune if st]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.time()
    only = set(args.only or ["policy-a", "policy-b", "prm"])

    shape = ModelShape(hidden=args.hidden, layers=args.layers, intermediate=4 * args.hidden)
    tok = build_tokenizer()
    policy_problems, prm_problems, written = prm_slices(
        args.train_problems, args.prm_problems, args.prm_written, args.seed
    )
    dirs = {"A": args.out / "arith-policy-a", "B": args.out / "arith-policy-b", "prm": args.out / "arith-prm"}
    policies = {}
    for style, rate in (("A", args.slip_rate_a), ("B", args.slip_rate_b)):
        if f"policy-{style.lower()}" in only:
            t = time.time()
            policies[style] = train_policy(
                tok,
                style,
                policy_problems,
                rate,
                args.policy_steps,
                shape,
                args.seed,
                lr=args.policy_lr,
                drill_share=args.drill_share,
                dropout_p=PRM_SIDECAR["dropout_p"] if style == "A" else 0.0,
            )
            policies[style].save_pretrained(dirs[style])
            tok.save_pretrained(dirs[style])
            log.info("policy %s saved to %s (%.0f s)", style, dirs[style], time.time() - t)
    if "prm" in only:
        _train_and_save_prm(args, tok, policies.get("A"), shape, (prm_problems, written), finetune, dirs)
    log.info("training done in %.0f s", time.time() - t0)


if __name__ == "__main__":
    main()
