"""Monte Carlo dropout over a decoder-only transformer, with the K passes batched and the noise-free part shared.

Dropout sites (p settable, everything else in eval mode, no autograd):
  - `full`: after every decoder layer's output (how the arithmetic PRM was trained);
  - `last:L`: after each of the top L decoder layers only;
  - `head`: on the final normalised hidden state, i.e. the input of the scoring head (classifier dropout).

Why the engine runs the decoder layers itself instead of calling `model(...)` with hooks: the input of layer
`n-L` carries no noise in `last:L` (nor the input of layer 0 in `full`), so everything up to and including
that layer is computed ONCE per candidate; its output is then repeated K times (`repeat_interleave`) and
only the layers above run on the K·B rows, batched (in groups of passes that fit `max_batch_tokens`, never one
call per pass). The same split makes prefix caching exact: the
shared layers' keys/values and their output hidden states depend only on the tokens, so a child reuses
its parent's (see `PrefixCache`). `dropout_hooks` offers the plain hook version for code that calls the
model's own forward (the bench's naive loop, training).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from uats_core.backends.prefix_cache import PrefixCache, PrefixEntry, StackedPast
from uats_core.cancel import checkpoint
from uats_core.config import parse_dropout_mode
from uats_core.errors import BackendError, ConfigError
from uats_core.hf_compat import cache_kwarg

log = logging.getLogger(__name__)


def inject(x: torch.Tensor, p: float) -> torch.Tensor:
    """Dropout that stays on while the model is in eval mode."""
    return F.dropout(x, p, training=True) if p > 0 else x


def _keep_mask(x: torch.Tensor, p: float, k: int, token_cols: Sequence[torch.Tensor]) -> torch.Tensor:
    """Dropout keep-mask (B·k, columns, hidden) for a batch laid out in columns, drawn so that it does not depend
    on the layout: row i's mask is rand(k, its tokens, hidden) in token order (pad columns: dropped). A fixed
    seed then gives the same passes whether a prefix came from the cache (left-padded) or not, whatever the
    padding side."""
    B, T, H = len(token_cols), x.shape[1], x.shape[2]
    if all(cols.numel() == T for cols in token_cols):
        # No padding: one draw of (B, k, T, H) yields the same stream as B per-row draws (sequential CPU generator).
        return (torch.rand(B, k, T, H, device=x.device) >= p).view(B * k, T, H)
    keep = torch.zeros(B, k, T, H, dtype=torch.bool, device=x.device)
    for i, cols in enumerate(token_cols):
        keep[i, :, cols] = torch.rand(k, cols.numel(), H, device=x.device) >= p
    return keep.view(B * k, T, H)


def _drop_rows(x: torch.Tensor, p: float, k: int, token_cols: Sequence[torch.Tensor]) -> torch.Tensor:
    """Layout-independent dropout of a fresh layer output (scaled in place)."""
    if p <= 0:
        return x
    return x.mul_(_keep_mask(x, p, k, token_cols)).mul_(1.0 / (1.0 - p))


# Decoder layers known to be pre-norm residual blocks (x + attn(norm(x)), then y + mlp(norm(y))): for them the
# last layer's MLP runs only where the output is read.
_PRE_NORM_LAYERS = ("LlamaDecoderLayer", "MistralDecoderLayer", "Qwen2DecoderLayer")


def _last_layer_at(layer: Any, x: torch.Tensor, idx: torch.Tensor, **attn_kw: Any) -> torch.Tensor:
    """layer(x) at the columns idx (B·k, m) only. Attention still runs for every position (its keys and values
    need them all); the MLP, about two thirds of a layer, runs for the m read positions only."""
    attn, _ = layer.self_attn(hidden_states=layer.input_layernorm(x), **attn_kw)
    at = idx[:, :, None].expand(-1, -1, x.shape[-1])
    y = torch.gather(x, 1, at) + torch.gather(attn, 1, at)
    return y + layer.mlp(layer.post_attention_layernorm(y))


@dataclass(frozen=True)
class DropoutSpec:
    mode: str  # "full" | "last" | "head"
    top_layers: int | None
    p: float

    @classmethod
    def parse(cls, mode: str, p: float, field: str = "prm") -> DropoutSpec:
        try:
            kind, layers = parse_dropout_mode(mode)
        except ConfigError as exc:
            raise BackendError(field, str(exc)) from None
        if not isinstance(p, (int, float)) or not 0.0 <= float(p) < 1.0:
            raise BackendError(field, f"dropout_p must be in [0, 1); got {p!r}")
        return cls(kind, layers, float(p))

    @property
    def label(self) -> str:
        return f"last:{self.top_layers}" if self.mode == "last" else self.mode

    def shared_layers(self, n_layers: int) -> int:
        """How many bottom decoder layers get a noise-free input, and so run once for all K passes.

        Dropout acts on a layer's OUTPUT, so the first noisy layer's own computation is still shared:
        `full` shares layer 0, `last:L` shares layers 0..n-L, `head` shares all of them."""
        if self.mode == "head":
            return n_layers
        noisy = n_layers if self.mode == "full" else min(int(self.top_layers or 0), n_layers)
        return n_layers - noisy + 1


@dataclass
class DecoderParts:
    """The pieces of a llama-style decoder (Llama, Mistral, Qwen2, SmolLM, ...) that the engine drives."""

    embed: nn.Module
    layers: nn.ModuleList
    norm: nn.Module
    rotary: nn.Module
    config: Any
    # Mistral-style sliding window: our full causal mask equals it only for sequences no longer than the window.
    sliding_window: int | None = None

    @classmethod
    def of(cls, model: nn.Module, field: str = "prm", name: str = "model") -> DecoderParts:
        cand: Any  # the model or its decoder; its parts are found by name below
        for cand in (model, getattr(model, "model", None), getattr(model, "base_model", None)):
            if cand is None:
                continue
            if all(hasattr(cand, a) for a in ("embed_tokens", "layers", "norm", "rotary_emb")):
                config = cand.config
                types = getattr(config, "layer_types", None) or []
                if any(t != "full_attention" for t in types):
                    raise BackendError(
                        field,
                        f"{name}: layers of type {sorted(set(types) - {'full_attention'})} (sliding-window "
                        "attention) are not supported by the MC-dropout engine; use a model with full "
                        "attention in every layer (e.g. Qwen2 with use_sliding_window=false)",
                    )
                window = getattr(config, "sliding_window", None)
                if types or not getattr(config, "use_sliding_window", True):
                    window = None  # layer_types all full attention / Qwen2's switch off: no window anywhere
                impl = getattr(config, "_attn_implementation", None)
                if impl not in ("sdpa", "eager"):
                    raise BackendError(
                        field,
                        f"{name}: attention implementation {impl!r} is not supported by the MC-dropout "
                        "engine (it passes 4-D masks); load the model with attn_implementation='sdpa'",
                    )
                return cls(cand.embed_tokens, cand.layers, cand.norm, cand.rotary_emb, config, window)
        raise BackendError(
            field,
            f"{name} ({type(model).__name__}) is not a llama-style decoder (needs embed_tokens, layers, norm, "
            "rotary_emb); the PyTorch PRM adapters support Llama, Mistral and Qwen2 architectures",
        )


@contextmanager
def dropout_hooks(layers: Sequence[nn.Module], p: float) -> Iterator[None]:
    """Forward hooks that apply dropout to each given decoder layer's output, for code that runs the model's
    own forward. transformers 5 layers return a tensor; 4.x returned a tuple whose first item is the state."""

    def hook(_module: nn.Module, _args: Any, out: Any) -> Any:
        if isinstance(out, tuple):
            return (inject(out[0], p),) + tuple(out[1:])
        return inject(out, p)

    handles = [layer.register_forward_hook(hook) for layer in layers]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@dataclass
class _Row:
    ids: tuple[int, ...]
    positions: list[int]
    entry: PrefixEntry | None


class MCDropoutEngine:
    """Runs a llama-style decoder over token sequences and returns the final normalised hidden states at the
    asked positions: deterministically, or for K dropout passes, batched over candidates and passes."""

    def __init__(
        self,
        model: nn.Module,
        *,
        name: str = "model",
        field: str = "prm",
        cache: PrefixCache | None = None,
        max_batch_tokens: int | None = None,
        padding_side: str = "right",
    ) -> None:
        """max_batch_tokens: rows x passes x length per forward call. None: 16384 on a GPU; on CPU about 2^19
        elements of hidden state (~900 tokens for hidden 576): there the elementwise ops are memory-bound and a
        batch that outgrows the CPU cache runs slower than two smaller ones (measured: 7 passes of a 384-token
        node took 1.75 s in one batch, 1.47 s in groups of two, 1.57 s one by one)."""
        if padding_side not in ("left", "right"):
            raise BackendError(field, f"padding_side must be 'left' or 'right'; got {padding_side!r}")
        self.model = model
        self.parts = DecoderParts.of(model, field, name)
        self.cache = cache
        if max_batch_tokens is None:
            on_gpu = next(model.parameters()).device.type == "cuda"
            max_batch_tokens = 16384 if on_gpu else max(256, 2**19 // int(self.parts.config.hidden_size))
        if max_batch_tokens < 1:
            raise BackendError(field, f"max_batch_tokens must be >= 1; got {max_batch_tokens}")
        self.max_batch_tokens = max_batch_tokens
        self.padding_side = padding_side
        self._cache_kw = cache_kwarg(self.parts.layers[0])
        # The final norm runs in float32 on a float32 copy of the last hidden state, and the engine returns
        # float32: scoring heads then compute in float32 too, so a bf16 trunk yields continuous scores instead of
        # probabilities quantised by bf16 logits (sigmoid(k/8) steps, which would make σ² noise).
        norm = self.parts.norm
        if any(t.dtype != torch.float32 for t in norm.parameters()):
            norm = copy.deepcopy(norm).float()
        self._norm32 = norm

    @property
    def n_layers(self) -> int:
        return len(self.parts.layers)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    def hidden_at(
        self,
        seqs: Sequence[Sequence[int]],
        positions: Sequence[Sequence[int]],
        *,
        k: int = 1,
        spec: DropoutSpec | None = None,
        use_cache: bool = True,
        prefixes: Sequence[Sequence[Sequence[int]]] | None = None,
    ) -> list[torch.Tensor]:
        """For each sequence, a (k, len(positions), hidden) tensor of the final normalised hidden states (with the
        head dropout already applied in `head` mode). spec=None: deterministic (k copies of the one pass).

        prefixes: per sequence, earlier sequences (e.g. its parent trace's ids, nearest first) whose cached
        entries it may extend; the sequence itself is always looked up first."""
        if len(seqs) != len(positions) or (prefixes is not None and len(prefixes) != len(seqs)):
            raise ValueError("one list of positions (and of prefixes) per sequence")
        if k < 1:
            raise ValueError(f"k must be >= 1; got {k}")
        n = self.n_layers
        drop = spec if spec is not None and spec.p > 0 else None
        # p = 0: every pass would be the same computation, so compute it once and tile (variance exactly 0).
        eff_k = k if drop else 1
        shared = drop.shared_layers(n) if drop else n
        head_p = drop.p if drop and drop.mode == "head" else 0.0
        rows: list[_Row] = []
        for j, (ids, pos) in enumerate(zip(seqs, positions)):
            ids_t = tuple(int(t) for t in ids)
            if not ids_t:
                raise ValueError("cannot run an empty sequence")
            window = self.parts.sliding_window
            if window is not None and len(ids_t) > window:
                raise ValueError(
                    f"a {len(ids_t)}-token sequence exceeds the model's sliding window ({window}); "
                    "the MC-dropout engine supports sequences up to the window only"
                )
            if any(not 0 <= p < len(ids_t) for p in pos):
                raise ValueError(f"positions {list(pos)} out of range for a sequence of {len(ids_t)} tokens")
            cands = prefixes[j] if prefixes is not None else ()
            rows.append(_Row(ids_t, list(pos), self._lookup(shared, ids_t, cands) if use_cache else None))
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%d sequences, k=%d, %s, %d of %d layers shared, %d with a cached prefix",
                len(rows),
                k,
                spec.label if spec else "deterministic",
                shared,
                n,
                sum(r.entry is not None for r in rows),
            )
        out: list[torch.Tensor | None] = [None] * len(rows)
        with torch.inference_mode():
            for chunk in self._chunks(rows, eff_k):
                checkpoint("while scoring")  # between forward batches: a cancel need not wait for all of them
                results = self._run_chunk(
                    [rows[i] for i in chunk], eff_k, shared, drop.p if drop else 0.0, head_p, use_cache
                )
                for i, res in zip(chunk, results):
                    out[i] = res if res.shape[0] == k else res.expand(k, *res.shape[1:])
        return [o for o in out if o is not None]

    # -- internals -------------------------------------------------------------------------------------
    def _lookup(self, shared: int, ids: tuple[int, ...], candidates: Sequence[Sequence[int]]) -> PrefixEntry | None:
        if self.cache is None:
            return None
        entry = self.cache.get(shared, ids)
        for cand in candidates:
            if entry is not None:
                break
            cand_t = tuple(int(t) for t in cand)
            # The parent's tokens must be a prefix of the child's: a tokeniser may merge across the boundary.
            if 0 < len(cand_t) < len(ids) and ids[: len(cand_t)] == cand_t:
                entry = self.cache.get(shared, cand_t)
        if entry is not None:
            self.cache.hits += 1
        else:
            self.cache.misses += 1
        return entry

    def _chunks(self, rows: list[_Row], k: int) -> Iterator[list[int]]:
        # Longest first, so each chunk pads to similar lengths; at least one candidate per chunk, and room for
        # at least two of its passes per forward call (see _run_chunk's pass groups).
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
        min_group = min(2, k)
        chunk: list[int] = []
        for i in order:
            width = len(rows[chunk[0]].ids) if chunk else len(rows[i].ids)
            if chunk and (len(chunk) + 1) * min_group * width > self.max_batch_tokens:
                yield chunk
                chunk = []
            chunk.append(i)
        if chunk:
            yield chunk

    def _run_chunk(
        self, rows: list[_Row], k: int, shared: int, p: float, head_p: float, use_cache: bool
    ) -> list[torch.Tensor]:
        parts, device, dtype = self.parts, self.device, self.dtype
        n = self.n_layers
        entries = [r.entry for r in rows]
        plen = [len(e.ids) if e is not None else 0 for e in entries]
        nlen = [len(r.ids) - pl for r, pl in zip(rows, plen)]
        pmax, nmax = max(plen), max(nlen)
        tc = pmax + nmax
        B = len(rows)
        # Layout per row: [pad | cached prefix | new tokens | pad]. Cached prefixes end at column pmax, new
        # tokens start there (right padding). Without any cached prefix, padding_side may put pads on the left.
        left = self.padding_side == "left" and pmax == 0
        start = [(nmax - nl) if left else (pmax - pl) for nl, pl in zip(nlen, plen)]
        valid = torch.zeros(B, tc, dtype=torch.bool)
        ids = torch.zeros(B, tc, dtype=torch.long)
        for i, r in enumerate(rows):
            valid[i, start[i] : start[i] + plen[i] + nlen[i]] = True
            ids[i, start[i] + plen[i] : start[i] + plen[i] + nlen[i]] = torch.tensor(r.ids[plen[i] :], dtype=torch.long)
        valid, ids = valid.to(device), ids.to(device)
        pos = (valid.long().cumsum(1) - 1).clamp(min=0)  # true token positions, whatever the padding
        col = torch.arange(tc, device=device)
        allowed = (col[None, :] <= col[:, None])[None, None] & valid[:, None, None, :]  # (B, 1, q, k)
        # Additive float mask: works for eager and SDPA; finfo.min (not -inf) keeps all-masked pad rows NaN-free.
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)
        # No padding at all: SDPA's own causal path (is_causal, no materialised mask) is exact and faster; the
        # eager attention needs the mask, since without one it attends to everything.
        no_pad = bool(valid.all()) and self.parts.config._attn_implementation == "sdpa"

        full_h = torch.zeros(B, tc, parts.config.hidden_size, dtype=dtype, device=device)
        stacked: StackedPast | None = None
        if nmax > 0:
            h = parts.embed(ids[:, pmax:])
            q_pos = pos[:, pmax:]
            rot = parts.rotary(h, q_pos)
            past = self._cached_past(entries, plen, pmax, shared) if pmax > 0 else None
            stacked = StackedPast(past, n)
            q_mask = None if no_pad and pmax == 0 else mask[:, :, pmax:, :]
            for layer in range(shared):
                h = parts.layers[layer](
                    h,
                    attention_mask=q_mask,
                    position_embeddings=rot,
                    position_ids=q_pos,
                    use_cache=True,
                    **{self._cache_kw: stacked},
                )
            full_h[:, pmax:] = h
        for i, e in enumerate(entries):
            if e is not None:
                full_h[i, start[i] : start[i] + plen[i]] = e.hidden

        if use_cache and self.cache is not None and stacked is not None:
            for i, r in enumerate(rows):
                if nlen[i] == 0:
                    continue
                span = slice(start[i], start[i] + plen[i] + nlen[i])
                # .clone(): entries must own their memory, not views into this batch's tensors.
                kv = [(kk[i, :, span].clone(), vv[i, :, span].clone()) for kk, vv in stacked.kept(shared)]
                self.cache.put(shared, PrefixEntry(r.ids, kv, full_h[i, span].clone()))

        cols = [
            torch.tensor([start[i] + p_ for p_ in r.positions], dtype=torch.long, device=device)
            for i, r in enumerate(rows)
        ]
        if shared == n:
            # Deterministic backbone; in `head` mode the K passes differ only in the head's input dropout.
            outs = []
            for i in range(B):
                g = self._norm32(full_h[i, cols[i]].float()).unsqueeze(0).expand(k, -1, -1)  # (k, npos, H)
                outs.append(inject(g.contiguous(), head_p) if head_p > 0 else g)
            return outs

        # Noisy top: repeat the shared output for a group of passes, drop, and run the remaining layers on all
        # rows x passes of the group at once. The group size depends only on k, B and the longest sequence (never
        # on the layout), so the random draws are the same with or without cached prefixes.
        token_cols = [valid[i].nonzero().squeeze(1) for i in range(B)]
        longest = max(len(r.ids) for r in rows)
        group = min(k, max(min(2, k), self.max_batch_tokens // (B * longest)))
        m = max(c.numel() for c in cols)
        idx = torch.stack([torch.cat([c, c[-1:].expand(m - c.numel())]) for c in cols])  # read columns, padded to m
        # Even group sizes (7 passes, groups of 2 -> 3, 2, 2): no call ever carries a single pass when k >= 2.
        n_groups = max(1, k // group)
        sizes = [k // n_groups + (1 if j < k % n_groups else 0) for j in range(n_groups)]
        parts_out = []
        for g in sizes:
            checkpoint("while scoring")  # between pass groups too: one node's K0 passes may be many groups
            parts_out.append(self._noisy_group(full_h, pos, None if no_pad else mask, idx, token_cols, g, shared, p))
        y = torch.cat(parts_out, dim=1)  # (B, k, m, H)
        return [y[i][:, : c.numel()] for i, c in enumerate(cols)]

    def _cached_past(
        self, entries: list[PrefixEntry | None], plen: list[int], pmax: int, shared: int
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The cached prefixes' keys and values of the shared layers, one batch per layer, each row's prefix
        ending at column pmax (left padded): the past the new tokens attend to."""
        past = []
        for layer in range(shared):
            ref_k, ref_v = next(e.kv[layer] for e in entries if e is not None)
            shape_k = (len(entries), ref_k.shape[0], pmax, ref_k.shape[2])
            shape_v = (len(entries), ref_v.shape[0], pmax, ref_v.shape[2])
            pk = torch.zeros(shape_k, dtype=self.dtype, device=self.device)
            pv = torch.zeros(shape_v, dtype=self.dtype, device=self.device)
            for i, e in enumerate(entries):
                if e is not None:
                    pk[i, :, pmax - plen[i] :] = e.kv[layer][0]
                    pv[i, :, pmax - plen[i] :] = e.kv[layer][1]
            past.append((pk, pv))
        return past

    def _noisy_group(
        self,
        full_h: torch.Tensor,
        pos: torch.Tensor,
        mask: torch.Tensor | None,
        idx: torch.Tensor,
        token_cols: Sequence[torch.Tensor],
        g: int,
        shared: int,
        p: float,
    ) -> torch.Tensor:
        """g passes of the noisy layers for every row; (B, g, m, H) normalised hidden states at the read columns."""
        parts, n, B = self.parts, self.n_layers, full_h.shape[0]
        x = _drop_rows(full_h.repeat_interleave(g, dim=0), p, g, token_cols)
        pos_g = pos.repeat_interleave(g, dim=0)
        attn_kw = {
            "attention_mask": None if mask is None else mask.repeat_interleave(g, dim=0),
            "position_embeddings": parts.rotary(x, pos_g),
            "position_ids": pos_g,
            self._cache_kw: None,
        }
        last = parts.layers[n - 1]
        split_last = type(last).__name__ in _PRE_NORM_LAYERS
        for layer in range(shared, n - int(split_last)):
            x = _drop_rows(parts.layers[layer](x, use_cache=False, **attn_kw), p, g, token_cols)
        idx_g = idx.repeat_interleave(g, dim=0)
        at = idx_g[:, :, None].expand(-1, -1, x.shape[-1])
        if split_last:
            # Only the read positions leave the last layer. Its mask is drawn over the full layout and then read at
            # those columns: the same random stream as dropping everything.
            y = _last_layer_at(last, x, idx_g, **attn_kw).float()
            y = y * torch.gather(_keep_mask(x, p, g, token_cols), 1, at) / (1.0 - p)
        else:
            y = torch.gather(x, 1, at).float()
        return self._norm32(y).view(B, g, idx.shape[1], -1)
