"""Export a run, a comparison or a case as one zip: JSON, a standalone offline HTML page, PNG and SVG
figures (kaleido driving Debian's Chromium), and a LaTeX table snippet.

Every file is written under the export folder and nowhere else: user-given names are checked, not
silently rewritten, so a name like ../../etc is refused with a message. Each requester (a signed-in user, or a
browser session without a login) writes into a folder of its own, named by a hash, so two sessions exporting the
same name never touch one file; a file is written under a unique temporary name and renamed into place, so a
download never sees half of it; and the folder is held to a quota per requester and in all (ExportQuota), the
oldest exports deleted to make room.

The app serves each export from a folder of Gradio's download cache (ExportTarget.downloads): a hard link of the
export under a random name (a copy where the two folders lie on different file systems), so Gradio, which copies
only files outside its cache, copies nothing (it used to keep a copy of every export for an hour: 25 exports grew
its cache 38 MB while the export folder kept its quota). That served copy counts in the quota when it is a copy,
and goes with its export (replaced, or deleted to make room)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import html
import io
import json
import logging
import math
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly

from uats_core.errors import FieldError

from .latex import latex_table
from .safe_text import hide_server_paths
from .scripts import page_script

log = logging.getLogger(__name__)

PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")
_kaleido_lock = threading.Lock()  # kaleido's sync server answers through one queue: one caller at a time
_kaleido_state: dict[str, Any] = {"started": False, "error": None}


class ExportError(FieldError):
    def __init__(self, message: str, field: str = "export") -> None:
        super().__init__(field, message)


@dataclass
class ExportBundle:
    """What goes into one zip. `figures` are Plotly figure dicts: the first one becomes the PNG/SVG."""

    name: str
    kind: str  # run | compare | case
    data: dict[str, Any]
    figures: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (caption, figure)
    table_header: list[str] = field(default_factory=list)
    table_rows: list[list[Any]] = field(default_factory=list)
    caption: str = ""
    text_sections: list[tuple[str, str]] = field(default_factory=list)  # (heading, plain text)
    more_tables: list[ExportTable] = field(default_factory=list)  # after the main one, in the .tex and the page


@dataclass
class ExportTable:
    """A further table of a bundle: its own caption and LaTeX label (the bundle's name plus `suffix`); `wrap`,
    `font` and `colsep_pt` fit a wide one into a paper's column (ui.views.latex.latex_table)."""

    header: list[str]
    rows: list[list[Any]]
    caption: str
    suffix: str
    wrap: dict[str, float] | None = None
    font: str = r"\small"
    colsep_pt: int | None = None


def safe_name(name: str) -> str:
    """A file-name stem for the export folder; refuses separators, '..' and odd characters."""
    name = (name or "").strip()
    if not name:
        raise ExportError("empty export name; use letters, digits, '.', '_' or '-'")
    if "/" in name or "\\" in name or ".." in name or not _NAME_RE.match(name):
        raise ExportError(
            f"{name!r} is not allowed as an export name: exports stay inside the export folder; "
            "use letters, digits, '.', '_' or '-' (no '/', '\\' or '..')"
        )
    return name


def export_path(export_dir: str | os.PathLike[str], name: str, suffix: str) -> Path:
    root = Path(export_dir).resolve()
    path = (root / f"{safe_name(name)}{suffix}").resolve()
    if root not in path.parents:  # belt and braces after safe_name: symlinked folders, odd platforms
        raise ExportError(f"{name!r} would write outside the export folder")
    return path


@dataclass(frozen=True)
class ExportQuota:
    """Bytes the export folder keeps per requester and in all; a new export deletes the oldest files (the
    requester's own first, then anyone's) until it fits. The launcher's --export-session-quota-mb and
    --export-quota-mb."""

    owner_bytes: int = 64 << 20
    total_bytes: int = 512 << 20


def owner_folder(owner: str) -> str:
    """The name of a requester's folder (ui.access.requester's value), in the export folder and among the downloads."""
    return "s-" + hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]


ROOT_FOLDER = "_"  # the downloads' folder for exports written to the export folder itself (owner None)


@dataclass(frozen=True)
class ExportTarget:
    """Where one requester's exports go: `root` (the export folder), a sub-folder named by a hash of `owner`
    (ui.access.requester; None: the folder itself, for callers outside the app), and the quota they count against.
    `downloads`: the folder the app serves them from (in Gradio's cache; None: the export itself is handed out)."""

    root: Path
    owner: str | None = None
    quota: ExportQuota = ExportQuota()
    downloads: Path | None = None

    @property
    def folder(self) -> Path:
        if self.owner is None:
            return Path(self.root)
        return Path(self.root) / owner_folder(self.owner)

    def copies_of(self, export: Path) -> list[Path]:
        """The served copies of one export of the folder (each under downloads/<owner folder>/<random>/)."""
        if self.downloads is None:
            return []
        rel = export.parent.relative_to(Path(self.root).resolve())
        where = Path(self.downloads) / (rel.parts[0] if rel.parts else ROOT_FOLDER)
        return [p for p in where.glob(f"*/{export.name}") if p.is_file() and not p.is_symlink()]

    def copy_factor(self) -> int:
        """Bytes held per byte exported: 2 when the served copy cannot be a hard link (another file system)."""
        if self.downloads is None:
            return 1
        Path(self.downloads).mkdir(parents=True, exist_ok=True)
        return 1 if os.stat(self.downloads).st_dev == os.stat(self.root).st_dev else 2


_store_lock = threading.Lock()  # making room and renaming into place: one export at a time


def _as_target(where: ExportTarget | str | os.PathLike[str]) -> ExportTarget:
    return where if isinstance(where, ExportTarget) else ExportTarget(Path(where))


def store_export(where: ExportTarget | str | os.PathLike[str], name: str, suffix: str, payload: bytes) -> Path:
    """Write `payload` as `<name><suffix>` in the requester's folder, within the quota: to a unique temporary file,
    then, once the oldest exports made room, renamed into place. The path to hand out: its served copy when the
    target has `downloads`, else the file itself."""
    target = _as_target(where)
    folder = target.folder
    folder.mkdir(parents=True, exist_ok=True)
    final = export_path(folder, name, suffix)
    limit = min(target.quota.owner_bytes, target.quota.total_bytes)
    held = len(payload) * target.copy_factor()
    if held > limit:
        copy = " with the copy it is served from" if held > len(payload) else ""
        raise ExportError(
            f"this export is {held / 2**20:.1f} MB{copy}, more than the export quota of "
            f"{limit / 2**20:.1f} MB; export less (a case rather than a run), or ask the server's "
            "operator for a larger --export-session-quota-mb"
        )
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{final.name}.", suffix=".part")
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        with _store_lock:
            _make_room(target, held, final)
            _delete_copies(target, final)  # a replaced export's served copies go with it
            os.replace(tmp, final)  # a half-written file is never offered for download
            return _serve_copy(target, final)
    except OSError as exc:  # a full disk, a quota of the file system, a folder made read-only: one line, no trace
        log.error("export %s could not be written: %s", final.name, exc)
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        raise ExportError(
            f"{final.name} could not be written: the export folder is "
            + (
                "full; delete older exports or ask the server's operator for space"
                if full
                else f"not writable ({exc.strerror}); ask the server's operator"
            )
        ) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _serve_copy(target: ExportTarget, final: Path) -> Path:
    """The copy of `final` the app serves (a hard link where it can), under a random folder name: nobody reaches
    it by guessing an owner's folder and a name."""
    if target.downloads is None:
        return final
    rel = final.parent.relative_to(Path(target.root).resolve())
    where = Path(target.downloads) / (rel.parts[0] if rel.parts else ROOT_FOLDER) / secrets.token_hex(16)
    where.mkdir(parents=True)
    served = where / final.name
    try:
        os.link(final, served)
    except OSError:  # another file system (copy_factor counted it), or links refused
        shutil.copyfile(final, served)
    return served


def _delete_copies(target: ExportTarget, export: Path) -> None:
    for copy in target.copies_of(export):
        copy.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            copy.parent.rmdir()


def held_bytes(target: ExportTarget, export: Path) -> int:
    """What one export holds on disk: the file and each served copy that is not a hard link of it."""
    st = export.stat()
    copies = [c.stat() for c in target.copies_of(export)]
    return st.st_size + sum(c.st_size for c in copies if not os.path.samestat(c, st))


def _make_room(target: ExportTarget, incoming: int, replacing: Path) -> None:
    """Delete the oldest exports, with their served copies, until `incoming` more bytes fit the quota (the file
    being replaced not counted)."""
    root, folder = Path(target.root).resolve(), target.folder.resolve()
    files = []
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink() and not p.name.startswith(".") and p != replacing:
            files.append((p.stat().st_mtime, held_bytes(target, p), p))
    files.sort(key=lambda f: f[0])
    for limit, pool in (
        (target.quota.owner_bytes, [f for f in files if f[2].parent == folder]),
        (target.quota.total_bytes, files),
    ):
        used = sum(size for _, size, p in pool if p.exists())
        for _, size, p in pool:
            if used + incoming <= limit:
                break
            if p.exists():
                _delete_copies(target, p)
                p.unlink()
                used -= size
                log.info("export %s deleted to keep the export folder within its quota", p.relative_to(root))


# ------------------------------------------------------------------------------ writers
def to_json(bundle: ExportBundle) -> str:
    return json.dumps(
        {"kind": bundle.kind, "name": bundle.name, "exported_at": time.time(), **bundle.data},
        indent=2,
        default=_json_default,
        ensure_ascii=False,
    )


def _json_default(o: Any) -> Any:
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def to_latex(bundle: ExportBundle) -> str:
    """Booktabs table snippets that compile as they are (ui.views.latex: the packages they need, math, symbols):
    the bundle's table, then each of its further tables."""
    parts = [latex_table(bundle.table_header, bundle.table_rows, bundle.caption or bundle.name, bundle.name, _cell)]
    parts += [
        latex_table(
            t.header, t.rows, t.caption, bundle.name + t.suffix, _cell, wrap=t.wrap, font=t.font, colsep_pt=t.colsep_pt
        )
        for t in bundle.more_tables
    ]
    return "\n".join(parts)


def _cell(v: Any, header: str = "") -> str:
    if isinstance(v, float) and "cost" in header.lower() and math.isfinite(v):
        return f"{int(round(v)):,}"  # a cost is counted in passes: no decimals to read, thousands grouped
    if isinstance(v, float):
        if not math.isfinite(v):
            return "--"
        if abs(v) >= 100 or (v == int(v) and abs(v) >= 1):  # counts and costs: whole numbers, thousands grouped
            return f"{v:,.0f}"
        return f"{v:.4f}" if abs(v) < 0.01 and v != 0 else f"{v:.3f}"
    if v is None:
        return "--"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def to_html(bundle: ExportBundle) -> str:
    """One self-contained page: plotly.js inlined (works offline, opens from disk), the figures, the
    table and the texts."""
    plotly_js = PLOTLY_JS.read_text(encoding="utf-8")
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(bundle.name)}</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
        "td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;font-size:13px}"
        "pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}.fig{margin:16px 0}</style>",
        f"<script>{plotly_js}</script></head><body>",
        f"<h1>{html.escape(bundle.name)}</h1><p>{html.escape(bundle.caption)}</p>",
    ]
    for i, (caption, _) in enumerate(bundle.figures):
        parts.append(f"<h2>{html.escape(caption)}</h2><div class='fig' id='fig{i}'></div>")
    tables = [("Table", bundle.table_header, bundle.table_rows)] + [
        (t.caption, t.header, t.rows) for t in bundle.more_tables
    ]
    for heading, header, rows in tables:
        if not rows:
            continue
        parts.append(
            f"<h2>{html.escape(heading)}</h2><table><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in header)
            + "</tr>"
        )
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>")
        parts.append("</table>")
    for heading, text in bundle.text_sections:
        parts.append(f"<h2>{html.escape(heading)}</h2><pre>{html.escape(text)}</pre>")
    figs = json.dumps(
        [{"data": f["data"], "layout": f["layout"], "config": f.get("config", {})} for _, f in bundle.figures],
        default=_json_default,
        ensure_ascii=False,
    )
    # '</' inside the JSON would end the script element early
    figs = figs.replace("</", "<\\/")
    parts.append(f"<script>const FIGS={figs};</script><script>{page_script('export_page.js')}</script>")
    parts.append("</body></html>")
    return "".join(parts)


def _start_kaleido() -> None:
    if _kaleido_state["started"]:
        return
    import kaleido

    browser = os.environ.get("BROWSER_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise RuntimeError("no Chromium found: install Debian's `chromium` (apt-get install -y chromium) for PNG/SVG")
    # mathjax=False: its default is a CDN URL, and this must work offline
    kaleido.start_sync_server(mathjax=False, plotlyjs=str(PLOTLY_JS), path=browser, silence_warnings=True)
    _kaleido_state["started"] = True


def render_image(fig: dict[str, Any], fmt: str, width: int | None = None, height: int | None = None) -> bytes:
    """PNG or SVG bytes of a figure via kaleido (one persistent Chromium: ≈ 0.1 s a call once started)."""
    import kaleido

    layout = fig.get("layout", {})
    with _kaleido_lock:
        _start_kaleido()
        return kaleido.calc_fig_sync(
            {"data": fig["data"], "layout": layout},
            opts={
                "format": fmt,
                "width": width or layout.get("width") or 1200,
                "height": height or layout.get("height") or 700,
                "scale": 1,
            },
        )


def stop_kaleido() -> None:
    if _kaleido_state["started"]:
        import kaleido

        with _kaleido_lock:
            kaleido.stop_sync_server(silence_warnings=True)
            _kaleido_state["started"] = False


def write_bundle(bundle: ExportBundle, where: ExportTarget | str | os.PathLike[str], images: bool = True) -> Path:
    """Write `<name>.zip` (store_export: the requester's folder, within the quota) with <name>.json/.html/.tex and,
    when Chromium works, <name>.png/.svg. A README.txt inside lists the contents and why anything is missing."""
    safe_name(bundle.name)
    files: dict[str, bytes] = {
        f"{bundle.name}.json": to_json(bundle).encode("utf-8"),
        f"{bundle.name}.html": to_html(bundle).encode("utf-8"),
        f"{bundle.name}.tex": to_latex(bundle).encode("utf-8"),
    }
    notes = []
    if images and bundle.figures:
        fig = bundle.figures[0][1]
        try:
            files[f"{bundle.name}.png"] = render_image(fig, "png")
            files[f"{bundle.name}.svg"] = render_image(fig, "svg")
        except Exception as exc:  # no Chromium, a crashed renderer: the rest of the bundle is still useful
            log.warning("static images for %s failed: %s", bundle.name, exc)
            notes.append(f"PNG/SVG not included: {type(exc).__name__}: {hide_server_paths(str(exc))}")
    elif not images:
        notes.append("PNG/SVG not requested")
    readme = [f"UATS Studio export: {bundle.kind} '{bundle.name}'", bundle.caption, "", "Files:"]
    readme += [f"  {n}" for n in files] + ([""] + notes if notes else [])
    files["README.txt"] = "\n".join(readme).encode("utf-8")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, payload in files.items():
            zf.writestr(name, payload)
    path = store_export(where, bundle.name, ".zip", buffer.getvalue())
    log.info("export written: %s", path)
    return path
