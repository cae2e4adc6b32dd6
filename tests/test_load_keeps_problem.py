"""The page load's answer and the Search form's problem: the answer fills the problem list, and it gives the
list a value only when the user has not picked one yet. Like Compare's pickers (tests/test_compare_pickers.py), a
late answer that carried the first problem as its value replaced a pick made while it was on its way."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from ui.app_ui import build_demo
from ui.choices import ARITH
from ui.tabs.page_state import ComparedPair, OpenRun


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> gr.Blocks:
    return build_demo(RunStore("sqlite://"), WorkerPoolDouble(), tmp_path_factory.mktemp("exports"))


def _by_id(demo: gr.Blocks, elem_id: str) -> Any:
    (found,) = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id]
    return found


def _load_answer(demo: gr.Blocks, ds: str, pid: str | None) -> tuple[dict[str, Any], str]:
    """(The problem list's update, the question shown) in the page load's answer for a form at (ds, pid)."""
    problem = _by_id(demo, "problem")
    (fn,) = [f for f in demo.fns.values() if any(ev == "load" for _, ev in f.targets) and problem in f.outputs]
    given = {"dataset": ds, "problem": pid}
    values = [
        OpenRun()
        if isinstance(o.value, OpenRun)
        else ComparedPair()
        if isinstance(o.value, ComparedPair)
        else given[o.elem_id]
        for o in fn.inputs
    ]
    out = fn.fn(*values)
    question = [v for k, v in out.items() if isinstance(k, gr.Markdown) and k is not problem]
    return out[problem], str(question[0])


def test_a_form_with_no_problem_picked_gets_the_first_one(demo: gr.Blocks) -> None:
    update, question = _load_answer(demo, ARITH, None)
    choices = [c[1] for c in update["choices"]]
    assert len(choices) > 1 and update["value"] == choices[0]
    assert question


def test_a_problem_picked_before_the_answer_arrives_is_kept(demo: gr.Blocks) -> None:
    first, first_question = _load_answer(demo, ARITH, None)
    second = first["choices"][1][1]
    update, question = _load_answer(demo, ARITH, second)
    assert "value" not in update, update  # the user's pick stays in the box
    assert [c[1] for c in update["choices"]] == [c[1] for c in first["choices"]]
    assert question and question != first_question  # and the question shown is the picked one's
