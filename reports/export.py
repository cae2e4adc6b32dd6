"""Writing a Report to a folder: one offline report.html (plotly.js inlined once), a PNG per figure through
kaleido when a browser is available, tables.md and CSVs. The theory simulation reuses write_pngs."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .build import Report

log = logging.getLogger(__name__)


def write_report(rep: Report, out_dir: str | Path, *, png: bool = True) -> list[Path]:
    """report.html (offline, plotly.js inlined once), <figure>.png (kaleido; skipped with a warning when no
    browser is available), tables.md and CSVs. Returns the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    md = out / "tables.md"
    md.write_text(rep.summary_markdown(), encoding="utf-8")
    written.append(md)
    for name in (
        "results",
        "curves",
        "table4",
        "pass_table4",
        "paired_differences",
        "variant_differences",
        "spend",
        "duplicates",
        "aggregation",
        "ladder",
        "prm_summary",
    ):
        t = rep.tables.get(name)
        if t is not None and len(t):
            p = out / f"{name}.csv"
            t.to_csv(p, index=False)
            written.append(p)
    html = [
        "<!doctype html><html><head><meta charset='utf-8'><title>UATS Studio evaluation report</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:2px 6px}</style></head><body><h1>UATS Studio evaluation report</h1><ul>",
    ]
    html += [f"<li>{_esc(n)}</li>" for n in rep.notes] + ["</ul>"]
    first = True
    for name, fig in rep.figures.items():
        html.append(f"<h2>{_esc(name)}</h2>")
        # plotly.js inline once (offline, no CDN); later figures reuse it
        html.append(fig.to_html(full_html=False, include_plotlyjs=first))
        first = False
    for name, text in rep.markdown.items():
        html.append(f"<h2>{_esc(name)}</h2>" + _md_to_html(text))
    html.append("</body></html>")
    page = out / "report.html"
    page.write_text("\n".join(html), encoding="utf-8")
    written.append(page)
    if png and rep.figures:
        written += write_pngs(rep.figures, out)
    return written


def write_pngs(figures: dict[str, Any], out: Path) -> list[Path]:
    import shutil

    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")):
        log.warning(
            "no Chromium/Chrome found: PNG export skipped (apt-get install -y chromium); report.html has every figure"
        )
        return []
    written = []
    for noisy in ("choreographer", "kaleido"):  # they log every browser step at INFO
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        import kaleido

        try:
            kaleido.start_sync_server(silence_warnings=True)  # one browser for all figures (≈0.3 s each, not 5 s)
            started = True
        except Exception:  # older kaleido, or a server already running
            started = False
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name, fig in figures.items():
                    p = out / f"{name}.png"
                    fig.write_image(str(p), scale=1.5)
                    written.append(p)
        finally:
            if started:
                kaleido.stop_sync_server(silence_warnings=True)
    except Exception as exc:  # a missing or broken browser must not lose the rest of the report
        log.warning("PNG export failed (%s: %s); report.html has every figure", type(exc).__name__, exc)
    return written


def _esc(text: str) -> str:
    import html

    return html.escape(str(text))


def _md_to_html(text: str) -> str:
    """Our Markdown is paragraphs and pipe tables only."""
    out, table = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            if not set(line.replace("|", "").strip()) <= {"-"} or not line.replace("|", "").strip():
                table.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        if table:
            head, *body = table
            out.append(
                "<table><tr>"
                + "".join(f"<th>{_esc(c)}</th>" for c in head)
                + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in body)
                + "</table>"
            )
            table = []
        if line.strip():
            out.append(f"<p>{_esc(line)}</p>")
    return "\n".join(out)
