"""The shared body of every PyTorch PRM adapter: encode a trace, run the MC-dropout engine, apply the head.

An adapter says only (1) how a trace becomes token ids plus one score position per step and (2) how a final
hidden state becomes a probability. Batching, padding, MC passes and prefix caching live here and in
`mc_dropout`, so every PRM kind gets them the same way.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from uats_core.backends.mc_dropout import DropoutSpec, MCDropoutEngine
from uats_core.backends.prefix_cache import PrefixCache
from uats_core.errors import BackendError
from uats_core.protocols import Trace

log = logging.getLogger(__name__)

DEFAULT_CACHE_BYTES = 512 * 2**20


@dataclass(frozen=True)
class Encoded:
    ids: tuple[int, ...]
    positions: tuple[int, ...]  # one per step, indices into ids


class TorchPRM:
    """Base class; subclasses set `kind` and implement `encode` and `head`."""

    kind = "base"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        dropout_p: float = 0.1,
        dropout_mode: str = "full",
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        max_batch_tokens: int | None = None,
        padding_side: str = "right",
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.dropout = DropoutSpec.parse(dropout_mode, dropout_p, "prm")
        self.cache = PrefixCache(cache_bytes) if cache_bytes > 0 else None
        self.engine = MCDropoutEngine(
            model,
            name=name,
            field="prm",
            cache=self.cache,
            max_batch_tokens=max_batch_tokens,
            padding_side=padding_side,
        )
        self._encodings: OrderedDict[Trace, Encoded] = OrderedDict()
        # One call at a time: the prefix cache and the encoding memo are shared state (eval lanes are threads).
        self._lock = threading.RLock()
        self.folder: str | None = None  # the folder it was loaded from (estimators' files lie beside it)

    # -- adapter interface -----------------------------------------------------------------------------
    def encode(self, trace: Trace) -> Encoded:
        """Token ids ending at the last step's score position, and one position per step."""
        raise NotImplementedError

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., hidden) final normalised hidden states -> (...) probabilities that the step is correct."""
        raise NotImplementedError

    # -- PRM protocol ----------------------------------------------------------------------------------
    @torch.inference_mode()
    def score(self, traces: Sequence[Trace], *, use_cache: bool = True) -> list[list[float]]:
        """Deterministic score of every step of every trace (dropout off)."""
        todo = [i for i, t in enumerate(traces) if t.steps]
        out: list[list[float]] = [[] for _ in traces]
        if not todo:
            return out
        with self._lock:
            encs = [self._encode(traces[i]) for i in todo]
            hidden = self.engine.hidden_at(
                [e.ids for e in encs],
                [e.positions for e in encs],
                k=1,
                spec=None,
                use_cache=use_cache,
                prefixes=[self._prefixes(traces[i]) for i in todo],
            )
            for i, h in zip(todo, hidden):
                out[i] = [float(x) for x in self.head(h[0]).float().cpu()]
        return out

    @torch.inference_mode()
    def mc_scores(
        self, traces: Sequence[Trace], k: int, *, spec: DropoutSpec | None = None, use_cache: bool = True
    ) -> np.ndarray:
        """(len(traces), k) last-step scores from k dropout passes (this PRM's dropout mode unless spec is given)."""
        if k < 1:
            raise ValueError(f"k must be >= 1; got {k}")
        if not traces:
            return np.zeros((0, k))
        empty = [i for i, t in enumerate(traces) if not t.steps]
        if empty:
            raise ValueError(f"mc_scores needs traces with at least one step; trace {empty[0]} has none")
        with self._lock:
            encs = [self._encode(t) for t in traces]
            hidden = self.engine.hidden_at(
                [e.ids for e in encs],
                [e.positions[-1:] for e in encs],
                k=k,
                spec=spec or self.dropout,
                use_cache=use_cache,
                prefixes=[self._prefixes(t) for t in traces],
            )
            return np.stack([self.head(h[:, 0]).float().cpu().numpy() for h in hidden]).astype(np.float64)

    @torch.inference_mode()
    def last_hidden(self, traces: Sequence[Trace], *, use_cache: bool = True) -> np.ndarray:
        """(len(traces), hidden) float64 final normalised hidden states at each trace's last step, dropout off: what
        the hidden-state estimators (uats_core/estimators/posterior.py) read, from one deterministic pass."""
        if not traces:
            return np.zeros((0, 0))
        with self._lock:
            encs = [self._encode(t) for t in traces]
            hidden = self.engine.hidden_at(
                [e.ids for e in encs],
                [e.positions[-1:] for e in encs],
                k=1,
                spec=None,
                use_cache=use_cache,
                prefixes=[self._prefixes(t) for t in traces],
            )
            return np.stack([h[0, 0].float().cpu().numpy() for h in hidden]).astype(np.float64)

    def head_linear(self) -> tuple[np.ndarray, float]:
        """(w, b) with head(h) = sigmoid(w·h + b): the head as one logit direction, for a Laplace posterior over it."""
        raise BackendError("prm", f"{self.name}: the {self.kind} head is not one logit direction; use mc-dropout")

    # -- helpers ---------------------------------------------------------------------------------------
    def _encode(self, trace: Trace) -> Encoded:
        enc = self._encodings.get(trace)
        if enc is None:
            enc = self.encode(trace)
            if len(enc.positions) != len(trace.steps):
                raise ValueError(
                    f"{self.name}: found {len(enc.positions)} score positions for {len(trace.steps)} steps; "
                    "a step or the question probably contains the step separator"
                )
            self._encodings[trace] = enc
            while len(self._encodings) > 8192:  # bounded memo: traces of a long search are not all needed
                self._encodings.popitem(last=False)
        else:
            self._encodings.move_to_end(trace)
        return enc

    def _prefixes(self, trace: Trace) -> list[tuple[int, ...]]:
        """Ids of the trace's ancestors, nearest first: the entries a prefix cache can extend."""
        if self.cache is None or len(trace.steps) < 2:
            return []
        return [self._encode(Trace(trace.question, trace.steps[:j])).ids for j in range(len(trace.steps) - 1, 0, -1)]

    def clear_cache(self) -> None:
        if self.cache is not None:
            with self._lock:
                self.cache.clear()


def binary_direction(
    weight: torch.Tensor, bias: torch.Tensor | None, positive: int, negative: int
) -> tuple[np.ndarray, float]:
    """A two-label softmax head as sigmoid(w·h + b): softmax(z)[pos] = sigmoid(z_pos − z_neg)."""
    w = (weight[positive] - weight[negative]).detach().double().cpu().numpy()
    b = float((bias[positive] - bias[negative]).detach()) if bias is not None else 0.0
    return w, b


def float32_head(module: torch.nn.Module) -> torch.nn.Module:
    """The scoring head as run by `head()`: a float32 copy when the model is in bf16/fp16. The engine hands heads
    float32 hidden states; computing the head's logits in float32 too is what keeps the probabilities continuous
    (bf16 logits of magnitude ~20 are spaced 1/8 apart, so P(correct) would only take values sigmoid(k/8))."""
    if all(p.dtype == torch.float32 for p in module.parameters()):
        return module
    import copy

    return copy.deepcopy(module).float()


def single_token_id(tokenizer: Any, token: str, name: str, what: str) -> int:
    """Id of a token that must exist as one vocabulary entry; fails at load otherwise."""
    tid = tokenizer.convert_tokens_to_ids(token)
    unk = getattr(tokenizer, "unk_token_id", None)
    if tid is None or (unk is not None and tid == unk and token != getattr(tokenizer, "unk_token", None)):
        raise BackendError(
            "prm",
            f"{name}: the tokenizer has no single token {token!r} ({what}); this model does not fit "
            "this PRM kind: pass the right kind=",
        )
    return int(tid)
