"""Where the shipped models live (the embedded arithmetic world's policies and PRM, the A-UATS controllers), and
the shipped problem sets (MATH-500, AIME 2024: assets/data/, its README names their source and licence).

They are the package data of the top-level package `assets` (assets/models/<name>/ in the checkout, the same
folder in site-packages once the wheel is installed), found through importlib.resources. The models are plain
files, so the folder is a real directory in both cases: calibration files and controller checkpoints can be
written beside them."""

from __future__ import annotations

import atexit
import contextlib
from importlib import resources
from pathlib import Path


def _assets_dir(sub: str = "models") -> Path:
    """The folder assets/<sub>. A checkout or an unpacked wheel gives the folder itself; an import from a zip
    file gives a copy extracted for this process (removed at exit). When no importable `assets` holds <sub>/
    (uats_core put on the path by hand, or another project's `assets` first on it), the folder beside
    uats_core."""
    beside = Path(__file__).resolve().parent.parent / "assets" / sub
    try:
        folder = resources.files("assets") / sub
    except ModuleNotFoundError:
        return beside
    if not folder.is_dir():
        return beside
    if isinstance(folder, Path):
        return folder.resolve()
    stack = contextlib.ExitStack()
    atexit.register(stack.close)
    try:
        return Path(stack.enter_context(resources.as_file(folder))).resolve()
    except (OSError, TypeError, ValueError):  # a folder inside a zip needs Python 3.12's as_file
        return beside


ASSETS = _assets_dir()
DATA = _assets_dir("data")
WORLD_POLICY = ASSETS / "arith-policy-a"
WORLD_POLICY_B = ASSETS / "arith-policy-b"  # the world's other style: out of distribution for its PRM
WORLD_PRM = ASSETS / "arith-prm"


def portable_path(path: str) -> str:
    """A model path as results and checkpoints record it: the shipped models relative to the folder that holds
    `assets/` (the repository, or site-packages when installed: `assets/models/arith-prm` either way), so they do
    not carry one machine's home directory; anything else (hub ids, outside folders) unchanged."""
    if ":" in path.split("/")[0] or not Path(path).is_absolute():
        return path  # hf:<id>, vllm:<id>, py:module:function, or already relative
    try:
        return str(Path(path).resolve().relative_to(ASSETS.parents[1]))
    except ValueError:
        return path
