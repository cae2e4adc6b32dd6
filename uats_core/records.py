"""Typed records of what a search step decided: one `Decision` per candidate, one `StepInfo` per step.

The engine builds them, IterationEnded carries them, storage writes `to_dict()` (fields that are None are left
out, so a method's record holds only what it decides) and readers get them back with `from_dict`. Like
search-and-learn's Beam: one shared type instead of dicts whose keys each reader has to know."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from .status import NodeStatus


class _Record:
    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Any:
        """The record of a stored dict; keys this version does not know (older or newer logs) are ignored."""
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Decision(_Record):
    """One candidate at one step: its children and status, and for UATS what the gate and the δ rule saw
    (the `*_before` statistics) and what the extra passes made of it."""

    node_id: int
    children: int
    extra_passes: int = 0
    status: str = NodeStatus.KEPT  # kept | pruned
    ood: bool | None = None
    reeval_candidate: bool | None = None  # passed the δ rule (in S)
    mean_before: float | None = None
    var_before: float | None = None
    ucb_before: float | None = None
    k_before: int | None = None
    mean: float | None = None
    var: float | None = None
    ucb: float | None = None
    k: int | None = None
    child_score: float | None = None  # what the children's softmax read

    @property
    def label(self) -> str:
        """The decision in the tree's shorthand: '+3p' extra passes, '×2' children, '✂' pruned."""
        bits = [f"+{self.extra_passes}p"] if self.extra_passes else []
        if self.children:
            bits.append(f"×{self.children}")
        elif self.status == NodeStatus.PRUNED:
            bits.append("✂")
        return " ".join(bits)


@dataclass
class StepInfo(_Record):
    """One step's numbers. Every method sets the width (children generated); the others belong to the methods
    named beside them."""

    width: int = 0
    cap: float | None = None  # N(c+1): REBASE's spend per step at full width
    generated_steps: int | None = None  # running totals, set by the search context
    prm_passes: int | None = None
    # REBASE, DORA
    width_left: int | None = None
    temperature: float | None = None
    similarity_temperature: float | None = None
    # beam search, DVTS, Best-of-N
    keep: int | None = None
    beam_width: int | None = None
    finished: int | None = None
    subtrees_open: int | None = None
    weighted: bool | None = None
    # H-UATS, A-UATS
    reeval_passes: int | None = None  # B offered
    reeval_used: int | None = None
    reference_mean: float | None = None  # the δ rule's reference: best ID mean (best of all when no ID)
    state: dict[str, float] | None = None  # A-UATS's state s_t
    knobs: dict[str, float] | None = None  # β, γ, τ, δ, ν1, ν2 in force
    spend_rule: str | None = None  # carry | paper (uats_core/spending.py)
    allowance: float | None = None  # carry: A_t
    available: float | None = None  # carry: A_t + the carry received
    carry: float | None = None  # carry: what goes on to the next step
    spent_total: float | None = None
    reeval_asked: int | None = None  # what β asked for, before the cap
    width_asked: int | None = None  # what γ asked for, before the cap
    base_width: int | None = None  # paper: C
    base_reeval_passes: int | None = None  # paper: B
