"""No client of the app can make the server run a model's own code or read a file the server does not offer.

The app is served in-process and called over HTTP (gradio_client, and the raw upload route) the way any
client could: the remote-code path of issue 29 (a module and a config.json whose auto_map names it, put on the
server, then a search with that folder as its PRM and trust_remote_code=true) must end in a refusal with the
module never imported, and no endpoint may read a problem set or a model outside the server's lists, or say
in its refusal whether a path it was given exists."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from storage import RunStore, schema as S
from testkit.doubles import WorkerPoolDouble, record_synthetic
from testkit.remote_code import code_config, write_code_module
from testkit.serving import call_api, call_named, form_args, job_result, on_run_args, outcome_text, served_fresh_app
from uats_core.paths import ASSETS

SECRET = "SECRET-QUESTION-7f3a"  # the text of a problem file the server does not offer


def _upload(url: str, name: str, content: bytes) -> Path | None:
    """POST a file to Gradio's upload route; the server path it answers with, None when refused."""
    r = httpx.post(f"{url}/gradio_api/upload", files=[("files", (name, content))], timeout=60)
    return Path(r.json()[0]) if r.status_code == 200 else None


def test_an_uploaded_module_never_runs_on_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's reproduction through the real worker pool: uploads are refused; the same files put on the
    server's disk by other means, named as the PRM with trust_remote_code=true, are refused before any worker
    starts, and the module is never imported (its import would write the marker)."""
    from ui.jobs.pool import WorkerPool

    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-uploads"))
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "hf-modules"))  # the spawned workers inherit it
    marker = tmp_path / "marker"
    module = write_code_module(tmp_path / "client", marker)
    store = RunStore(str(tmp_path / "app" / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.5)
    try:
        with served_fresh_app(tmp_path, pool) as app:
            url, client = app["url"], app["client"]
            mod_at = _upload(url, "evil.py", module.read_bytes())
            planted = tmp_path / "server-disk"  # where the files land when the upload route is off
            mod_dir = mod_at.parent if mod_at else write_code_module(planted / "mod", marker).parent
            config = code_config(f"{mod_dir}--evil.EvilConfig")
            cfg_at = _upload(url, "config.json", config)
            if cfg_at is None:
                (planted / "cfg").mkdir(parents=True)
                (planted / "cfg" / "config.json").write_bytes(config)
            prm_dir = cfg_at.parent if cfg_at else planted / "cfg"
            outcomes = [
                call_named(
                    client,
                    "/on_run",
                    on_run_args(
                        client, prm=str(prm_dir), budget=2, max_iterations=1, prm_opts="trust_remote_code=true"
                    ),
                ),
                call_named(client, "/on_run", on_run_args(client, prm_opts="trust_remote_code=true", budget=2)),
                call_named(client, "/on_run", on_run_args(client, policy_opts="trust_remote_code=true", budget=2)),
            ]
            # a worker loads the models before its run's first iteration: wait for any started run to end
            deadline = time.time() + 300
            while time.time() < deadline and any(r["status"] in ("queued", "running") for r in store.list_runs()):
                time.sleep(0.5)
            assert not marker.exists(), "the module's code ran on the server"
            assert mod_at is None and cfg_at is None, "the upload route accepted a file"
            assert store.list_runs() == [] and pool.queued() == [] and pool.active() == []
            texts = [outcome_text(o) for o in outcomes]
            assert "not in the list of choices" in texts[0] or "prm: not one of the models this server" in texts[0]
            assert "prm_opts: trust_remote_code: the app never runs code that comes with a model" in texts[1]
            assert "policy_opts: trust_remote_code: the app never runs code that comes with a model" in texts[2]
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
        store.close()


_OPENED: list[str] = []
_WATCH: list[str] = []  # folder prefixes whose opens _OPENED records, while a test watches them


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _WATCH and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        if any(path.startswith(w) for w in _WATCH):
            _OPENED.append(path)


@pytest.fixture()
def watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Files the server must never read: a problem set (and a non-JSON file) and a model folder outside its
    lists, and the same in Gradio's upload folder as an earlier upload would have left them. An audit hook
    records every open of a file under those folders in this process."""
    outside, uploads = tmp_path / "outside", tmp_path / "gradio-uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    marker = tmp_path / "marker"
    for folder in (outside, uploads / "0123abcd"):
        folder.mkdir(parents=True)
        (folder / "secret.jsonl").write_text(json.dumps({"problem": SECRET, "answer": "1"}) + "\n", encoding="utf-8")
        (folder / "passwd.jsonl").write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
        write_code_module(folder / "model", marker)
        (folder / "model" / "config.json").write_bytes(code_config("evil.EvilConfig"))
    if not getattr(sys, "_uats_audit_hook", False):  # audit hooks stay for the process: add ours once
        sys.addaudithook(_audit)
        sys._uats_audit_hook = True  # type: ignore[attr-defined]
    _OPENED.clear()
    _WATCH[:] = [str(p) for f in (outside, uploads) for p in {f, f.resolve()}]
    try:
        yield {"outside": outside, "uploaded": uploads / "0123abcd", "marker": marker}
    finally:
        _WATCH.clear()


def test_no_endpoint_reads_a_file_outside_the_servers_lists(tmp_path: Path, watched: dict[str, Any]) -> None:
    """Every endpoint; each text and dropdown argument gets, round by round, a model folder and a problem file
    outside the server's lists, by absolute path, by a ../ path and in Gradio's upload folder (the problem-set
    field alternates with the old 'JSONL file' choice, so a path field beside it is read as that file). Nothing
    under those folders is opened, no answer carries their text, no module is imported, and no run is handed
    to a worker with a model the server does not offer."""
    pool = WorkerPoolDouble()  # records a submitted run, never starts it
    outside, uploaded = watched["outside"], watched["uploaded"]
    up = f"{os.path.relpath(outside, Path.cwd())}/../outside"
    hostile = [
        str(outside / "model"),
        str(outside / "secret.jsonl"),
        f"{up}/model",
        f"{up}/passwd.jsonl",
        str(uploaded / "model"),
        str(uploaded / "secret.jsonl"),
    ]
    with served_fresh_app(tmp_path, pool) as app:
        client = app["client"]
        endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        jobs = []
        for name, spec in endpoints.items():
            params = spec["parameters"]
            texts = [p for p in params if str(p["python_type"]["type"]) not in ("bool", "float", "int")]
            for r in range(len(hostile) if texts else 1):
                args: list[Any] = []
                for i, p in enumerate(params):
                    kind = str(p["python_type"]["type"])
                    if kind in ("bool", "float", "int"):
                        args.append(False if kind == "bool" else 2)
                    elif p["parameter_name"] in ("ds", "dataset") and r % 2 == 0:
                        args.append("JSONL file or hub name")
                    else:
                        args.append(hostile[(r + i) % len(hostile)])
                jobs.append(client.submit(*args, api_name=name))  # in parallel: some 90 endpoints, 500 calls
        answers = [outcome_text(job_result(job)) for job in jobs]
    assert len(answers) > 300
    assert not _OPENED, f"the server opened {sorted(set(_OPENED))}"
    assert not [a for a in answers if SECRET in a or "root:x:0" in a]
    assert not watched["marker"].exists()
    offered = {None, str(ASSETS / "arith-policy-b"), "smollm2"}
    assert all(req.request.policy in offered and req.request.prm in offered for req in pool.submitted), pool.submitted


def test_refusals_do_not_say_whether_a_path_exists(tmp_path: Path, watched: dict[str, Any]) -> None:
    """The same refusal for a problem set or a model that exists on the server and one that does not (the
    path itself, echoed, aside)."""
    outside = watched["outside"]
    pool = WorkerPoolDouble()  # records a submitted run, never starts it
    with served_fresh_app(tmp_path, pool) as app:
        client = app["client"]
        params = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/on_dataset"]["parameters"]

        def refusal(call: str, path: Path, **form: Any) -> str:
            if call == "/on_dataset":  # the problem-set field, and a path field where the endpoint has one
                args = [str(path) if p["parameter_name"] != "ds" else form["ds"] for p in params]
                text = outcome_text(call_api(client, call, args))
            else:
                text = outcome_text(
                    call_named(client, call, on_run_args(client, **{k: str(path) for k in form}, budget=2))
                )
            return text.replace(str(path), "<PATH>")

        for ds in ("JSONL file or hub name", "MATH-500"):
            same = {
                refusal("/on_dataset", outside / f, ds=ds) for f in ("secret.jsonl", "passwd.jsonl", "missing.jsonl")
            }
            assert len(same) == 1, same
        for field in ("policy", "prm"):
            same = {refusal("/on_run", outside / f, **{field: None}) for f in ("model", "no-model", "secret.jsonl")}
            assert len(same) == 1 and "<PATH>" in same.pop()
    assert not _OPENED and pool.submitted == []


def test_the_offered_models_and_problem_sets_are_the_servers(tmp_path: Path) -> None:
    """--models-dir and --datasets-dir: their sub-folders with a config.json and their .jsonl files are offered
    by name (the page shows no path), and a run names the folder the server chose."""
    from ui.choices import EMBEDDED, server_choices

    models, data = tmp_path / "models", tmp_path / "data"
    (models / "mine").mkdir(parents=True)
    (models / "mine" / "config.json").write_text("{}")
    (models / "no-config").mkdir()
    data.mkdir()
    (data / "set.jsonl").write_text(json.dumps({"problem": "What is two and two?", "answer": "4"}) + "\n")
    pool = WorkerPoolDouble()  # records a submitted run, never starts it
    with served_fresh_app(tmp_path, pool, server_choices([models], [data])) as app:
        client, store = app["client"], app["store"]
        problems, question, _ = client.predict("set.jsonl", api_name="/on_dataset")
        assert "What is two and two?" in question
        config = httpx.get(f"{app['url']}/config", timeout=30).text
        assert str(models) not in config and str(data) not in config
        notice = client.predict(
            **on_run_args(client, dataset="set.jsonl", problem="set-0", policy="mine", prm="mine", budget=2),
            api_name="/on_run",
        )
        assert "queued" in outcome_text(notice), notice
        (req,) = pool.submitted
        assert (
            req.request.policy == req.request.prm == str((models / "mine").resolve()) and not req.request.world_problem
        )
        assert store.get_run(req.run_id)["policy"] == req.request.policy
    choices = server_choices([models], [data])
    assert "no-config" not in choices.prms and choices.model("prm", EMBEDDED) is None


def test_links_out_of_a_folder_flag_are_not_offered(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 42, item 9: a symbolic link in --models-dir or --datasets-dir that leads out of the folder is not
    offered (a warning names it); a link to another entry of the same folder is."""
    import logging

    from ui.choices import server_choices

    models, data, elsewhere = tmp_path / "models", tmp_path / "data", tmp_path / "elsewhere"
    for folder in (models / "real", elsewhere / "model", data, elsewhere):
        folder.mkdir(parents=True, exist_ok=True)
    for folder in (models / "real", elsewhere / "model"):
        (folder / "config.json").write_text("{}")
    (models / "alias").symlink_to(models / "real")
    (models / "escape").symlink_to(elsewhere / "model")
    (data / "set.jsonl").write_text(json.dumps({"problem": "What is 1 + 1?", "answer": "2"}) + "\n")
    (elsewhere / "secret.jsonl").write_text(json.dumps({"problem": SECRET, "answer": "1"}) + "\n")
    (data / "alias.jsonl").symlink_to(data / "set.jsonl")
    (data / "escape.jsonl").symlink_to(elsewhere / "secret.jsonl")
    with caplog.at_level(logging.WARNING, logger="ui.choices"):
        choices = server_choices([models], [data])
    assert {"real", "alias"} <= set(choices.prms) and "escape" not in choices.prms and "escape" not in choices.policies
    assert {"set.jsonl", "alias.jsonl"} <= set(choices.datasets) and "escape.jsonl" not in choices.datasets
    warned = [r.getMessage() for r in caplog.records]
    assert any("models-dir: escape is a link out of" in m for m in warned), warned
    assert any("datasets-dir: escape.jsonl is a link out of" in m for m in warned), warned


# An absolute path of two or more parts, as a response may carry one (after HTML entities are decoded)
_ABS = re.compile(r"(?<![\w:/.~-])(/[\w.@+~=-]+){2,}")


def _server_paths(text: str, sent: list[str], allowed: tuple[str, ...]) -> list[str]:
    """The absolute paths in `text` that are not the client's own (echoed) or one of `allowed`'s prefixes."""
    for value in sorted(sent, key=len, reverse=True):
        text = text.replace(value, "<SENT>")
    return [m.group(0) for m in _ABS.finditer(text) if not m.group(0).startswith(allowed)]


def _zip_paths(value: Any, roots: list[str]) -> list[str]:
    """Every export zip a response offers (a download button's file), searched for the server's folders."""
    found = []
    for item in value if isinstance(value, (list, tuple)) else [value]:
        path = item.get("value") if isinstance(item, dict) else None
        if isinstance(path, str) and path.endswith(".zip") and Path(path).is_file():
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    if name.endswith((".json", ".tex", ".txt")):
                        text = zf.read(name).decode("utf-8", "replace")
                        found += [f"{name}: {r}" for r in roots if r in text]
    return found


def _sweep_args(params: list[dict[str, Any]], hostile: list[str]) -> list[Any]:
    """An endpoint's arguments for the sweep: its defaults where it has them, else a number, a bool or one of
    the hostile paths and names."""
    return [
        p["parameter_default"]
        if p["parameter_has_default"] and r == 0
        else (
            2
            if str(p["python_type"]["type"]) in ("float", "int")
            else True
            if str(p["python_type"]["type"]) == "bool"
            else hostile[(r + i) % len(hostile)]
        )
        for r in range(2)
        for i, p in enumerate(params)
    ][: len(params)]


def test_no_response_names_a_server_path(tmp_path: Path) -> None:
    """Issue 42, item 7 and the sweep extended: with runs whose models are --models-dir folders, a failed run whose
    error names the folder, the problem set and the calibration file, shadow scores, a tau=auto refusal and a
    disk-full message, every endpoint is called (the interesting ones in order, then all of them with defaults and
    hostile paths); no answer, and no export zip, names a path of the server's (the client's own echoed values
    aside, and Gradio's download cache, which holds only a content hash and the file's name)."""
    from gradio.utils import get_upload_folder

    from storage.shadow import write_shadow
    from ui.choices import server_choices

    models, data = tmp_path / "models", tmp_path / "data"
    (models / "mine").mkdir(parents=True)
    (models / "mine" / "config.json").write_text("{}")
    data.mkdir()
    (data / "set.jsonl").write_text(json.dumps({"problem": "What is two and two?", "answer": "4"}) + "\n")
    pool = WorkerPoolDouble()
    roots = sorted(
        {
            str(tmp_path),
            str(tmp_path.resolve()),
            str(Path.cwd()),
            str(Path(sys.prefix).resolve()),
            str(ASSETS.parent),
            os.path.expanduser("~"),
        },
        key=len,
        reverse=True,
    )
    routes = ("/gradio_api/", "/uats-static/", "/static/", "/assets/", "/svelte/")  # the app's own web addresses
    allowed = (str(Path(get_upload_folder()).resolve()), get_upload_folder(), *routes)
    with served_fresh_app(tmp_path, pool, server_choices([models], [data])) as app:
        client, store = app["client"], app["store"]
        folder = str((models / "mine").resolve())
        said: list[tuple[str, list[str], Any]] = []

        def call(api: str, *args: Any, **kw: Any) -> None:
            out = job_result(client.submit(*args, **kw, api_name=api))
            said.append((api, [str(a) for a in [*args, *kw.values()] if isinstance(a, str) and a], out))

        call("/on_run", **on_run_args(client, policy="mine", prm="mine", tau="auto", budget=2))  # no calibration
        call(
            "/on_run", **on_run_args(client, dataset="set.jsonl", problem="set-0", policy="mine", prm="mine", budget=2)
        )
        [run] = store.list_runs()
        rid = run["run_id"]
        assert run["policy"] == folder  # the server's own record holds the spec; the client is shown its name
        store.mark_failed(
            rid,
            f"OSError: cannot load {folder}: no weights; problems from {data / 'set.jsonl'}; "
            f"db: the run log at 'sqlite:///{tmp_path}/app/runs.db' is full",
        )
        record_synthetic(store, "d3" * 16, n_nodes=30, seed=4, method="rebase", problem_id="synthetic-4")
        record_synthetic(store, "e3" * 16, n_nodes=30, seed=5, method="h-uats", problem_id="synthetic-4")
        write_shadow(
            store, "d3" * 16, [{"node_id": 1, "mc_scores": [0.5, 0.6], "mean": 0.55, "var": 0.005, "prm": folder}]
        )
        with store.engine.begin() as conn:  # the pair's baseline ran with the folder's model and met an error
            conn.execute(
                sa.update(S.runs)
                .where(S.runs.c.run_id == "d3" * 16)
                .values(
                    policy=folder, prm=folder, error=f"cancelled; calibration in {models / 'mine' / 'calibration.json'}"
                )
            )
        for ref in (rid, "d3" * 16):
            call("/open_run", **form_args(client, "/open_run", run_ref=ref))
            call("/inspect_node", **form_args(client, "/inspect_node", n=1))
        call("/list_runs", "(any)", "(any)", "(any)")
        call("/on_compare", "e3" * 16, "d3" * 16)
        call("/on_compare_export", "sweep")
        call("/on_dataset", "set.jsonl")
        for route in ("/config", "/gradio_api/info", "/"):  # the page and its API description
            said.append((route, [], httpx.get(f"{app['url']}{route}", timeout=60).text))
        endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        hostile = [str(tmp_path / "outside" / "x.jsonl"), "../outside/model", rid, "set.jsonl", "mine"]
        for name, spec in endpoints.items():
            call(name, *_sweep_args(spec["parameters"], hostile))
    assert len(said) > len(endpoints)
    leaks = {}
    for api, sent, out in said:
        text = outcome_text(out)
        found = _server_paths(text, sent, allowed) + [
            r for r in roots if r in text.replace(folder, "") and r not in " ".join(sent)
        ]
        found += _zip_paths(out, roots)
        if found:
            leaks[api] = found[:5]
    assert not leaks, leaks
