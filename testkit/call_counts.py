"""Counting the calls of a function wherever the code calls it: every module that imported it by name holds its own
binding, so each binding (and the defining module's) is replaced by one counting wrapper."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest


def count_calls(monkeypatch: pytest.MonkeyPatch, **functions: Callable[..., Any]) -> Counter:
    """Counter label -> calls, for each `label=function`; the wrappers call the real functions."""
    counts: Counter = Counter()

    def counting(label: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kw: Any) -> Any:
            counts[label] += 1
            return real(*args, **kw)

        return wrapper

    for label, real in functions.items():
        wrapper = counting(label, real)
        for module in list(sys.modules.values()):
            for name, value in list(getattr(module, "__dict__", {}).items()):
                if value is real:
                    monkeypatch.setattr(module, name, wrapper)
    return counts
