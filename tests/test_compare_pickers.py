"""Compare's pickers after the page loads and after the Compare tab opens (ui/tabs/compare.py on_tab_compare).

Both answers give the pickers their choices; a picker is given a value only when there is one to default to (the open
run and its partner). An answer that carried an empty value emptied a picker the user had filled while it was on its
way: under load, the browser test that opens the tab and picks runs A and B found picker A empty."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble, record_synthetic
from ui.app_ui import build_demo
from ui.tabs.page_state import ComparedPair, OpenRun

OPENED = "4d" * 16


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> gr.Blocks:
    store = RunStore("sqlite://")
    record_synthetic(store, OPENED, seed=1, n_nodes=30)
    return build_demo(store, WorkerPoolDouble(), tmp_path_factory.mktemp("exports"))


def _picker(demo: gr.Blocks, elem_id: str) -> gr.Dropdown:
    (found,) = [b for b in demo.blocks.values() if isinstance(b, gr.Dropdown) and b.elem_id == elem_id]
    return found


def _answers(demo: gr.Blocks, s: OpenRun) -> dict[str, dict[Any, Any]]:
    """The page load's answer and the Compare tab's, for a page whose open run is `s` and no pair is drawn."""
    (tab,) = [b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.id == "compare"]
    events = {"load": None, "tab": (tab._id, "select")}
    out = {}
    for name, target in events.items():
        (fn,) = [
            f
            for f in demo.fns.values()
            if (target in f.targets if target else any(ev == "load" for _, ev in f.targets))
            and any(o is _picker(demo, "cmp-a") for o in f.outputs)
        ]
        values = [
            s if isinstance(o.value, OpenRun) else ComparedPair() if isinstance(o.value, ComparedPair) else o.value
            for o in fn.inputs
        ]
        out[name] = fn.fn(*values)
    return out


@pytest.mark.parametrize("side", ["cmp-a", "cmp-b"])
def test_a_picker_with_nothing_to_default_to_is_sent_its_choices_only(demo: gr.Blocks, side: str) -> None:
    picker = _picker(demo, side)
    for name, answer in _answers(demo, OpenRun()).items():
        update = answer[picker]
        assert "value" not in update, (name, update)  # a late answer cannot empty what the user picked
        assert [c[1] for c in update["choices"]] == [OPENED], name


def test_the_open_run_is_still_picked_by_default(demo: gr.Blocks) -> None:
    for name, answer in _answers(demo, OpenRun(run_id=OPENED)).items():
        assert answer[_picker(demo, "cmp-a")]["value"] == OPENED, name
