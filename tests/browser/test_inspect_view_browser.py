"""What a click on a tree node shows, measured in Chromium at 1280×800 and 1920×1080 (issue 49): the node's
Figure 1 row, its numbers and its why inside the window with the tree still in view; one "inspected node" ring
however many clicks; Figure 1's column heads in view when its box is scrolled to its last row; no decision label
over a boxplot glyph in the Search tab's tree or in either of Compare's trees.

Before these changes, after a click on node 52 of an N = 64 tree at 1280×800 Figure 1 began 1,839 px down the
page, the inspector 3,278 px and Why 3,659 px; each click added a ring (5 after 5 clicks); 8 of 12 labels in Search
and 3 of 7 in Compare sat over a neighbour's box."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.browser import wait_quiet

from .pages import PAIR, STEP_S, fill, shot, text_layout, wait_idle, wait_plot

pytestmark = pytest.mark.browser

SCREENS = ["1280x800", "1920x1080"]
N64 = "a49" * 10 + "ff"  # a synthetic H-UATS run of N = 64 (the real engine's events), its steps of 64 candidates


@pytest.fixture(scope="module")
def run64(served: dict[str, Any]) -> str:
    from testkit.doubles import record_synthetic

    store = served["store"]
    if not any(r["run_id"] == N64 for r in store.list_runs(limit=500)):
        record_synthetic(store, N64, n_nodes=700, budget=64, seed=11, problem_id="synthetic-a49")
    return N64


# the nodes a person can click now: in the plot area, not under anything else (elementFromPoint), at most `k`
# spread over the tree, and `wanted` first when it is one of them
CLICKABLE_JS = r"""([k, wanted]) => {
  const gd = document.querySelector('#tree .uats-plot');
  const tr = gd.data.find(t => t.name && t.name.startsWith('nodes'));
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  const bar = document.getElementById('run-bar').getBoundingClientRect();
  const out = [];
  for (let i = 0; i < tr.x.length; i++) {
    const px = box.left + xa._offset + xa.l2p(tr.x[i]), py = box.top + ya._offset + ya.l2p(tr.y[i]);
    if (py < bar.bottom + 4 || py > innerHeight - 4 || px < 4 || px > innerWidth - 4) continue;
    const hit = document.elementFromPoint(px, py);
    if (hit && gd.contains(hit)) out.push({id: tr.customdata[i][0], x: px, y: py});
  }
  const pick = out.filter(p => p.id === wanted);
  const step = Math.max(1, Math.floor(out.length / k));
  for (let j = 0; j < out.length && pick.length < k; j += step) if (out[j].id !== wanted) pick.push(out[j]);
  return pick;
}"""

# Where the answer to a click lies, in window pixels: the node's Figure 1 row (its label and its table line, the
# numbers), the first line of Why about it, and the tree's plot area; each must be where a person sees it: inside
# the window, below the sticky run bar, and inside Figure 1's box below its sticky head.
IN_VIEW_JS = r"""(nid) => {
  const vw = innerWidth, vh = innerHeight, bar = document.getElementById('run-bar').getBoundingClientRect();
  const R = r => ({top: Math.round(r.top), bottom: Math.round(r.bottom), left: Math.round(r.left),
                   right: Math.round(r.right)});
  const seen = r => r.width > 0 && r.height > 0 && r.top >= bar.bottom - 1 && r.bottom <= vh + 0.5 && r.left >= -0.5 &&
                    r.right <= vw + 0.5;
  const fig = document.getElementById('figure1'), fb = fig.getBoundingClientRect();
  const head = fig.querySelector('.uats-sticky-head');
  const headBottom = head ? head.getBoundingClientRect().bottom : fb.top;
  const inFig = r => seen(r) && r.top >= headBottom - 1 && r.bottom <= fb.bottom + 1 && r.left >= fb.left - 1 &&
                     r.right <= fb.right + 1;
  const host = fig.querySelector('.uats-plot'), m = host._uatsMeta || {};
  const row = m.focus_row;
  const label = [...host.querySelectorAll('.yaxislayer-above text, .ytick text')]
    .find(t => t.textContent.includes('#' + nid) && t.textContent.includes('◀'));
  // the table: one text trace (ui/views/figure1.py _table_trace), a text point per row in row order
  const ti = host.data.findIndex(t => t.name === 'table');
  const line = ti >= 0 && row != null ? host.calcdata[ti][0].node3.node().querySelectorAll('.textpoint')[row] : null;
  const nums = (m.numbers || {})[nid] || {};
  const lineText = line ? line.textContent.replace(/\u00a0/g, ' ') : '';
  let why = null;  // the smallest block that starts with "node <id>": the sentence about the node
  for (const e of document.querySelectorAll('#why-panel p, #why-panel li, #why-panel div'))
    if (new RegExp('^node ' + nid + '\\b').test(e.textContent.trim()) &&
        (!why || e.textContent.length < why.textContent.length)) why = e;
  const plot = document.querySelector('#tree .uats-plot .nsewdrag').getBoundingClientRect();
  const treeShown = Math.min(plot.bottom, vh) - Math.max(plot.top, bar.bottom);
  return {selected: m.selected, row, figTop: Math.round(fb.top),
          label: label ? R(label.getBoundingClientRect()) : null,
          labelIn: !!label && inFig(label.getBoundingClientRect()),
          line: line ? R(line.getBoundingClientRect()) : null, lineIn: !!line && inFig(line.getBoundingClientRect()),
          numbers: !!nums['R̄'] && lineText.includes(nums['R̄']) && lineText.includes(nums['read']),
          why: why ? R(why.getBoundingClientRect()) : null, whyIn: !!why && seen(why.getBoundingClientRect()),
          tree: R(plot), treeShown: Math.round(treeShown), treeIn: plot.left >= -0.5 && plot.right <= vw + 0.5};
}"""


WHY_OF_JS = r"""(nid) => [...document.querySelectorAll('#why-panel p, #why-panel li, #why-panel div')]
  .some(e => new RegExp('^node ' + nid + '\\b').test(e.textContent.trim()))"""


def _open(pg: Any, url: str, rid: str) -> None:
    pg.goto(url)
    wait_plot(pg, "#tree", f"e.dataset.run === '{rid}' && e.dataset.lodPending === '0'")
    wait_idle(pg)
    wait_quiet(pg, 60)  # the page done loading: the nodes' pixels are read after this


def _click(pg: Any, node: dict[str, Any]) -> int:
    """A mouse click on the node, then until Figure 1 and Why of the node inspected are drawn: its id (Plotly gives
    a click to the point nearest the mouse, a neighbour's where marks crowd)."""
    before = pg.evaluate(
        "() => { const e = document.querySelector('#figure1 .uats-plot');"
        " return e && e._uatsMeta ? e._uatsMeta.selected : null; }"
    )
    wait_quiet(pg, 60)  # nothing redraws the tree under the mouse (its level of detail, a late answer)
    pg.mouse.click(node["x"], node["y"])
    pg.wait_for_function(
        "(b) => { const e = document.querySelector('#figure1 .uats-plot'), box = "
        "document.querySelector('#node-id input'); return e && e._uatsMeta && e.dataset.drawnAt && "
        "e._uatsMeta.selected !== b && String(e._uatsMeta.selected) === box.value; }",
        arg=before,
    )
    nid = int(pg.evaluate("() => document.querySelector('#figure1 .uats-plot')._uatsMeta.selected"))
    pg.wait_for_function(WHY_OF_JS, arg=nid)
    wait_idle(pg)
    return nid


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_a_click_shows_its_figure1_row_numbers_and_why_beside_the_tree(
    screen_page: Any, served: dict[str, Any], run64: str
) -> None:
    pg, size = screen_page, screen_page.viewport_size
    _open(pg, f"{served['url']}/?run={run64}", run64)
    node = pg.evaluate(CLICKABLE_JS, [1, 52])[0]
    node["id"] = _click(pg, node)
    seen = pg.evaluate(IN_VIEW_JS, node["id"])
    assert seen["selected"] == node["id"] and seen["numbers"], seen
    assert seen["labelIn"] and seen["lineIn"], seen  # the node's row: its label and its numbers
    assert seen["whyIn"], seen  # why it was decided so
    assert seen["treeIn"] and seen["treeShown"] >= 250, seen  # and the tree beside them
    shot(pg, f"inspect-click-{size['width']}x{size['height']}", full_page=False)
    # a link to the node opens the same view, on the first screen
    _open(pg, f"{served['url']}/?run={run64}&node={node['id']}", run64)
    wait_plot(pg, "#figure1", f"e._uatsMeta && e._uatsMeta.selected === {node['id']}")
    pg.wait_for_function("() => document.getElementById('inspector-panel').getClientRects().length > 0")
    wait_idle(pg)
    linked = pg.evaluate(IN_VIEW_JS, node["id"])
    assert linked["labelIn"] and linked["lineIn"] and linked["treeShown"] >= 250, linked


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_one_ring_after_five_clicks_and_heads_in_view(screen_page: Any, served: dict[str, Any], run64: str) -> None:
    pg = screen_page
    _open(pg, f"{served['url']}/?run={run64}", run64)
    clicked = []
    for _ in range(5):
        options = [n for n in pg.evaluate(CLICKABLE_JS, [12, None]) if n["id"] not in clicked]
        clicked.append(_click(pg, options[len(clicked) % len(options)]))
    rings = pg.evaluate(
        "() => (document.querySelector('#tree .uats-plot').layout.shapes || [])"
        ".filter(s => s && s.name === 'selected').map(s => [s.xanchor, s.yanchor])"
    )
    assert len(rings) == 1, (clicked, rings)
    drawn = pg.evaluate(
        "() => [...document.querySelectorAll('#tree .uats-plot .shapelayer path[data-index]')]"
        ".filter(p => { const s = document.querySelector('#tree .uats-plot')._fullLayout"
        ".shapes[Number(p.getAttribute('data-index'))]; return s && s.name === 'selected'; }).length"
    )
    assert drawn == 1, drawn
    # the ring as drawn (ui/js/plot.js moves its path in place): a 30 px circle centred on its anchor's pixels
    ring = pg.evaluate(
        """() => { const gd = document.querySelector('#tree .uats-plot');
          const k = gd.layout.shapes.findIndex(s => s && s.name === 'selected');
          const b = gd.querySelector(`.shapelayer path[data-index="${k}"]`).getBBox();
          const s = gd.layout.shapes[k], xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
          return [b.x + b.width / 2 - xa._offset - xa.l2p(s.xanchor),
                  b.y + b.height / 2 - ya._offset - ya.l2p(s.yanchor), b.width, b.height]; }"""
    )
    assert ring == pytest.approx([0, 0, 30, 30], abs=1), ring
    from .pages import RING_ON_JS

    assert pg.evaluate(RING_ON_JS, ["#tree", clicked[-1]])  # on the last node clicked
    # Figure 1's box scrolled to its last row: the column heads stay on top of it
    pg.evaluate("() => { const f = document.getElementById('figure1'); f.scrollTop = f.scrollHeight; }")
    heads = pg.evaluate(r"""() => {
      const f = document.getElementById('figure1'), fb = f.getBoundingClientRect();
      const head = f.querySelector('.uats-sticky-head');
      if (!head || f.scrollTop < 200) return {scrolled: f.scrollTop, head: !!head};
      const texts = [...head.querySelectorAll('text')].filter(t => /passes|spread|read/.test(t.textContent))
        .map(t => {
          const r = t.getBoundingClientRect();
          return {t: t.textContent.slice(0, 30), top: r.top, bottom: r.bottom};
        });
      return {scrolled: f.scrollTop, head: true, texts, boxTop: fb.top,
              inside: texts.filter(t => t.top >= fb.top - 1 && t.bottom <= fb.top + head.offsetHeight + 1).length,
              // what lies below the strip the head shows: copied, it was laid out and painted unseen at every draw
              rows: head.querySelectorAll('.trace, .point, .textpoint, .gridlayer *, .ytick').length,
              copied: head.querySelectorAll('*').length};
    }""")
    assert heads["head"] and heads["scrolled"] >= 200 and heads["inside"] >= 3, heads
    assert heads["rows"] == 0, heads  # the head is the strip: title, axes' heads, the table's heads


# Figure 1 and its sticky head as the page draws them: the clip paths its traces name that the page finds outside
# the plot (url(#id) takes the first element of that id in the page), and the axes' tick labels with their x in the
# window, in the plot and in the head's copy of its top strip
CLIPS_AND_HEAD_JS = r"""() => {
  const gd = document.querySelector('#figure1 .uats-plot'), head = document.querySelector('#figure1 .uats-sticky-head');
  const ids = [...gd.querySelectorAll('[clip-path]')]
    .map(e => /#([^#'")]+)['"]?\)$/.exec(e.getAttribute('clip-path'))).filter(Boolean).map(m => m[1]);
  const foreign = [...new Set(ids)]
    .filter(id => { const c = document.getElementById(id); return !c || !gd.contains(c); });
  const ticks = (root) => [...root.querySelectorAll('.xaxislayer-above text')]
    .map(t => [t.textContent, Math.round(t.getBoundingClientRect().left)]);
  const tree = document.querySelector('#tree .uats-plot');
  return {clips: ids.length, foreign, plot: ticks(gd), head: head ? ticks(head) : null, width: gd._fullLayout.width,
          tree: [Math.round(tree._fullLayout.width), tree.clientWidth]};
}"""


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_a_resized_window_redraws_the_tree_and_figure1_at_their_new_widths(
    screen_page: Any, served: dict[str, Any], run64: str
) -> None:
    """The window resized (1280×800 to 1920×1080 and back), Plotly draws Figure 1 again at its new width. Its traces
    were clipped to the rectangles of the width before, kept by the head's copy of the plot's clip paths, which came
    first in the page under the same ids: most boxes of the score panel were gone after a widening. And the head
    still showed the axes and column heads of that width, over the plot's own. The tree, whose layout holds the
    width its column had beside the inspector, kept it after a widening (422 px in an 816 px column)."""
    pg, size = screen_page, screen_page.viewport_size
    _open(pg, f"{served['url']}/?run={run64}&node=52", run64)
    wait_plot(pg, "#figure1", "e._uatsMeta && e._uatsMeta.selected === 52")
    wait_idle(pg)
    before = pg.evaluate(CLIPS_AND_HEAD_JS)
    assert before["clips"] and not before["foreign"], before
    other = {"width": 1920, "height": 1080} if size["width"] == 1280 else {"width": 1280, "height": 800}
    pg.set_viewport_size(other)
    pg.wait_for_function(
        "(w) => Math.abs(document.querySelector('#figure1 .uats-plot')._fullLayout.width - w) > 50",
        arg=before["width"],
    )
    wait_quiet(pg, 60)  # the redraw and the head's copy after it
    after = pg.evaluate(CLIPS_AND_HEAD_JS)
    assert after["clips"] and not after["foreign"], after
    assert after["plot"] != before["plot"], (before, after)  # the axes moved with the width
    assert after["head"] == after["plot"], after  # the head shows the plot's axes as they are now
    pg.wait_for_function(
        "() => { const t = document.querySelector('#tree .uats-plot');"
        " return Math.abs(t._fullLayout.width - t.clientWidth) <= 1; }",
        timeout=STEP_S * 1000,
    )
    shot(pg, f"figure1-resized-to-{other['width']}x{other['height']}", "#figure1")


# Every decision label shown and every boxplot glyph part, as the browser drew them (labels: the marks trace's SVG
# text; compact glyphs: each sub-path of their layout shapes, widened by half the stroke; detailed ones: their shapes
# and their printed R̄/σ²): the pairs that overlap by more than half a pixel each way.
LABELS_ON_GLYPHS_JS = r"""(sel) => {
  const gd = document.querySelector(sel + ' .uats-plot'), fl = gd._fullLayout;
  const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const inPlot = b => b.right >= plot.left && b.left <= plot.right && b.bottom >= plot.top && b.top <= plot.bottom;
  const compact = ['score scale 0–1', 'whiskers', 'MC boxes', 'medians', 'R̄ ticks'];
  const marks = [];
  gd.querySelectorAll('.shapelayer path[data-index]').forEach(path => {
    const sh = fl.shapes[Number(path.getAttribute('data-index'))];
    if (!sh || sh.visible === false) return;
    if (sh.name === 'glyph') { const b = path.getBoundingClientRect(); if (inPlot(b)) marks.push(b); return; }
    if (!compact.includes(sh.name)) return;
    const m = path.getScreenCTM(), svg = path.ownerSVGElement, pad = ((sh.line && sh.line.width) || 0) / 2;
    for (const seg of (path.getAttribute('d') || '').split('M').filter(Boolean)) {
      const nums = seg.replace(/[A-Za-z]/g, ' ').split(/[ ,]+/).filter(Boolean).map(Number);
      const xs = [], ys = [];
      for (let k = 0; k + 1 < nums.length; k += 2) {
        const pt = svg.createSVGPoint(); pt.x = nums[k]; pt.y = nums[k + 1];
        const q = pt.matrixTransform(m); xs.push(q.x); ys.push(q.y);
      }
      if (!xs.length) continue;
      const b = {left: Math.min(...xs) - pad, right: Math.max(...xs) + pad, top: Math.min(...ys) - pad,
                 bottom: Math.max(...ys) + pad};
      if (inPlot(b)) marks.push(b);
    }
  });
  gd.querySelectorAll('.annotation[data-index]').forEach(a => {
    const an = fl.annotations[Number(a.getAttribute('data-index'))];
    if (an && an.name === 'glyph') marks.push(a.getBoundingClientRect());
  });
  const i = gd.data.findIndex(t => t.name === 'marks');
  const g = i >= 0 ? gd.querySelector('.trace' + gd._fullData[i].uid) : null;
  const labels = g ? [...g.querySelectorAll('.textpoint text')].filter(t => getComputedStyle(t).display !== 'none')
    : [];
  const over = [];
  for (const t of labels) {
    const a = t.getBoundingClientRect();
    const hit = marks.find(b => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
                                Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5);
    if (hit) {
      over.push([t.textContent, Math.round(a.left), Math.round(a.top), Math.round(hit.left), Math.round(hit.top)]);
    }
  }
  return {labels: labels.length, marks: marks.length, over, lod: gd.dataset.lod};
}"""
LABEL_VIEW = "[...e._fullLayout.xaxis.range, ...e._fullLayout.yaxis.range].map(v => Number(v).toFixed(3)).join(',')"
SETTLED = f"e.dataset.lodPending === '0' && e.dataset.labelView === {LABEL_VIEW}"


def _zoom_middle(pg: Any, sel: str, share: float) -> None:
    pg.evaluate(
        "([sel, share]) => { const gd = document.querySelector(sel + ' .uats-plot');"
        " const r = gd._fullLayout.xaxis.range, y = gd._fullLayout.yaxis.range;"
        " const m = (r[0] + r[1]) / 2, w = (r[1] - r[0]) * share / 2;"
        " return Plotly.relayout(gd, {'xaxis.range': [m - w, m + w], 'yaxis.range': [y[0], y[1]]}); }",
        [sel, share],
    )
    wait_plot(pg, sel, SETTLED)


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_no_label_over_a_glyph_in_search(screen_page: Any, served: dict[str, Any], run64: str) -> None:
    pg, size = screen_page, screen_page.viewport_size
    _open(pg, f"{served['url']}/?run={run64}&t=4", run64)
    wait_plot(pg, "#tree", f"e.dataset.iteration === '4' && {SETTLED}")
    shown = 0
    for share in (1.0, 0.25, 0.08):  # the whole tree, then closer, down to detailed boxplots
        if share < 1:
            _zoom_middle(pg, "#tree", share)
        seen = pg.evaluate(LABELS_ON_GLYPHS_JS, "#tree")
        assert seen["marks"] > 0 and not seen["over"], (share, seen)
        shown += seen["labels"]
    assert shown > 0  # labels were drawn and measured
    shot(pg, f"labels-off-glyphs-{size['width']}x{size['height']}", "#tree")


@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_no_label_over_a_glyph_in_compare(screen_page: Any, served: dict[str, Any]) -> None:
    pg, size = screen_page, screen_page.viewport_size
    pg.get_by_role("tab", name="Compare").click()
    fill(pg, "cmp-a", PAIR["h-uats"][:10], submit=True)
    fill(pg, "cmp-b", PAIR["rebase"][:10], submit=True)
    pg.click("#cmp-load")
    shown = 0
    for sel in ("#cmp-tree-a", "#cmp-tree-b"):
        wait_plot(pg, sel, f"Number(e.dataset.nodes) > 1 && {SETTLED}")
    wait_idle(pg)
    for sel in ("#cmp-tree-a", "#cmp-tree-b"):
        wait_plot(pg, sel, SETTLED)
        seen = pg.evaluate(LABELS_ON_GLYPHS_JS, sel)
        assert seen["marks"] > 0 and not seen["over"], (sel, seen)
        shown += seen["labels"]
    assert shown > 0
    shot(pg, f"compare-labels-off-glyphs-{size['width']}x{size['height']}", full_page=False)


# the cost chart's legend and its plot area (where its bars are drawn), as the page lays them out: window pixels
COST_LEGEND_JS = r"""() => {
  const gd = document.querySelector('#cost-plot .uats-plot');
  const box = (e) => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left,
                                                                     right: r.right}; };
  const bars = [...gd.querySelectorAll('.barlayer .point path')].map(box);
  return {legend: box(gd.querySelector('.legend .bg')), area: box(gd.querySelector('.nsewdrag')), bars};
}"""


@pytest.mark.opens_an_address
@pytest.mark.parametrize("screen_page", SCREENS, indirect=True)
def test_the_cost_chart_s_legend_and_titles_cover_no_bar_and_no_label(
    screen_page: Any, served: dict[str, Any], run64: str
) -> None:
    """The legend of the cost chart under the tree sat inside its plot area, its white box over the top of the
    tallest bars: bars of the same height read as shorter where the legend covered them. Its axes' titles sat on
    tick labels ("11.19k" on "cost so far", "6" on "iteration")."""
    pg = screen_page
    _open(pg, f"{served['url']}/?run={run64}", run64)
    wait_plot(pg, "#cost-plot", "e.dataset.drawnAt")
    pg.locator("#cost-plot").scroll_into_view_if_needed()
    seen = pg.evaluate(COST_LEGEND_JS)
    assert seen["bars"], seen
    legend = seen["legend"]
    over = [
        b
        for b in seen["bars"]
        if min(b["bottom"], legend["bottom"]) - max(b["top"], legend["top"]) > 0.5
        and min(b["right"], legend["right"]) - max(b["left"], legend["left"]) > 0.5
    ]
    assert not over, (legend, over)
    assert legend["bottom"] <= seen["area"]["top"] + 0.5, seen  # above the plot area, where no bar reaches
    texts = text_layout(pg, "#cost-plot")  # and its axes' titles clear of their tick labels
    assert texts["count"] >= 8 and not texts["overlaps"] and not texts["clipped"], texts
    size = pg.viewport_size
    shot(pg, f"cost-chart-{size['width']}x{size['height']}", "#cost-plot")
