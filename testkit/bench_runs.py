"""The benchmarks run as a user runs them, `python -m benchmarks ...` from the checkout's root, for the tests that
pin their output: tests never import the benchmarks (tests/test_import_map.py), so a benchmark is a program to them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_benchmark(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m benchmarks ARGS` in the checkout, offline: its exit code, stdout and stderr."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
