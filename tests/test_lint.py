"""The Python code passes ruff, as configured in pyproject.toml ([tool.ruff]): pyflakes, pycodestyle's errors and
bugbear. ./setup.sh --dev installs ruff (requirements-dev.txt); on CI it must be there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> str:
    path = Path(sys.executable).parent / "ruff"
    if path.is_file():
        return str(path)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("ruff is missing on CI: ./setup.sh --dev installs it (requirements-dev.txt)")
    pytest.skip("needs ruff: ./setup.sh --dev installs it")


def test_the_code_passes_ruff() -> None:
    done = subprocess.run([_ruff(), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
