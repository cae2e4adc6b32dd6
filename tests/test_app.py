"""The app's logic without a browser: form validation messages, problems, the worker pool, app.py flags."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

import app
from storage import RunStore, StorageError
from testkit.doubles import record_synthetic
from testkit.pool_requests import search_job
from uats_core.config import SearchConfig
from uats_core.errors import ConfigError, ProblemError
from uats_core.request import check_config
from ui.choices import AIME24, ARITH, MATH500
from ui.jobs.pool import WorkerPool
from ui.tabs.run_form import ARITH_PROBLEMS_SHOWN, dataset_problems, form_config, pick_problem, problem_choices
from ui.views.comparison import compare_rows, find_partner
from ui.views.run_status import run_status_md
from ui.views.treedata import RunData


def _form(**over) -> dict:
    base = {
        "method": "h-uats",
        "budget": 16.0,
        "seed": 0.0,
        "k0": 7.0,
        "dropout_p": 0.1,
        "dropout_mode": "full",
        "alpha": 0.3,
        "tau": 0.003,
        "delta": 0.04,
        "nu1": 0.5,
        "nu2": 0.2,
        "cost_ratio": 18.0,
        "max_iterations": 40.0,
        "reeval_share": 0.1,
    }
    base.update(over)
    return base


def build_config(values: dict) -> SearchConfig:
    """The form's values as the Run button reads them (form_config) and checks their fields (check_config)."""
    return check_config(form_config(values))


def test_form_defaults_are_the_papers() -> None:
    cfg = build_config(_form())
    assert cfg == SearchConfig(method="h-uats", budget=16, seed=0)
    assert isinstance(cfg.budget, int) and isinstance(cfg.k0, int)


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("budget", 0.0, "budget: must be an integer >= 1"),
        ("budget", 2.5, "budget: must be an integer"),
        ("tau", -0.1, "tau: must be a finite number >= 0"),
        ("k0", 1.0, "k0: must be an integer >= 2"),
        ("method", "nope", "method: unknown method"),
        ("dropout_mode", "last:x", "dropout_mode"),
        ("seed", None, "seed: is empty"),
    ],
)
def test_bad_form_values_name_the_field(field, value, needle) -> None:
    with pytest.raises(ConfigError) as exc:
        build_config(_form(**{field: value}))
    assert needle in str(exc.value) and exc.value.field == field


def test_datasets_and_problems() -> None:
    arith = dataset_problems(ARITH)
    assert len(arith) == ARITH_PROBLEMS_SHOWN and arith[0].id == "arith-test-0"
    assert pick_problem(arith, "arith-test-3").id == "arith-test-3"
    assert pick_problem(arith, "2").id == "arith-test-2"
    with pytest.raises(ProblemError, match="unknown problem"):
        pick_problem(arith, "arith-test-99999")
    for name in ("/no/such/file.jsonl", "JSONL file or hub name", "math500", "", None):
        with pytest.raises(ProblemError, match="^dataset: not one of the problem sets this server offers"):
            dataset_problems(name)
    choices = problem_choices(arith[:3])
    assert choices[0][1] == "arith-test-0" and choices[0][0].startswith("arith-test-0 · ")


def test_shipped_datasets_load_from_their_files() -> None:
    math500 = dataset_problems(MATH500)
    assert len(math500) == 500 and math500[0].answer
    aime = dataset_problems(AIME24)
    assert len(aime) == 30


def test_partner_and_compare_rows() -> None:
    store = RunStore("sqlite://")
    for rid, method in (("a1", "h-uats"), ("b1", "rebase"), ("c1", "rebase")):
        record_synthetic(store, rid, n_nodes=60, seed=3 if rid != "b1" else 4, method=method)
        # same problem; seeds stored as given by the synthetic stream
    a = store.get_run("a1")
    partner = find_partner(store, a)
    assert partner in ("b1", "c1")
    rows, div = compare_rows(RunData.load(store, "a1"), RunData.load(store, "b1"))
    assert [r[1] for r in rows] == ["h-uats", "rebase"] and div is None  # no step in common (random steps)
    assert "finished" in run_status_md(a) and "answer" in run_status_md(a)


def test_unknown_run_id_message() -> None:
    store = RunStore("sqlite://")
    with pytest.raises(StorageError, match="no run deadbeef"):
        store.find_run("deadbeef")
    with pytest.raises(StorageError, match="empty run id"):
        store.find_run("  ")


def test_worker_that_fails_marks_its_run_failed(tmp_path: Path) -> None:
    """A real spawned worker: a model path that does not exist fails at load, before RunStarted; the pool
    must leave the run 'failed' with the loader's message, not 'queued' forever."""
    store = RunStore(str(tmp_path / "runs.db"))
    prob = dataset_problems(ARITH)[0]
    cfg = SearchConfig(budget=4, max_iterations=2)
    run_id = uuid.uuid4().hex
    store.register_run(
        run_id,
        method=cfg.method,
        problem_id=prob.id,
        question=prob.question,
        gold_answer=prob.answer,
        seed=0,
        config=cfg.to_dict(),
    )
    pool = WorkerPool(store, max_workers=1, poll_s=0.2)
    try:
        pool.submit(
            search_job(
                run_id,
                store.location,
                prob,
                cfg.to_dict(),
                policy=str(tmp_path / "no-such-policy"),
                prm=str(tmp_path / "no-such-prm"),
            )
        )
        deadline = time.time() + 120
        while time.time() < deadline and store.get_run(run_id)["status"] in ("queued", "running"):
            time.sleep(0.2)
        run = store.get_run(run_id)
        assert run["status"] == "failed"
        assert "no-such" in run["error"] or "policy" in run["error"]
    finally:
        pool.shutdown(cancel=True, timeout_s=10)


def test_cancel_while_queued(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=3600)  # no background ticks: this test drives pump()
    try:
        prob = dataset_problems(ARITH)[0]
        cfg = SearchConfig(budget=4)
        ids = []
        for _ in range(2):
            rid = uuid.uuid4().hex
            store.register_run(rid, method=cfg.method, problem_id=prob.id, question=prob.question, config=cfg.to_dict())
            ids.append(rid)
        store.request_cancel(ids[1])
        pool._pending.extend(
            search_job(r, store.location, prob, cfg.to_dict(), policy=str(tmp_path / "x"), prm=str(tmp_path / "y"))
            for r in ids
        )
        pool.pump()
        assert store.get_run(ids[1])["status"] == "cancelled"
        assert pool.active() == [ids[0]] or store.get_run(ids[0])["status"] == "failed"
    finally:
        pool.shutdown(cancel=True, timeout_s=60)
    assert store.get_run(ids[0])["status"] in ("failed", "cancelled")


def test_app_flags_and_environment(monkeypatch) -> None:
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    args = app.parse_args([])
    assert (args.host, args.port) == ("127.0.0.1", 7860)
    assert args.db.endswith("runs/uats.db") and args.export_dir.endswith("exports")
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("GRADIO_SERVER_PORT", "9001")
    args = app.parse_args([])
    assert (args.host, args.port) == ("0.0.0.0", 9001)
    args = app.parse_args(["--host", "127.0.0.2", "--port", "7000", "--db", "x.db", "--export-dir", "out"])
    assert (args.host, args.port, args.db, args.export_dir) == ("127.0.0.2", 7000, "x.db", "out")


def test_app_refuses_a_bad_database(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert app.main(["--db", str(blocker / "sub" / "runs.db"), "--export-dir", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: db:") and "sub" in err


def test_app_refuses_bad_reports_dir_and_max_budget_before_creating_anything(tmp_path: Path, capsys) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    db = tmp_path / "runs" / "runs.db"
    assert app.main(["--db", str(db), "--reports-dir", str(afile)]) == 2
    assert capsys.readouterr().err.startswith("error: reports-dir:")
    assert app.main(["--db", str(db), "--max-budget", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: max-budget:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    args = app.parse_args(["--reports-dir", "evals", "--max-budget", "64"])
    assert (args.reports_dir, args.max_budget) == ("evals", 64) and app.parse_args([]).reports_dir.endswith("reports")


def test_a_refused_form_names_the_field_as_the_form_does() -> None:
    """The page says "τ: …" where the form writes τ (it said "tau: …"), "budget N: …" where it writes Budget N."""
    from ui.tabs.search_events import form_error

    for field, value, said in (
        ("tau", -0.1, "τ: must be a finite number >= 0"),
        ("budget", 0.0, "budget N: must be an integer >= 1"),
        ("nu2", -1.0, "ν2: "),
        ("seed", None, "seed: is empty"),
    ):
        with pytest.raises(ConfigError) as exc:
            build_config(_form(**{field: value}))
        assert form_error(exc.value).startswith(said), form_error(exc.value)
