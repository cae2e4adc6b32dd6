"""Draw docs/img/figure1-<estimator>-1280x800.png: the app's Figure 1 (ui.views.figure1.step_figure, the dict the
inspector draws) of one step of a real H-UATS search under MC dropout and under the deep ensemble, rendered by
plotly.js in Debian's Chromium at a 1280 × 800 window.

    python docs/img/estimator_figure1.py            # from the checkout's root

Both searches: policy B on arith-test-3, N = 8, K0 = 7 (the default; the ensemble holds 8 members), seed 1, τ = each
estimator's own `auto`, recorded into a temporary run log by the engine and read back as the app reads it; the step
shown is the first with the most candidates. tests/browser/test_estimator_figure1_browser.py takes the same view inside
the running app."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SIZE = {"width": 1280, "height": 800}


def figures(db: Path) -> dict[str, dict]:
    from storage import RunStore
    from uats_core.config import SearchConfig
    from uats_core.paths import ASSETS
    from uats_core.runner import build_backends, run_search
    from uats_core.worlds.arith import world
    from ui.views.figure1 import step_figure
    from ui.views.treedata import RunData

    store = RunStore(str(db))
    problem = world.get_problem("arith-test-3")
    out = {}
    for estimator in ("mc-dropout", "ensemble"):
        # τ = auto: run_search's validate_request resolves it from the embedded PRM's calibration
        config = SearchConfig(method="h-uats", budget=8, seed=1, estimator=estimator, tau="auto")
        policy, prm = build_backends(str(ASSETS / "arith-policy-b"), None, config)
        rid = f"fig1-{estimator}"
        run_search(problem, config, policy, prm, subscribers=[store.subscriber()], run_id=rid)
        data = RunData.load(store, rid)
        t = max(range(2, data.max_iteration + 1), key=lambda s: len(data.step(s)[0]))
        step = data.step(t)
        cands = step[0]
        nid = cands[len(cands) // 2].node_id
        from ui.views.decisions import step_of

        out[estimator] = step_figure(step_of(data, nid, t), selected=nid, width=SIZE["width"] - 40)
    return out


def render(figs: dict[str, dict], out_dir: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    plotly_js = Path(__import__("plotly").__file__).parent / "package_data" / "plotly.min.js"
    paths = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport=SIZE)
        for estimator, fig in figs.items():
            html = (
                f"<html><head><script src='file://{plotly_js}'></script></head><body style='margin:20px'>"
                f"<div id='f'></div><script>const fig = {json.dumps(fig)};"
                "Plotly.newPlot('f', fig.data, fig.layout, fig.config).then(() => document.body.dataset.done = 1);"
                "</script></body></html>"
            )
            src = out_dir / f".figure1-{estimator}.html"
            src.write_text(html, encoding="utf-8")
            page.goto(f"file://{src}", timeout=300000)  # 3.5 MB of plotly.js on a loaded machine
            page.wait_for_function("() => document.body.dataset.done === '1'", timeout=300000)
            path = out_dir / f"figure1-{estimator}-1280x800.png"
            page.screenshot(path=str(path), full_page=False)
            src.unlink()
            paths.append(path)
        browser.close()
    return paths


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        for p in render(figures(Path(tmp) / "runs.db"), Path(__file__).resolve().parent):
            print(p)
