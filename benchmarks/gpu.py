"""`python -m benchmarks gpu`: a PRM's memory and MC-dropout cost on the device, against the memory plan.

Builds a Qwen2.5-Math-PRM of a published shape with random weights on the device (memory and time depend on the
shape, not on the weights' values, so no download is needed), then scores a search-like workload: a frontier of
`--width` chains grown `--depth` steps, each step scored with K dropout passes through the prefix cache, as the
search does. It prints, side by side:
- memory: the plan's estimate (backends/memory.py, what `doctor` and the vLLM share are computed from) against what
  the CUDA allocator measured (weights after load; the peak above them while scoring; the device's used memory,
  CUDA context included), with OK where the estimate covers the measurement;
- cost: per dropout mode, the time of K passes over the deepest frontier against one deterministic pass (prefix
  cache off, synchronised, minimum of `--repeats`).
On a CPU it runs too (use `--shape tiny`), without the allocator's figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import string
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MODES = ("full", "last:2", "head")


def add_parser(sub: Any) -> None:
    from uats_core.backends.memory import PUBLISHED_SHAPES

    p = sub.add_parser(
        "gpu", help="a PRM's device memory and MC-dropout cost per mode, measured against the memory plan"
    )
    p.add_argument(
        "--shape",
        choices=sorted(PUBLISHED_SHAPES),
        default="qwen-prm-7b",
        help="PRM shape, random weights (default qwen-prm-7b: Qwen2.5-Math-PRM-7B)",
    )
    p.add_argument("--device", default="auto", help="cuda, cuda:1, cpu (default: cuda when available)")
    p.add_argument("--dtype", default="bfloat16", help="bfloat16 | float16 | float32 (default bfloat16)")
    p.add_argument("--k", type=int, default=8, help="MC passes per candidate (default 8)")
    p.add_argument("--p", type=float, default=0.1, help="dropout probability")
    p.add_argument("--width", type=int, default=32, help="candidates on the frontier (default 32)")
    p.add_argument("--depth", type=int, default=6, help="steps per chain (default 6)")
    p.add_argument("--question-chars", type=int, default=300)
    p.add_argument("--step-chars", type=int, default=120)
    p.add_argument("--max-batch-tokens", type=int, default=None, help="the engine's batch limit (default: its own)")
    p.add_argument("--modes", default=",".join(MODES), help="dropout modes to time (default full,last:2,head)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    p.set_defaults(func=run_gpu)


def build_prm(shape: str, device: Any, dtype: Any, *, p: float, max_batch_tokens: int | None) -> Any:
    """A QwenPRM of `shape` with random weights, built directly on the device in `dtype`, with a character
    tokenizer that has the Qwen chat template and step separator (one token per character)."""
    import torch
    from transformers import Qwen2Config

    from uats_core.backends.memory import PUBLISHED_SHAPES
    from uats_core.backends.prm_published import Qwen2ProcessRewardModel, QwenPRM
    from uats_core.backends.tiny import QWEN_CHAT_TEMPLATE, char_tokenizer

    tok = char_tokenizer(
        specials=("<|im_start|>", "<|im_end|>", "<|endoftext|>", QwenPRM.SEPARATOR),
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    config = Qwen2Config(**PUBLISHED_SHAPES[shape])
    previous = torch.get_default_dtype()
    torch.manual_seed(0)
    try:
        torch.set_default_dtype(dtype)  # parameters are created in dtype: no float32 copy of a 7B model on the way
        with torch.device(device):
            model = Qwen2ProcessRewardModel(config).eval()
    finally:
        torch.set_default_dtype(previous)
    return QwenPRM(
        model, tok, name=f"random {shape}", dropout_p=p, dropout_mode="full", max_batch_tokens=max_batch_tokens
    )


def chains(width: int, depth: int, question_chars: int, step_chars: int, seed: int = 0) -> list[list[Any]]:
    """frontiers[d] = `width` traces of d+1 steps; trace i at depth d extends trace i at depth d-1 (a beam)."""
    from uats_core.protocols import Trace

    rng = random.Random(seed)
    letters = string.ascii_letters + string.digits + " +-=*()."

    def text(n: int) -> str:
        return "".join(rng.choice(letters) for _ in range(n))

    question = text(question_chars)
    steps = [[text(step_chars) for _ in range(depth)] for _ in range(width)]
    return [[Trace(question, tuple(steps[i][: d + 1])) for i in range(width)] for d in range(depth)]


def _timer(device: Any) -> Callable[[Callable[[], Any]], float]:
    import torch

    def run(fn: Callable[[], Any]) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - t0

    return run


def run_gpu(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from uats_core.backends._loading import resolve_device, resolve_dtype
    from uats_core.backends.mc_dropout import DropoutSpec
    from uats_core.backends.memory import GIB, expandable_segments
    from uats_core.backends.plan import plan_prm_shape

    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    cuda = device.type == "cuda"
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    timer = _timer(device)
    out: dict[str, Any] = {
        "shape": args.shape,
        "device": str(device),
        "dtype": str(dtype).replace("torch.", ""),
        "k": args.k,
        "width": args.width,
        "depth": args.depth,
    }
    if cuda:
        out["device_name"] = torch.cuda.get_device_name(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    built = time.perf_counter()
    prm = build_prm(args.shape, device, dtype, p=args.p, max_batch_tokens=args.max_batch_tokens)
    out["build_s"] = time.perf_counter() - built
    estimate = plan_prm_shape(
        args.shape,
        dtype=out["dtype"],
        max_batch_tokens=prm.engine.max_batch_tokens,
        cache_bytes=prm.cache.max_bytes if prm.cache is not None else 0,
    )
    frontiers = chains(args.width, args.depth, args.question_chars, args.step_chars)
    print(
        f"{args.shape}: {estimate.params / 1e9:.2f}B parameters, {out['dtype']} on {out.get('device_name', device)}; "
        f"frontier {args.width} x depth {args.depth}, K={args.k}, max_batch_tokens {prm.engine.max_batch_tokens}, "
        f"expandable segments {'on' if expandable_segments() else 'off'}"
    )
    if cuda:
        torch.cuda.empty_cache()
        loaded = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)

    # The search-like workload: each depth's frontier scored with K passes, parents already in the prefix cache.
    search_rows = []
    for mode in modes:
        prm.clear_cache()
        spec = DropoutSpec.parse(mode, args.p)
        per_depth = [timer(lambda f=f, spec=spec: prm.mc_scores(f, args.k, spec=spec)) for f in frontiers]
        search_rows.append({"mode": mode, "seconds": sum(per_depth), "per_depth_s": per_depth})
        print(f"  search workload, {mode:>6s}: {sum(per_depth):7.2f} s over {len(frontiers)} depths")
    out["search"] = search_rows
    if cuda:
        out["memory"] = _memory_lines(
            estimate,
            loaded - base,
            torch.cuda.max_memory_allocated(device) - loaded,
            torch.cuda.max_memory_reserved(device),
            torch.cuda.mem_get_info(device),
            GIB,
        )
    out["cost"] = _cost_table(prm, frontiers[-1], modes, args, timer)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return out


def _memory_lines(
    estimate: Any, loaded: int, peak_above: int, reserved: int, info: tuple[int, int], gib: int
) -> dict[str, Any]:
    from uats_core.backends.memory import CONTEXT_MARGIN

    free, total = info
    used = total - free  # the whole process on this device: context, allocator pools, everything
    rows = {
        "weights + float32 head (after load)": (estimate.weights + estimate.head_f32, loaded),
        "peak allocated above that (MC batch, prefix cache)": (
            estimate.activations + estimate.prefix_cache,
            peak_above,
        ),
        "allocator reserved above the allocated peak": (estimate.allocator_slack, reserved - loaded - peak_above),
        "device memory used (with the CUDA context)": (estimate.total, used),
    }
    print(f"\nmemory: plan estimate vs measured (the plan's CUDA context margin: {CONTEXT_MARGIN / gib:.2f} GiB)")
    print(f"  {'what':52s} {'estimate':>12s} {'measured':>12s} {'measured/estimate':>18s}")
    for name, (est, got) in rows.items():
        print(f"  {name:52s} {est / gib:8.2f} GiB {got / gib:8.2f} GiB {got / max(est, 1):18.3f}")
    est, got = rows["device memory used (with the CUDA context)"]
    print(f"targets:\n  the plan covers the device memory used: {'OK' if got <= est else 'FALLS SHORT'}")
    return {name: {"estimate_bytes": est, "measured_bytes": got} for name, (est, got) in rows.items()} | {
        "peak_reserved_bytes": reserved,
        "device_total_bytes": total,
    }


def _cost_table(
    prm: Any,
    frontier: Sequence[Any],
    modes: Sequence[str],
    args: argparse.Namespace,
    timer: Callable[[Callable[[], Any]], float],
) -> dict[str, Any]:
    """Per mode: min time of K passes over the frontier / min time of one deterministic pass, cache off."""
    from uats_core.backends.mc_dropout import DropoutSpec

    encs = [prm._encode(t) for t in frontier]
    ids, last = [e.ids for e in encs], [e.positions[-1:] for e in encs]
    variants: dict[str, Callable[[], Any]] = {
        "deterministic (1 pass)": lambda: prm.engine.hidden_at(ids, last, k=1, spec=None, use_cache=False)
    }
    for mode in modes:
        spec = DropoutSpec.parse(mode, args.p)
        variants[f"{mode} x{args.k}"] = lambda spec=spec: prm.engine.hidden_at(
            ids, last, k=args.k, spec=spec, use_cache=False
        )
    for fn in variants.values():  # warm-up: kernels chosen, allocator pools grown
        timer(fn)
    best = {name: min(timer(fn) for _ in range(args.repeats)) for name, fn in variants.items()}
    base = best["deterministic (1 pass)"]
    tokens = sum(len(i) for i in ids)
    print(f"\ncost of scoring the deepest frontier ({len(ids)} candidates, {tokens} tokens), prefix cache off")
    print(f"  {'variant':24s} {'min s':>8s} {'x one pass':>11s} {'tokens/s':>12s}")
    rows = {}
    for name, s in best.items():
        k = 1 if name.startswith("deterministic") else args.k
        rows[name] = {"min_s": s, "ratio": s / base, "tokens_per_s": k * tokens / s}
        print(f"  {name:24s} {s:8.3f} {s / base:11.2f} {k * tokens / s:12.0f}")
    return {"tokens": tokens, "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks gpu", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["gpu", *(sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(level=logging.WARNING)
    args.func(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
