"""The SearchMethod interface and the context every method searches through.

The context owns the tree and the compute ledger, makes the batched policy and PRM calls, and emits the
events; a method only decides who is re-evaluated, who gets how many children and when to stop."""

from __future__ import annotations

import contextlib
import logging
import random
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..cancel import SearchCancelled, checkpoint
from ..config import SearchConfig
from ..errors import ConfigError
from ..estimation import ucb
from ..estimators import Estimator, cost_of, make_estimator
from ..events import EventBus, IterationEnded, NodesUpdated
from ..grading import Grader, extract_boxed
from ..protocols import PRM, Embedder, Policy
from ..records import Decision, StepInfo
from ..tree import ACTIVE, KEPT, PRUNED, TRUNCATED, Node, SearchTree, ends_solution, terminal_status

log = logging.getLogger(__name__)


class SearchContext:
    def __init__(
        self,
        question: str,
        gold: str | None,
        config: SearchConfig,
        policy: Policy,
        prm: PRM,
        bus: EventBus,
        grader: Grader,
        should_cancel: Callable[[], bool] | None = None,
        embedder: Embedder | None = None,
        controller: Any = None,
        on_iteration: Callable[[int], None] | None = None,
    ) -> None:
        self.tree = SearchTree(question)
        self.gold = gold
        self.config = config
        self.policy = policy
        self.prm = prm
        self.bus = bus
        self.grader = grader
        self.should_cancel = should_cancel
        self.embedder = embedder
        self.controller = controller
        self.on_iteration = on_iteration
        self.cost_total = 0.0
        self.cost_step = 0.0
        self.generated_steps = 0
        self.prm_passes = 0
        self.iterations_done = 0
        self._dirty: set[int] = set()
        self._estimator: Estimator | None = None

    @property
    def estimator(self) -> Estimator:
        """The run's uncertainty estimator (config.estimator over this PRM), built at first use."""
        if self._estimator is None:
            self._estimator = make_estimator(self.config, self.prm)
        return self._estimator

    # -- compute ------------------------------------------------------------------------------------
    def _charge(self, generated: int = 0, passes: int = 0, units: float | None = None) -> None:
        """`passes` PRM evaluations costing `units` PRM passes (the estimator's price; default one each)."""
        cost = generated * self.config.cost_ratio + (passes if units is None else units)
        self.generated_steps += generated
        self.prm_passes += passes
        self.cost_step += cost
        self.cost_total += cost

    # -- policy -------------------------------------------------------------------------------------
    def expand(
        self, allocation: Sequence[tuple[int, int]], iteration: int, subtrees: Sequence[int | None] | None = None
    ) -> list[Node]:
        """Generate `count` children for each (node id, count) in one batched policy call."""
        parents: list[int] = []
        subtree_of: list[int | None] = []
        for j, (node_id, count) in enumerate(allocation):
            parents.extend([node_id] * count)
            subtree_of.extend([subtrees[j] if subtrees else None] * count)
            if count and node_id != 0:
                node = self.tree.nodes[node_id]
                node.expanded_iter = iteration
                self._dirty.add(node_id)
        if not parents:
            return []
        outs = self.policy.generate_steps(self.tree.traces(parents))
        checkpoint(f"during iteration {iteration}")  # before the steps land: a cancelled batch adds no nodes
        if len(outs) != len(parents):
            raise RuntimeError(f"policy {self.policy.name!r} returned {len(outs)} steps for {len(parents)} requests")
        self._charge(generated=len(parents))
        new_nodes = []
        for parent_id, out, sub in zip(parents, outs, subtree_of):
            node = self.tree.add_child(parent_id, out, iteration, subtree=sub)
            if ends_solution(out) or not out.text.strip():
                self._finish(node, terminal_status(out))
            new_nodes.append(node)
            self._dirty.add(node.id)
        return new_nodes

    def _finish(self, node: Node, status: str) -> None:
        node.status = status
        node.answer = extract_boxed(node.step) or extract_boxed(self.tree.trace(node.id).text)
        if self.gold is not None and node.answer is not None:
            node.correct = self.grader.equivalent(self.gold, node.answer)
        elif self.gold is not None:
            node.correct = False
        self._dirty.add(node.id)

    def truncate(self, nodes: Sequence[Node]) -> None:
        """The iteration cap ends these unfinished solutions."""
        for node in nodes:
            if not node.is_terminal:
                self._finish(node, TRUNCATED)

    def settle_leftovers(self, leftover: Sequence[Node], width_left: bool) -> list[Node]:
        """After the search loop: with width left, only the iteration cap stopped the search, so the unfinished
        leaves are truncated solutions that still take part in the vote (returned); otherwise they are pruned."""
        if width_left and leftover:
            self.truncate(leftover)
            kept = list(leftover)
        else:
            self.grant(leftover, [0] * len(leftover))
            kept = []
        self.flush_nodes(self.iterations_done)
        return kept

    def mark_voted(self, finals: Sequence[Node]) -> None:
        """Mark the candidates the answer is chosen from, and every other ended solution as not chosen from: beam
        search and DVTS end more solutions than they vote on, and Pass@N must read only the ones they vote on."""
        chosen = {n.id for n in finals}
        for node in self.tree.nodes.values():
            if node.id in chosen or node.is_terminal:
                node.voted = node.id in chosen
                self._dirty.add(node.id)

    # -- PRM ------------------------------------------------------------------------------------------
    def score(self, nodes: Sequence[Node], iteration: int) -> None:
        """One deterministic PRM pass per node; the node's value is its last-step score."""
        if not nodes:
            return
        scores = self.prm.score(self.tree.traces(n.id for n in nodes))
        self._charge(passes=len(nodes))
        for node, per_step in zip(nodes, scores):
            value = float(per_step[-1])
            node.mc_scores = [value]
            node.initial_passes = 1
            node.mean, node.var, node.ucb = value, None, None
            node.logit_mean, node.logit_var = None, None
            node.scored_iter = iteration
            self._dirty.add(node.id)

    def mc_score(self, nodes: Sequence[Node], k: int, iteration: int, alpha: float) -> None:
        """Up to k samples of the run's estimator for each node (MC-dropout passes by default), in batched calls;
        each sample read is charged at the estimator's price."""
        if not nodes or k <= 0:
            return
        est = self.estimator
        estimates = est.more(self.tree.traces(n.id for n in nodes), [n.mc_scores for n in nodes], k)
        read, units = cost_of(estimates, est.sample_cost)
        self._charge(passes=read, units=units)
        for node, e in zip(nodes, estimates):
            if not e.new:  # nothing read (an ensemble out of members, a Mahalanobis node): the node stays as it was
                continue
            first = not node.mc_scores
            node.mc_scores = list(e.samples)
            if first:
                node.initial_passes = len(node.mc_scores)
                node.scored_iter = iteration
            else:
                node.extra_passes += e.new
                node.reeval_iter = iteration
            node.mean, node.var, node.ucb = e.mean, e.var, ucb(e.mean, e.k, iteration, alpha)
            node.logit_mean, node.logit_var = e.logit_mean, e.logit_var
            self._dirty.add(node.id)

    def mc_score_varied(self, counts: dict[int, int], iteration: int, alpha: float) -> None:
        """Extra passes with a different count per node: one batched call per distinct count."""
        by_k: dict[int, list[Node]] = defaultdict(list)
        for node_id, k in counts.items():
            if k > 0:
                by_k[k].append(self.tree.nodes[node_id])
        for k, nodes in sorted(by_k.items()):
            self.mc_score(nodes, k, iteration, alpha)

    def refresh_ucb(self, nodes: Sequence[Node], iteration: int, alpha: float) -> None:
        """R̂ depends on the search step t, so it moves even for nodes that got no new pass."""
        for node in nodes:
            if node.mean is not None and node.k:
                node.ucb = ucb(node.mean, node.k, iteration, alpha)
                self._dirty.add(node.id)

    def embed(self, nodes: Sequence[Node]) -> np.ndarray:
        if self.embedder is None:
            raise RuntimeError("DORA needs an embedder; pass one to run_search (see uats_core.embedders)")
        return self.embedder.embed([self.tree.trace(n.id).text for n in nodes])

    # -- decisions and events -----------------------------------------------------------------------
    def grant(self, nodes: Sequence[Node], counts: Sequence[int]) -> list[Decision]:
        decisions = []
        for node, n in zip(nodes, counts):
            node.children_granted = int(n)
            node.status = KEPT if n > 0 else PRUNED
            self._dirty.add(node.id)
            decisions.append(Decision(node_id=node.id, children=int(n), status=node.status))
        return decisions

    def begin_iteration(self, iteration: int) -> None:
        if self.should_cancel is not None and self.should_cancel():
            raise SearchCancelled(f"cancelled before iteration {iteration}")
        self.cost_step = 0.0

    def end_iteration(self, iteration: int, decisions: list[Decision], step_info: StepInfo) -> None:
        self.flush_nodes(iteration)
        step_info.generated_steps, step_info.prm_passes = self.generated_steps, self.prm_passes
        self.bus.emit(
            IterationEnded(
                iteration=iteration,
                decisions=decisions,
                step_info=step_info,
                cost_step=self.cost_step,
                cost_total=self.cost_total,
            )
        )
        self.iterations_done = iteration
        if self.on_iteration is not None:
            self.on_iteration(iteration)

    def flush_nodes(self, iteration: int) -> None:
        if self._dirty:
            records = [self.tree.nodes[i].record() for i in sorted(self._dirty)]
            self._dirty.clear()
            self.bus.emit(NodesUpdated(iteration=iteration, nodes=records))


@contextlib.contextmanager
def step_stream(seed: int, iteration: int) -> Iterator[None]:
    """Run the block on random streams of its own, seeded by (seed, iteration), and give the caller's back after
    (SearchConfig.step_streams): what the block draws does not depend on what was drawn before it."""
    state = random.getstate(), np.random.get_state()
    try:
        import torch
    except ImportError:  # the core runs without torch (test doubles)
        torch = None  # type: ignore[assignment]
    mixed = seed * 1_000_003 + iteration
    with torch.random.fork_rng(devices=[]) if torch is not None else contextlib.nullcontext():
        if torch is not None:
            torch.manual_seed(mixed)
        random.seed(mixed)
        np.random.seed(mixed % 2**32)
        try:
            yield
        finally:
            random.setstate(state[0])
            np.random.set_state(state[1])


class SearchMethod(ABC):
    """One search algorithm. `search` grows ctx.tree and returns the final candidate nodes (the ones the
    answer is voted from).

    The class also says what the method needs from the rest of the system, so that the runner, the limits, the
    validator, the evaluation grid, the run log's readers and the app ask the method instead of checking its name
    (docs/architecture.md, Add a method)."""

    name: str = ""
    # What the runner hands the method besides the policy and the PRM.
    needs_embedder: bool = False  # an Embedder (uats_core.embedders): DORA
    needs_controller: bool = False  # a learned controller (uats_core.controller), loaded from config.controller
    # MC-dropout passes, σ² and the OOD gate decide its steps: the app's uncertainty panels and the report's
    # analyses of the uncertainty-aware methods read such runs.
    uses_uncertainty: bool = False
    # The most its re-evaluation passes B may be scaled by (None: it re-evaluates nothing): the limits' estimate of
    # the passes one node can hold.
    reeval_scale: float | None = None
    # Its knobs: the SearchConfig fields that change its result besides those every method reads (budget, seed,
    # cost_ratio, max_iterations, aggregation, spend_rule); an evaluation cell's variant names these.
    config_fields: frozenset[str] = frozenset()
    # Ablation switches this method owns: field -> (the value every other method keeps, what the switch is).
    switches: Mapping[str, tuple[Any, str]] = {}
    # The StepInfo fields its steps fill, besides width, generated_steps and prm_passes (every step has those).
    step_fields: frozenset[str] = frozenset()

    def __init__(self, config: SearchConfig) -> None:
        self.config = config

    @abstractmethod
    def search(self, ctx: SearchContext) -> list[Node]: ...

    @classmethod
    def check_config(cls, config: SearchConfig) -> None:
        """Refuse, with a ConfigError naming the field, settings this method cannot search with (each field's own
        range is SearchConfig.validate's)."""

    @classmethod
    def check_affordable(cls, config: SearchConfig) -> None:
        """Refuse a budget that cannot pay for this method's first step (uats_core.limits asks before a model
        loads)."""

    @classmethod
    def variant_fields(cls, values: Mapping[str, Any]) -> frozenset[str]:
        """The config fields that change its result given a cell's other settings `values` (the evaluation grid's
        keys)."""
        return cls.config_fields

    @classmethod
    def without_uncertainty(cls) -> dict[str, Any]:
        """The settings of this method without uncertainty (the evaluation grid's `--uncertainty off`)."""
        return {}

    def vote_rule(self) -> str:
        """How its final candidates give the answer (uats_core.grading.vote): the config's aggregation."""
        return self.config.aggregation


def check_width_divides(config: SearchConfig, what: str) -> None:
    """Beam search's and DVTS's budget: N/M beams or subtrees of M children each."""
    if config.budget % config.beam_width:
        raise ConfigError(
            "budget", f"{what} need a budget divisible by beam_width={config.beam_width}; got {config.budget}"
        )
    if config.budget < config.beam_width:
        raise ConfigError("budget", f"must be at least beam_width={config.beam_width} for {config.method}")


def active(nodes: Sequence[Node]) -> list[Node]:
    return [n for n in nodes if n.status == ACTIVE]


def terminal(nodes: Sequence[Node]) -> list[Node]:
    return [n for n in nodes if n.is_terminal]
