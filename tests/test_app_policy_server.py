"""--policy-server NAME=URL: the app offers a policy served by an OpenAI-compatible server under its NAME only (the
URL never reaches a page), and a run with it goes through the worker's path to the server
(OpenAICompletionsServerDouble, testkit/openai_server.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from testkit.doubles import WorkerPoolDouble
from testkit.openai_server import OpenAICompletionsServerDouble
from testkit.serving import call_named, on_run_args, outcome_text, served_fresh_app
from uats_core.backends._loading import load_tokenizer, resolve_spec
from uats_core.config import ConfigError
from uats_core.paths import WORLD_POLICY


def test_a_policy_server_is_offered_by_name_and_a_run_reaches_it(tmp_path: Path) -> None:
    from ui.choices import EMBEDDED, server_choices
    from ui.jobs.warm import ModelCache, execute

    tokenizer = load_tokenizer(resolve_spec(str(WORLD_POLICY), "policy"), "policy")
    # vllm serve FOLDER names the model by its folder: the policy reads the tokenizer there
    with OpenAICompletionsServerDouble(tokenizer.decode, model=str(WORLD_POLICY)) as server:
        choices = server_choices(servers=[f"box={server.url}"])
        assert choices.policies["box (server)"] == f"openai:{server.url}/v1"
        assert "box (server)" not in choices.prms  # the PRM stays local: MC dropout needs dropout at inference
        pool = WorkerPoolDouble()
        with served_fresh_app(tmp_path, pool, choices) as app:
            client, store = app["client"], app["store"]
            assert server.url not in httpx.get(f"{app['url']}/config", timeout=30).text
            typed = call_named(
                client, "/on_run", on_run_args(client, policy=f"openai:{server.url}", prm=EMBEDDED, budget=4)
            )
            # refused (by the dropdown's own list, before our handler's) and nothing queued
            assert "not in the list of choices" in outcome_text(typed) and not pool.submitted
            notice = client.predict(
                **on_run_args(client, policy="box (server)", prm=EMBEDDED, budget=4, policy_opts="seed=1"),
                api_name="/on_run",
            )
            assert "queued" in outcome_text(notice), notice
            (req,) = pool.submitted
            execute(req, ModelCache(), store)
            run = store.get_run(req.run_id)
            nodes = [n for n in store.get_nodes(req.run_id) if n["id"]]
        assert run["status"] == "finished", run["error"]
        assert server.requests and all(r["model"] == str(WORLD_POLICY) for r in server.requests)
        assert nodes and all(n["num_tokens"] == len(n["step"]) + 1 for n in nodes)  # the server's counts


@pytest.mark.parametrize(
    "flag, line",
    [
        ("box", "policy-server: 'box': write NAME=URL, e.g. qwen=http://gpu-box:8000"),
        ("box=gpu:8000", "policy-server: box: 'gpu:8000' is not a server URL; write openai:http://HOST:PORT"),
    ],
)
def test_a_malformed_policy_server_flag_is_one_line(flag: str, line: str, tmp_path: Path, capsys) -> None:
    from ui.choices import server_choices
    from ui.launch import main

    with pytest.raises(ConfigError) as err:
        server_choices(servers=[flag])
    assert str(err.value).startswith(line)
    assert main(["--policy-server", flag, "--db", str(tmp_path / "runs.db")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {line}")
    assert not (tmp_path / "runs.db").exists()


def test_a_server_with_credentials_is_stored_and_shown_by_its_name_only(tmp_path: Path) -> None:
    """Issue 50, item 2: `--policy-server creds=http://svc:PASSWORD@host`: the run's row holds the server's name,
    the password reaches the server as HTTP Basic and nothing the app stores; an upstream error's own words (here a
    database URL with a password) are not relayed. Main stored the URL with the password in runs.policy."""
    import base64
    import sqlite3

    from ui.choices import EMBEDDED, server_choices
    from ui.jobs.warm import ModelCache, execute

    secret, leak = "pa55-SECRET", "db=postgres://admin:pg-SECRET@db.internal/prod"
    tokenizer = load_tokenizer(resolve_spec(str(WORLD_POLICY), "policy"), "policy")
    body = ('{"error": {"message": "%s", "type": "invalid_request_error"}}' % leak).encode()
    with (
        OpenAICompletionsServerDouble(tokenizer.decode, model=str(WORLD_POLICY)) as good,
        OpenAICompletionsServerDouble(tokenizer.decode, model=str(WORLD_POLICY), error_body=body) as bad,
    ):
        flags = [
            f"creds={good.url.replace('http://', f'http://svc:{secret}@')}",
            f"broken={bad.url.replace('http://', f'http://svc:{secret}@')}",
        ]
        pool = WorkerPoolDouble()
        with served_fresh_app(tmp_path, pool, server_choices(servers=flags)) as app:
            client, store = app["client"], app["store"]
            assert secret not in httpx.get(f"{app['url']}/config", timeout=30).text
            for name in ("creds (server)", "broken (server)"):
                notice = client.predict(**on_run_args(client, policy=name, prm=EMBEDDED, budget=4), api_name="/on_run")
                assert "queued" in outcome_text(notice), notice
            runs = {}
            for req in pool.submitted:
                assert secret not in store.get_run(req.run_id)["policy"]  # the queued row already
                execute(req, ModelCache(), store)
                runs[store.get_run(req.run_id)["policy"]] = store.get_run(req.run_id)
        assert good.headers[0]["Authorization"] == "Basic " + base64.b64encode(f"svc:{secret}".encode()).decode()
    assert runs["creds (server)"]["status"] == "finished", runs["creds (server)"]["error"]
    failed = runs["broken (server)"]
    assert failed["status"] == "failed"
    assert "the server broken (server) refused completions (HTTP 400, invalid_request_error)" in failed["error"]
    con = sqlite3.connect(tmp_path / "app" / "runs.db")
    try:
        dump = "\n".join(con.iterdump())
    finally:
        con.close()
    assert secret not in dump and "pg-SECRET" not in dump and "postgres://" not in dump
