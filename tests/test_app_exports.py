"""Exports through the served app (gradio_client, as any client): each requester's exports go to a folder of its
own, so two sessions building the same name at once each get a whole zip of their own (issue 42, item 6), and the
export folder keeps to its quota, the oldest exports deleted (item 4)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from storage import RunStore

from .doubles import WorkerPoolDouble, record_synthetic
from .serving import app_client, served_app

A, B = "a2" * 16, "b2" * 16


def _store(tmp: Path) -> RunStore:
    store = RunStore(str(tmp / "runs.db"))
    record_synthetic(store, A, n_nodes=40, seed=1, method="h-uats", problem_id="synthetic-1")
    record_synthetic(store, B, n_nodes=40, seed=2, method="rebase", problem_id="synthetic-1")
    return store


def _export(client: object, name: str) -> object:
    client.predict(A, B, api_name="/on_compare")
    return client.submit(name, api_name="/on_compare_export")


def test_two_sessions_exporting_one_name_at_once_get_whole_zips_of_their_own(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path) as url:
            clients = [app_client(url), app_client(url)]
            for _ in range(3):
                jobs = [_export(c, "same") for c in clients]
                got = [job.result(timeout=600) for job in jobs]
                for button, _notice in got:  # the download button's update; its value, the zip the client fetched
                    with zipfile.ZipFile(button["value"]) as zf:
                        assert zf.testzip() is None and "same.json" in zf.namelist()
        on_server = sorted((tmp_path / "exports").rglob("same.zip"))
        assert len(on_server) == 2 and on_server[0].parent != on_server[1].parent
        assert not [p for p in (tmp_path / "exports").rglob("*.part")]
    finally:
        store.close()


def test_the_export_folder_keeps_to_its_quota(tmp_path: Path) -> None:
    """Issue 42's trial wrote 41 exports (66 MB); here one session's quota holds about two of them: after six the
    folder holds its newest two, within the quota."""
    from ui.views.export import ExportQuota

    store = _store(tmp_path)
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, export_quota=ExportQuota(owner_bytes=4 << 20,
                                                                                          total_bytes=8 << 20)) as url:
            client = app_client(url)
            for i in range(6):
                _export(client, f"e{i}").result(timeout=600)
        files = sorted(p for p in (tmp_path / "exports").rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in files)
        assert 0 < size <= 4 << 20 and "e5.zip" in {p.name for p in files} and "e0.zip" not in {p.name for p in files}
        assert len(files) < 6
    finally:
        store.close()
