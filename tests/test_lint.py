"""The style gate, as configured in pyproject.toml: the Python code is as `ruff format` writes it and passes
ruff ([tool.ruff]: pyflakes, pycodestyle, isort, bugbear, pyupgrade, simplify), and the engine (uats_core/) and
the run log (storage/) type-check clean under mypy ([tool.mypy]). ./setup.sh --dev installs both
(requirements-dev.txt); on CI they must be there."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _missing(tool: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{tool} is missing on CI: ./setup.sh --dev installs it (requirements-dev.txt)")
    pytest.skip(f"needs {tool}: ./setup.sh --dev installs it")


def _ruff() -> str:
    path = Path(sys.executable).parent / "ruff"
    if not path.is_file():
        _missing("ruff")
    return str(path)


def test_the_code_passes_ruff() -> None:
    done = subprocess.run([_ruff(), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_code_is_formatted() -> None:
    """`ruff format` leaves every Python file as it is ([tool.ruff.format]; the docs' Markdown is left alone)."""
    done = subprocess.run(
        [_ruff(), "format", "--check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.timeout(
    900
)  # a first run, without .mypy_cache/, reads torch's and transformers' stubs: minutes under load
def test_the_engine_and_storage_pass_mypy() -> None:
    if importlib.util.find_spec("mypy") is None:
        _missing("mypy")
    # the files and settings are pyproject.toml's [tool.mypy]; its cache (.mypy_cache/) makes a rerun take seconds
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "no issues found in" in done.stdout
