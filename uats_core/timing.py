"""Timing helpers shared by the benchmarks (benchmarks/) and `uats calibrate`: wall and CPU time of a call, and
interleaved rounds of several variants."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process). On shared cores the CPU time is far steadier than the wall
    time; with --threads 1 it is the work done (with more threads it also counts OpenMP spin-waiting)."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(
    variants: dict[str, Callable[[], Any]],
    repeats: int,
    setup: Callable[[str], None] | None = None,
    warmup: bool = False,
) -> dict[str, dict[str, list[float]]]:
    """Run every variant once per round, `repeats` rounds, interleaved: other processes on the shared cores then
    slow all variants alike, and the minimum over rounds is the least-disturbed run (noise only ever adds time).
    warmup: one untimed round first (first calls at a new shape pay for allocation and kernel selection)."""
    times: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in variants}
    for round_ in range(repeats + int(warmup)):
        for name, fn in variants.items():
            if setup is not None:
                setup(name)
            wall, cpu = timed(fn)
            if round_ >= int(warmup):
                times[name]["wall"].append(wall)
                times[name]["cpu"].append(cpu)
    return times


def summary(t: dict[str, list[float]]) -> dict[str, float]:
    return {
        "min_s": min(t["wall"]),
        "median_s": statistics.median(t["wall"]),
        "spread": spread(t["wall"]),
        "cpu_min_s": min(t["cpu"]),
    }


def spread(ts: list[float]) -> float:
    """(max − min) / min: how much the rounds disagree."""
    return (max(ts) - min(ts)) / min(ts) if min(ts) > 0 else 0.0
