"""Serving the app in-process for tests that call it through gradio_client, as the launcher serves it."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from benchmarks.serving import free_port


@contextmanager
def served_app(store: Any, pool: Any, folder: Path, export_quota: Any = None, **launch: Any) -> Iterator[str]:
    """The page over `store` and `pool`, served on a free loopback port with the launcher's settings (plus
    `launch`, e.g. auth=[...]; `export_quota`: the export folder's, default ExportQuota()): its URL while the block
    runs."""
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    from ui.app_ui import QUEUE_KWARGS, build_demo, launch_kwargs

    quota = {} if export_quota is None else {"export_quota": export_quota}
    demo = build_demo(store, pool, folder / "exports", folder / "reports", **quota)
    port = free_port()
    demo.queue(**QUEUE_KWARGS).launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                                      **{**launch_kwargs(folder / "exports"), **launch})
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        demo.close()


def app_client(url: str, **kwargs: Any) -> Any:
    """gradio_client's Client for an app served here (plain HTTP on loopback). ssl_verify=False because there is
    no TLS to verify: gradio_client opens a new httpx client for every request, and with verification on each
    one loads the CA bundle first, most of a call's CPU (an endpoint sweep took three times as long)."""
    from gradio_client import Client

    return Client(url, verbose=False, ssl_verify=False, **kwargs)


def form_args(client: Any, api_name: str = "/on_run", **values: Any) -> dict[str, Any]:
    """Every argument of an endpoint that reads the page's form or view filters (/on_run, /on_pair, /open_run,
    ...): `values`, else the component's default, else the embedded world's first problem, no question typed
    and no search text."""
    from ui.choices import ARITH

    fallback = {"dataset": ARITH, "dataset_path": "", "problem": "arith-test-0", "free_question": "",
                "free_answer": "", "policy": "", "prm": "", "policy_opts": "", "prm_opts": "", "search": ""}
    params = client.view_api(return_format="dict", print_info=False)["named_endpoints"][api_name]["parameters"]
    out = {}
    for p in params:
        name = p["parameter_name"]
        out[name] = (values[name] if name in values else p["parameter_default"] if p["parameter_has_default"]
                     else fallback[name])
    return out
