"""The hidden-state estimators on PyTorch PRMs that are not retrained: the tiny built checkpoints the backends' tests
use (a token-classification PRM laid out like the embedded one, Math-Shepherd, Skywork). Their head as one logit
direction gives the head's own scores, `uats estimators fit` writes the fit beside the PRM, and a search setting
reads it; a head that is not one direction (Qwen-PRM's MLP) is refused with one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from uats_core.backends import load_prm
from uats_core.backends.prm_published import Qwen2ProcessRewardModel
from uats_core.backends.tiny import (
    byte_bpe_tokenizer,
    qwen2_config,
    save_math_shepherd_prm,
    save_skywork_prm,
    save_token_cls_prm,
)
from uats_core.config import SearchConfig
from uats_core.errors import BackendError, ConfigError
from uats_core.estimators import make_estimator
from uats_core.estimators.posterior import HEAD_FIT_FILE, sigmoid
from uats_core.protocols import Trace

TRACES = [
    Trace("What is 2+3?", ("2+3 = 5\n\n",)),
    Trace("Compute 12*7 + 4.", ("12*7 = 84\n\n", "84 + 4 = 88")),
    Trace("x", ("a\n\n", "b\n\n")),
    Trace("A longer question about 17 apples?", ("17 + 5 = 22\n\n", "22")),
]


@pytest.fixture(scope="module")
def token_cls_dir(tmp_path_factory):
    return save_token_cls_prm(tmp_path_factory.mktemp("prm") / "arith-prm", layers=2)


@pytest.fixture(scope="module")
def shepherd_dir(tmp_path_factory):
    return save_math_shepherd_prm(tmp_path_factory.mktemp("ms") / "math-shepherd-tiny")


@pytest.fixture(scope="module")
def skywork_dir(tmp_path_factory):
    return save_skywork_prm(tmp_path_factory.mktemp("sky") / "skywork-prm-tiny")


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    """A Qwen-PRM whose head is Linear -> ReLU -> Linear (no one logit direction); kind given at load."""
    folder = tmp_path_factory.mktemp("qwen") / "tiny-prm"
    tok = byte_bpe_tokenizer(specials=("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<extra_0>"))
    torch.manual_seed(2)
    Qwen2ProcessRewardModel(qwen2_config(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _jsonl(path, traces):
    path.write_text("".join(json.dumps({"question": t.question, "steps": list(t.steps)}) + "\n" for t in traces))
    return path


@pytest.mark.parametrize("fixture", ["token_cls_dir", "shepherd_dir", "skywork_dir"])
def test_the_head_as_one_direction_gives_its_scores_and_a_fit_serves_both_estimators(fixture, request, tmp_path):
    folder = request.getfixturevalue(fixture)
    prm = load_prm(str(folder), dtype="float32", cache_bytes=0)
    w, b = prm.head_linear()
    hidden = prm.last_hidden(TRACES)
    np.testing.assert_allclose(sigmoid(hidden @ w + b), [s[-1] for s in prm.score(TRACES)], atol=1e-5)

    from uats.estimators_cmd import main

    assert main(["fit", "--prm", str(folder), "--traces", str(_jsonl(tmp_path / "id.jsonl", TRACES * 3))]) == 0
    assert (folder / HEAD_FIT_FILE).is_file()
    for name in ("laplace", "mahalanobis"):
        est = make_estimator(SearchConfig(estimator=name, k0=4), prm)
        got = est.more(TRACES, [[] for _ in TRACES], 4)
        assert all(e.var is not None and e.var >= 0 and e.k == (1 if name == "mahalanobis" else 4) for e in got)
    with torch.no_grad():
        p = prm.score(TRACES[:1])[0][-1]
    assert make_estimator(SearchConfig(estimator="mahalanobis"), prm).more(TRACES[:1], [[]], 7)[
        0
    ].mean == pytest.approx(p, abs=1e-5)


def test_a_prm_without_a_fit_or_with_an_mlp_head_is_refused_in_one_line(qwen_dir, tmp_path):
    fresh = save_token_cls_prm(tmp_path / "no-fit", layers=2)
    with pytest.raises(ConfigError) as err:
        make_estimator(SearchConfig(estimator="laplace"), load_prm(str(fresh), dtype="float32"))
    assert err.value.field == "estimator" and "uats estimators fit" in str(err.value)
    with pytest.raises(ConfigError) as err:
        make_estimator(SearchConfig(estimator="ensemble"), load_prm(str(fresh), dtype="float32"))
    assert err.value.field == "estimator" and "no trained ensemble" in str(err.value)
    with pytest.raises(BackendError):
        load_prm(str(qwen_dir), kind="qwen-prm", dtype="float32").head_linear()
