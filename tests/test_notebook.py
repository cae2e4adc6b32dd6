"""docs/notebooks/open_run.ipynb, the notebook API's example, executed as a reader would run it (nbclient, a Python
kernel started in the notebook's own folder, as Jupyter starts it, so the project is imported as installed
(`./setup.sh` installs it, editable) and not from the working directory): every cell runs without an error, the
API's tables agree with the run log, the figures come out as Plotly figures, and Gradio is never imported."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebooks" / "open_run.ipynb"


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def test_the_example_notebook_runs_and_its_tables_agree_with_the_run_log() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    texts = "\n".join(_text(c) for c in nb.cells if c.cell_type == "code")
    assert "finished" in texts
    assert "every R̄ is the mean of its passes: True" in texts
    assert "every K is the count of its passes: True" in texts
    assert "gradio imported: False" in texts
    plots = [
        c
        for c in nb.cells
        if c.cell_type == "code" and any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in c.outputs)
    ]
    assert len(plots) == 3  # two trees and Figure 1
    tables = [c for c in nb.cells if c.cell_type == "code" and any("text/html" in o.get("data", {}) for o in c.outputs)]
    assert len(tables) >= 3  # runs, nodes, decisions as DataFrames
