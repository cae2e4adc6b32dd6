"""--policy-server NAME=URL: the app offers a policy served by an OpenAI-compatible server under its NAME only (the
URL never reaches a page), and a run with it goes through the worker's path to the server
(OpenAICompletionsServerDouble, tests/openai_server.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.doubles import WorkerPoolDouble
from tests.openai_server import OpenAICompletionsServerDouble
from tests.serving import call_named, on_run_args, outcome_text, served_fresh_app
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
            typed = call_named(client, "/on_run", on_run_args(client, policy=f"openai:{server.url}", prm=EMBEDDED,
                                                                budget=4))
            # refused (by the dropdown's own list, before our handler's) and nothing queued
            assert "not in the list of choices" in outcome_text(typed) and not pool.submitted
            notice = client.predict(**on_run_args(client, policy="box (server)", prm=EMBEDDED, budget=4,
                                                policy_opts="seed=1"), api_name="/on_run")
            assert "queued" in outcome_text(notice), notice
            (req,) = pool.submitted
            execute(req, ModelCache(), store)
            run = store.get_run(req.run_id)
            nodes = [n for n in store.get_nodes(req.run_id) if n["id"]]
        assert run["status"] == "finished", run["error"]
        assert server.requests and all(r["model"] == str(WORLD_POLICY) for r in server.requests)
        assert nodes and all(n["num_tokens"] == len(n["step"]) + 1 for n in nodes)  # the server's counts


@pytest.mark.parametrize("flag, line", [
    ("box", "policy-server: 'box': write NAME=URL, e.g. qwen=http://gpu-box:8000"),
    ("box=gpu:8000", "policy-server: box: 'gpu:8000' is not a server URL; write openai:http://HOST:PORT")])
def test_a_malformed_policy_server_flag_is_one_line(flag: str, line: str, tmp_path: Path, capsys) -> None:
    from ui.choices import server_choices
    from ui.launch import main

    with pytest.raises(ConfigError) as err:
        server_choices(servers=[flag])
    assert str(err.value).startswith(line)
    assert main(["--policy-server", flag, "--db", str(tmp_path / "runs.db")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {line}")
    assert not (tmp_path / "runs.db").exists()
