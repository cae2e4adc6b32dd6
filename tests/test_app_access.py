"""Access to the app: it listens beyond this machine only behind a login (credentials from a file or the
environment), an unauthenticated client gets nothing, and a run can be controlled, starred and annotated only
by who started it; everyone else may view it. The app is served in-process and called through gradio_client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble, record
from testkit.serving import app_client, form_args, free_port, launch_served, notice_text, save_note, served_app
from testkit.synthetic import synthetic_events
from ui import launch


@pytest.fixture()
def launcher(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """launch.main without models or a blocking server: the pool is a double, and Blocks.launch records its
    arguments (the test serves them itself) instead of serving."""
    for name in ("UATS_AUTH", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
        monkeypatch.delenv(name, raising=False)
    calls: list[dict[str, Any]] = []

    def recorded(self: gr.Blocks, **kw: Any) -> None:
        calls.append({"demo": self, **kw})

    monkeypatch.setattr("ui.jobs.pool.WorkerPool", WorkerPoolDouble)
    monkeypatch.setattr("ui.jobs.pool.default_pair_request", lambda: None)
    monkeypatch.setattr(gr.Blocks, "launch", recorded)
    monkeypatch.setattr("ui.launch.wait_until_answering", lambda url: None)  # nothing was served to wait for
    yield calls


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "uats.example.org"])
def test_the_launcher_refuses_a_reachable_address_without_a_login(
    host: str, tmp_path: Path, launcher: list, capsys: pytest.CaptureFixture
) -> None:
    db = tmp_path / "runs" / "uats.db"
    rc = launch.main(["--host", host, "--db", str(db), "--export-dir", str(tmp_path / "exports")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: host: {host} can be reached"), err
    assert "--auth-file" in err[0] and "UATS_AUTH" in err[0]
    assert launcher == [] and not db.parent.exists() and not (tmp_path / "exports").exists()


def test_loopback_addresses_need_no_login() -> None:
    from ui.auth import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.3.4.5", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.org", ""))


def test_bad_credentials_are_one_line_without_the_password(
    tmp_path: Path, launcher: list, capsys: pytest.CaptureFixture
) -> None:
    creds = tmp_path / "users"
    creds.write_text("alice:s3cret-one\nbob-without-colon-s3cret-two\n")
    rc = launch.main(["--host", "0.0.0.0", "--auth-file", str(creds), "--db", str(tmp_path / "r.db")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: auth: ") and "line 2" in err[0]
    assert "s3cret" not in err[0]
    rc = launch.main(["--auth-file", str(tmp_path / "missing"), "--db", str(tmp_path / "r.db")])
    assert rc == 2 and capsys.readouterr().err.startswith("error: auth-file: cannot read")
    assert launcher == [] and not (tmp_path / "r.db").exists()
    from ui.auth import AuthError, parse_credentials

    with pytest.raises(AuthError, match="listed twice"):
        parse_credentials("a:1\na:2", "users")
    assert parse_credentials("# team\n\n carol : pass:with:colons \n", "users") == [("carol", " pass:with:colons")]


@pytest.mark.parametrize("source", ["file", "environment"])
def test_with_a_login_an_unauthenticated_client_is_refused(
    source: str, tmp_path: Path, launcher: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--host", "0.0.0.0", "--db", str(tmp_path / "r.db"), "--export-dir", str(tmp_path / "exports")]
    if source == "file":
        (tmp_path / "users").write_text("alice:correct horse\n")
        args += ["--auth-file", str(tmp_path / "users")]
    else:
        monkeypatch.setenv("UATS_AUTH", "alice:correct horse")
    assert launch.main(args) == 0
    [call] = launcher
    assert call["server_name"] == "0.0.0.0" and call["auth"] == [("alice", "correct horse")]
    # serve what the launcher asked for, on loopback: the test opens no port to the network
    demo, port = call.pop("demo"), free_port()
    monkeypatch.undo()  # the real Blocks.launch again
    url = launch_served(demo, port, **call)
    try:
        assert httpx.get(f"{url}/config").status_code == 401
        # the studio and the node page's route: the login form, no component or figure of either
        for page in ("/", "/node?run=x&node=1"):
            text = httpx.get(f"{url}{page}", follow_redirects=True).text
            assert '"auth_required":true' in text.replace(" ", "") and "figure1" not in text, page
        # the Figure 1 a studio address asks for as its page starts: refused, and nothing read
        assert httpx.get(f"{url}/node/figure1?run=x&node=1").status_code == 401
        assert httpx.post(f"{url}/gradio_api/call/list_runs", json={"data": []}).status_code == 401
        with pytest.raises(Exception, match="(?i)login|auth|401"):
            app_client(url)
        with pytest.raises(Exception, match="(?i)incorrect|login|auth|401"):
            app_client(url, auth=("alice", "wrong"))
        with httpx.Client(base_url=url) as browser:  # signed in, the node page answers with itself
            assert browser.post("/login", data={"username": "alice", "password": "correct horse"}).status_code == 200
            assert 'id="node-head"' in browser.get("/node?run=x&node=1").text
            asked = browser.get("/node/figure1?run=x&node=1")  # read: the run does not exist
            assert asked.status_code == 400 and asked.json() == {"error": "run: no run x"}
        signed_in = app_client(url, auth=("alice", "correct horse"))
        assert signed_in.predict("(any)", "(any)", "(any)", api_name="/list_runs")
    finally:
        demo.close()


def _live_run(store: RunStore, run_id: str) -> None:
    """Write a run's events up to its last iteration (no RunEnded): it has nodes and is still running."""
    record(store, synthetic_events(run_id, n_nodes=30, seed=5)[:-1])


def _controls(client: Any) -> dict[str, str]:
    return {
        verb: notice_text(client.predict(api_name=f"/{verb}_run")) for verb in ("pause", "step", "resume", "cancel")
    }


@pytest.mark.parametrize("login", [True, False], ids=["users", "sessions"])
def test_only_the_owner_controls_stars_and_annotates_a_run(login: bool, tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    auth = {"auth": [("alice", "a-pass"), ("bob", "b-pass")]} if login else {}
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, **auth) as url:
            alice = app_client(url, auth=("alice", "a-pass") if login else None)
            bob = app_client(url, auth=("bob", "b-pass") if login else None)
            said = notice_text(alice.predict(**form_args(alice), api_name="/on_run")[0])
            [run] = store.list_runs()
            rid = run["run_id"]
            assert said.startswith(f"run {rid[:8]} queued")
            assert run["owner"] == "user:alice" if login else run["owner"].startswith("session:")
            _live_run(store, rid)
            # bob sees the run, and may change nothing about it
            seen = bob.predict(**form_args(bob, "/open_run", run_ref=rid), api_name="/open_run")
            assert '"n_nodes":30' in notice_text(seen[1])  # the tree, drawn
            for verb, text in _controls(bob).items():
                assert f"only they may {verb} it" in text, text
                assert ("started by alice" in text) == login
            assert not store.is_paused(rid) and not store.cancel_requested(rid)
            assert "only they may star or annotate it" in save_note(bob, rid, 3, "bob was here")
            assert store.get_star(rid, 3) is None
            # alice may
            alice.predict(**form_args(alice, "/open_run", run_ref=rid), api_name="/open_run")
            assert "pauses after" in notice_text(alice.predict(api_name="/pause_run")) and store.is_paused(rid)
            assert "saved star and note" in save_note(alice, rid, 3, "mine")
            assert store.get_star(rid, 3)["note"] == "mine"
            assert "cancel requested" in notice_text(alice.predict(api_name="/cancel_run")) and store.cancel_requested(
                rid
            )
    finally:
        store.close()


def test_runs_from_outside_the_app_cannot_be_controlled_there(tmp_path: Path) -> None:
    """A run the CLI or an evaluation logged has no owner: no page may cancel it; without a login (the app is
    then on loopback only) its notes may be edited, with a login they may not."""
    store = RunStore(str(tmp_path / "runs.db"))
    _live_run(store, "e" * 32)
    try:
        for auth in ({}, {"auth": [("alice", "a-pass")]}):
            with served_app(store, WorkerPoolDouble(store), tmp_path, **auth) as url:
                client = app_client(url, auth=("alice", "a-pass") if auth else None)
                client.predict(**form_args(client, "/open_run", run_ref="e" * 32), api_name="/open_run")
                assert "cancel it where it runs" in notice_text(client.predict(api_name="/cancel_run"))
                said = save_note(client, "e" * 32, 2, "noted")
                assert ("saved star and note" in said) == (not auth), said
        assert not store.cancel_requested("e" * 32) and store.get_star("e" * 32, 2)["note"] == "noted"
    finally:
        store.close()


def _owned_run(store: RunStore, run_id: str, method: str, owner: str) -> None:
    """A finished run started in the app by `owner` (registered first, as the app registers it)."""
    events = synthetic_events(run_id, n_nodes=48, seed=7, method=method, problem_id="synthetic-7")
    start = events[0]
    store.register_run(
        run_id,
        method=start.method,
        problem_id=start.problem_id,
        question=start.question,
        gold_answer=start.gold_answer,
        seed=start.seed,
        config=start.config,
        policy=start.policy,
        prm=start.prm,
        owner=owner,
    )
    record(store, events)


def test_only_the_runs_owner_shadow_scores_it(tmp_path: Path) -> None:
    """Issue 42, item 3: bob compares alice's pair and asks for shadow scores of her REBASE run: refused, and her
    scores (K = 7 on every candidate) stay as they were; alice may queue a new job."""
    from storage.shadow import read_shadow, write_shadow
    from ui.choices import EMBEDDED

    store = RunStore(str(tmp_path / "runs.db"))
    uats, rebase = "a1" * 16, "b1" * 16
    _owned_run(store, uats, "h-uats", "user:alice")
    _owned_run(store, rebase, "rebase", "user:alice")
    nodes = [n["id"] for n in store.get_nodes(rebase)]
    write_shadow(
        store, rebase, [{"node_id": n, "mc_scores": [0.5] * 7, "mean": 0.5, "var": 0.0, "prm": "p"} for n in nodes]
    )
    before = read_shadow(store, rebase)
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("alice", "a-pass"), ("bob", "b-pass")]) as url:
            said = {}
            for user in ("bob", "alice"):
                client = app_client(url, auth=(user, f"{user[0]}-pass"))
                client.predict(uats, rebase, api_name="/on_compare")
                said[user] = notice_text(client.predict(2, EMBEDDED, "detect", api_name="/on_shadow"))
            assert "started by alice" in said["bob"] and "only they may shadow-score it" in said["bob"], said
            # the Search tab's own shadow scoring of the open run (issue 44's panel) answers bob the same
            bob = app_client(url, auth=("bob", "b-pass"))
            bob.predict(**form_args(bob, "/open_run", run_ref=rebase), api_name="/open_run")
            said["bob, search tab"] = notice_text(bob.predict(2, EMBEDDED, "detect", api_name="/on_shadow_open_run"))
            assert "only they may shadow-score it" in said["bob, search tab"], said
            assert "shadow scoring of run B" in said["alice"] and "queued" in said["alice"], said
            with store.engine.connect() as conn:
                jobs = conn.exec_driver_sql("SELECT run_id, k FROM shadow_jobs").all()
            assert [tuple(j) for j in jobs] == [(rebase, 2)]  # alice's only
            assert read_shadow(store, rebase) == before and len(before) == len(nodes)
    finally:
        store.close()
