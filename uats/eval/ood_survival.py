"""Do right OOD steps stay alive? `uats ood-survival --db RUNLOG`

For the H-UATS runs of a run log on the arithmetic world, every decision about a candidate the gate called OOD,
with its step judged by the exact checker: the share granted at least one child, split by whether the step was
re-evaluated at that decision. Grouped by the settings that bear on it (child score, re-evaluation share, gate),
with accuracy and mean cost per group. This is what separates the two ways an OOD step can survive: extra passes
(the paper's re-evaluation, which leaves E[R̄] and so the children's softmax unchanged) or a child score that
reads R̂ for OOD candidates (`--child-score ucb-ood`).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from uats_core.errors import ConfigError
from uats_core.status import RunStatus

GROUP_FIELDS = ("child_score", "reeval_share", "dropout_mode", "uncertainty_space", "uncertainty", "tau", "budget")
KINDS = ("right_reevaluated", "right_not", "wrong_reevaluated", "wrong_not")


def _trace(nodes: dict[int, dict[str, Any]], node_id: int) -> list[str]:
    out = []
    while node_id and node_id in nodes:
        out.append(nodes[node_id]["step"])
        node_id = nodes[node_id]["parent_id"]
    return out[::-1]


def _finished_runs(store: Any, page: int = 1000) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        rows = store.list_runs(status=RunStatus.FINISHED, limit=page, offset=len(out))
        out.extend(rows)
        if len(rows) < page:
            return out


def ood_survival(store: Any, methods: Sequence[str] = ("h-uats",)) -> dict[tuple, dict[str, Any]]:
    """{group: {"runs", "correct", "cost", KIND: [alive, n]}} over the finished runs of the arithmetic world."""
    from uats_core.worlds.arith import solutions, world

    groups: dict[tuple, dict[str, Any]] = defaultdict(
        lambda: {"runs": 0, "correct": 0, "cost": 0.0, **{k: [0, 0] for k in KINDS}}
    )
    for run in _finished_runs(store):
        if run["method"] not in methods or not str(run["problem_id"]).startswith("arith-"):
            continue
        cfg = run.get("config") or {}
        g = groups[tuple(cfg.get(f) for f in GROUP_FIELDS)]
        g["runs"] += 1
        g["correct"] += bool(run.get("correct"))
        g["cost"] += float(run.get("cost") or 0.0)
        problem = world.get_problem(run["problem_id"])
        nodes = {int(n["id"]): n for n in store.get_nodes(run["run_id"])}
        for it in store.get_iterations(run["run_id"]):
            for d in it.get("decisions") or []:
                if not d.get("ood"):
                    continue
                steps = _trace(nodes, int(d["node_id"]))
                right = solutions.step_correct(problem, steps[:-1], steps[-1])
                kind = ("right" if right else "wrong") + ("_reevaluated" if d.get("extra_passes") else "_not")
                g[kind][0] += int(d.get("children", 0) > 0)
                g[kind][1] += 1
    return dict(groups)


def format_table(groups: dict[tuple, dict[str, Any]]) -> str:
    def share(pair: list[int]) -> str:
        return f"{pair[0]}/{pair[1]} ({pair[0] / pair[1]:.0%})" if pair[1] else "–"

    lines = [
        "| " + " | ".join(GROUP_FIELDS) + " | runs | accuracy | mean cost | right OOD alive: re-evaluated | "
        "not re-evaluated | wrong OOD alive: re-evaluated | not re-evaluated |",
        "|" + "---|" * (len(GROUP_FIELDS) + 7),
    ]
    for key, g in sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        lines.append(
            "| "
            + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in key)
            + f" | {g['runs']} | {g['correct'] / g['runs']:.1%} | "
            f"{g['cost'] / g['runs']:.0f} | " + " | ".join(share(g[k]) for k in KINDS) + " |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="uats ood-survival", description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True, help="the run log (SQLite path or SQLAlchemy URL)")
    ap.add_argument("--methods", default="h-uats", help="comma list (default h-uats)")
    args = ap.parse_args(argv)
    from pathlib import Path

    from storage import RunStore, StorageError

    if "://" not in args.db and not Path(args.db).is_file():
        print(f"error: db: no run log at {args.db}; give the --db an evaluation wrote", file=sys.stderr)
        return 2
    try:
        store = RunStore(args.db)
        groups = ood_survival(store, [m.strip() for m in args.methods.split(",") if m.strip()])
    except (ConfigError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not groups:
        print("no finished runs of those methods on the arithmetic world")
        return 0
    print(format_table(groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
