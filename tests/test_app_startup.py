"""Issue 50, item 12: start-up under load. 3 of 33 starts died in Gradio's own localhost self-check (one HEAD, a
3 s timeout) while the warm workers loaded, and the HTTP server then answered for ~30 s with the pool already shut
down. Now the launcher waits for its server patiently, and a start that fails stops the server and the pool
together, exit code 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from testkit.doubles import WorkerPoolDouble
from testkit.serving import free_port
from ui import launch


@pytest.fixture()
def served(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """launch.main with a double for the pool, a real server, and its wait (serve_until_stopped) returning at once
    (the test is the user who stops it): the demos it launched."""
    for name in ("UATS_AUTH", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
        monkeypatch.delenv(name, raising=False)
    demos: list[Any] = []
    monkeypatch.setattr("ui.jobs.pool.WorkerPool", WorkerPoolDouble)
    monkeypatch.setattr("ui.jobs.pool.default_pair_request", lambda: None)
    monkeypatch.setattr(launch, "serve_until_stopped", lambda demo: demos.append(demo))
    return demos


def test_a_slow_first_answer_does_not_kill_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, served: list[Any]
) -> None:
    """The first probes time out (httpx raises TimeoutException, as it did after 3 s on the loaded machine): the
    server starts anyway and answers."""
    real_head, slow = httpx.head, {"left": 2}

    def loaded_head(url: str, **kw: Any) -> httpx.Response:
        if slow["left"]:
            slow["left"] -= 1
            raise httpx.ReadTimeout("timed out")
        return real_head(url, **kw)

    monkeypatch.setattr(httpx, "head", loaded_head)
    port = free_port()
    seen: list[int] = []
    monkeypatch.setattr(
        launch,
        "serve_until_stopped",
        lambda demo: seen.append(httpx.get(f"http://127.0.0.1:{port}/config", timeout=30).status_code),
    )
    rc = launch.main(["--port", str(port), "--db", str(tmp_path / "runs.db"), "--export-dir", str(tmp_path / "ex")])
    assert rc == 0 and seen == [200] and slow["left"] == 0


def test_a_server_that_never_answers_fails_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, served: list[Any], capsys: pytest.CaptureFixture
) -> None:
    """No answer within the launcher's wait: one line, exit code 1, and nothing left answering on the port."""

    def never(url: str, **kw: Any) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out")

    monkeypatch.setattr(httpx, "head", never)
    monkeypatch.setattr(launch.wait_until_answering, "__defaults__", (1.0,))
    port = free_port()
    rc = launch.main(["--port", str(port), "--db", str(tmp_path / "runs.db"), "--export-dir", str(tmp_path / "ex")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err == [
        f"error: start: the server at http://127.0.0.1:{port}/ did not answer within 1 s "
        "(ConnectTimeout); nothing was started"
    ]
    with pytest.raises(httpx.ConnectError):  # the server went with the pool
        httpx.get(f"http://127.0.0.1:{port}/config", timeout=5)
    assert served == []  # it never got as far as serving
