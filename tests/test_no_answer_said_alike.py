"""A finished run that gave no answer says so in one word wherever a run's answer is named: the run bar, the Runs
table, a run's export, a comparison's header and table, the Compare tab's summary, the notice when the run ends and
the case finder's list. They said "none", "", "None" and "–" for the same fact."""

from __future__ import annotations

from testkit.run_pairs import synthetic_runs
from ui.tabs.compare import _summary
from ui.tabs.page_state import OpenRun
from ui.tabs.search_events import _progress_notice
from ui.views.bundles import compare_bundle, run_bundle
from ui.views.comparison import compare_rows
from ui.views.counterfactual import _shown
from ui.views.divergence import decision_divergence
from ui.views.run_status import NO_ANSWER, RUN_COLUMNS, run_rows, run_status_md, said_answer
from ui.views.safe_text import md_text


def test_a_finished_run_without_an_answer_reads_the_same_in_every_panel() -> None:
    a, b = synthetic_runs()
    a.run.update(status="finished", answer=None, correct=False)
    assert said_answer(a.run) == NO_ANSWER == "none"
    told = f"answer {NO_ANSWER} (wrong"
    assert told in run_status_md(a.run)  # the run bar
    assert run_rows([a.run])[0][RUN_COLUMNS.index("answer")] == NO_ANSWER  # the Runs table
    assert told in run_bundle(a).caption  # a run's export
    assert f"A (h-uats): {told})" in compare_bundle(a, b).caption  # a comparison's export
    rows, _ = compare_rows(a, b)
    assert rows[0][3] == NO_ANSWER  # its table
    assert f"(wrong, answer {NO_ANSWER}," in _summary(a, b, decision_divergence(a, b), (0.0, 1.0))  # Compare's summary
    ended = _progress_notice(OpenRun(run_id=a.run["run_id"], announced="running"), a.run)
    assert md_text(f"finished: {told})") in ended["value"]  # the notice when it ends (escaped as every notice)
    assert _shown(a.run) == f"{NO_ANSWER} (wrong)"  # the case finder


def test_a_run_not_yet_finished_names_no_answer() -> None:
    a, _ = synthetic_runs()
    a.run.update(status="running", answer=None, correct=None)
    assert said_answer(a.run) is None
    assert run_rows([a.run])[0][RUN_COLUMNS.index("answer")] is None
    assert _shown(a.run) == "–"
