// A figure slot's js_on_load (ui/tabs/common.py plot_html, after treelod.js): draws the figure JSON in the
// component's value with Plotly.react on the same div, fixed uirevision, so zoom and pan survive live updates.
// The template never contains ${value}, so Gradio never re-renders the div.
const host = element.querySelector('.uats-plot');
const empty = element.querySelector('.uats-empty');
function ringAt(id) {
  // the ring is a layout shape: relayout redraws shapes only (restyle recomputed the whole tree)
  if (!host.data) return;
  for (const tr of host.data) {
    if (!tr.customdata || tr.mode !== 'markers') continue;
    for (let i = 0; i < tr.customdata.length; i++) {
      const c = tr.customdata[i];
      const cid = Array.isArray(c) ? c[0] : c;
      if (cid === id) {
        const shapes = (host.layout && host.layout.shapes) || [];
        let k = shapes.findIndex(s => s.name === 'selected');
        if (k < 0) k = shapes.length;
        // one item of the array: Plotly redraws that shape only (the whole array redraws the plot)
        Plotly.relayout(host, {[`shapes[${k}]`]: {type: 'circle', name: 'selected', xref: 'x', yref: 'y',
          xsizemode: 'pixel', ysizemode: 'pixel', xanchor: tr.x[i], yanchor: tr.y[i], x0: -15, x1: 15, y0: -15,
          y1: 15, line: {color: '#111', width: 2.5}}});
        return;
      }
    }
  }
}
async function show(spec) {
  host.style.display = 'block'; empty.style.display = 'none';
  const t0 = performance.now();
  host.dataset.lodPending = '1';
  lodInject(host, spec);
  host._uatsMeta = spec.meta || {};
  // a figure that needs a least width (Figure 1's labels, panels and table) scrolls sideways below it
  const minW = (spec.meta || {}).min_width;
  host.style.minWidth = minW ? minW + 'px' : '';
  element.style.overflowX = minW ? 'auto' : '';
  await Plotly.react(host, spec.data, spec.layout, spec.config || {});
  const m = spec.meta || {};
  host._uatsRev = (spec.layout || {}).uirevision;
  lodRefresh(host);
  host.dataset.drawMs = (performance.now() - t0).toFixed(1);
  host.dataset.nodes = m.n_nodes; host.dataset.shown = m.n_shown; host.dataset.iteration = m.iteration;
  host.dataset.run = m.run_id || ''; host.dataset.status = m.status || '';
  host.dataset.pinned = m.pinned ? '1' : '';  // an iteration the user chose (not "the latest")
  if (m.written_at) host.dataset.latencyMs = (Date.now() - m.written_at * 1000).toFixed(0);
  host.dataset.drawnAt = String(Date.now());
  host.dataset.draws = String(Number(host.dataset.draws || 0) + 1);
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
      trigger('select', {node_id: id});  // the request first: nothing drawn here may delay it
      setTimeout(() => ringAt(id), 0);
    });
    // a zoom, a pan, a reset or a resize ended: the level of detail may change (not during a drag)
    host.on('plotly_relayout', () => requestAnimationFrame(() => lodRefresh(host)));
    host._uatsBound = true;
  }
}
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
function draw() {
  const raw = props.value;
  host._uatsQueue = host._uatsQueue || [];
  if (!raw) {
    host._uatsQueue.length = 0; host._uatsRaw = raw;
    host.style.display = 'none'; empty.style.display = 'flex'; host.dataset.nodes = '0'; return;
  }
  if (typeof Plotly === 'undefined') { setTimeout(draw, 50); return; }
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
  drain();
}
draw();
watch('value', draw);
