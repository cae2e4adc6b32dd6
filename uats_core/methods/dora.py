"""DORA ("Every Rollout Counts"): REBASE's weights times a uniqueness score from the cosine similarity of
partial-solution embeddings, so near-duplicate directions share their children instead of each taking their own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..allocation import dora_weights, largest_remainder
from ..tree import Node
from .base import SearchContext
from .rebase import WidthSearch


class Dora(WidthSearch):
    name = "dora"
    needs_embedder = True
    config_fields = frozenset({"rebase_temperature", "dora_similarity_temperature"})
    step_fields = frozenset({"cap", "temperature", "similarity_temperature", "width_left"})

    def allocate(
        self, ctx: SearchContext, candidates: Sequence[Node], width: int, t: int
    ) -> tuple[list[int], dict[str, Any]]:
        scores = [n.scored_mean for n in candidates]
        weights, gamma = dora_weights(
            scores, ctx.embed(candidates), self.config.rebase_temperature, self.config.dora_similarity_temperature
        )
        for node, g in zip(candidates, gamma):
            node.uniqueness = float(g)
        # The paper rounds N·w'_i; largest remainder is that rounding with the total conserved.
        return largest_remainder(weights, width), {
            "temperature": self.config.rebase_temperature,
            "similarity_temperature": self.config.dora_similarity_temperature,
        }
