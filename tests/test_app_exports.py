"""Exports through the served app (gradio_client, as any client): each requester's exports go to a folder of its
own, so two sessions building the same name at once each get a whole zip of their own (issue 42, item 6), and the
export folder keeps to its quota, the oldest exports deleted (item 4)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from storage import RunStore
from testkit.doubles import WorkerPoolDouble, record_synthetic
from testkit.serving import app_client, served_app

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
        with served_app(
            store, WorkerPoolDouble(store), tmp_path, export_quota=ExportQuota(owner_bytes=4 << 20, total_bytes=8 << 20)
        ) as url:
            client = app_client(url)
            for i in range(6):
                _export(client, f"e{i}").result(timeout=600)
        files = sorted(p for p in (tmp_path / "exports").rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in files)
        assert 0 < size <= 4 << 20 and "e5.zip" in {p.name for p in files} and "e0.zip" not in {p.name for p in files}
        assert len(files) < 6
    finally:
        store.close()


def _disk_bytes(*folders: Path) -> int:
    """Bytes the files under `folders` hold, each file once however many links it has."""
    seen: dict[tuple[int, int], int] = {}
    for folder in folders:
        for p in folder.rglob("*"):
            if p.is_file() and not p.is_symlink():
                st = p.stat()
                seen[(st.st_dev, st.st_ino)] = st.st_size
    return sum(seen.values())


def test_gradios_cache_holds_no_export_beyond_the_quota(tmp_path: Path, monkeypatch: object) -> None:
    """Issue 50, item 4: each export left a ~1.5 MB copy in Gradio's cache for an hour (25 exports grew it 38 MB while
    the export folder kept its quota). Now what the exports hold on disk, their served copies in Gradio's cache
    included, keeps to the quota, and a deleted export's copy goes with it."""
    from ui.views.export import ExportQuota

    cache = tmp_path / "gradio-cache"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(cache))  # Gradio's cache for the blocks built below
    store = _store(tmp_path)
    quota = ExportQuota(owner_bytes=4 << 20, total_bytes=8 << 20)
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, export_quota=quota) as url:
            client = app_client(url, download_files=str(tmp_path / "client"))  # the client's copies, not the server's
            for i in range(6):
                button, _ = _export(client, f"e{i}").result(timeout=600)
                assert zipfile.ZipFile(button["value"]).testzip() is None  # each one downloads whole
                assert _disk_bytes(cache, tmp_path / "exports") <= quota.owner_bytes
            kept = {p.name for p in (tmp_path / "exports").rglob("*.zip")}
            served = {p.name for p in cache.rglob("*.zip")}
            assert "e5.zip" in kept and "e0.zip" not in kept and served == kept
    finally:
        store.close()


def test_an_export_is_served_to_its_owner_alone(tmp_path: Path, monkeypatch: object) -> None:
    """Issue 50, item 4: any signed-in user downloaded another's export by its folder's name. With a login, the
    export folder is not served at all and a served copy only to its owner."""
    import httpx

    cache = tmp_path / "gradio-cache"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(cache))
    store = _store(tmp_path)
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("ann", "ann-pw"), ("bob", "bob-pw")]) as url:
            _export(app_client(url, auth=("ann", "ann-pw"), download_files=False), "mine").result(timeout=600)
            [copy] = cache.rglob("mine.zip")
            [original] = (tmp_path / "exports").rglob("mine.zip")
            sessions = {}
            for user in ("ann", "bob"):
                sessions[user] = httpx.Client(base_url=url, timeout=60)
                assert (
                    sessions[user].post("/login", data={"username": user, "password": f"{user}-pw"}).status_code == 200
                )
            assert sessions["ann"].get(f"/gradio_api/file={copy}").status_code == 200
            assert sessions["bob"].get(f"/gradio_api/file={copy}").status_code == 404
            assert httpx.get(f"{url}/gradio_api/file={copy}", timeout=60).status_code in (401, 403, 404)
            for user in ("ann", "bob"):  # the export folder by name: never served
                assert sessions[user].get(f"/gradio_api/file={original}").status_code == 403
    finally:
        store.close()
