// A figure slot's js_on_load (ui/tabs/common.py plot_html, after treelod.js): draws the figure JSON in the
// component's value with Plotly.react on the same div, fixed uirevision, so zoom and pan survive live updates.
// The template never contains ${value}, so Gradio never re-renders the div.
const host = element.querySelector('.uats-plot');
const LATER = new Set(['cost-plot', 'knobs-plot']);  // plots drawn after the others of the same response
const empty = element.querySelector('.uats-empty');
function ringAt(id) {
  // the ring is a layout shape; true when it was moved in place (cheap), false when it needs a relayout
  if (!host.data) return true;
  for (const tr of host.data) {
    if (!tr.customdata || tr.mode !== 'markers') continue;
    for (let i = 0; i < tr.customdata.length; i++) {
      const c = tr.customdata[i];
      const cid = Array.isArray(c) ? c[0] : c;
      if (cid === id) {
        const shapes = (host.layout && host.layout.shapes) || [];
        const k = shapes.findIndex(s => s && s.name === 'selected');
        // every tree carries its one ring (ui/views/treefig.py ring_shape); a figure without one (Figure 1's
        // dots select a node too) gets none, so a page never shows two
        if (k < 0 || moveRing(k, tr.x[i], tr.y[i])) return true;
        // one item of the array: Plotly redraws that shape only (an object at an index that exists would be
        // *inserted* there, Plotly's array edits: a second ring), so the ring is moved by its anchor
        Plotly.relayout(host, {[`shapes[${k}].xanchor`]: tr.x[i], [`shapes[${k}].yanchor`]: tr.y[i]});
        return false;
      }
    }
  }
  return true;
}
// The ring moved without Plotly: a relayout of a shape's anchor recalculates the whole plot (a second at 2,000
// nodes), so the anchor is written into the layout (what the next draw, a zoom or the level of detail, reads)
// and the drawn circle's path set at the node's pixels, as Plotly draws a circle shape
function moveRing(k, x, y) {
  const fl = host._fullLayout, path = host.querySelector(`.shapelayer path[data-index="${k}"]`);
  const full = fl && (fl.shapes || []).find(s => s._index === k);
  if (!fl || !fl.xaxis || !fl.yaxis || !path || !full) return false;
  for (const s of [host.layout.shapes[k], full]) { s.xanchor = x; s.yanchor = y; s.opacity = 1; }
  path.style.opacity = '1';  // the ring the server drew unseen before any node was selected
  // a circle shape sized in pixels round its anchor, as Plotly draws it (its y pixels grow downwards)
  const ax = fl.xaxis._offset + fl.xaxis.l2p(x), ay = fl.yaxis._offset + fl.yaxis.l2p(y);
  const x0 = ax + full.x0, x1 = ax + full.x1, y0 = ay - full.y0, y1 = ay - full.y1;
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2, arc = `A${Math.abs(cx - x0)},${Math.abs(cy - y0)}`;
  const right = `${cx + Math.abs(cx - x0)},${cy}`, top = `${cx},${cy - Math.abs(cy - y0)}`;
  path.setAttribute('d', `M${right}${arc} 0 1,1 ${top}${arc} 0 0,1 ${right}Z`);
  return true;
}
// a figure taller than its box (Figure 1 in the inspector) keeps its top margin (title, axes, column heads) in view:
// a copy of that strip, without the traces, stuck to the top of the box (meta.sticky_top: its height in px)
function scrollBox() {  // the box round the plot that scrolls it up and down (a max-height in the page's CSS)
  for (let e = element.parentElement; e && e !== document.body; e = e.parentElement) {
    const cs = getComputedStyle(e);
    if (cs.maxHeight !== 'none' && (cs.overflowY === 'auto' || cs.overflowY === 'scroll')) return e;
  }
  return null;
}
// what the head's copy leaves out: the traces (each subplot's .overplot: plotly.js 4 has no .plot group, and the
// traces were 626 of the 806 elements copied, laid out and painted unseen), the shapes under and over them, the
// rows' labels, the plot area's background and grid lines (all below the strip it shows) and the plot's controls
const HEAD_SKIP = '.modebar-container, .draglayer, .hoverlayer, .overplot, .layer-below, .layer-above, ' +
  '.yaxislayer-above, .gridlayer, .minor-gridlayer, .zerolinelayer, .layer-subplot, .layer-between';
function leanCopy(node) {
  const copy = node.cloneNode(false);
  // without its ids: a url(#id) finds the first element of that id in the page, and that was this copy's, ahead of
  // the plot. After a resize the plot's traces were clipped to the copy's old clip rectangles (most boxes gone)
  if (copy.nodeType === 1) copy.removeAttribute('id');
  for (const ch of node.childNodes) {
    if (ch.nodeType !== 1 || !ch.matches(HEAD_SKIP)) copy.appendChild(leanCopy(ch));
  }
  return copy;
}
function stickyHead(px) {
  let head = element.querySelector(':scope > .uats-sticky-head');
  const src = host.querySelector('.svg-container');
  if (!px || !src || !scrollBox()) { if (head) head.remove(); return; }
  if (!head) {
    head = document.createElement('div');
    head.className = 'uats-sticky-head';
    host.parentNode.insertBefore(head, host);
  }
  const copy = leanCopy(src);
  // Plotly's own CSS stacks its SVG layers only inside a plot's div: the copy's layers are stacked here
  copy.querySelectorAll('.main-svg').forEach(e => Object.assign(e.style, {position: 'absolute', top: '0', left: '0'}));
  head.replaceChildren(copy);
  Object.assign(head.style, {height: px + 'px', marginBottom: -px + 'px', width: host.offsetWidth + 'px'});
}
// the inspected node's row in the middle of the figure's box (meta.focus_row: its index on the y axis)
function showRow(m) {
  const ya = host._fullLayout && host._fullLayout.yaxis, box = scrollBox();
  if (m.focus_row == null || !ya || !box) return;
  const y = host.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop +
            ya._offset + ya.l2p(m.focus_row);
  const head = m.sticky_top || 0;
  box.scrollTop = Math.max(0, y - head - (box.clientHeight - head) / 2);
}
// a tree's legend under it wraps into more rows in a narrow plot (beside the inspector) and took the plot's own
// height: the figure grows by what the legend needs beyond one screen-wide figure's rows (LEGEND_PX)
const LEGEND_PX = 100;
// the fits by the plot's width (the last FIT_WIDTHS): a plot drawn or resized again at a width it had takes its
// height there at once, in the same draw or relayout (a second relayout for the legend cost ~0.5 s at 2,000 nodes)
const FIT_WIDTHS = 8;
function heightAt(base, w) {
  const px = base && host._uatsExtra ? host._uatsExtra.get(w) : undefined;
  return px === undefined ? null : base + px;
}
// the plot at its box's width, at its legend's fit there when one is known: true when it was relaid out (for
// ui/js/inspector.js resizePlots, and fitWidth below after the window's resize)
const offBox = () => Math.abs((host._fullLayout.width || 0) - host.clientWidth) > 1;
host._uatsSizeToBox = async () => {
  if (!offBox()) return false;
  const w = host.clientWidth, h = heightAt(host._uatsBaseH, w);
  await Plotly.relayout(host, h ? {width: w, height: h} : {width: w});
  return true;
};
// Plotly can place a legend by the plot area of the draw before: after a draw or relayout that moved the plot area
// (the legend pushing the margin, the width or height changed) it stayed where that draw had it, over the tree's
// lowest steps or apart from them. Its position (translate, px), against where its layout puts it
function legendAdrift() {
  const fl = host._fullLayout, lg = fl.legend, g = host.querySelector('g.legend');
  const at = g && /translate\(\s*[-\d.e]+\s*,\s*([-\d.e]+)\s*\)/.exec(g.getAttribute('transform') || '');
  return !!at && lg.yanchor === 'top' && Math.abs(Number(at[1]) - (fl._size.t + fl._size.h * (1 - lg.y))) > 1;
}
async function fitLegend(base) {
  const lg = host._fullLayout && host._fullLayout.legend;
  if (!lg || !base || lg.orientation !== 'h') return;
  const extra = Math.max(0, Math.round((lg._height || 0) - LEGEND_PX));
  const fits = (host._uatsExtra = host._uatsExtra || new Map());
  fits.delete(host.clientWidth);
  fits.set(host.clientWidth, extra);
  if (fits.size > FIT_WIDTHS) fits.delete(fits.keys().next().value);
  if (Math.abs((host._fullLayout.height || 0) - (base + extra)) > 2) await Plotly.relayout(host, {height: base + extra});
  // placed again by a relayout of its own position: ~25 ms at 2,000 nodes, against ~570 for one of the width
  if (legendAdrift()) await Plotly.relayout(host, {'legend.y': host._fullLayout.legend.y});
}
async function show(spec) {
  host.style.display = 'block'; empty.style.display = 'none';
  const t0 = performance.now();
  host.dataset.lodPending = '1';
  lodInject(host, spec);
  host._uatsMeta = spec.meta || {};
  // a figure that needs a least width (Figure 1's labels, panels and table) scrolls sideways below it: in the
  // box that scrolls it up and down where there is one (its sticky head sticks to that box), else here
  const minW = (spec.meta || {}).min_width;
  host.style.minWidth = minW ? minW + 'px' : '';
  element.style.overflowX = minW && !scrollBox() ? 'auto' : '';
  const base = spec.layout && spec.layout.legend ? spec.layout.height : null;
  host._uatsBaseH = base;
  const fitted = heightAt(base, host.clientWidth);  // an earlier fit at this width: drawn at once at its height
  if (fitted) spec.layout.height = fitted;
  // ms by step, for benchmarks/app_targets.py: where a draw's time goes (data-draw-phases)
  const ph = {};
  let tp = t0;
  const lap = (k) => { const t = performance.now(); ph[k] = +(t - tp).toFixed(1); tp = t; };
  lap('prepare');
  await Plotly.react(host, spec.data, spec.layout, spec.config || {});
  lap('react');
  await fitLegend(base);
  lap('legend');
  // after the plot's box changed size (the inspector opened or closed: ui/js/inspector.js)
  host._uatsFit = async () => { await fitLegend(host._uatsBaseH); stickyHead(m.sticky_top); showRow(m); };
  const m = spec.meta || {};
  host._uatsRev = (spec.layout || {}).uirevision;
  lodRefresh(host);
  lap('lod');
  stickyHead(m.sticky_top);
  lap('head');
  showRow(m);
  lap('row');
  host.dataset.drawPhases = JSON.stringify(ph);
  host.dataset.drawMs = (performance.now() - t0).toFixed(1);
  host.dataset.nodes = m.n_nodes; host.dataset.shown = m.n_shown; host.dataset.iteration = m.iteration;
  host.dataset.run = m.run_id || ''; host.dataset.status = m.status || '';
  host.dataset.pinned = m.pinned ? '1' : '';  // an iteration the user chose (not "the latest")
  if (m.written_at) host.dataset.latencyMs = (Date.now() - m.written_at * 1000).toFixed(0);
  host.dataset.drawnAt = String(Date.now());
  host.dataset.draws = String(Number(host.dataset.draws || 0) + 1);
  // the tree's resize for the inspector a click opened waited for this (ui/js/inspector.js)
  if (host.dataset.owner === 'figure1' && window.__uatsFigure1Drawn) window.__uatsFigure1Drawn();
  // a short in-page log of draws for benchmarks/app.py and the browser tests (bounded: pages stay open long)
  const log = (window.__uatsDraws = window.__uatsDraws || []);
  log.push({el: host.dataset.owner || '', iteration: m.iteration, nodes: m.n_nodes, status: m.status || '',
            run: m.run_id || '', drawMs: Number(host.dataset.drawMs),
            latencyMs: m.written_at ? Number(host.dataset.latencyMs) : null, at: Date.now()});
  if (log.length > 2000) log.splice(0, log.length - 2000);
  if (!host._uatsBound) {
    host.on('plotly_click', (ev) => {
      const p = ev.points && ev.points[0];
      if (!p || p.customdata == null) return;
      const id = Array.isArray(p.customdata) ? p.customdata[0] : p.customdata;
      if (typeof id !== 'number') return;
      if (host._uatsEarly) { host._uatsEarlyClick = id; return; }  // inspected once the page's load answers
      trigger('select', {node_id: id});  // the request first: nothing drawn here may delay it
      // the inspector opens beside the tree at once (ui/js/inspector.js); Compare's trees have none
      if (host.dataset.owner !== 'tree' || !window.__uatsOpenInspector) { setTimeout(() => ringAt(id), 0); return; }
      // the tree's resize waits for this click's Figure 1, unless Figure 1 already shows that node (the inspector
      // closed and the same node clicked again: the same figure, not drawn again)
      const f1 = document.querySelector('#figure1 .uats-plot');
      window.__uatsOpenInspector(!(f1 && f1._uatsMeta && f1._uatsMeta.selected === id));
      requestAnimationFrame(() => ringAt(id));  // the tree's ring moved in place, after the inspector's frame
    });
    // a zoom, a pan, a reset or a resize ended: the level of detail may change (not during a drag), and a sticky
    // head is copied again (after the window's resize it showed the axes and heads of the width before)
    host.on('plotly_relayout', () => requestAnimationFrame(() => {
      lodRefresh(host);
      if (host._uatsMeta && host._uatsMeta.sticky_top) stickyHead(host._uatsMeta.sticky_top);
    }));
    host._uatsBound = true;
  }
}
// The window resized: Plotly's own resize leaves alone a plot whose layout has a width, and a relayout of a plot's
// height (its legend's fit) or width (the inspector's opening) gives it one. So after a widening the tree kept the
// narrow width it had: 422 px in an 816 px column in the studio, 448 in 862 on a node's page. Once the window has
// stopped changing, the plot takes its box's width (and its legend's fit there), as the inspector's resize does.
let resizing = null;
async function fitWidth() {
  if (!host._fullLayout || !host.data || host.offsetParent === null || !offBox()) return;
  if (host._uatsBusy) { resizing = setTimeout(fitWidth, 200); return; }  // after the draw under way
  if ((await host._uatsSizeToBox()) && host._uatsFit) await host._uatsFit();
}
window.addEventListener('resize', () => { clearTimeout(resizing); resizing = setTimeout(fitWidth, 200); });
async function drain() {
  // one figure at a time, in order; a frame stays on screen a moment before the next replaces it, and
  // a page that fell behind (several frames waiting) paints each once and goes on, so it catches up;
  // a plot out of view waits, keeping only the latest frame
  if (host._uatsBusy) return;
  host._uatsBusy = true;
  try {
    while (host._uatsQueue.length) {
      if (!element.isConnected) { host._uatsQueue.length = 0; break; }  // the component is gone
      if (!element.getClientRects().length) {
        // in a tab not shown (or a closed accordion): nobody watches these frames, and drawing them took the
        // page's time from the tab in view (a click there waited up to a second); the latest is drawn once shown
        host._uatsQueue.splice(0, host._uatsQueue.length - 1);
        await new Promise(r => setTimeout(r, 200));
        continue;
      }
      await show(host._uatsQueue.shift());
      const behind = host._uatsQueue.length;
      if (behind) await new Promise(r => requestAnimationFrame(() => setTimeout(r, behind > 1 ? 0 : 80)));
    }
  } catch (e) { console.error('uats: draw failed', e); }
  finally { host._uatsBusy = false; }
}
function draw(raw = props.value) {
  host._uatsQueue = host._uatsQueue || [];
  if (!raw) {
    host._uatsQueue.length = 0; host._uatsRaw = raw;
    host.style.display = 'none'; empty.style.display = 'flex'; host.dataset.nodes = '0'; return;
  }
  if (typeof Plotly === 'undefined') { setTimeout(() => draw(raw), 50); return; }
  // the same figure again (an event that lists this plot as an output and skips it): parsing and reacting
  // to a 2,000-node tree for nothing took a second of the page's time on every node click
  if (raw === host._uatsRaw && host.data) return;
  host._uatsRaw = raw;
  let spec;
  try { spec = JSON.parse(raw); } catch (e) { console.error('uats: bad figure', e); return; }
  // a live poll's frames (every new iteration, oldest first) queue behind those still being drawn;
  // any other figure (a step back, a filter, another run) replaces the frames not drawn yet
  if (spec.frames) host._uatsQueue.push(...spec.frames);
  else host._uatsQueue.splice(0, host._uatsQueue.length, spec);
  // a link to a node (?run=…&node=…) sends the node's Figure 1, then the tree (ui/tabs/links.py): the inspector
  // opens with the first of them, so each is drawn once at its width beside the other, the tree a tick later
  const first = !host.data && !spec.frames && (spec.meta || {}).selected != null;
  const opens = first && (host.dataset.owner === 'tree' || host.dataset.owner === 'figure1');
  if (opens && window.__uatsOpenInspector) window.__uatsOpenInspector();
  const linked = opens && host.dataset.owner === 'tree';
  // the charts under the tree wait a turn too: a response that carries them with Figure 1 (a link) drew them first
  if (linked || LATER.has(host.dataset.owner)) setTimeout(drain, 0); else drain();
}
// A Figure 1 drawn from a studio address's early answer (below) is on the screen before the page's load has
// answered, while the server holds no open run for the page: a row clicked then said "open a run first" and was
// lost. It is sent once the load's answer (this plot's value) is here.
function answered() {
  if (!host._uatsEarly || !props.value) return;
  const id = host._uatsEarlyClick;
  host._uatsEarly = false; host._uatsEarlyClick = null;
  if (id != null) trigger('select', {node_id: id});
}
draw();
watch('value', () => { draw(); answered(); });
// a studio address that names a node: its Figure 1, asked for as the page started (ui/js/link_prefetch.js), drawn
// now rather than when the page's load answers with the same figure (draw() then skips it as drawn already)
const prefetched = host.dataset.owner === 'figure1' && window.__uatsLinkedFigure1;
if (prefetched) {
  window.__uatsLinkedFigure1 = null;  // once: a plot mounted again later draws its own value
  prefetched.then((a) => {
    if (!a || !a.figure1 || props.value || host._uatsRaw) return;
    host._uatsEarly = true;
    draw(a.figure1);
  });
}
