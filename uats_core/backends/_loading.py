"""Model specs and dtype/device choice."""

from __future__ import annotations

import importlib.util
import logging
import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError

from uats_core.errors import BackendError

log = logging.getLogger(__name__)

# Below this many parameters bf16 buys nothing on CPU (the matrix products are too small to be
# compute-bound) and costs precision, so "auto" keeps such models in float32.
_AUTO_BF16_MIN_PARAMS = 50_000_000

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


@dataclass(frozen=True)
class ModelSource:
    """Where a model lives: a local folder, a GGUF file, a hub id, or a vLLM hub id."""

    spec: str  # what the user wrote
    kind: str  # "folder" | "gguf" | "hub" | "vllm" | "openai" | "py"
    location: (
        str  # folder path, folder holding the gguf file, hub id, (openai) the server's /v1 URL, (py) module:function
    )
    gguf_file: str | None = None

    @property
    def display(self) -> str:
        return self.spec


def pretrained_location(src: ModelSource, field: str) -> str:
    """What from_pretrained reads for `src`: a GGUF's de-quantised copy (written on first use: gguf_copy), else
    the folder or hub id itself."""
    if src.gguf_file is None:
        return src.location
    from uats_core.backends.gguf_copy import dequantised_folder

    return str(dequantised_folder(Path(src.location) / src.gguf_file, "float32", field))


# py:module:function, a function of the user's own that returns the model (a custom backend). The engine plans it
# (options pass as they are) but loads no module by name: the program that names it does (uats/model_flags.py).
FACTORY_PREFIX = "py:"


def resolve_spec(spec: str, field: str) -> ModelSource:
    """Turn 'path/to/folder', 'x.gguf', 'hf:org/name', 'vllm:org/name', 'openai:http://host:port' (a policy served by an
    OpenAI-compatible server), 'py:module:function' (a function of your own that returns the model, called with the
    options) or a short name ('smollm2') into a ModelSource.

    A local path that does not exist fails here, so a typo never turns into a hub download attempt.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise BackendError(
            field, f"empty model spec {spec!r}; give a local folder, a .gguf file, 'hf:<hub id>' or 'vllm:<hub id>'"
        )
    spec = spec.strip()
    from uats_core.backends.named import NAMED, named_gguf

    if spec in NAMED:
        path = named_gguf(spec, field)
        return ModelSource(spec, "gguf", str(path.parent), gguf_file=path.name)
    if spec.startswith("openai:"):
        return ModelSource(spec, "openai", normalise_url(spec[len("openai:") :], field))
    if spec.startswith(FACTORY_PREFIX):
        target = spec[len(FACTORY_PREFIX) :]
        module, sep, attr = target.partition(":")
        if not (sep and module and attr):
            raise BackendError(field, f"{spec!r} is not py:module:function (a function that returns the model)")
        return ModelSource(spec, "py", target)
    for prefix, kind in (("hf:", "hub"), ("vllm:", "vllm")):
        if spec.startswith(prefix):
            hub_id = spec[len(prefix) :]
            if not hub_id:
                raise BackendError(field, f"{spec!r} names no model; write {prefix}<org>/<name>")
            return ModelSource(spec, kind, hub_id)
    path = Path(spec).expanduser()
    if spec.lower().endswith(".gguf"):
        if not path.is_file():
            raise BackendError(
                field, f"no such GGUF file {spec!r}; check the path (a hub model is written hf:<org>/<name>)"
            )
        if importlib.util.find_spec("gguf") is None:
            raise BackendError(
                field, f"{spec!r} is a GGUF file but the 'gguf' package is not installed; run: pip install gguf"
            )
        return ModelSource(spec, "gguf", str(path.parent), gguf_file=path.name)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise BackendError(
                field,
                f"{spec!r} is a folder without config.json, so not a transformers model folder; "
                "point at the folder holding config.json and the weights",
            )
        return ModelSource(spec, "folder", str(path))
    if path.exists():
        raise BackendError(
            field, f"{spec!r} is a file but not a .gguf model; give a model folder, a .gguf file or hf:<hub id>"
        )
    hint = (
        f" (for the hub model write hf:{spec})" if spec.count("/") == 1 and not spec.startswith((".", "/", "~")) else ""
    )
    raise BackendError(
        field,
        f"no such model folder {spec!r}{hint}; give a local folder, a .gguf file, 'hf:<hub id>' or 'vllm:<hub id>'",
    )


def normalise_url(url: str, field: str = "policy") -> str:
    """The server's API root ending in /v1: `http://host:8000`, `http://host:8000/` and `http://host:8000/v1` all
    name the same server. BackendError for anything that is not an http(s) URL with a host."""
    from uats_core.http_client import redact_url

    parsed = urllib.parse.urlsplit(url.strip())
    shown = redact_url(url.strip())  # an error names the URL without its credentials
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise BackendError(
            field,
            f"{shown!r} is not a server URL; write openai:http://HOST:PORT (the /v1 root of an "
            "OpenAI-compatible server such as vllm serve)",
        )
    if parsed.query or parsed.fragment:
        raise BackendError(field, f"{shown!r}: give the server's root without ?query or #fragment")
    path = parsed.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, "", ""))


def resolve_device(device: str | torch.device | None) -> torch.device:
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise BackendError("device", f"device {device!r} asked for but no CUDA GPU is visible; use device='cpu'")
    return dev


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device, num_params: int | None = None) -> torch.dtype:
    """'auto': bf16 on a GPU that has it; on CPU bf16 only for models big enough to profit (docs/backends.md)
    and only where the CPU has native bf16 matrix units; float32 otherwise."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is None or dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        big = num_params is None or num_params >= _AUTO_BF16_MIN_PARAMS
        return torch.bfloat16 if big and cpu_has_bf16() else torch.float32
    try:
        return _DTYPES[str(dtype).lower()]
    except KeyError:
        raise BackendError(
            "dtype", f"unknown dtype {dtype!r}; use 'auto', 'float32', 'bfloat16' or 'float16'"
        ) from None


def cpu_has_bf16() -> bool:
    """Whether this CPU has native bf16 matrix units (where bf16 pays; emulated bf16 is several times slower)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def load_config(src: ModelSource, field: str, trust_remote_code: bool = False) -> Any:
    from transformers import AutoConfig

    location = pretrained_location(src, field)
    try:
        return AutoConfig.from_pretrained(location, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError) as exc:
        raise BackendError(
            field, f"cannot read the config of {src.display!r} ({_short(exc)}); {_fix_for(src)}"
        ) from exc


def load_tokenizer(src: ModelSource, field: str, trust_remote_code: bool = False, **extra: Any) -> Any:
    from transformers import AutoTokenizer

    location = pretrained_location(src, field)
    try:
        return AutoTokenizer.from_pretrained(location, trust_remote_code=trust_remote_code, **extra)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BackendError(
            field, f"cannot load the tokenizer of {src.display!r} ({_short(exc)}); {_fix_for(src)}"
        ) from exc


def load_weights(
    model_cls: Any,
    src: ModelSource,
    field: str,
    *,
    dtype: str | torch.dtype | None,
    device: torch.device,
    trust_remote_code: bool = False,
    required_prefixes: tuple[str, ...] = (),
    **extra: Any,
) -> Any:
    """from_pretrained + dtype choice + eval mode; refuses a checkpoint that lacks a head we must not
    leave randomly initialised (required_prefixes: module names whose weights must come from the file)."""
    location = pretrained_location(src, field)
    try:
        model, info = model_cls.from_pretrained(
            location, trust_remote_code=trust_remote_code, output_loading_info=True, **extra
        )
    except (
        OSError,
        ValueError,
        KeyError,
        RuntimeError,
        TypeError,
        SafetensorError,
    ) as exc:  # SafetensorError: truncated
        raise BackendError(
            field,
            f"cannot load {src.display!r} as {getattr(model_cls, '__name__', model_cls)} "
            f"({_short(exc)}); {_fix_for(src)}",
        ) from exc
    missing = [k for k in info.get("missing_keys", []) if k.startswith(required_prefixes)] if required_prefixes else []
    if missing:
        raise BackendError(
            field,
            f"{src.display!r} has no weights for {', '.join(sorted(missing)[:4])}: the checkpoint does not "
            f"fit this adapter ({getattr(model_cls, '__name__', model_cls)}); pass the right kind= for this model",
        )
    num_params = sum(p.numel() for p in model.parameters())
    target = resolve_dtype(dtype, device, num_params)
    model = model.to(device=device, dtype=target)
    model.eval()
    log.info(
        "loaded %s (%s, %.1fM params) on %s as %s", src.display, type(model).__name__, num_params / 1e6, device, target
    )
    return model


def _fix_for(src: ModelSource) -> str:
    if src.kind == "hub":
        offline = os.environ.get("HF_HUB_OFFLINE") == "1"
        return (
            "the hub is offline (HF_HUB_OFFLINE=1): download it on a connected machine or give a local folder"
            if offline
            else "check the hub id and your network, or give a local folder"
        )
    if src.kind == "gguf":
        return "check that the GGUF file is a transformers-supported architecture (llama, mistral, qwen2, ...)"
    return "check that the folder holds a complete transformers checkpoint"


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]
