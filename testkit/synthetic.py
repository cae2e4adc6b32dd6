"""A synthetic, H-UATS-shaped event stream for tests and drawing benchmarks (NOT a search method).

Trees of a chosen size with MC-dropout scores, OOD re-evaluation, softmax child allocation, pruning,
finished answers right and wrong, emitted through the real uats_core events and Node records, so that
storage and the UI are exercised exactly as a search would exercise them, at sizes (2,000 nodes) a CPU
search would take long to reach. Seeded: the same arguments give the same stream.
"""

from __future__ import annotations

import math
import random
from typing import Any

from uats_core.allocation import largest_remainder
from uats_core.config import PAPER_TAU, SearchConfig
from uats_core.estimation import is_ood, mc_stats
from uats_core.events import Event, IterationEnded, NodesUpdated, RunEnded, RunStarted
from uats_core.records import Decision, StepInfo
from uats_core.tree import FINISHED, KEPT, PRUNED, Node


def _score(node: Node, it: int, alpha: float, tau: float) -> None:
    """The node's statistics from its passes, as the engine computes them at step `it`."""
    st = mc_stats(node.mc_scores, it, alpha)
    node.mean, node.var, node.ucb, node.logit_mean, node.logit_var = (
        st.mean,
        st.var,
        st.ucb,
        st.logit_mean,
        st.logit_var,
    )
    node.ood = is_ood(node.var, tau)


def synthetic_events(
    run_id: str,
    n_nodes: int = 200,
    budget: int = 8,
    seed: int = 0,
    k0: int = SearchConfig.k0,
    tau: float = PAPER_TAU,
    delta: float = SearchConfig.delta,
    alpha: float = SearchConfig.alpha,
    method: str = "h-uats",
    problem_id: str = "synthetic-0",
    question: str = "What is 12 + 30?",
    gold: str = "42",
    fail_after: int | None = None,
    max_iterations: int = 400,
) -> list[Event]:
    """Events of one synthetic run growing to about `n_nodes` nodes (root included).

    fail_after: stop after that many iterations with RunEnded(status="failed") and nodes of the
    unfinished iteration still pending (as a crash in the middle of an iteration would leave them)."""
    rng = random.Random(seed)
    cost_ratio = SearchConfig.cost_ratio
    config = {"method": method, "budget": budget, "seed": seed, "k0": k0, "tau": tau, "delta": delta, "alpha": alpha}
    events: list[Event] = [_started(run_id, config, problem_id, question, gold)]
    nodes: dict[int, Node] = {0: Node(id=0, parent_id=None, depth=0, step="", status=KEPT)}
    quality: dict[int, float] = {0: 0.7}
    frontier: list[tuple[int, int]] = [(0, budget)]  # (parent id, children granted)
    cost_total = 0.0
    it = 0
    while frontier and len(nodes) < n_nodes and it < max_iterations:
        it += 1
        created: list[Node] = []
        for parent_id, n_children in frontier:
            parent = nodes[parent_id]
            for _ in range(n_children):
                if len(nodes) >= n_nodes:
                    break
                node, quality[len(nodes)] = _child(
                    rng, len(nodes), parent, quality[parent_id], it, k0, tau, alpha, gold
                )
                nodes[node.id] = node
                created.append(node)
            parent.expanded_iter = it
        # H-UATS step: re-evaluate OOD candidates near the best ID mean, then allocate children
        selected, extra, reeval_passes = _reevaluate(rng, created, quality, it, budget, delta, alpha, tau)
        open_nodes = [n for n in created if n.status != FINISHED]
        grants = largest_remainder([math.exp((n.mean or 0.0) / 0.2) for n in open_nodes], budget) if open_nodes else []
        frontier = []
        for n, g in zip(open_nodes, grants):
            n.children_granted = g
            n.status = KEPT if g > 0 else PRUNED
            if g > 0:
                frontier.append((n.id, g))
        decisions = [
            Decision(
                node_id=n.id,
                extra_passes=n.extra_passes,
                children=n.children_granted,
                status=n.status,
                ood=n.ood,
                reeval_candidate=n in selected,
            )
            for n in created
        ]
        cost_step = len(created) * (cost_ratio + k0) + sum(extra)
        cost_total += cost_step
        changed = created + [nodes[p] for p in {n.parent_id for n in created if n.parent_id is not None}]
        events.append(NodesUpdated(iteration=it, nodes=[n.record() for n in changed]))
        if fail_after is not None and it > fail_after:
            events.append(
                RunEnded(
                    status="failed",
                    cost=cost_total - cost_step,
                    iterations=it - 1,
                    error="RuntimeError: synthetic crash in the middle of an iteration",
                )
            )
            return events
        events.append(
            IterationEnded(
                iteration=it,
                decisions=decisions,
                step_info=StepInfo(
                    width=budget,
                    reeval_passes=reeval_passes,
                    reeval_used=sum(extra),
                    knobs={"tau": tau, "delta": delta},
                ),
                cost_step=float(cost_step),
                cost_total=float(cost_total),
            )
        )
    events.append(_ended([n for n in nodes.values() if n.status == FINISHED], gold, cost_total, it))
    return events


def _reevaluate(
    rng: random.Random,
    created: list[Node],
    quality: dict[int, float],
    it: int,
    budget: int,
    delta: float,
    alpha: float,
    tau: float,
) -> tuple[list[Node], list[int], int]:
    """The OOD candidates near the best ID mean, the extra passes each got, and the step's B."""
    id_means = [n.mean for n in created if not n.ood and n.mean is not None]
    best = max(id_means) if id_means else max((n.mean or 0.0) for n in created) if created else 0.0
    selected = [n for n in created if n.ood and (n.ucb or 0.0) >= best - delta]
    reeval_passes = max(1, budget // 2) if selected else 0
    extra = largest_remainder([math.exp((n.ucb or 0.0) / 0.5) for n in selected], reeval_passes) if selected else []
    for n, e in zip(selected, extra):
        if e <= 0:
            continue
        n.mc_scores += [min(1.0, max(0.0, rng.gauss(quality[n.id], 0.05))) for _ in range(e)]
        n.extra_passes += e
        n.reeval_iter = it
        _score(n, it, alpha, tau)
    return selected, extra, reeval_passes


def _started(run_id: str, config: dict[str, Any], problem_id: str, question: str, gold: str) -> RunStarted:
    """The synthetic run's first event: its settings marked synthetic, its models named as no real ones are."""
    return RunStarted(
        run_id=run_id,
        method=config["method"],
        problem_id=problem_id,
        question=question,
        gold_answer=gold,
        seed=config["seed"],
        config={**config, "synthetic": True},
        policy="synthetic-policy",
        prm="synthetic-prm",
    )


def _child(
    rng: random.Random,
    nid: int,
    parent: Node,
    parent_quality: float,
    it: int,
    k0: int,
    tau: float,
    alpha: float,
    gold: str,
) -> tuple[Node, float]:
    """A new scored node under `parent` and its hidden quality (the mean its passes scatter around)."""
    depth = parent.depth + 1
    q = min(0.98, max(0.02, parent_quality + rng.gauss(0, 0.15)))
    finishing = depth >= 3 and rng.random() < 0.25
    a, b = rng.randint(1, 60), rng.randint(1, 60)
    if finishing:
        ans = "42" if rng.random() < q else str(rng.randint(10, 90))
        step = f"So the answer is $\\boxed{{{ans}}}$."
    else:
        ans = None
        step = f"Step {depth}: ${a} + {b} = {a + b}$, carry on.\n\n"
    node = Node(
        id=nid,
        parent_id=parent.id,
        depth=depth,
        step=step,
        num_tokens=len(step) // 3,
        finish_reason="eos" if finishing else "delimiter",
        created_iter=it,
    )
    spread = rng.choice((0.01, 0.02, 0.03, 0.08, 0.15))
    node.mc_scores = [min(1.0, max(0.0, rng.gauss(q, spread))) for _ in range(k0)]
    node.initial_passes = k0
    node.scored_iter = it
    _score(node, it, alpha, tau)
    if finishing:
        node.status = FINISHED
        node.answer = ans
        node.correct = ans == gold
    return node, q


def _ended(finals: list[Node], gold: str, cost_total: float, iterations: int) -> RunEnded:
    votes: dict[str, float] = {}
    for n in finals:
        votes[n.answer or ""] = votes.get(n.answer or "", 0.0) + (n.mean or 0.0)
    answer = max(votes, key=lambda a: votes[a]) if votes else None
    naive = max(finals, key=lambda n: n.mean or 0.0).answer if finals else None
    return RunEnded(
        status="finished",
        answer=answer,
        naive_answer=naive,
        correct=None if answer is None else answer == gold,
        naive_correct=None if naive is None else naive == gold,
        cost=cost_total,
        iterations=iterations,
    )


def final_records(events: list[Event]) -> dict[int, dict[str, Any]]:
    """The latest snapshot of every node in an event stream (what storage must hold at the end)."""
    out: dict[int, dict[str, Any]] = {}
    for ev in events:
        if isinstance(ev, NodesUpdated):
            for rec in ev.nodes:
                out[rec["id"]] = rec
    return out
