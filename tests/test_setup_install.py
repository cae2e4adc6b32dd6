"""What `./setup.sh` leaves in `.venv`, used as a user uses it: the project installed (editable), its two commands
on the venv's bin, each answering from a folder outside the checkout, and the packages importable from there.

Runs where the tests run in a venv that setup.sh made (CI's `.venv`); elsewhere (a bare `pip install` of the test
tools) it skips, except under CI=true, where a missing install is a failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)


def _made_by_setup() -> bool:
    return (VENV.parent / "setup.sh").is_file() and VENV.name == ".venv"


pytestmark = pytest.mark.skipif(
    not _made_by_setup() and os.environ.get("CI") != "true", reason="not running in a .venv made by ./setup.sh"
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
    return env


def _run(cmd: list[str], cwd: Path) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{cmd} in {cwd} exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.mark.parametrize("command", ["uats", "uats-studio"])
def test_setup_installs_each_command_and_it_runs_from_another_folder(command: str, tmp_path: Path) -> None:
    script = VENV / "bin" / command
    assert script.is_file(), f"{script} is missing: ./setup.sh installs the project (pip install -e .)"
    assert "usage:" in _run([str(script), "--help"], cwd=tmp_path)


def test_the_packages_import_from_another_folder_and_come_from_the_checkout(tmp_path: Path) -> None:
    code = (
        "import uats_core, storage, ui, uats, uats_studio, assets; "
        "print('\\n'.join(m.__file__ for m in (uats_core, storage, ui, uats, uats_studio, assets)))"
    )
    files = _run([sys.executable, "-c", code], cwd=tmp_path).split()
    checkout = VENV.resolve().parent  # the checkout whose .venv this is
    assert len(files) == 6
    for f in files:  # editable: the venv's checkout, not a copy, so edits take effect without reinstalling
        assert Path(f).resolve().is_relative_to(checkout), f"{f} is not under {checkout}"
