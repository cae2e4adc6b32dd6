"""The code that drives transformers forwards by hand uses the installed version's KV-cache argument name, so it
runs without the `past_key_values` deprecation (a FutureWarning now, an error once the old name is removed)."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaForCausalLM

from uats_core.backends import load_prm
from uats_core.backends.mc_dropout import DropoutSpec
from uats_core.hf_compat import cache_kwarg
from uats_core.protocols import Trace
from uats_core.worlds.arith.modeling import sample_solutions

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "models"


def test_mc_dropout_and_world_sampling_raise_no_cache_deprecation(caplog):
    prm = load_prm(str(ASSETS / "arith-prm"), dtype="float32")
    policy = LlamaForCausalLM.from_pretrained(ASSETS / "arith-policy-a").eval()
    tok = AutoTokenizer.from_pretrained(ASSETS / "arith-policy-a")
    trace = Trace("3 + 4 * 2", ("4 * 2 = 8\n\n", "3 + 8 = 11\n\n"))
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING):
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        prm.score([trace])
        prm.mc_scores([trace], 3, spec=DropoutSpec.parse("last:2", 0.1))  # cached bottom + noisy top layers
        prm.mc_scores([trace.extend("11 is the answer")], 3)  # extends the cached parent
        with torch.no_grad():
            sample_solutions(policy, tok, ["3 + 4 * 2"], max_new_tokens=8, generator=torch.Generator().manual_seed(0))
    deprecated = [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]
    assert not deprecated, deprecated


def test_cache_kwarg_reads_the_layer_signature():
    class Old(torch.nn.Module):
        def forward(self, x, past_key_values=None):
            return x

    class New(torch.nn.Module):
        def forward(self, x, cache=None):
            return x

    assert cache_kwarg(Old()) == "past_key_values"
    assert cache_kwarg(New()) == "cache"
