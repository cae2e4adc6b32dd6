"""The one place that knows which transformers spelling of the KV-cache argument is in use.

transformers renamed `past_key_values` to `cache` (the old name warns and is slated for removal in 5.40);
vLLM's CPU build pins a transformers from before the rename. Code that drives model or layer forwards by
hand asks here instead of hard-coding either name, so it runs warning-free on both."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=64)
def _kwarg_for(forward: Callable[..., Any]) -> str:
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def cache_kwarg(module: Any) -> str:
    """`cache` or `past_key_values`: what `module.forward` calls its KV-cache argument."""
    return _kwarg_for(type(module).forward)


def output_cache(out: Any) -> Any:
    """The KV cache a model output returns, read under the name the installed transformers uses."""
    return out["cache"] if "cache" in out else out["past_key_values"]
