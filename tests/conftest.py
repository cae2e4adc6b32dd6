"""Fixtures shared by the test modules (pytest finds them here; a test module never imports another's)."""

from __future__ import annotations

import os

# Before torch loads, here and in the processes a test starts (as uats/arith/train.py does for itself): OpenMP
# threads that spin while they wait burned the cores the other xdist worker needed (measured at load 7: the
# variance-penalty training of tests/test_arith_train.py took 27-58 CPU s spinning, 4.1 s waiting passively).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.hand_log import build_hand_db
from testkit.run_pairs import real_pair as _real_pair, synthetic_runs as _synthetic_runs

BROWSER = Path(__file__).parent / "browser"


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist the cores are shared out between the workers, as ui.jobs.pool shares them between its own, not
    every core to each (the committed ledgers were run on one thread a search too: docs/eval.md, --torch-threads 1).
    OMP_NUM_THREADS carries it to the processes a test starts; a test or process that sets its own count keeps it."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if not workers or "PYTEST_XDIST_WORKER" not in os.environ:  # the controller computes nothing
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


@pytest.fixture(autouse=True)
def _torch_threads_kept() -> Iterator[None]:
    """A test that sets torch's thread count (a CLI's main() does: uats/arith/train.py --threads 2) leaves the next
    tests of its worker the count pytest_configure set, not its own."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    if torch is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """What runs together under `-n 2 --dist loadgroup` (README, .ci/run): each module in one worker, so its
    module fixtures are built once, and every browser test in one group, so one Chromium and one served app draw
    at a time while the other worker runs the rest (the suite then takes about 8 minutes instead of 10)."""
    if not config.pluginmanager.hasplugin("xdist"):  # the vLLM virtualenv runs its lane without it
        return
    for item in items:
        inside = BROWSER in Path(str(item.path)).parents
        item.add_marker(pytest.mark.xdist_group("browser" if inside else item.module.__name__))


@pytest.fixture()
def problems_file(tmp_path: Path) -> Path:
    """Three problems whose answer is 8, as a JSON-lines dataset file (the evaluation tests' grid)."""
    path = tmp_path / "tiny.jsonl"
    rows = [{"id": f"t{i}", "problem": f"What is {i} + {8 - i}?", "answer": "8"} for i in range(3)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def hand_db(tmp_path: Path) -> Path:
    """The hand-counted evaluation run log of testkit/hand_log.py."""
    return build_hand_db(tmp_path / "hand.db")


@pytest.fixture(scope="module")
def real_pair():
    """H-UATS and REBASE searched for real on one arithmetic problem (testkit/run_pairs.py), once per module."""
    return _real_pair()


@pytest.fixture(scope="module")
def synthetic_runs():
    """Two synthetic runs, H-UATS- and REBASE-shaped (testkit/run_pairs.py), once per module."""
    return _synthetic_runs()
