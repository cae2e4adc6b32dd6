"""A GGUF model as a transformers folder: de-quantised once per file and dtype, then read like any folder.

transformers re-reads a GGUF on every load: SmolLM2-135M took 25 s here, of which 2 s were de-quantising and
the rest parsing the file's metadata three times over (config, weights, tokenizer). A warm worker that loads a
GGUF policy or PRM paid that on every start; the copy loads in about 3 s. vLLM cannot read every GGUF
quantisation, so it reads a copy too. The copies live under $UATS_CACHE (default ~/.cache/uats-studio), named by
the file's content hash and the transformers version, so an edited or replaced file gets a new copy, never a stale
one. `./setup.sh` writes the shipped SmolLM2's copy (through `python -m uats doctor`, whose config read is
the first read).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

from uats_core.errors import BackendError

log = logging.getLogger(__name__)

_HASH_CHUNK = 8 * 2**20


def cache_dir() -> Path:
    return Path(os.environ.get("UATS_CACHE") or Path.home() / ".cache" / "uats-studio")


def content_key(path: Path) -> str:
    """The first 16 hex digits of the file's SHA-256, hashed once per process while the file's size and
    modification time stay the same (a load reads config, tokenizer and weights: three asks)."""
    st = path.stat()
    return _sha256_prefix(str(path.resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=32)
def _sha256_prefix(path: str, size: int, mtime_ns: int) -> str:  # size and mtime_ns: the cache key only
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def dequantised_folder(gguf: Path, dtype: str, field: str) -> Path:
    """A transformers folder (`dtype` safetensors + the GGUF's tokenizer and chat template) holding `gguf`'s
    de-quantised weights; written on first use, reused after. dtype: 'float32' keeps the de-quantised values
    exactly (what transformers itself gives), 'bfloat16' halves the copy (vLLM's)."""
    import transformers

    # per transformers version too: a folder saved by one release is not promised to load in another (the
    # vLLM virtualenv pins an older one than the app's)
    folder = cache_dir() / f"{gguf.stem.lower()}-{content_key(gguf)}-{dtype}-transformers{transformers.__version__}"
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("writing a de-quantised %s copy of %s to %s (once per file)", dtype, gguf.name, folder)
    model: Any  # its quantisation flags, reset below, are attributes transformers does not type
    try:
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=getattr(torch, dtype))
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except (OSError, ValueError, KeyError, RuntimeError, TypeError, IndexError) as exc:
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise BackendError(
            field,
            f"cannot read the GGUF file {gguf.name} ({text}); check that it is a complete GGUF of "
            "a transformers-supported architecture (llama, mistral, qwen2, ...)",
        ) from exc
    # save_pretrained refuses a "quantized" model; after de-quantisation the weights are plain tensors.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            tmp.replace(folder)
        except OSError:  # another process wrote it meanwhile (a non-empty folder is not replaced): keep theirs
            if not (folder / "config.json").is_file():
                raise
    except OSError as exc:
        raise BackendError(
            field,
            f"cannot write a de-quantised copy of {gguf.name} under {cache_dir()} ({exc}); set "
            "UATS_CACHE to a writable folder",
        ) from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder
