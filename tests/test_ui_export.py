"""Export writers: names stay inside the export folder; the zip holds JSON, offline HTML, LaTeX, PNG, SVG."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from storage import RunStore
from ui.views.bundles import case_bundle, compare_bundle, run_bundle
from ui.views.cases import mine_cases
from ui.views.export import ExportError, export_path, latex_escape, safe_name, to_html, to_latex, write_bundle
from ui.views.treedata import RunData
from ui.views.uncertainty import uncertainty_changes
from tests.doubles import record_synthetic


@pytest.fixture(scope="module")
def runs() -> tuple[RunData, RunData]:
    store = RunStore("sqlite://")
    for rid, method, seed in (("aaaa1111", "h-uats", 1), ("bbbb2222", "rebase", 2)):
        record_synthetic(store, rid, n_nodes=120, seed=seed, method=method)
    return RunData.load(store, "aaaa1111"), RunData.load(store, "bbbb2222")


@pytest.mark.parametrize("bad", ["../x", "..", "a/b", "a\\b", "/etc/passwd", "", " ", ".hidden", "x" * 200, "a b"])
def test_unsafe_names_are_refused(bad: str, tmp_path: Path) -> None:
    with pytest.raises(ExportError) as exc:
        export_path(tmp_path, bad, ".zip")
    assert exc.value.field == "export"


def test_safe_names_stay_inside(tmp_path: Path) -> None:
    assert safe_name("run-1.v2_final") == "run-1.v2_final"
    p = export_path(tmp_path, "ok-name", ".zip")
    assert p.parent == tmp_path.resolve()


def test_latex_is_escaped_and_html_is_standalone(runs) -> None:
    a, _ = runs
    bundle = run_bundle(a, name="t1")
    tex = to_latex(bundle)
    assert tex.startswith("% needs \\usepackage{booktabs}") and "\n\\begin{table}" in tex
    assert "\\toprule" in tex and "\\bottomrule" in tex
    assert latex_escape("50% of $x_1$ & {y}") == r"50\% of \$x\_1\$ \& \{y\}"
    page = to_html(bundle)
    assert "cdn" not in page.lower().split("<script>")[0]  # nothing fetched from the network
    assert "Plotly.newPlot" in page and len(page) > 3_000_000  # plotly.js inlined: opens offline from disk


def test_run_bundle_zip_round_trip(runs, tmp_path: Path) -> None:
    a, _ = runs
    path = write_bundle(run_bundle(a), tmp_path, images=False)
    assert path.parent == tmp_path.resolve() and path.name == "run-aaaa1111.zip"
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        assert {"run-aaaa1111.json", "run-aaaa1111.html", "run-aaaa1111.tex", "README.txt"} <= names
        data = json.loads(zf.read("run-aaaa1111.json"))
    assert data["kind"] == "run" and data["run"]["run_id"] == "aaaa1111"
    assert len(data["nodes"]) == len(a.nodes) and len(data["iterations"]) == len(a.iterations)
    assert not list(tmp_path.glob("*.part"))


def test_compare_and_case_bundles(runs, tmp_path: Path) -> None:
    a, b = runs
    cmp = compare_bundle(a, b)
    assert cmp.data["first_divergence"] is None and len(cmp.table_rows) == 2
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
def test_png_and_svg_through_kaleido(runs, tmp_path: Path) -> None:
    a, _ = runs
    store_cases = case_bundle(a, next(i for i in a.nodes if i != 0 and a.nodes[i]["var"] is not None))
    path = write_bundle(store_cases, tmp_path, images=True)
    with zipfile.ZipFile(path) as zf:
        png = zf.read(f"{store_cases.name}.png")
        svg = zf.read(f"{store_cases.name}.svg")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    assert b"<svg" in svg[:500]


def test_cases_table_in_a_case_export(runs) -> None:
    a, _ = runs
    store = RunStore("sqlite://")
    record_synthetic(store, "cc", n_nodes=80, seed=2)
    pools = mine_cases(store, per_quadrant=2)
    nid = next(c.node_id for cs in pools.values() for c in cs)
    bundle = case_bundle(RunData.load(store, "cc"), nid, others=pools)
    assert bundle.table_rows and all(r[0] in pools for r in bundle.table_rows)


def test_run_image_names_the_chosen_paths_numbers(runs) -> None:
    """A static image has only the compact glyphs: the exported tree writes R̄ and σ² beside each node of the
    chosen path (one a row), the numbers of the export's table."""
    from ui.views.figstyle import fmt_mean, fmt_var

    data = runs[0]
    bundle = run_bundle(data)
    notes = [a for a in bundle.figures[0][1]["layout"]["annotations"] if a.get("name") == "path numbers"]
    assert notes and len(notes) == len(bundle.table_rows)
    assert len({a["y"] for a in notes}) == len(notes)  # one per row of the tree
    for note, row in zip(notes, bundle.table_rows):
        assert note["text"] == f"R̄ {fmt_mean(row[2])} σ² {fmt_var(row[3])}"
