"""The project as a package: build the wheel, install it (no dependencies, no index) into a fresh virtualenv,
and run its console scripts from outside the repository. Offline: the dependencies come from the environment
running the tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (
    "pyproject.toml",
    "README.md",
    "uats_core",
    "storage",
    "reports",
    "uats",
    "ui",
    "uats_studio",
    "assets",
    "benchmarks",
    "testkit",
)

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _site_dirs() -> list[str]:
    """The running environment's site-packages folders, for the scratch virtualenv to see the dependencies: a venv
    made from a venv's python gets the base interpreter's site-packages, not the venv's. They may lie inside the
    checkout (its .venv); the checkout's own packages are never on them (the imports below are checked)."""
    return [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]


def _build_wheel(tmp_path: Path, env: dict[str, str]) -> Path:
    """The project's wheel, built from a copy of the sources (so the build leaves no build/ or egg-info in the
    checkout)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    dist = tmp_path / "dist"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(dist),
            str(src),
        ],
        cwd=tmp_path,
        env=env,
    )
    (wheel,) = dist.glob("uats_studio-*.whl")
    return wheel


def _install(tmp_path: Path, env: dict[str, str], wheel: Path) -> tuple[Path, Path]:
    """A fresh venv (seeing this one's packages through a .pth, not the checkout) with the wheel installed:
    (the venv, its site-packages)."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=tmp_path, env=env)
    py = venv / "bin" / "python"
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp_path, env=env)
    purelib = Path(site.stdout.strip())
    (purelib / "_uats_test_parent_env.pth").write_text("\n".join(_site_dirs()) + "\n")
    _run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], cwd=tmp_path, env=env)
    return venv, purelib


def test_wheel_installs_and_runs_outside_the_repository(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", minversion="77")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        GRADIO_ANALYTICS_ENABLED="False",
    )

    wheel = _build_wheel(tmp_path, env)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "assets/__init__.py",
        "assets/models/arith-prm/model.safetensors",
        "assets/models/arith-prm/uats_prm.json",
        "assets/models/auats-controller/controller.safetensors",
        "assets/data/math500.jsonl",
        "assets/data/aime24.jsonl",
        "assets/data/README.md",
        "ui/launch.py",
        "ui/tabs/search.py",
        "ui/views/treefig.py",
        "ui/jobs/pool.py",
        "uats_core/worlds/arith/world.py",
        "storage/store.py",
        "uats_studio/__init__.py",
        "uats_core/imports/treequest.py",
        "ui/js/plot.js",
        "ui/js/treelod.js",
        "ui/js/runbar.js",
        "ui/js/links.js",
        "ui/js/column_tips.js",
        "ui/static/plotly-basic.min.js",
        "uats/cli.py",
        "uats/eval/worker.py",
        "reports/page.py",
    } <= names
    assert not any(n.startswith(("tests/", "app.py", "docs/", "benchmarks/", "testkit/")) for n in names)

    venv, purelib = _install(tmp_path, env, wheel)
    py = venv / "bin" / "python"

    where = _run(
        [
            str(py),
            "-c",
            "import uats_core, assets, ui, storage, uats; from uats_core.paths import ASSETS; "
            "print(uats_core.__file__); print(ASSETS); print(ui.__file__); print(uats.__file__)",
        ],
        cwd=tmp_path,
        env=env,
    ).stdout.split()
    assert all(Path(p).resolve().is_relative_to(purelib.resolve()) for p in where), where
    assert Path(where[1]).name == "models" and (Path(where[1]) / "arith-prm" / "config.json").is_file()

    db = tmp_path / "runs.db"
    out = _run(
        [str(venv / "bin" / "uats"), "search", "--method", "h-uats", "--budget", "4", "--db", str(db), "--quiet"],
        cwd=tmp_path,
        env=env,
    ).stdout
    assert re.search(r"^run [0-9a-f]{32}\s+finished\s+answer=", out, re.M), out
    listed = _run([str(py), "-m", "uats", "runs", "--db", str(db)], cwd=tmp_path, env=env).stdout
    assert "h-uats" in listed and "finished" in listed, listed
    api = _run(
        [
            str(py),
            "-c",
            f"from uats_studio import open_run; r = open_run({str(db)!r}); "
            "print(r.info['method'], len(r.nodes) == len(r.state().nodes), type(r.tree()).__name__)",
        ],
        cwd=tmp_path,
        env=env,
    ).stdout  # the notebook API, installed: the run it just wrote, drawn
    assert api.split() == ["h-uats", "True", "Figure"], api
    shipped = _run(
        [
            str(py),
            "-c",
            "from uats_core.problems import load_problems; "
            "print(len(load_problems('math500')), len(load_problems('aime24')))",
        ],
        cwd=tmp_path,
        env=env,
    ).stdout
    assert shipped.split() == ["500", "30"], shipped

    usage = _run([str(venv / "bin" / "uats-studio"), "--help"], cwd=tmp_path, env=env).stdout
    assert usage.startswith("usage: uats-studio") and "--reports-dir" in usage and "--models-dir" in usage
    assert not (tmp_path / "runs").exists()  # --help creates nothing
    # one command: every program is a subcommand of `uats` with its own flags
    helped = _run([str(venv / "bin" / "uats"), "--help"], cwd=tmp_path, env=env).stdout
    assert all(c in helped for c in ("search", "calibrate", "eval", "report", "train", "theory", "ood-survival"))
    report_usage = _run([str(venv / "bin" / "uats"), "report", "--help"], cwd=tmp_path, env=env).stdout
    assert report_usage.startswith("usage: uats report") and "--ledger" in report_usage
