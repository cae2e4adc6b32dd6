"""What the browser tests do with a page: fill a box, open a run, wait for text, a notice or a redrawn plot,
and the named screenshots. A plain module: the tests import these, pytest's fixtures live in conftest.py."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
# The named screenshots of the page's states (docs/img holds copies): taken only when asked for, since each costs
# a render; a failing test's page is saved whatever this says (conftest.py).
SCREENSHOTS = os.environ.get("UATS_SCREENSHOTS") == "1"

# Two synthetic runs (the real engine's events, testkit.synthetic) on one problem, seed and budget: the
# comparison, replay and export tests need finished runs of known shape without minutes of search.
PAIR = {"h-uats": "a0" * 16, "rebase": "b0" * 16}
# The longest one step of a browser test waits (a click, a check, a plot redrawn, a text shown, a screenshot):
# minutes on a loaded 2-core machine. A check under Playwright's default 30 s failed once with the suite beside two
# other jobs. Every wait here ends as soon as what it waits for happens, so a long one costs a passing test nothing.
STEP_S = 180.0


def patient(target: Any) -> Any:
    """A browser context or page whose actions and waits allow STEP_S (Playwright's default is 30 s)."""
    target.set_default_timeout(STEP_S * 1000)
    return target


# The screens the issue-30 tour uses: a laptop and a desktop
LAPTOP = {"width": 1280, "height": 800}
WIDE = {"width": 1920, "height": 1080}

# true once the plot in `sel` draws its selection ring on node `id` (the ring is a layout shape at the node)
RING_ON_JS = """([sel, id]) => {
  const gd = document.querySelector(sel + ' .uats-plot');
  if (!gd || !gd.data || !gd.layout) return false;
  const ring = (gd.layout.shapes || []).find(s => s.name === 'selected');
  if (!ring) return false;
  for (const tr of gd.data) {
    if (!tr.customdata || tr.mode !== 'markers') continue;
    for (let i = 0; i < tr.customdata.length; i++) {
      const c = tr.customdata[i];
      if ((Array.isArray(c) ? c[0] : c) === id)
        return Math.abs(tr.x[i] - ring.xanchor) < 1e-6 && Math.abs(tr.y[i] - ring.yanchor) < 1e-6;
    }
  }
  return false;
}"""

NODE_PIXEL_JS = """([sel, wanted]) => {
  const gd = document.querySelector(sel + ' .uats-plot');
  gd.scrollIntoView({block: 'center'});  // not under the sticky run bar at the window's top
  const tr = gd.data.find(t => t.name && t.name.startsWith('nodes'));
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  for (let i = 0; i < tr.x.length; i++) {
    const id = tr.customdata[i][0];
    if (wanted !== null && id !== wanted) continue;
    const px = xa._offset + xa.l2p(tr.x[i]), py = ya._offset + ya.l2p(tr.y[i]);
    if (!(px > xa._offset && px < xa._offset + xa._length && py > ya._offset && py < ya._offset + ya._length))
      continue;
    const hit = document.elementFromPoint(box.left + px, box.top + py);  // a node the user can see and click
    if (hit && gd.contains(hit)) return {x: box.left + px, y: box.top + py, id: id};
  }
  return null;
}"""


def plot_data(pg: Any, sel: str, key: str) -> str | None:
    return pg.eval_on_selector(f"{sel} .uats-plot", f"e => e.dataset.{key} || null")


def wait_plot(pg: Any, sel: str, cond: str, timeout_s: float = STEP_S) -> None:
    pg.wait_for_function(
        f"() => {{ const e = document.querySelector('{sel} .uats-plot'); return e && ({cond}); }}",
        timeout=timeout_s * 1000,
    )


def fill(pg: Any, elem_id: str, value: str, submit: bool = False) -> None:
    box = pg.locator(f"#{elem_id} input, #{elem_id} textarea").first
    # A component that has just been revealed (an opened accordion) may still sync its initial value and
    # overwrite what was typed; on a loaded CPU that once sent the old τ with the next click. So type,
    # then insist the value has stayed put twice in a row before anything reads it.
    deadline = time.time() + 10
    settled = 0
    while time.time() < deadline:
        if box.input_value() != value:
            box.fill(value)
            settled = 0
        else:
            settled += 1
            if settled == 2:  # the second look in a row: no wait after it
                break
        time.sleep(0.15)
    if submit:
        box.press("Enter")
    else:
        box.blur()  # let the component commit its value before the next click reads it


def choose(pg: Any, elem_id: str, label: str) -> None:
    """Pick one of a dropdown's choices by its label: type it to filter the list, Enter takes the match."""
    box = pg.locator(f"#{elem_id} input").first
    deadline = time.time() + 10
    while box.input_value() != label and time.time() < deadline:
        box.fill(label)
        box.press("Enter")
        time.sleep(0.15)
    assert box.input_value() == label, f"#{elem_id} shows {box.input_value()!r}, not {label!r}"


def open_run(pg: Any, run_id: str) -> None:
    fill(pg, "open-id", run_id)
    pg.click("#open-btn")
    wait_plot(pg, "#tree", f"e.dataset.run === '{run_id}' && Number(e.dataset.nodes) > 0")


def wait_text(pg: Any, selector: str, needle: str, timeout_s: float = STEP_S) -> str:
    deadline = time.time() + timeout_s
    text = ""
    while time.time() < deadline:
        text = pg.locator(selector).inner_text()
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{selector} never showed {needle!r}; it shows {text[:300]!r}")


def notice_text(pg: Any) -> str:
    loc = pg.locator("#notice")
    return loc.inner_text() if loc.count() and loc.is_visible() else ""


def wait_notice(pg: Any, needle: str, timeout_s: float = STEP_S) -> str:
    deadline = time.time() + timeout_s
    text = ""
    while time.time() < deadline:
        text = notice_text(pg)
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"notice never said {needle!r}; it says {text!r}")


def wait_idle(pg: Any, timeout_s: float = 30.0) -> None:
    """Wait until Gradio shows no pending request (its progress overlays are gone)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if pg.locator(".eta-bar, .progress-text").count() == 0:
            return
        time.sleep(0.1)


# A photo of one component or of the whole page: the sticky notice and run bar (ui/tabs/runbar.py) would sit
# over whatever is scrolled under them (a component's top, or a table midway down a full-page image), so they
# stay in the page's flow while it is taken. Nothing moves: a sticky element keeps its place in the flow.
UNSTICK_JS = (
    "(on) => { for (const id of ['notice', 'run-bar']) { const e = document.getElementById(id); "
    "if (e) e.style.position = on ? 'static' : ''; } }"
)


def photo(pg: Any, path: Path, selector: str | None = None, full_page: bool = True) -> None:
    """`path` of `selector` (scrolled into view) or of the page, without the sticky bars over it (UNSTICK_JS);
    what the window shows (full_page=False) as it is."""
    unstick = bool(selector) or full_page
    if unstick:
        pg.evaluate(UNSTICK_JS, True)
    try:
        if selector:
            pg.locator(selector).scroll_into_view_if_needed()
            pg.locator(selector).screenshot(path=str(path))
        else:
            pg.screenshot(path=str(path), full_page=full_page)
    finally:
        if unstick:
            pg.evaluate(UNSTICK_JS, False)


def shot(pg: Any, name: str, selector: str | None = None, full_page: bool = True) -> Path | None:
    """artifacts/<name>.png of the page (or of `selector`; full_page=False: of what the window shows) when
    UATS_SCREENSHOTS=1; None otherwise."""
    if not SCREENSHOTS:
        return None
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    photo(pg, path, selector, full_page)
    return path


# Every piece of text a plot draws (tick labels, annotations, the title, text marks), as the page lays it out:
# the boxes of those a person can see, and which pairs overlap or leave the figure (a label cut off at its edge).
TEXT_BOXES_JS = r"""(sel) => {
  const host = document.querySelector(sel + ' .uats-plot');
  const fig = host.querySelector('.main-svg').getBoundingClientRect();
  const out = [];
  for (const t of host.querySelectorAll('svg text')) {
    if (!t.textContent.trim() || t.closest('.modebar') || t.closest('.hoverlayer')) continue;
    const st = getComputedStyle(t);
    if (st.display === 'none' || st.visibility === 'hidden' || Number(st.opacity) === 0 ||
        t.closest('[style*="display: none"]')) continue;
    const r = t.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    out.push({text: t.textContent.slice(0, 40), left: r.left, right: r.right, top: r.top, bottom: r.bottom});
  }
  const overlaps = [], clipped = [];
  for (let i = 0; i < out.length; i++) {
    const a = out[i];
    if (a.left < fig.left - 0.5 || a.right > fig.right + 0.5 || a.top < fig.top - 0.5 || a.bottom > fig.bottom + 0.5)
      clipped.push(a.text);
    for (let j = i + 1; j < out.length; j++) {
      const b = out[j];
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) overlaps.push([a.text, b.text]);
    }
  }
  return {count: out.length, overlaps, clipped};
}"""


def text_layout(pg: Any, sel: str) -> dict[str, Any]:
    """TEXT_BOXES_JS of the plot in `sel`: how many texts it shows, the pairs that overlap, the clipped ones."""
    return pg.evaluate(TEXT_BOXES_JS, sel)


# A table as laid out (a Gradio Dataframe): its header words broken over two lines ("ru|n"), a cell's word broken
# anywhere but after a - / _ . : or , ("syntheti|c-policy"; "synthetic-|policy" is a wrap), and the headers and cells
# whose text the browser draws outside the cell or past the table's visible width (cut off, or over a neighbour),
# unless the cell carries the whole text in its title (an ellipsis that says what it hides).
TABLE_FIT_JS = r"""(sel) => {
  const root = document.querySelector(sel);
  const view = (root.querySelector('.table-wrap') || root).getBoundingClientRect();
  const lines = (node, a, b) => {
    const r = document.createRange(); r.setStart(node, a); r.setEnd(node, b);
    return [...r.getClientRects()].filter(q => q.width > 0.5);
  };
  const broken = [], cut = [];
  const cells = [...root.querySelectorAll('th[role=columnheader], [role=gridcell]')];
  for (const cell of cells) {
    const box = cell.getBoundingClientRect();
    if (!box.width) continue;
    const text = cell.innerText.trim();
    const titled = [cell, ...cell.querySelectorAll('[title]')]
      .some(e => (e.getAttribute('title') || '').includes(text));
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.parentElement.closest('button')) continue;  // the column menu's ⋮
      const re = /\S+/g;
      let m;
      while ((m = re.exec(n.data))) {
        const rects = lines(n, m.index, m.index + m[0].length);
        if (cell.matches('th') && new Set(rects.map(q => Math.round(q.top))).size > 1) broken.push(m[0]);
        if (!cell.matches('th')) {  // a cell's word may wrap after a - / _ . : or , but never inside a piece
          const piece = /[^-\/_.:,]+[-\/_.:,]*/g;
          let k;
          while ((k = piece.exec(m[0]))) {
            const at = m.index + k.index, tops = lines(n, at, at + k[0].length).map(q => Math.round(q.top));
            if (new Set(tops).size > 1) broken.push(m[0]);
          }
        }
        const out = rects.some(q => q.left < box.left - 1 || q.right > box.right + 1 || q.top < box.top - 1 ||
                                    q.bottom > box.bottom + 1 || q.right > view.right + 1);
        if (out && !titled) cut.push(text.slice(0, 40));
      }
    }
  }
  return {cells: cells.length, broken, cut: [...new Set(cut)]};
}"""


def table_fit(pg: Any, sel: str) -> dict[str, Any]:
    """TABLE_FIT_JS of the table in `sel`: how many cells it drew, words broken mid-piece, texts cut off."""
    return pg.evaluate(TABLE_FIT_JS, sel)
