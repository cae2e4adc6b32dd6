"""Draws docs/img/architecture.png, the picture of docs/architecture.md: the three layers and the path of one run
from the Search tab's form to the redrawn tree. Pillow only (installed with the app), so it redraws offline:
`python docs/img/architecture.py`."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

OUT = Path(__file__).with_suffix(".png")
W, H = 1600, 1050
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
INK, GREY, RUN = (30, 30, 30), (110, 110, 110), (200, 60, 30)
LAYERS = [  # (title, top, bottom, fill); titles sit above the rightmost column, where no arrow crosses
    ("uats/ and ui/", 20, 360, (232, 240, 252)),
    ("storage/", 380, 560, (236, 246, 234)),
    ("uats_core/: the engine", 580, 980, (252, 244, 228)),
]
COLUMNS = (40, 420, 800, 1180)
# name -> (x, y, w, h, title, lines)
BOXES = {
    "tab": (
        40,
        70,
        330,
        130,
        "ui/tabs/search_events.py",
        ["the Search tab: on_run ->", "submit_run; on_tick polls", "run_version, redraws on change"],
    ),
    "service": (
        40,
        225,
        330,
        115,
        "search_events.run_request",
        ["the form's values ->", "SearchRequest -> validate_request", "(the run's one validation)"],
    ),
    "pool": (
        420,
        70,
        330,
        130,
        "ui/jobs/pool.py: WorkerPool",
        ["its own thread starts queued jobs", "and reaps dead workers; jobs run", "in spawned processes"],
    ),
    "warm": (
        420,
        225,
        330,
        115,
        "ui/jobs/warm.py (in a worker)",
        ["execute: keeps the (policy, PRM)", "pair loaded; prepare_search(", "req.search).run"],
    ),
    "view": (
        800,
        70,
        330,
        130,
        "ui/tabs/viewer.py",
        ["RunData.load (ui/views/treedata.py),", "cached per run version;", "treefig -> Plotly.react"],
    ),
    "ui": (
        800,
        225,
        330,
        115,
        "the rest of ui/",
        [
            "tabs/: compare, runs, cases, reports;",
            "views/: figures, texts (no Gradio);",
            "launch.py (app.py, uats-studio)",
        ],
    ),
    "entry": (
        1180,
        70,
        380,
        270,
        "uats/: the uats command",
        [
            "cli.py: search|runs|show|import|",
            "  doctor|ledger|calibrate",
            "eval/: the evaluation (uats eval)",
            "report.py: tables, figures",
            "calibrate, theory, train",
            "each builds a SearchRequest",
            "-> validate_request",
        ],
    ),
    "store": (
        40,
        420,
        330,
        125,
        "storage/store.py: RunStore",
        ["register_run (a queued row),", "run control, reads: get_nodes", "(nodes keyed by id), run_version"],
    ),
    "db": (
        420,
        420,
        330,
        125,
        "the run log (SQLAlchemy)",
        ["SQLite (WAL) or PostgreSQL: runs,", "nodes, node_history, iterations", "(schema.py); migrations.py"],
    ),
    "recorder": (
        800,
        420,
        330,
        125,
        "storage/recorder.py",
        ["RunRecorder = store.subscriber():", "buffers NodesUpdated; one", "transaction per iteration"],
    ),
    "ledger": (
        1180,
        420,
        380,
        125,
        "eval_cells, results_ledger",
        ["the eval grid's cells; the", "committed results/ (CSV.gz);", "eval_results: the report's rows"],
    ),
    "config": (
        40,
        630,
        330,
        120,
        "request.py, config.py",
        [
            "validate_request: fields, method,",
            "limits.py, τ auto -> CheckedSearch",
            "(errors.py: one error, its field)",
        ],
    ),
    "runner": (
        40,
        790,
        330,
        170,
        "runner.py",
        [
            "prepare_search(CheckedSearch):",
            "models, controller, embedder",
            "run_search: fits the context?,",
            "seeds, EventBus, method.search,",
            "vote, grade, always RunEnded",
        ],
    ),
    "methods": (
        420,
        630,
        330,
        330,
        "methods/",
        [
            "base.py: SearchMethod.search(ctx)",
            "  and what a method needs",
            "SearchContext: the tree, cost,",
            "  batched calls, events",
            "__init__.py: REGISTRY",
            "best_of_n, beam, dvts, rebase,",
            "dora, uats (H-UATS, A-UATS)",
            "allocation.py, spending.py,",
            "estimation.py (R̄, σ², R̂),",
            "grading.py, tree.py, status.py",
        ],
    ),
    "events": (
        800,
        630,
        330,
        150,
        "events.py + records.py",
        ["RunStarted, NodesUpdated,", "IterationEnded, RunEnded;", "Decision, StepInfo"],
    ),
    "protocols": (
        800,
        810,
        330,
        150,
        "protocols.py",
        [
            "Policy.generate_steps(traces)",
            "PRM.score(traces)",
            "PRM.mc_scores(traces, k)",
            "(backends/ implement both)",
        ],
    ),
    "backends": (
        1180,
        630,
        380,
        330,
        "backends/, worlds/arith/",
        [
            "transformers and vLLM policies,",
            "published PRMs, MC dropout",
            "(mc_dropout.py),",
            "the embedded arithmetic world",
            "and its tiny models",
            "(assets/models/)",
            "",
            "controller/: A-UATS's",
            "learned knobs",
        ],
    ),
}


def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    name = FONT_DIR / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")
    return ImageFont.truetype(str(name), size) if name.exists() else ImageFont.load_default(size=size)


def anchor(name: str, side: str) -> tuple[int, int]:
    x, y, w, h = BOXES[name][:4]
    return {
        "top": (x + w // 2, y),
        "bottom": (x + w // 2, y + h),
        "left": (x, y + h // 2),
        "right": (x + w, y + h // 2),
    }[side]


def arrow(
    d: ImageDraw.ImageDraw,
    points: list[tuple[int, int]],
    colour: tuple[int, int, int],
    label: str = "",
    at: tuple[int, int] | None = None,
    dashed: bool = False,
) -> None:
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if dashed:
            n = max(1, int(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5 // 12))
            for i in range(0, n, 2):
                d.line(
                    [
                        (x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n),
                        (x0 + (x1 - x0) * (i + 1) / n, y0 + (y1 - y0) * (i + 1) / n),
                    ],
                    fill=colour,
                    width=3,
                )
        else:
            d.line([(x0, y0), (x1, y1)], fill=colour, width=3)
    (x0, y0), (x1, y1) = points[-2], points[-1]
    length = max(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, 1)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    d.polygon(
        [(x1, y1), (x1 - 14 * ux - 7 * uy, y1 - 14 * uy + 7 * ux), (x1 - 14 * ux + 7 * uy, y1 - 14 * uy - 7 * ux)],
        fill=colour,
    )
    if label:
        lx, ly = at or ((x0 + x1) // 2 + 8, (y0 + y1) // 2 - 10)
        r = 14
        d.ellipse([lx - r, ly - r, lx + r, ly + r], fill=colour)
        d.text((lx, ly), label, fill=(255, 255, 255), font=font(17, bold=True), anchor="mm")


def main() -> None:
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    for title, top, bottom, fill in LAYERS:
        d.rounded_rectangle([15, top, W - 15, bottom], radius=12, fill=fill, outline=(190, 190, 190), width=2)
        d.text((COLUMNS[-1], top + 10), title, fill=GREY, font=font(20, bold=True))
    for x, y, w, h, title, lines in BOXES.values():
        d.rounded_rectangle([x, y, x + w, y + h], radius=8, fill="white", outline=INK, width=2)
        d.text((x + 10, y + 8), title, fill=INK, font=font(17, bold=True))
        for i, line in enumerate(lines):
            d.text((x + 10, y + 36 + 24 * i), line, fill=INK, font=font(16))
    # One run from the app, numbered as in docs/architecture.md; vertical runs use the gaps between columns.
    arrow(d, [(205, 200), (205, 225)], RUN, "1", at=(230, 212))
    arrow(d, [(205, 340), (205, 420)], RUN, "2", at=(230, 380))
    arrow(d, [(370, 135), (420, 135)], RUN, "2", at=(395, 110))
    arrow(d, [(585, 200), (585, 225)], RUN, "3", at=(610, 212))
    arrow(d, [(420, 300), (395, 300), (395, 810), (370, 810)], RUN, "3", at=(395, 600))
    arrow(d, [(370, 900), (420, 900)], RUN, "4", at=(395, 875))
    arrow(d, [(750, 890), (800, 890)], RUN, "4", at=(775, 865))
    arrow(d, [(750, 700), (800, 700)], RUN, "5", at=(775, 675))
    arrow(d, [(965, 630), (965, 545)], RUN, "5", at=(990, 590))
    arrow(d, [(800, 510), (750, 510)], RUN, "5", at=(775, 535))
    arrow(d, [(750, 445), (775, 445), (775, 135), (800, 135)], RUN, "6", at=(775, 380))
    arrow(d, [(1180, 935), (1130, 935)], GREY, dashed=True)
    # The rule of the picture.
    for i, line in enumerate(
        [
            "Arrows 1-6: one run started in the app, numbered as in docs/architecture.md.",
            "A folder imports only from its own band or a lower one (uats/ and ui/ not from each "
            "other); the engine imports no storage, ui, gradio or SQL.",
        ]
    ):
        d.text((30, 995 + 24 * i), line, fill=GREY, font=font(16))
    img.save(OUT, optimize=True)


if __name__ == "__main__":
    main()
