"""The suite's two workers share the tests as tests/conftest.py groups them: every browser test in one worker (one
Chromium and one served app drawing at a time), every other module whole in one. pytest 9.2 with pytest-xdist 3.8
silently dropped the groups (xdist writes a group into a node id pytest no longer reads), so two Chromiums drew at
once beside the heavy tests and CI's browser tests timed out; this test fails when the groups are gone again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_carries_its_group_under_loadgroup(request: pytest.FixtureRequest) -> None:
    config = request.config
    if os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("loadgroup"):
        items = request.session.items
        wrong = [
            i.nodeid
            for i in items
            if not i.nodeid.endswith("@browser" if i.nodeid.startswith("tests/browser/") else "@" + i.module.__name__)
        ]
        assert not wrong, f"{len(wrong)} of {len(items)} tests carry no group, e.g. {wrong[:3]}"
        return
    # a run without the README's workers: run this test in them, as CI does
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            f"{Path(__file__).relative_to(ROOT)}::{request.node.name}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
