"""The prefix cache of the MC-dropout engine: the noise-free layers' keys/values and hidden states of a scored
sequence, kept so that a child re-runs only its new tokens (mc_dropout.MCDropoutEngine reads and fills it).

The shared layers see no dropout, so what they compute depends only on the tokens: a child's prefix is its
parent's sequence, and the parent's entry is exact for it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class PrefixEntry:
    """What a child needs from an already-scored sequence: the shared layers' keys/values and the output
    hidden state of the last shared layer, for every token."""

    ids: tuple[int, ...]
    kv: list[tuple[torch.Tensor, torch.Tensor]]  # per shared layer: (kv_heads, T, head_dim) each
    hidden: torch.Tensor  # (T, hidden)

    @property
    def nbytes(self) -> int:
        return self.hidden.numel() * self.hidden.element_size() + sum(
            k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.kv
        )


class PrefixCache:
    """LRU over PrefixEntry, bounded by bytes and by entries. Keys are (shared layers, token ids)."""

    def __init__(self, max_bytes: int = 512 * 2**20, max_entries: int = 4096) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[int, tuple[int, ...]], PrefixEntry] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, shared: int, ids: tuple[int, ...]) -> PrefixEntry | None:
        entry = self._entries.get((shared, ids))
        if entry is not None:
            self._entries.move_to_end((shared, ids))
        return entry

    def put(self, shared: int, entry: PrefixEntry) -> None:
        key = (shared, entry.ids)
        size = entry.nbytes
        if size > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old.nbytes
        self._entries[key] = entry
        self.bytes += size
        while self._entries and (self.bytes > self.max_bytes or len(self._entries) > self.max_entries):
            _, evicted = self._entries.popitem(last=False)
            self.bytes -= evicted.nbytes

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0


class StackedPast:
    """Duck-typed transformers Cache for one forward: per layer a fixed past (B, kv_heads, P, D) or none.
    `update` returns past ++ new and keeps the result, from which per-row cache entries are cut. The
    caller's stored tensors are never written to (a forward would otherwise mutate the parent's cache)."""

    def __init__(self, past: list[tuple[torch.Tensor, torch.Tensor]] | None, n_layers: int) -> None:
        self.past = past
        self.full: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layers

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.past is not None:
            pk, pv = self.past[layer_idx]
            key_states = torch.cat([pk, key_states], dim=-2)
            value_states = torch.cat([pv, value_states], dim=-2)
        self.full[layer_idx] = (key_states, value_states)
        return key_states, value_states

    def kept(self, n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The first n layers' keys and values, which the forward has written."""
        out = [kv for kv in self.full[:n] if kv is not None]
        if len(out) != n:
            raise RuntimeError(f"the forward wrote {len(out)} of the {n} shared layers' keys and values")
        return out
