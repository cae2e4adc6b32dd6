"""No API call can make the app open, create or switch a database it was not started with.

The app is served in-process and every endpoint of its API is called through gradio_client with database
paths and URLs in every text and dropdown argument; every SQLite connection the process makes meanwhile
is recorded, and must be to the run log or to a file of the reports folder."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble, record_synthetic
from testkit.serving import app_client, call_api, free_port, job_result, launch_served
from ui.views.safe_text import md_text


def _connect_target(args: tuple, kwargs: dict) -> str:
    db = str(args[0] if args else kwargs.get("database", ""))
    if db.startswith("file:"):
        db = unquote(urlparse(db).path)
    return str(Path(db).resolve()) if db not in ("", ":memory:") else db


@pytest.fixture()
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    from ui.app_ui import QUEUE_KWARGS, build_demo, launch_kwargs

    run_log = tmp_path / "app" / "runs.db"
    store = RunStore(str(run_log))
    record_synthetic(store, "c0" * 16, n_nodes=40, seed=3, method="h-uats", problem_id="synthetic-3")
    reports = tmp_path / "reports"
    reports.mkdir()
    RunStore(str(reports / "eval.db")).close()
    victim = tmp_path / "victim.sqlite"  # an unrelated database the server can reach
    con = sqlite3.connect(victim)
    con.execute("CREATE TABLE secrets (x)")
    con.commit()
    con.close()

    seen: list[str] = []
    lock = threading.Lock()
    real_connect = sqlite3.connect

    def recording_connect(*args: Any, **kwargs: Any) -> Any:
        with lock:
            seen.append(_connect_target(args, kwargs))
        return real_connect(*args, **kwargs)

    demo = build_demo(store, WorkerPoolDouble(), tmp_path / "exports", reports)
    url = launch_served(
        demo.queue(**QUEUE_KWARGS), free_port(), **launch_kwargs(tmp_path / "exports")
    )  # as ui/launch.py serves it
    monkeypatch.setattr(sqlite3, "connect", recording_connect)
    try:
        yield {
            "client": app_client(url),
            "seen": seen,
            "tmp": tmp_path,
            "allowed": {str(run_log.resolve()), str((reports / "eval.db").resolve())},
            "victim": victim,
        }
    finally:
        monkeypatch.undo()
        demo.close()
        store.close()


def _hostile(tmp: Path, victim: Path) -> list[str]:
    return [
        str(tmp / "evil" / "a.sqlite"),
        f"sqlite:///{tmp}/evil2/b/c.db",
        str(victim),
        f"sqlite:///{victim}",
        "postgresql+psycopg://u:p@127.0.0.1:1/x",
        "../victim.sqlite",
        str(tmp / "app" / "other.db"),
    ]


def _assert_nothing_opened(app: dict[str, Any], victim_bytes: bytes) -> None:
    tmp = app["tmp"]
    assert not (tmp / "evil").exists() and not (tmp / "evil2").exists()
    assert not (tmp / "app" / "other.db").exists()
    assert app["victim"].read_bytes() == victim_bytes
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith("victim")) == ["victim.sqlite"]  # no -wal
    strangers = sorted(set(app["seen"]) - app["allowed"])
    assert not strangers, f"the server connected to {strangers}"


def test_the_issue_trial_report_of_another_database(app: dict[str, Any]) -> None:
    victim_bytes = app["victim"].read_bytes()
    other = app["tmp"] / "any" / "other.sqlite"
    for value in (str(other), str(app["victim"]), f"sqlite:///{other}"):
        call_api(app["client"], "/on_report", [value, True])
        call_api(app["client"], "/on_curve_list", [value, None])
        call_api(app["client"], "/on_curve", [value, "x"])
    assert not other.exists() and not other.parent.exists()
    _assert_nothing_opened(app, victim_bytes)
    # the reports folder's file is listed and opened (read-only): the recording sees real opens
    md = app["client"].predict("eval.db", True, api_name="/on_report")
    assert f"Evaluation report of {md_text('eval.db')}" in md[0] and "no finished evaluation cells" in md[0]
    assert str((app["tmp"] / "reports" / "eval.db").resolve()) in app["seen"]


def test_no_endpoint_opens_another_database(app: dict[str, Any]) -> None:
    client = app["client"]
    victim_bytes = app["victim"].read_bytes()
    hostile = _hostile(app["tmp"], app["victim"])
    api = client.view_api(return_format="dict", print_info=False)
    endpoints = api["named_endpoints"]
    assert "/on_report" in endpoints and "/on_run" in endpoints and len(endpoints) > 30
    jobs = []
    for name, spec in endpoints.items():
        params = spec["parameters"]
        rounds = len(hostile) if any("db" in p["parameter_name"] or p["parameter_name"] == "key" for p in params) else 2
        for r in range(rounds):
            args = []
            for i, p in enumerate(params):
                kind = str(p["python_type"]["type"])
                if kind == "bool":
                    args.append(True)
                elif kind in ("float", "int"):
                    args.append(1)
                else:  # text boxes and dropdowns: a database location
                    args.append(hostile[(r + i) % len(hostile)])
            jobs.append(client.submit(*args, api_name=name))  # in parallel, as test_app_models_guard's sweep
    outcomes = [job_result(job) for job in jobs]  # every call ended (answered or refused) before the checks
    assert len(outcomes) >= len(endpoints)
    _assert_nothing_opened(app, victim_bytes)
