"""Exports that go into a paper as they are: the LaTeX of every bundle compiles with the real pdfLaTeX (Debian's
texlive; on CI it must be there: ./setup.sh --dev installs it), and the images' legends name every kind of mark
the figure draws (the comparison's legend once left out the baseline's shadow marks)."""

from __future__ import annotations

import html
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testkit.run_pairs import needs_models
from ui.views.bundles import case_bundle, compare_bundle, run_bundle
from ui.views.comparison import compare_figures
from ui.views.export import ExportBundle, render_image, to_latex
from ui.views.latex import PREAMBLE, latex_text


def pdflatex() -> str:
    path = shutil.which("pdflatex")
    if path is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(
                "pdflatex is missing on CI: ./setup.sh --dev installs texlive-latex-base and texlive-latex-recommended"
            )
        pytest.skip("needs pdflatex (apt-get install texlive-latex-base texlive-latex-recommended)")
    return path


def compile_snippet(tex: str, folder: Path) -> str:
    """Compile `tex` \\input into a bare article with the packages it says it needs; the log."""
    needs = re.search(r"^% needs (.*) in the preamble$", tex, re.M)
    assert needs, tex[:200]
    assert needs.group(1) == " ".join(r"\usepackage{%s}" % p for p in PREAMBLE)
    (folder / "table.tex").write_text(tex, encoding="utf-8")
    (folder / "paper.tex").write_text(
        "\\documentclass{article}\n" + needs.group(1) + "\n\\begin{document}\n\\input{table}\n\\end{document}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [pdflatex(), "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = (folder / "paper.log").read_text(encoding="utf-8", errors="replace")
    assert proc.returncode == 0 and (folder / "paper.pdf").exists(), log[-3000:]
    return log


def overfull_pt(log: str) -> float:
    """The widest overfull box in a log (0 when none): how far a table sticks out of the column."""
    return max((float(x) for x in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)), default=0.0)


def test_every_bundle_compiles_with_its_math_and_symbols(synthetic_runs, tmp_path: Path) -> None:
    a, b = synthetic_runs
    nid = next(i for i in a.nodes if i != 0 and a.nodes[i]["var"] is not None)
    bundles = [run_bundle(a), compare_bundle(a, b), case_bundle(a, nid)]
    for bundle in bundles:
        tex = to_latex(bundle)
        head = tex.split("\\toprule\n")[1].split(" \\\\")[0].split(" & ")
        assert len(head) == len(set(head)), head  # every column says what it holds
        if "R̄" in bundle.table_header:
            assert "$\\bar{R}$" in head and any(h.startswith("$\\sigma^2$") for h in head), head
        assert "\\textbackslash{}boxed" not in tex and "R̄" not in tex and "σ" not in tex
        folder = tmp_path / bundle.kind
        folder.mkdir()
        log = compile_snippet(tex, folder)
        assert overfull_pt(log) < 10, (bundle.kind, overfull_pt(log))  # fits the page as it is
    # the synthetic steps' answers ($\boxed{…}$) stay boxed math in the run's chosen path
    assert "$\\boxed{" in to_latex(bundles[0])


@needs_models
def test_the_comparison_tex_holds_the_decisions_uncertainty_changed(real_pair, tmp_path: Path) -> None:
    """The comparison's .tex: the summary, then the Compare tab's list of the decisions uncertainty changed, one
    row per listed decision with the page's values; it compiles and fits a column."""
    from ui.views.uncertainty import changed_table

    a, b = real_pair
    rows, _ = changed_table(a, b, step_chars=10_000)
    assert len(rows) > 4  # the low τ of the fixture re-evaluated many candidates: a long table to fit
    bundle = compare_bundle(a, b)
    tex = to_latex(bundle)
    summary, changed = tex.split("\\end{table}\n")[:2]
    assert "\\label{tab:" + bundle.name + "}" in summary
    assert "Decisions uncertainty changed" in changed and "\\label{tab:" + bundle.name + "-changed}" in changed
    body = changed.split("\\midrule\n")[1].split("\\bottomrule")[0].strip().split(" \\\\\n")
    assert len(body) == len(rows)
    for line, row in zip(body, rows):
        cells = line.removesuffix(" \\\\").split(" & ")
        assert cells[:3] == [str(row[0]), str(row[1]), str(row[2])] and cells[3] == latex_text(row[3])
    log = compile_snippet(tex, tmp_path)
    assert overfull_pt(log) < 10, overfull_pt(log)


NASTY = [
    "\\",
    "{",
    "}",
    "$",
    "&",
    "%",
    "#",
    "_",
    "^",
    "~",
    "<",
    ">",
    "|",
    "\\\\",
    "\\end{table}",
    "\\boxed{",
    "\\frac{1}",
    "x^2^3",
    "$x^{2}^{3}$",
    "\\(",
    "\\)",
    "\\text{a_b}",
    "$\\left( x$",
    "中",
    "😀",
    "é",
    "ő",
    "ß",
    "ŋ",
    "ð",
    "þ",
    "ą",
    "Ħ",
    "σ",
    "R̄",
    "²",
    "×",
    "—",
    "\u200b",
    "\t",
    "\n",
    " ",
    "a",
    "1",
    "\\boxed{32}",
    "$\\frac{1}{2}$",
    "$$",
    "\\sqrt",
]


def test_model_text_of_any_kind_compiles(tmp_path: Path) -> None:
    """Steps are model output: whatever they hold, the table compiles (math it cannot vouch for is printed)."""
    rng = random.Random(30)
    rows = [
        [i, "".join(rng.choice(NASTY) for _ in range(rng.randint(1, 12))), rng.random(), None, 7, "?"]
        for i in range(150)
    ]
    rows += [
        [900, "The answer is \\boxed{32}", 0.5, 0.001, 7, "right"],
        [901, "So $x = \\frac{3}{4}$, hence \\(y^2 = 9\\) and \\boxed{\\dfrac{1}{2}}", 0.5, 0.001, 7, "right"],
    ]
    bundle = ExportBundle(
        name="nasty",
        kind="case",
        data={},
        table_header=["node", "step", "R̄", "σ²", "K", "verdict"],
        table_rows=rows,
        caption="Model text: 50% & more_σ² {τ}",
    )
    tex = to_latex(bundle)
    assert "The answer is $\\boxed{32}$" in tex
    assert "So $x = \\frac{3}{4}$, hence $y^2 = 9$ and $\\boxed{\\dfrac{1}{2}}$" in tex
    assert "% " in tex.splitlines()[1] and "U+4E2D" in tex  # what could not be typeset is named, not hidden
    compile_snippet(tex, tmp_path)


def test_symbols_become_math_and_text_stays_literal() -> None:
    assert latex_text("R̄") == "$\\bar{R}$" and latex_text("σ²") == "$\\sigma^2$"
    assert latex_text("costs $5 and $6") == "costs \\$5 and \\$6"  # not math: "5 and " ends in a space
    assert latex_text("$x^2^3$") == "\\$x\\textasciicircum{}2\\textasciicircum{}3\\$"  # would not compile as math
    assert latex_text("a < b | c") == "a \\textless{} b \\textbar{} c"


def _legend_names(fig: dict) -> set[str]:
    """The names a figure's legend must show: every trace that asks for a legend entry."""
    return {t["name"] for t in fig["data"] if t.get("showlegend", True) and t.get("name")}


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install -y chromium)")
def test_image_legends_name_every_kind_of_mark(synthetic_runs) -> None:
    a, b = synthetic_runs
    # the baseline (B) alone shadow-scored, as the Compare tab does: its marks exist only in tree B
    shadow_b = {
        i: {
            "mean": 0.5,
            "var": 0.02 if i % 2 else 0.0001,
            "mc_scores": [0.4, 0.6, 0.5],
            "ood": bool(i % 2),
            "tau": 0.003,
        }
        for i in b.nodes
        if i != 0
    }
    bundle = compare_bundle(a, b, shadows=(None, shadow_b))
    fa, fb, _ = compare_figures(a, b, None, height=700, shadows=(None, shadow_b))
    wanted = _legend_names(fa) | _legend_names(fb)
    assert {"shadow ID", "shadow OOD (σ² > τ, not spent)"} <= wanted
    for caption, fig in [bundle.figures[0], *run_bundle(a).figures]:
        svg = render_image(fig, "svg").decode("utf-8")
        shown = {
            html.unescape(re.sub(r"<[^>]+>", "", m)) for m in re.findall(r'class="legendtext"[^>]*>(.*?)</text>', svg)
        }
        expected = wanted if caption == "Side by side" else _legend_names(fig)
        assert expected <= shown, (caption, expected - shown)
