"""Serving the app in-process for tests that call it through gradio_client, as the launcher serves it."""

from __future__ import annotations

import html
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A loopback port nothing listens on now (the tests and the benchmarks serve the app on it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch_served(demo: Any, port: int, **launch: Any) -> str:
    """Serve `demo` on 127.0.0.1:`port` without blocking and return its URL once it answers: the test waits for its
    server itself, with the launcher's wait (ui.launch.wait_until_answering), never with Gradio's own one-HEAD, 3 s
    check (under load it failed a launch: "localhost is not accessible"; launch_kwargs turns it off as well)."""
    from ui.launch import wait_until_answering

    demo.launch(
        **{
            "quiet": True,
            "_frontend": False,
            **launch,
            "server_name": "127.0.0.1",
            "server_port": port,
            "prevent_thread_lock": True,
        }
    )
    url = f"http://127.0.0.1:{port}"
    wait_until_answering(f"{url}/")
    return url


@contextmanager
def served_app(store: Any, pool: Any, folder: Path, export_quota: Any = None, **launch: Any) -> Iterator[str]:
    """The page over `store` and `pool`, served on a free loopback port with the launcher's settings (plus
    `launch`, e.g. auth=[...]; `export_quota`: the export folder's, default ExportQuota()): its URL while the block
    runs."""
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    from ui.app_ui import QUEUE_KWARGS, build_demo, launch_kwargs

    quota = {} if export_quota is None else {"export_quota": export_quota}
    demo = build_demo(store, pool, folder / "exports", folder / "reports", **quota)
    url = launch_served(demo.queue(**QUEUE_KWARGS), free_port(), **{**launch_kwargs(folder / "exports"), **launch})
    try:
        yield url
    finally:
        demo.close()


# How long a session's finished stream may take to close before a call says so (it closes within milliseconds)
STREAM_CLOSE_S = 60.0


def app_client(url: str, **kwargs: Any) -> Any:
    """gradio_client's Client for an app served here (plain HTTP on loopback), each call sent once the session's
    finished stream has closed. ssl_verify=False because there is no TLS to verify: gradio_client opens a new httpx
    client for every request, and with verification on each one loads the CA bundle first, most of a call's CPU (an
    endpoint sweep took three times as long).

    Why the wait: the server ends a session's event stream right after the last pending event's result
    (gradio/routes.py sends close_stream after process_completed when none is left), and `predict` returns on that
    result. A call sent before the client has read close_stream is counted on the closing stream (its `stream_open`
    is still true), and when that stream ends the client cancels it, while the server holds its messages for a new
    stream that never opens: `CancelledError` (CI, 2026-11-30, tests/test_app_exports.py, a predict then a submit)."""
    import time

    from gradio_client import Client

    class SessionClient(Client):  # type: ignore[misc]
        def submit(self, *args: Any, **kw: Any) -> Any:  # predict submits too
            deadline = time.monotonic() + STREAM_CLOSE_S
            while True:
                with self.pending_lock:  # the stream is open with no event left: the server is closing it
                    closing = self.stream_open and not self.pending_event_ids
                if not closing:
                    return super().submit(*args, **kw)
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"gradio_client: the session's finished stream did not close in {STREAM_CLOSE_S} s"
                    )
                time.sleep(0.005)

    return SessionClient(url, verbose=False, ssl_verify=False, **kwargs)


def form_args(client: Any, api_name: str = "/on_run", **values: Any) -> dict[str, Any]:
    """Every argument of an endpoint that reads the page's form or view filters (/on_run, /on_pair, /open_run,
    ...): `values`, else the component's default, else the embedded world's first problem, no question typed
    and no search text."""
    from ui.choices import ARITH

    fallback = {
        "dataset": ARITH,
        "dataset_path": "",
        "problem": "arith-test-0",
        "free_question": "",
        "free_answer": "",
        "policy": "",
        "prm": "",
        "policy_opts": "",
        "prm_opts": "",
        "search": "",
    }
    params = client.view_api(return_format="dict", print_info=False)["named_endpoints"][api_name]["parameters"]
    out = {}
    for p in params:
        name = p["parameter_name"]
        out[name] = (
            values[name] if name in values else p["parameter_default"] if p["parameter_has_default"] else fallback[name]
        )
    return out


@contextmanager
def served_fresh_app(tmp: Path, pool: Any, choices: Any = None) -> Iterator[dict[str, Any]]:
    """The app over a fresh run log, launched as ui/launch.py launches it (launch_kwargs, errors shown)."""
    from storage import RunStore
    from ui.app_ui import QUEUE_KWARGS, build_demo, launch_kwargs

    store = RunStore(str(tmp / "app" / "runs.db"))
    (tmp / "reports").mkdir(exist_ok=True)
    extra = {} if choices is None else {"choices": choices}
    demo = build_demo(store, pool, tmp / "exports", tmp / "reports", **extra)
    url = launch_served(demo.queue(**QUEUE_KWARGS), free_port(), **launch_kwargs(tmp / "exports"))
    try:
        yield {"url": url, "client": app_client(url), "store": store, "demo": demo}
    finally:
        demo.close()
        store.close()


def on_run_args(client: Any, **values: Any) -> dict[str, Any]:
    """/on_run's parameters by name: the form's defaults (the world's first problem picked, as the page does
    when it loads), with `values` over them."""
    params = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/on_run"]["parameters"]
    args = {p["parameter_name"]: p.get("parameter_default") for p in params}
    args["problem"] = "arith-test-0"
    args.update({k: v for k, v in values.items() if k in args})
    return args


def call_api(client: Any, api_name: str, args: list[Any]) -> Any:
    """An endpoint called with positional arguments; the exception it raised when it refused."""
    try:
        return client.predict(*args, api_name=api_name)
    except Exception as exc:  # an endpoint refusing the value is fine; only what it opens matters here
        return exc


def job_result(job: Any) -> Any:
    """A submitted call's outcome: its outputs, or the exception it raised when the endpoint refused."""
    try:
        return job.result(timeout=600)
    except TimeoutError:
        raise  # still running: the checks after it would not see what it does
    except Exception as exc:  # a refusal: its text is what the client reads
        return exc


def call_named(client: Any, api_name: str, args: dict[str, Any]) -> Any:
    """An endpoint called with its arguments by name; the exception it raised when it refused."""
    try:
        return client.predict(**args, api_name=api_name)
    except Exception as exc:  # a refusal: its text is what the client reads
        return exc


def outcome_text(outcome: Any) -> str:
    """What a client reads back from a call: its outputs or the error it raised, as text (HTML entities of the
    escaped notices decoded)."""
    return html.unescape(str(outcome) if isinstance(outcome, Exception) else json.dumps(outcome, default=str))


def notice_text(value: Any) -> str:
    """A notice as the page reads it (the app escapes Markdown syntax as character references)."""
    return html.unescape(str(value.get("value") if isinstance(value, dict) else value))


def save_note(client: Any, run_id: str, node: int, note: str) -> str:
    """Open the run, inspect `node` and save `note` on it, as a page does: the notice it answers with."""
    client.predict(**form_args(client, "/open_run", run_ref=run_id), api_name="/open_run")
    client.predict(**form_args(client, "/inspect_node", n=node), api_name="/inspect_node")
    return notice_text(client.predict(True, note, api_name="/on_save_note"))
