"""Export writers: names stay inside the export folder; the zip holds JSON, offline HTML, LaTeX, PNG, SVG."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from storage import RunStore
from testkit.doubles import record_synthetic
from ui.views.bundles import case_bundle, compare_bundle, run_bundle
from ui.views.cases import mine_cases
from ui.views.export import ExportError, export_path, safe_name, to_html, to_latex, write_bundle
from ui.views.latex import latex_escape
from ui.views.treedata import RunData
from ui.views.uncertainty import uncertainty_changes


@pytest.mark.parametrize("bad", ["../x", "..", "a/b", "a\\b", "/etc/passwd", "", " ", ".hidden", "x" * 200, "a b"])
def test_unsafe_names_are_refused(bad: str, tmp_path: Path) -> None:
    with pytest.raises(ExportError) as exc:
        export_path(tmp_path, bad, ".zip")
    assert exc.value.field == "export"


def test_safe_names_stay_inside(tmp_path: Path) -> None:
    assert safe_name("run-1.v2_final") == "run-1.v2_final"
    p = export_path(tmp_path, "ok-name", ".zip")
    assert p.parent == tmp_path.resolve()


def test_latex_is_escaped_and_html_is_standalone(synthetic_runs) -> None:
    a, _ = synthetic_runs
    bundle = run_bundle(a, name="t1")
    tex = to_latex(bundle)
    assert tex.startswith("% needs \\usepackage{booktabs}") and "\n\\begin{table}" in tex
    assert "\\toprule" in tex and "\\bottomrule" in tex
    assert latex_escape("50% of $x_1$ & {y}") == r"50\% of \$x\_1\$ \& \{y\}"
    page = to_html(bundle)
    assert "cdn" not in page.lower().split("<script>")[0]  # nothing fetched from the network
    assert "Plotly.newPlot" in page and len(page) > 3_000_000  # plotly.js inlined: opens offline from disk


def test_run_bundle_zip_round_trip(synthetic_runs, tmp_path: Path) -> None:
    a, _ = synthetic_runs
    path = write_bundle(run_bundle(a), tmp_path, images=False)
    assert path.parent == tmp_path.resolve() and path.name == "run-aaaa1111.zip"
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        assert {"run-aaaa1111.json", "run-aaaa1111.html", "run-aaaa1111.tex", "README.txt"} <= names
        data = json.loads(zf.read("run-aaaa1111.json"))
    assert data["kind"] == "run" and data["run"]["run_id"] == "aaaa1111"
    assert len(data["nodes"]) == len(a.nodes) and len(data["iterations"]) == len(a.iterations)
    assert not list(tmp_path.glob("*.part"))


def test_compare_and_case_bundles(synthetic_runs, tmp_path: Path) -> None:
    a, b = synthetic_runs
    cmp = compare_bundle(a, b)
    assert cmp.data["first_divergence"] is None and len(cmp.table_rows) == 2  # these two never part
    assert [r["node_id"] for r in cmp.data["uncertainty_changed"]["a"]] == [c.node_id for c in uncertainty_changes(a)]
    assert "decided by both runs" in cmp.caption
    assert cmp.figures[0][1]["layout"]["xaxis2"]["domain"][0] > 0.5  # side by side
    nid = next(i for i in a.nodes if i != 0 and a.nodes[i]["var"] is not None)
    case = case_bundle(a, nid)
    assert case.data["node"]["id"] == nid and case.data["trace"][-1] == a.nodes[nid]["step"]
    path = write_bundle(case, tmp_path, images=False)
    with zipfile.ZipFile(path) as zf:
        assert json.loads(zf.read(f"{case.name}.json"))["kind"] == "case"


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install -y chromium)")
def test_png_and_svg_through_kaleido(synthetic_runs, tmp_path: Path) -> None:
    a, _ = synthetic_runs
    store_cases = case_bundle(a, next(i for i in a.nodes if i != 0 and a.nodes[i]["var"] is not None))
    path = write_bundle(store_cases, tmp_path, images=True)
    with zipfile.ZipFile(path) as zf:
        png = zf.read(f"{store_cases.name}.png")
        svg = zf.read(f"{store_cases.name}.svg")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    assert b"<svg" in svg[:500]


def test_cases_table_in_a_case_export(synthetic_runs) -> None:
    a, _ = synthetic_runs
    store = RunStore("sqlite://")
    record_synthetic(store, "cc", n_nodes=80, seed=2)
    pools = mine_cases(store, per_quadrant=2)
    nid = next(c.node_id for cs in pools.values() for c in cs)
    bundle = case_bundle(RunData.load(store, "cc"), nid, others=pools)
    assert bundle.table_rows and all(r[0] in pools for r in bundle.table_rows)


def test_run_image_names_the_chosen_paths_numbers(synthetic_runs) -> None:
    """A static image has only the compact glyphs: the exported tree writes R̄ and σ² beside each node of the
    chosen path (one a row), the numbers of the export's table."""
    from ui.views.figstyle import fmt_mean, fmt_var

    data = synthetic_runs[0]
    bundle = run_bundle(data)
    notes = [a for a in bundle.figures[0][1]["layout"]["annotations"] if a.get("name") == "path numbers"]
    assert notes and len(notes) == len(bundle.table_rows)
    assert len({a["y"] for a in notes}) == len(notes)  # one per row of the tree
    for note, row in zip(notes, bundle.table_rows):
        assert note["text"] == f"R̄ {fmt_mean(row[2])} σ² {fmt_var(row[3])}"


def test_the_same_name_written_at_once_gives_whole_zips(synthetic_runs, tmp_path: Path) -> None:
    """Issue 42, item 6: six writers of one export name at once (two sessions of the trial, three times): each
    writes its own temporary file and renames it into place, so every zip there is whole (the shared
    '<name>.zip.part' gave a BadZipFile in 1 of 10 rounds), and no temporary file is left."""
    import threading

    a, b = synthetic_runs
    bundles = [run_bundle(a, name="same"), compare_bundle(a, b, name="same")] * 3
    paths, errors = [], []

    def write(bundle: object) -> None:
        try:
            paths.append(write_bundle(bundle, tmp_path, images=False))
        except Exception as exc:  # noqa: BLE001 - what a writer met is the test's finding
            errors.append(exc)

    for _ in range(3):
        threads = [threading.Thread(target=write, args=(bd,)) for bd in bundles]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with zipfile.ZipFile(tmp_path / "same.zip") as zf:
            assert zf.testzip() is None and json.loads(zf.read("same.json"))["kind"] in ("run", "compare")
    assert not errors and len(paths) == 18 and set(paths) == {(tmp_path / "same.zip").resolve()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.zip"]


def test_exports_keep_to_their_quota_oldest_first(tmp_path: Path) -> None:
    """Issue 42, item 4: each requester writes into a folder of its own, held to its quota; the whole export
    folder to the total; the oldest files make room; an export larger than the quota is refused."""
    import os

    from ui.views.export import ExportQuota, ExportTarget, store_export

    quota = ExportQuota(owner_bytes=3_000, total_bytes=5_000)
    alice, bob = ExportTarget(tmp_path, "user:alice", quota), ExportTarget(tmp_path, "user:bob", quota)
    assert alice.folder != bob.folder and alice.folder.parent == bob.folder.parent == tmp_path
    made = []
    for i in range(4):  # alice: 4 x 1,000 bytes against her 3,000
        made.append(store_export(alice, f"a{i}", ".zip", b"a" * 1_000))
        os.utime(made[-1], (1_000 + i, 1_000 + i))  # mtimes a second apart: the oldest is a0
    assert sorted(p.name for p in alice.folder.iterdir()) == ["a1.zip", "a2.zip", "a3.zip"]
    for i in range(3):  # bob: 3 x 1,000; his third passes the total (5,000): the oldest of all, alice's a1, goes
        path = store_export(bob, f"b{i}", ".zip", b"b" * 1_000)
        os.utime(path, (2_000 + i, 2_000 + i))
    assert sorted(p.name for p in alice.folder.iterdir()) == ["a2.zip", "a3.zip"]
    assert sorted(p.name for p in bob.folder.iterdir()) == ["b0.zip", "b1.zip", "b2.zip"]
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) == quota.total_bytes
    # replacing b2 (its own bytes not counted) with 1,500: bob's quota makes his oldest, b0, go; the total then fits
    same = store_export(bob, "b2", ".zip", b"c" * 1_500)
    assert same.read_bytes() == b"c" * 1_500 and sorted(p.name for p in bob.folder.iterdir()) == ["b1.zip", "b2.zip"]
    assert sorted(p.name for p in alice.folder.iterdir()) == ["a2.zip", "a3.zip"]
    with pytest.raises(ExportError, match=r"^export: this export is 0\.0 MB, more than the export quota"):
        store_export(alice, "huge", ".zip", b"x" * 3_001)
    assert not (alice.folder / "huge.zip").exists() and not [p for p in tmp_path.rglob(".*")]


def test_a_full_export_disk_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50, item 10: a full export disk came back as {'error': None} with a traceback. The file system's own
    error (ENOSPC, as write(2) raises it) is now an ExportError naming the file, and nothing is left behind."""
    import errno
    import os

    from ui.views.export import ExportError, ExportTarget, store_export

    real_fdopen = os.fdopen

    def full(fd: int, *args: Any, **kwargs: Any) -> Any:
        handle = real_fdopen(fd, *args, **kwargs)

        def write(_: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        handle.write = write
        return handle

    monkeypatch.setattr("ui.views.export.os.fdopen", full)
    with pytest.raises(ExportError, match=r"^export: run\.zip could not be written: the export folder is full; "):
        store_export(ExportTarget(tmp_path, "user:ann"), "run", ".zip", b"x" * 1000)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
