"""The tests' gradio_client (testkit.serving.app_client) sends a call only once the session's finished stream has
closed: a call sent in the moment between a result and the stream's close was cancelled by the client (CI,
2026-11-30). Here that moment is widened: the client's reader reads the server's close_stream CLOSE_DELAY_S late.
Without app_client's wait the second call of the first round raises CancelledError."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from storage import RunStore
from testkit.doubles import WorkerPoolDouble, record_synthetic
from testkit.serving import app_client, served_app

A, B = "a3" * 16, "b3" * 16


class _SlowCloseJson:
    """json for gradio_client's stream reader: a close_stream message is read CLOSE_DELAY_S late."""

    CLOSE_DELAY_S = 0.5

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)

    def loads(self, s: Any, *args: Any, **kwargs: Any) -> Any:
        if "close_stream" in (s if isinstance(s, str) else s.decode()):
            time.sleep(self.CLOSE_DELAY_S)
        return json.loads(s, *args, **kwargs)


def test_a_call_right_after_a_result_waits_for_the_stream_to_close(tmp_path: Path, monkeypatch: Any) -> None:
    import gradio_client.client as gc

    store = RunStore(str(tmp_path / "runs.db"))
    record_synthetic(store, A, n_nodes=20, seed=1, method="h-uats", problem_id="synthetic-1")
    record_synthetic(store, B, n_nodes=20, seed=2, method="rebase", problem_id="synthetic-1")
    monkeypatch.setattr(gc, "json", _SlowCloseJson())
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path) as url:
            client = app_client(url)
            for _ in range(2):
                client.predict(A, B, api_name="/on_compare")
                client.submit(A, B, api_name="/on_compare").result(timeout=120)  # sent at once after the result
    finally:
        store.close()
