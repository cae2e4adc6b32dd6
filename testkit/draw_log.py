"""The page's draw log read as the app benchmark reads it (benchmarks/app.py): min / median / max of a sample, and
write -> draw per iteration. Here, not in the benchmarks, so that a test can pin the reading without importing them."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


def spread(xs: Sequence[float]) -> dict[str, float]:
    return {"min": round(min(xs), 1), "median": round(statistics.median(xs), 1), "max": round(max(xs), 1), "n": len(xs)}


def per_iteration_draws(draws: list[dict[str, Any]], run_id: str, written: int) -> dict[str, Any]:
    """Write → draw per iteration from the page's draw log: for each iteration written after the page
    opened the run, the latency of its first draw (the page computes it from the iteration's commit time);
    the iterations never drawn are listed (skipped)."""
    first: dict[int, float] = {}
    for d in draws:
        if d.get("run") == run_id and d.get("latencyMs") is not None:
            first.setdefault(int(d["iteration"]), float(d["latencyMs"]))
    opened = min(first, default=0)  # drawn when the page opened the run: not a live update
    live = range(opened + 1, written + 1)
    lat = [first[t] for t in live if t in first]
    order = [int(d["iteration"]) for d in draws if d.get("run") == run_id]
    return {
        "iterations_live": len(live),
        "skipped": [t for t in live if t not in first],
        "in_order": all(b >= a for a, b in zip(order, order[1:])),
        "latency_ms": spread(lat) if lat else None,
        "median_s": round(statistics.median(lat) / 1000, 2) if lat else None,
    }
