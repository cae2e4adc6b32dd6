"""Export controls built when asked: a name box, a Build button and the download button it fills.

A zip holds PNG/SVG figures that kaleido renders in Chromium (0.3–2 s of both cores on a busy machine), so
nothing builds one behind the user's clicks: selecting a case, loading a pair or shadow-scoring it only
hides the previous zip, which no longer matches what is shown."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder


def downloads_folder(export_dir: str | Path) -> Path:
    """The folder of Gradio's cache this server serves `export_dir`'s exports from (ui.views.export.ExportTarget's
    `downloads`): Gradio copies a file it hands out into its cache unless it lies there already. Named by the export
    folder, so two servers of one machine keep theirs apart."""
    key = hashlib.sha256(str(Path(export_dir).resolve()).encode("utf-8")).hexdigest()[:12]
    return Path(get_upload_folder()) / f"uats-exports-{key}"


def clear_downloads(export_dir: str | Path) -> Path:
    """Start-up: the served copies a previous server left (their pages are gone; the exports stay). The folder."""
    folder = downloads_folder(export_dir)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class ExportControls:
    name: gr.Textbox
    build: gr.Button
    download: gr.DownloadButton


def export_controls(what: str, prefix: str) -> ExportControls:
    """The row of controls (call inside a layout block); elem ids `<prefix>-export-name`, `-export-build`,
    `-export` (the download, hidden until a zip is built)."""
    with gr.Row():
        name = gr.Textbox(label="export name (optional)", elem_id=f"{prefix}-export-name", scale=2)
        # the zip holds JSON, an offline HTML page, a LaTeX table, PNG and SVG (ui.views.export)
        build = gr.Button(f"Build {what} export", elem_id=f"{prefix}-export-build", scale=2)
        download = gr.DownloadButton("Download", value=None, visible=False, elem_id=f"{prefix}-export", scale=1)
    return ExportControls(name=name, build=build, download=download)


def export_ready(path: Path) -> Any:
    """The download button offering the zip just built."""
    return gr.update(value=str(path), label=f"Download {path.name}", visible=True)


def export_stale() -> Any:
    """The download button hidden: what it held no longer matches the view (build again to get it)."""
    return gr.update(value=None, visible=False)
