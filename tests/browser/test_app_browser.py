"""UATS Studio in Debian's Chromium: start a run and watch it grow, inspect a node, step back, compare,
export, and survive bad input. With UATS_SCREENSHOTS=1 the named screenshots land in artifacts/."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from .pages import (
    NODE_PIXEL_JS,
    PAIR,
    choose,
    fill,
    open_run,
    plot_data,
    shot,
    table_fit,
    wait_idle,
    wait_notice,
    wait_plot,
    wait_text,
)

pytestmark = pytest.mark.browser


def test_start_a_run_and_watch_it_grow(page: Any, served: dict[str, Any], tiny_models: tuple[str, str]) -> None:
    """A real search in a worker process (tiny random transformers models), started in step mode: each
    Step click lets exactly one iteration through, and the page draws the grown tree while the run is
    still running; Resume runs it to the end. (Step mode makes "while running" deterministic: the tiny models
    finish a free-running search faster than a page poll.) How fast the page redraws is `bench app`'s to
    measure, not this test's."""
    store = served["store"]
    policy, prm = tiny_models
    page.get_by_text("Models", exact=True).click()
    choose(page, "policy", Path(policy).name)  # the server offers the tiny models' folder (conftest)
    choose(page, "prm", Path(prm).name)
    fill(page, "budget", "8")
    page.get_by_text("UATS knobs (paper defaults)").click()
    fill(page, "max-iterations", "25")
    page.locator("#start-paused input").check()
    page.click("#run-btn")
    wait_notice(page, "run ")  # "queued", then it follows the run ("running") once a worker takes it
    run_id = None
    deadline = time.time() + 60
    while run_id is None and time.time() < deadline:
        runs = [r for r in store.list_runs(limit=5) if r["policy"] == policy]
        run_id = runs[0]["run_id"] if runs else None
        time.sleep(0.2)
    assert run_id, "the page did not register a run"
    # the worker loads its models, writes RunStarted, then waits before iteration 1
    wait_plot(page, "#tree", "e.dataset.status === 'running'")
    wait_text(page, "#run-status", "paused")
    assert store.get_run(run_id)["iterations"] == 0
    drawn_while_running: list[int] = []
    for step in (1, 2):
        page.click("#step-btn")
        deadline = time.time() + 60
        while store.get_run(run_id)["iterations"] < step and time.time() < deadline:
            time.sleep(0.1)
        run = store.get_run(run_id)
        assert run["iterations"] == step and run["status"] == "running", run
        wait_plot(page, "#tree", f"Number(e.dataset.nodes) === {run['n_nodes'] + 1} && e.dataset.status === 'running'")
        drawn_while_running.append(int(plot_data(page, "#tree", "nodes")))
        shot(page, f"step-mode-after-iteration-{step}")
        time.sleep(0.5)
        assert store.get_run(run_id)["iterations"] == step  # no iteration went through without a Step
    assert drawn_while_running[0] < drawn_while_running[1], drawn_while_running  # the tree grew on screen
    page.click("#resume-btn")
    deadline = time.time() + 240
    while store.get_run(run_id)["status"] not in ("finished", "failed", "cancelled") and time.time() < deadline:
        time.sleep(0.25)
    run = store.get_run(run_id)
    assert run["status"] == "finished", run.get("error")
    assert run["iterations"] > 2
    # the final tree is drawn: the root and every stored node
    wait_plot(page, "#tree", f"Number(e.dataset.nodes) === {run['n_nodes'] + 1} && e.dataset.status === 'finished'")
    shot(page, "live-run-finished")


def test_open_a_node_and_see_its_boxplot(page: Any) -> None:
    open_run(page, PAIR["h-uats"])
    target = page.evaluate(NODE_PIXEL_JS, ["#tree", None])
    assert target, "no node visible in the tree"
    page.mouse.click(target["x"], target["y"])
    page.wait_for_function("() => document.querySelectorAll('#figure1 .uats-plot .barlayer .trace').length > 0")
    details = wait_text(page, "#node-details", "Trace up to here")
    assert f"Node {target['id']}" in details and "R̄" in details and "Trace up to here" in details
    assert page.locator("#node-id input").input_value() == str(target["id"])
    # the τ line and the table of every candidate's R̄ and the σ² its gate read
    inspector_text = page.locator("#figure1").inner_text()
    assert "τ = 0.003" in inspector_text and "σ² read" in inspector_text
    shot(page, "node-inspector", "#figure1")
    shot(page, "node-selected")


def test_step_back_through_iterations(page: Any, served: dict[str, Any]) -> None:
    open_run(page, PAIR["h-uats"])
    final_nodes = int(plot_data(page, "#tree", "nodes"))
    final_t = int(plot_data(page, "#tree", "iteration"))
    # zoom in, then step: the zoom must survive the redraws (fixed uirevision)
    page.evaluate(
        "() => Plotly.relayout(document.querySelector('#tree .uats-plot'), "
        "{'xaxis.range': [-2, 3], 'yaxis.range': [-6, 0.5]})"
    )
    for expected in (final_t - 1, final_t - 2, final_t - 3):
        page.click("#prev-btn")
        wait_plot(page, "#tree", f"Number(e.dataset.iteration) === {expected}")
    xr = page.evaluate("() => document.querySelector('#tree .uats-plot')._fullLayout.xaxis.range")
    assert xr == pytest.approx([-2, 3])
    nodes_then = int(plot_data(page, "#tree", "nodes"))
    assert nodes_then < final_nodes
    data = served["store"].get_nodes(PAIR["h-uats"])
    assert nodes_then == len({0} | {n["id"] for n in data if n["created_iter"] <= final_t - 3})
    assert f"replaying iteration {final_t - 3} of {final_t}" in page.locator("#run-status").inner_text()
    shot(page, "step-back")
    page.click("#next-btn")
    wait_plot(page, "#tree", f"Number(e.dataset.iteration) === {final_t - 2}")


def test_open_a_comparison(page: Any) -> None:
    page.get_by_role("tab", name="Compare").click()
    fill(page, "cmp-a", PAIR["h-uats"][:10], submit=True)
    fill(page, "cmp-b", PAIR["rebase"][:10], submit=True)
    page.click("#cmp-load")
    wait_plot(page, "#cmp-tree-a", "Number(e.dataset.nodes) > 1")
    wait_plot(page, "#cmp-tree-b", "Number(e.dataset.nodes) > 1")
    summary = page.locator("#cmp-summary").inner_text()
    assert "diverge" in summary and "uncertainty changed" in summary and "shared colour scale" in summary
    assert "h-uats" in summary and "rebase" in summary
    ta = int(plot_data(page, "#cmp-tree-a", "iteration"))
    page.click("#cmp-prev")
    wait_plot(page, "#cmp-tree-a", f"Number(e.dataset.iteration) === {ta - 1}")
    wait_plot(page, "#cmp-tree-b", f"Number(e.dataset.iteration) <= {ta - 1}")  # lockstep
    shot(page, "compare")


def test_download_an_export(page: Any) -> None:
    open_run(page, PAIR["h-uats"])
    page.get_by_text("Export this run").click()
    button = page.locator("#run-export")
    deadline = time.time() + 90
    while time.time() < deadline and "run-" not in button.inner_text():
        time.sleep(0.2)
    assert "run-a0a0a0a0.zip" in button.inner_text()
    with page.expect_download() as info:
        button.click()
    path = Path(info.value.path())
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        assert {
            "run-a0a0a0a0.json",
            "run-a0a0a0a0.html",
            "run-a0a0a0a0.tex",
            "run-a0a0a0a0.png",
            "run-a0a0a0a0.svg",
            "README.txt",
        } <= names, names
        data = json.loads(zf.read("run-a0a0a0a0.json"))
        assert data["run"]["run_id"] == PAIR["h-uats"] and len(data["nodes"]) == 160
        assert zf.read("run-a0a0a0a0.png")[:4] == b"\x89PNG"
        assert b"\\begin{tabular}" in zf.read("run-a0a0a0a0.tex")
    # a name that tries to leave the export folder is refused, in the page
    fill(page, "run-export-name", "../../escape", submit=True)
    wait_notice(page, "not allowed as an export name")
    shot(page, "export")


def test_bad_input_shows_a_message_and_the_app_keeps_working(page: Any) -> None:
    fill(page, "budget", "0")
    page.click("#run-btn")
    assert "budget" in wait_notice(page, "budget N: must be an integer >= 1")
    fill(page, "budget", "8")
    tau_box = page.locator("#tau input, #tau textarea").first
    if not tau_box.is_visible():  # the accordion may already be open
        page.get_by_text("UATS knobs (paper defaults)").click()
    tau_box.wait_for(state="visible")
    fill(page, "tau", "-1")
    page.click("#run-btn")
    wait_notice(page, "τ: must be a finite number >= 0")  # named as the form names it
    fill(page, "tau", "0.003")
    fill(page, "open-id", "feedfacecafe")
    page.click("#open-btn")
    wait_notice(page, "no run feedfacecafe")
    shot(page, "bad-input")
    open_run(page, PAIR["rebase"])  # still alive
    assert "rebase" in page.locator("#run-status").inner_text()


def test_reports_tab_builds_a_report_and_plots_a_training_curve(page: Any, served: dict[str, Any]) -> None:
    """The Reports tab over a hand-counted evaluation log, and a controller training curve written to it."""
    from storage import RunStore
    from testkit.hand_log import build_hand_db

    db = build_hand_db(served["reports_dir"] / "eval.db")
    store = RunStore(str(db))
    for rnd in range(12):
        store.append_curve(
            "controller-browser-seed0", {"round": rnd, "mean_reward": 0.5, "accuracy": 0.5, "mean_cost": 10.0}
        )
    store.close()
    page.get_by_role("tab", name="Reports").click()
    # the run log picker offers the server's list only: the run log and the reports folder's files
    page.click("#rep-refresh")
    wait_idle(page)
    page.locator("#rep-db input").first.click()
    page.get_by_role("option", name="eval.db (reports folder)").click()  # by name: never a server path
    page.click("#rep-build")
    wait_text(page, "#rep-md", "83.3")  # REBASE at N=16, counted by hand in tests/test_report.py
    wait_plot(page, "#rep-acc-n", "e.data && e.data.length > 0")
    wait_plot(page, "#rep-acc-cost", "e.data && e.data.length > 0")
    page.click("#curve-refresh")
    page.locator("#curve-pick input").first.click()
    page.get_by_role("option", name="controller-browser-seed0").click()
    wait_plot(page, "#curve-plot", "e.data && e.data.length === 6")
    shot(page, "reports")


@pytest.mark.parametrize("screen_page", ["1280x800", "1920x1080"], indirect=True)
def test_a_row_of_the_runs_tab_opens_its_run_in_the_search_tab(screen_page: Any) -> None:
    """The Runs tab's table fits the page (every header's words on one line each, a cell's words wrapped only after a
    hyphen, no cell's text cut off: at 1280 "iterations" broke as "ite|rat|ion|s", the policy "syntheti|c-policy"),
    and a row opens its run and shows the Search tab (ui/js/show_search.js, in the page: the server no longer sends the
    Tabs a value)."""
    page, run = screen_page, PAIR["rebase"]
    page.locator('button[role="tab"][data-tab-id="runs"]').click()
    cell = page.locator("#runs-table [role=gridcell]", has_text=run[:8]).first
    cell.wait_for()
    fit = table_fit(page, "#runs-table")
    assert fit["cells"] >= 2 * 15 and not fit["broken"] and not fit["cut"], fit
    size = page.viewport_size
    shot(page, f"runs-table-{size['width']}x{size['height']}", "#runs-table")
    cell.click()
    page.wait_for_function(
        '() => document.querySelector(\'button[role="tab"][data-tab-id="search"]\')'
        ".getAttribute('aria-selected') === 'true'",
    )
    wait_plot(page, "#tree", f"e.dataset.run === '{run}'")
    assert page.locator("#tree .uats-plot").is_visible()
