"""The Reports tab's report: built from a results ledger (the committed evaluation, read from its CSV files) or
from an evaluation run log, with the stages reported as it goes (a whole ledger takes seconds); a ledger's
report is kept while its files are unchanged, so building it again is instant. Also the tab's controller training
curves: those in a run log and those shipped beside the checkpoints."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reports import Report, assemble_report
from storage.eval_results import report_inputs
from storage.results_ledger import RESULTS_FILE, ResultsLedger
from uats_core.errors import ConfigError
from uats_core.paths import ASSETS

from .report_sources import ReportSources
from .safe_text import md_text

REPORT_FIGURES = ("accuracy_vs_n", "accuracy_vs_cost", "prm_analysis")
Progress = Callable[[float, str], None]

_cache: OrderedDict[tuple[Any, ...], tuple[str, dict[str, dict]]] = OrderedDict()
_cache_lock = threading.Lock()


def _ledger_report(folder: Path, common_problems: bool, progress: Progress) -> Report:
    ledger = ResultsLedger(folder)
    if not ledger.results_path.is_file():
        raise ConfigError("results ledger", f"no {RESULTS_FILE} in {folder}; pick another source")
    progress(0.05, "reading the ledger's results")
    results = ledger.results()
    progress(0.3, f"reading the step records of {len(results):,} searches")
    steps = ledger.steps()
    progress(0.55, "reading the candidates' traces")
    traces = ledger.traces()
    progress(0.65, f"building the tables and figures of {len(results):,} searches")
    return assemble_report(results, steps=steps, traces=traces, common_problems=common_problems)


def _page(rep: Report, label: str) -> tuple[str, dict[str, dict]]:
    figs = {}
    for name in REPORT_FIGURES:
        if name in rep.figures:
            fig = json.loads(rep.figures[name].to_json())
            fig["layout"].pop("width", None)  # sized for the HTML export; in the page, fill the column
            fig["layout"]["autosize"] = True
            figs[name] = fig
    md = rep.summary_markdown().replace("# Evaluation report", f"### Evaluation report of {md_text(label)}", 1)
    return md, figs


def report_view(
    sources: ReportSources,
    key: str,
    common_problems: bool = True,
    max_fig2_runs_per_pair: int = 200,
    progress: Progress | None = None,
) -> tuple[str, dict[str, dict]]:
    """The evaluation report of source `key` for the page: its markdown (notes, Table 4, per-budget tables,
    Figure 2 table) and its main figures as plotly JSON dicts (accuracy vs N, vs cost, PRM analysis).
    `progress(fraction, what)` hears each stage."""
    say = progress or (lambda fraction, what: None)
    folder = sources.ledger_folder(key)
    if folder is not None:
        stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.glob("*.csv.gz")))
        cache_key = (str(folder), stamp, bool(common_problems))
        with _cache_lock:
            if cache_key in _cache:
                _cache.move_to_end(cache_key)
                return _cache[cache_key]
        page = _page(_ledger_report(folder, common_problems, say), sources.label(key))
        with _cache_lock:
            _cache[cache_key] = page
            while len(_cache) > 2:
                _cache.popitem(last=False)
        return page
    with sources.reading(key) as store:
        say(0.05, "reading the run log's evaluation cells")
        results, load_nodes = report_inputs(store)
        say(0.3, f"building the tables and figures of {len(results):,} searches")
        rep = assemble_report(
            results, load_nodes, common_problems=common_problems, max_fig2_runs_per_pair=max_fig2_runs_per_pair
        )
    return _page(rep, sources.label(key))


# ------------------------------------------------------------------------------ training curves
SHIPPED = "shipped: "  # curve names that come from a checkpoint folder's training_curve.json, not the database


def curve_choices(sources: ReportSources, key: str | None) -> list[str]:
    """Controller training curves: those in the picked run log (train --db) and those shipped beside the
    checkpoints under assets/models (training_curve.json)."""
    names: list[str] = []
    if key:
        try:
            with sources.reading(key) as store:
                names += store.list_curves()
        except ConfigError:
            pass
    names += [SHIPPED + p.parent.name for p in sorted(ASSETS.glob("*/training_curve.json"))]
    return names


def curve_rows(sources: ReportSources, key: str | None, name: str) -> list[dict[str, Any]]:
    if name.startswith(SHIPPED):
        path = ASSETS / name[len(SHIPPED) :] / "training_curve.json"
        if path.parent.parent != ASSETS or not path.is_file():
            raise ConfigError("training curve", f"no shipped curve {name!r}; pick one from the list")
        return list(json.loads(path.read_text()))
    with sources.reading(key) as store:
        return store.get_curve(name)
