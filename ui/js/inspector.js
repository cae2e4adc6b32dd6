// The node inspector's js_on_load (ui/tabs/search_layout.py, INSPECTOR_CSS): the inspector sits beside the tree
// while a node is inspected, sticky under the run bar, so what a click shows (the node's Figure 1 row, its numbers,
// its why) is on the first screen with the tree. Open: #search-row.uats-inspecting (the tab's row: Gradio scopes the
// page's CSS under its container, where a class on <body> never matches); the run form folds away meanwhile. A
// click in the tree opens it at once (plot.js calls window.__uatsOpenInspector); a link, a typed id or the Inspect
// button open it when the inspector's text names a node; opening another run (the text emptied) closes it, and so
// does its ✕ (until another node is inspected).
if (!window.__uatsInspector) {
  window.__uatsInspector = true;
  const root = () => document.getElementById('search-row') || document.body;
  let closedFor = null;  // the node whose inspector the user closed
  let last = '';  // the node the inspector's text named at the last look
  const heading = () => {
    const md = document.querySelector('#node-details [data-testid="markdown"]') ||
               document.querySelector('#node-details .prose');
    const t = md ? md.innerText.trim() : '';
    const m = t.match(/^(Node \d+|The question)/);
    return m ? m[1] : (t === '' ? '' : null);  // null: something else (Gradio's progress text): no change
  };
  const fitBar = () => {  // the panel sticks under the run bar, whatever the bar's height
    const bar = document.getElementById('run-bar');
    const px = (bar && bar.offsetParent !== null ? Math.round(bar.getBoundingClientRect().height) : 0) + 'px';
    if (document.documentElement.style.getPropertyValue('--uats-bar-h') !== px) {
      document.documentElement.style.setProperty('--uats-bar-h', px);
    }
  };
  // Plotly keeps the width of a plot's first draw in its layout (autosize off), and Plots.resize does nothing to a
  // layout with a width and a height: the tree stayed as narrow as the open inspector left it after a close. So the
  // width is set from the plot's box (its column's width, or Figure 1's least width) wherever the two differ.
  const resizePlots = () => requestAnimationFrame(() => {
    for (const sel of ['#tree', '#figure1', '#cost-plot', '#knobs-plot']) {
      const gd = document.querySelector(sel + ' .uats-plot');
      if (gd && gd.data && gd._fullLayout && gd.offsetParent !== null && gd._uatsSizeToBox) {
        gd._uatsSizeToBox().then(() => gd._uatsFit && gd._uatsFit());  // a narrower tree's legend wraps more
      }
    }
  });
  const underBar = () => {  // the tree and the inspector right under the run bar (the page's title scrolls away)
    const row = document.getElementById('tree-row'), bar = document.getElementById('run-bar');
    if (!row || !bar) return;
    const top = row.getBoundingClientRect().top, below = bar.getBoundingClientRect().bottom + 6;
    if (top > below + 1) window.scrollBy({top: top - below, behavior: 'instant'});
  };
  const label = (h) => {
    const span = element.querySelector('.uats-inspected');
    if (span && span.textContent !== (h ? ' · ' + h : '')) span.textContent = h ? ' · ' + h : '';
    // the node page's address, as the server wrote it at the end of the node's text (ui/tabs/viewer.py with_link)
    const share = element.querySelector('.uats-share');
    const a = h && share ? document.querySelector(`#node-details a[href^="${share.dataset.prefix}"]`) : null;
    const href = a ? a.getAttribute('href') : '';
    if (share && share.getAttribute('href') !== href) {
      if (href) share.setAttribute('href', href); else share.removeAttribute('href');
      share.style.display = href ? '' : 'none';
    }
  };
  // A click's inspector: the tree's resize to its narrower column waits until the clicked node's Figure 1 is drawn
  // (plot.js calls __uatsFigure1Drawn), or RESIZE_WAIT_MS if none comes. Resizing a 2,000-node tree (its width,
  // then its legend's height) took the page ~1.2 s, and the first click's Figure 1 waited behind it: drawn 1.8 s
  // after the click, against 0.45 s for the next clicks. Meanwhile the tree keeps its width, clipped at its column.
  const RESIZE_WAIT_MS = 3000;
  let resizeDue = null;
  const resizeNow = () => {
    if (resizeDue !== null) { clearTimeout(resizeDue); resizeDue = null; }
    resizePlots();
  };
  // after the frame that paints Figure 1: a resize in that frame's own callbacks would run before its paint
  window.__uatsFigure1Drawn = () => {
    if (resizeDue !== null) requestAnimationFrame(() => setTimeout(resizeNow, 0));
  };
  window.__uatsOpenInspector = (clicked = false) => {
    const was = root().classList.contains('uats-inspecting');
    closedFor = null;
    root().classList.add('uats-inspecting');
    const panel = document.getElementById('inspector-panel');
    if (panel) panel.scrollTop = 0;
    fitBar();
    if (was) return;
    if (clicked) resizeDue = setTimeout(resizeNow, RESIZE_WAIT_MS); else resizePlots();
    underBar();
  };
  const close = () => {
    if (!root().classList.contains('uats-inspecting')) return;
    root().classList.remove('uats-inspecting');
    resizeNow();
  };
  element.querySelector('.uats-close').addEventListener('click', () => { closedFor = heading() || null; close(); });
  const sync = () => {
    fitBar();
    const h = heading();
    if (h === null) return;
    if (h === '' && last !== '') { close(); closedFor = null; }
    else if (h && h !== last && h !== closedFor) window.__uatsOpenInspector();
    last = h;
    label(h);
  };
  setInterval(sync, 150);
}
