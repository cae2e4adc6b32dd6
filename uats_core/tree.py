"""The search tree shared by every method: nodes carry their MC-dropout statistics and the decisions
taken about them, so that storage can log them and the app can replay them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

from .protocols import FinishReason, StepOutput, Trace
from .status import TERMINAL, NodeStatus

# Node.status values (uats_core.status.NodeStatus), by the short names the methods use
ACTIVE, KEPT, PRUNED = NodeStatus.ACTIVE, NodeStatus.KEPT, NodeStatus.PRUNED
FINISHED, TRUNCATED = NodeStatus.FINISHED, NodeStatus.TRUNCATED


@dataclass
class Node:
    id: int
    parent_id: int | None
    depth: int
    step: str
    num_tokens: int = 0
    finish_reason: str | None = None
    created_iter: int = 0
    subtree: int | None = None  # DVTS subtree / beam lineage; None elsewhere
    mc_scores: list[float] = field(default_factory=list)  # every pass, initial ones first
    initial_passes: int = 0  # how many of mc_scores came from the first scoring
    mean: float | None = None  # R̄ (for a single deterministic pass: the score itself)
    var: float | None = None  # sample variance of mc_scores, ddof=1 (None under 2 passes)
    ucb: float | None = None  # R̂ = R̄ + α·sqrt(2 ln t / K)
    # the same passes as logits log(p/(1-p)): what the gate reads under uncertainty_space='logit'
    logit_mean: float | None = None
    logit_var: float | None = None  # sample variance of the passes' logits, ddof=1 (None under 2 passes)
    ood: bool | None = None  # the gated statistic (σ² by default) > τ
    scored_iter: int | None = None
    reeval_iter: int | None = None
    expanded_iter: int | None = None
    extra_passes: int = 0
    children_granted: int = 0
    uniqueness: float | None = None  # DORA's γ_i
    status: str = ACTIVE
    answer: str | None = None
    correct: bool | None = None
    # the answer was chosen from this candidate (True) or it ended a solution the answer was not chosen from
    # (False: beam search keeps the N best-scored, DVTS a subtree's last step); None: neither, or an older run log
    voted: bool | None = None

    @property
    def k(self) -> int:
        return len(self.mc_scores)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def scored_mean(self) -> float:
        """R̄ of a scored node: what a method ranks by (it reads only nodes the PRM has scored)."""
        if self.mean is None:
            raise ValueError(f"node {self.id} has not been scored")
        return self.mean

    @property
    def scored_ucb(self) -> float:
        """R̂ of a node scored with K passes: what the δ rule and the extra passes read."""
        if self.ucb is None:
            raise ValueError(f"node {self.id} has no R̂ (scored with one pass, or not at all)")
        return self.ucb

    def record(self) -> dict:
        """A plain-dict snapshot for event subscribers (storage, UI)."""
        return asdict(self)


class SearchTree:
    """Nodes by id; node 0 is the root (the question, no step)."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.nodes: dict[int, Node] = {0: Node(id=0, parent_id=None, depth=0, step="", status=KEPT)}
        self._children: dict[int, list[int]] = {0: []}

    @property
    def root(self) -> Node:
        return self.nodes[0]

    def add_child(self, parent_id: int, out: StepOutput, iteration: int, subtree: int | None = None) -> Node:
        parent = self.nodes[parent_id]
        node = Node(
            id=len(self.nodes),
            parent_id=parent_id,
            depth=parent.depth + 1,
            step=out.text,
            num_tokens=out.num_tokens,
            finish_reason=out.finish_reason.value,
            created_iter=iteration,
            subtree=subtree if subtree is not None else parent.subtree,
        )
        self.nodes[node.id] = node
        self._children[node.id] = []
        self._children[parent_id].append(node.id)
        return node

    def children(self, node_id: int) -> list[Node]:
        return [self.nodes[i] for i in self._children[node_id]]

    def path(self, node_id: int) -> list[Node]:
        """Nodes from the root's first child down to node_id."""
        out: list[Node] = []
        node = self.nodes[node_id]
        while node.parent_id is not None:
            out.append(node)
            node = self.nodes[node.parent_id]
        return out[::-1]

    def trace(self, node_id: int) -> Trace:
        return Trace(self.question, tuple(n.step for n in self.path(node_id)))

    def traces(self, node_ids: Iterable[int]) -> list[Trace]:
        return [self.trace(i) for i in node_ids]

    def trace_tokens(self, node_id: int) -> int:
        return sum(n.num_tokens for n in self.path(node_id))

    def leaves(self) -> Iterator[Node]:
        return (self.nodes[i] for i, ch in self._children.items() if not ch and i != 0)

    def terminal_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_terminal]

    def __len__(self) -> int:
        return len(self.nodes)


def ends_solution(out: StepOutput) -> bool:
    """A step ends its solution at end of sequence, at the solution cap, or once it states a boxed
    answer (as search-and-learn's DVTS does: a policy that keeps talking after \\boxed{} adds nothing)."""
    return out.finish_reason.ends_solution or "\\boxed{" in out.text


def terminal_status(out: StepOutput) -> str:
    if out.finish_reason is FinishReason.SOLUTION_CAP and "\\boxed{" not in out.text:
        return TRUNCATED
    return FINISHED
