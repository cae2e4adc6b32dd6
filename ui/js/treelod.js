// The tree's level of detail, in the page: the part of the plot's js_on_load (PLOT_JS, ui/tabs/common.py) that swaps the compact glyphs for
// full boxplots when few nodes are in view.
//
// Why in the browser: zooming is Plotly's own (relayout in the page); a round trip to the server after each
// wheel step took seconds on a loaded machine, while the swap here redraws the plot once. The figure's
// meta.glyphs (ui/treeglyphs.glyph_meta) carries every scored node's box statistics, passes, colour bin and
// printed R̄|σ²; this script only decides which nodes are in view and lays their boxplots out in screen
// pixels: each one a set of Plotly layout shapes sized in pixels (xsizemode/ysizemode "pixel") anchored at
// its node, and an annotation shifted a fixed number of pixels right of it, so nothing ever drifts from its
// node whatever the zoom or the width of the view.
//
// Rules (LOD below): detailed while at most meta.glyphs.limit nodes are in view and siblings are at least
// minColPx apart and rows minRowPx tall; the box's 0–1 scale is 85 % of a row high (minBoxPx..maxBoxPx), the
// box gapPx right of its node (clear of its halo) and boxW wide, narrower where columns are close; R̄ and σ²
// are written beside it where the next node on its row is labelGapPx away or more. While detailed, the
// compact glyphs (layout shapes named in meta.glyphs.compact) are hidden (a relayout: shapes only).
//
// Text marks (the decisions' `+Kp ×N ✂` and `+k hidden`, the trace named "marks", set left of their node: its own
// glyph is on its right) are measured where the browser drew them: after every draw, zoom or pan, a label whose box
// overlaps one drawn before it (the server sends the largest decisions first), a boxplot glyph (a neighbour's: a
// label under it lost its first characters) or leaves the plot area (the colour bar and the legend sit outside it) is
// hidden at that zoom; zooming in brings it back, and the node's hover always says it. No Plotly redraw: the SVG
// text is shown or hidden.
const LOD = {gapPx: 18, boxW: 24, minBoxW: 12, minColPx: 38, minRowPx: 16, labelGapPx: 110, labelRowPx: 24,
             boxRows: 0.85, minBoxPx: 16, maxBoxPx: 160};
function lodAxes(gd) {
  const fl = gd._fullLayout;
  if (!fl || !fl.xaxis || !fl.yaxis || !fl.xaxis.range || !fl.yaxis.range) return null;
  const xr = fl.xaxis.range.map(Number), yr = fl.yaxis.range.map(Number);
  const x0 = Math.min(xr[0], xr[1]), x1 = Math.max(xr[0], xr[1]);
  const y0 = Math.min(yr[0], yr[1]), y1 = Math.max(yr[0], yr[1]);
  if (!(x1 > x0) || !(y1 > y0) || !fl.xaxis._length) return null;
  return {x0, x1, y0, y1, colPx: fl.xaxis._length / (x1 - x0), rowPx: fl.yaxis._length / (y1 - y0)};
}
function lodPlan(data, g, ax) {
  const tr = g && data[g.trace];
  if (!tr || !ax) return {detail: false, key: 'compact', ids: []};
  const inView = [], near = [];
  const mx = (ax.x1 - ax.x0) / 2, my = (ax.y1 - ax.y0) / 2;
  for (let i = 0; i < tr.x.length; i++) {
    const x = tr.x[i], y = tr.y[i];
    if (x >= ax.x0 && x <= ax.x1 && y >= ax.y0 && y <= ax.y1) inView.push(i);
    else if (x >= ax.x0 - mx && x <= ax.x1 + mx && y >= ax.y0 - my && y <= ax.y1 + my) near.push(i);
  }
  if (inView.length > g.limit || ax.colPx < LOD.minColPx || ax.rowPx < LOD.minRowPx) {
    return {detail: false, key: 'compact', ids: [], inView: inView.length};
  }
  // the nodes just outside the view too (up to the limit): a short pan shows no bare nodes
  const ids = inView.concat(near.slice(0, g.limit));
  const boxPx = Math.round(Math.min(LOD.maxBoxPx, Math.max(LOD.minBoxPx, LOD.boxRows * ax.rowPx)));
  // as wide as the gap to the next column allows (a sibling's halo is ~17 px round its centre)
  const boxW = Math.round(Math.min(LOD.boxW, Math.max(LOD.minBoxW, ax.colPx - LOD.gapPx - 8)));
  // R̄ and σ² are written beside a box when the next node to its right on its row leaves room for them
  const rows = new Map();
  for (let i = 0; i < tr.x.length; i++) {
    const r = rows.get(tr.y[i]) || [];
    r.push(tr.x[i]);
    rows.set(tr.y[i], r);
  }
  for (const r of rows.values()) r.sort((a, b) => a - b);
  const labels = new Set();
  const width = (ax.x1 - ax.x0) * ax.colPx;
  if (ax.rowPx >= LOD.labelRowPx) {
    for (const i of ids) {
      const r = rows.get(tr.y[i]), x = tr.x[i];
      const next = r.find(v => v > x);
      // ... and the plot's right edge leaves it room: past it lie the colour bar and the legend
      const fits = (x - ax.x0) * ax.colPx + LOD.gapPx + boxW + LOD.labelGapPx - 20 <= width;
      if (fits && (next === undefined || (next - x) * ax.colPx >= LOD.labelGapPx)) labels.add(i);
    }
  }
  return {detail: true, ids, boxPx, boxW, labels, inView: inView.length,
          key: `d${boxPx}w${boxW}:${ids.map(i => labels.has(i) ? i + 'L' : i).join(',')}`};
}
function lodGlyph(g, i, x, y, plan, shapes, notes) {
  const s = g.st.slice(6 * i, 6 * i + 6);  // lo, q1, median, q3, hi, R̄
  const H = plan.boxPx, sy = v => +((v - 0.5) * H).toFixed(1);  // pixels up from the node's centre
  const X0 = LOD.gapPx, X1 = X0 + plan.boxW, XC = X0 + plan.boxW / 2;
  const at = {xref: 'x', yref: 'y', xsizemode: 'pixel', ysizemode: 'pixel', xanchor: x, yanchor: y, name: 'glyph'};
  shapes.push({...at, type: 'rect', layer: 'below', x0: X0 - 2, x1: X1 + 2, y0: sy(0), y1: sy(1),
               fillcolor: '#f3f3f3', line: {width: 0}});
  let q1 = sy(s[1]), q3 = sy(s[3]);
  if (q3 - q1 < 2) { q1 -= 1; q3 += 1; }  // a near-zero spread still shows as a sliver
  shapes.push({...at, type: 'rect', x0: X0, x1: X1, y0: q1, y1: q3, fillcolor: g.palette[g.bin[i]],
               line: {color: '#444', width: 0.8}});
  shapes.push({...at, type: 'path', line: {color: '#333', width: 1.2},
               path: `M${XC},${sy(s[0])}V${q1}M${XC},${q3}V${sy(s[4])}M${XC - 4},${sy(s[0])}H${XC + 4}` +
                     `M${XC - 4},${sy(s[4])}H${XC + 4}M${X0},${sy(s[2])}H${X1}`});
  const p = g.p[i] || [];
  if (p.length) {
    let d = '';
    p.forEach((v, k) => {  // over the box in three columns, so equal passes stay countable
      const cx = XC + ((k % 3) - 1) * 6, cy = sy(v);
      d += `M${cx},${cy - 2.4}L${cx + 2.4},${cy}L${cx},${cy + 2.4}L${cx - 2.4},${cy}Z`;
    });
    shapes.push({...at, type: 'path', path: d, fillcolor: 'rgba(20,20,20,0.75)', line: {width: 0}});
  }
  shapes.push({...at, type: 'path', path: `M${X0 - 3},${sy(s[5])}H${X1 + 3}`, line: {color: '#d62728', width: 1.8}});
  if (!plan.labels.has(i)) return;
  const [m, v] = String(g.lab[i]).split('|');
  // beside the R̄ tick, kept within the box's own row
  const ys = Math.max(-H / 2 + 12, Math.min(H / 2 - 12, sy(s[5])));
  notes.push({x, y, xref: 'x', yref: 'y', xanchor: 'left', yanchor: 'middle', xshift: X1 + 6, yshift: ys,
              showarrow: false, align: 'left', name: 'glyph', text: `R̄=${m}<br>σ²=${v}`, borderpad: 1,
              bgcolor: 'rgba(255,255,255,0.85)', font: {size: 12, color: g.ood[i] ? g.ood_colour : '#222'}});
}
// the compact glyphs are layout shapes named in g.compact: shown, or hidden while detailed ones are drawn
function lodCompact(shapes, g, show) {
  const compact = g.compact || [];
  return (shapes || []).map(s => s && compact.includes(s.name) ? {...s, visible: show} : s);
}
function lodDecor(data, g, plan, layout) {
  const shapes = lodCompact(((layout && layout.shapes) || []).filter(s => s && s.name !== 'glyph'), g, !plan.detail);
  const notes = ((layout && layout.annotations) || []).filter(a => a && a.name !== 'glyph');
  const tr = data[g.trace];
  if (plan.detail) for (const i of plan.ids) lodGlyph(g, i, tr.x[i], tr.y[i], plan, shapes, notes);
  return {shapes, annotations: notes};
}
// the boxplot glyphs in view, in page pixels: compact ones from their box statistics and place (meta.glyphs.dx, .h:
// the whiskers' span and the R̄ tick), detailed ones as lodGlyph lays them out (the 0–1 scale) with their R̄/σ²
function glyphBoxes(gd, box) {
  const g = gd._uatsMeta && gd._uatsMeta.glyphs, fl = gd._fullLayout;
  const tr = g && gd.data[g.trace];
  if (!tr || !g.dx) return [];
  const xa = fl.xaxis, ya = fl.yaxis, ox = box.left + xa._offset, oy = box.top + ya._offset;
  const px = x => ox + xa.l2p(x), py = y => oy + ya.l2p(y);
  const out = [], plan = gd._uatsPlan;
  if (plan && plan.detail) {
    const H = plan.boxPx, X0 = LOD.gapPx - 3, X1 = LOD.gapPx + plan.boxW + 3;
    for (const i of plan.ids) {
      const cx = px(tr.x[i]), cy = py(tr.y[i]);
      out.push({left: cx + X0, right: cx + X1, top: cy - H / 2, bottom: cy + H / 2});
    }
    gd.querySelectorAll('.annotation[data-index]').forEach(a => {
      const an = fl.annotations[Number(a.getAttribute('data-index'))];
      if (an && an.name === 'glyph') out.push(a.getBoundingClientRect());
    });
    return out;
  }
  const [d0, d1] = g.dx, h = g.h;
  for (let i = 0; i < tr.x.length; i++) {
    const s = 6 * i;
    // with rails, the grey 0–1 scale is a mark too: the glyph spans the whole scale
    const lo = g.rails ? 0 : Math.min(g.st[s], g.st[s + 5]), hi = g.rails ? 1 : Math.max(g.st[s + 4], g.st[s + 5]);
    const ya0 = py(tr.y[i] - h + 2 * h * lo), ya1 = py(tr.y[i] - h + 2 * h * hi);
    out.push({left: px(tr.x[i] + d0 - 0.05), right: px(tr.x[i] + d1 + 0.05), top: Math.min(ya0, ya1),
              bottom: Math.max(ya0, ya1) + 1});
  }
  return out;
}
// the text marks at this zoom: hide those that would overlap an earlier one or a glyph, or leave the plot area
function labelCull(gd) {
  const i = (gd.data || []).findIndex(t => t && t.name === 'marks');
  const fd = gd._fullData && gd._fullData[i], fl = gd._fullLayout;
  const g = fd && gd.querySelector('.trace' + fd.uid);
  if (!g || !fl || !fl.xaxis) { gd.dataset.labelsHidden = '0'; return; }
  const box = gd.getBoundingClientRect();
  const left = box.left + fl.xaxis._offset, right = left + fl.xaxis._length;
  const top = box.top + fl.yaxis._offset, bottom = top + fl.yaxis._length;
  const texts = [...g.querySelectorAll('.textpoint text, text.textpoint')];
  for (const t of texts) t.style.display = '';
  const boxes = texts.map(t => t.getBoundingClientRect());  // one layout for all of them
  const glyphs = glyphBoxes(gd, box).filter(q => q.right > left && q.left < right && q.bottom > top && q.top < bottom);
  const kept = [];
  let hidden = 0;
  texts.forEach((t, k) => {
    const r = boxes[k];
    if (!r.width) return;
    const out = r.left < left || r.right > right || r.top < top || r.bottom > bottom;
    // a glyph's strokes reach a pixel past the box its statistics give
    const hit = kept.some(q => r.left < q.right + 3 && r.right > q.left - 3 && r.top < q.bottom && r.bottom > q.top) ||
      glyphs.some(q => r.left < q.right + 1 && r.right > q.left - 1 && r.top < q.bottom + 1 && r.bottom > q.top - 1);
    if (out || hit) { t.style.display = 'none'; hidden++; } else kept.push(r);
  });
  gd.dataset.labelsHidden = String(hidden);
  gd.dataset.labelView = labelView(gd);  // the view these labels were measured in (tests wait for it)
}
function labelView(gd) {
  const fl = gd._fullLayout;
  return fl && fl.xaxis ? [...fl.xaxis.range, ...fl.yaxis.range].map(v => Number(v).toFixed(3)).join(',') : '';
}
function lodMark(gd, plan) {
  gd.dataset.lod = plan.detail ? 'detail' : 'compact';
  gd.dataset.lodNodes = String(plan.detail ? plan.ids.length : 0);
  gd.dataset.inView = String(plan.inView || 0);
  gd._uatsLod = plan.key;
  gd._uatsPlan = plan;  // the glyphs drawn, which labels keep off (labelCull)
}
// before Plotly.react: draw the level of detail the view will ask for, so a live update draws once and a
// few nodes never flash stretched compact glyphs. Exact where the user fixed the view (a zoom or pan, which
// uirevision keeps); under autorange a guess from the last view, checked after the draw (lodRefresh).
function lodInject(gd, spec) {
  const g = spec.meta && spec.meta.glyphs;
  gd._uatsLod = null;  // what is drawn is decided again after this draw unless decided here
  gd._uatsPlan = null;
  if (!g) return;
  const fl = gd._fullLayout;
  const known = fl && gd._uatsRev === (spec.layout || {}).uirevision;
  const fixed = known && fl.xaxis.autorange === false && fl.yaxis.autorange === false;
  const small = Number((spec.meta || {}).n_shown) <= g.limit;
  const plan = known ? lodPlan(spec.data, g, lodAxes(gd)) : null;
  if (plan && (fixed || plan.detail || !small)) {
    const dec = lodDecor(spec.data, g, plan, spec.layout);
    spec.layout.shapes = dec.shapes; spec.layout.annotations = dec.annotations;
    lodMark(gd, plan);
  } else if (small) {
    // one of at most `limit` nodes will be detailed once drawn: its compact glyphs (laid out in layout
    // units, stretched by a few nodes spread over the plot) start hidden until the swap
    spec.layout.shapes = lodCompact(spec.layout.shapes, g, false);
  } else {
    lodMark(gd, {detail: false, key: 'compact', ids: []});  // the figure as sent is the compact form
  }
}
// after a draw, a zoom or a pan: swap levels when what is in view asks for another
// (dataset.lodPending: '1' from a draw's start until its level of detail is drawn, for tests and benches)
function lodRefresh(gd) {
  const g = gd._uatsMeta && gd._uatsMeta.glyphs;
  if (gd.data) labelCull(gd);
  if (!g || !gd.data) { delete gd.dataset.lod; gd.dataset.lodPending = '0'; return; }
  const plan = lodPlan(gd.data, g, lodAxes(gd));
  gd.dataset.inView = String(plan.inView || 0);
  if (plan.key === gd._uatsLod) { gd.dataset.lodPending = '0'; return; }
  const dec = lodDecor(gd.data, g, plan, gd.layout);
  lodMark(gd, plan);
  gd.dataset.lodPending = '1';
  Plotly.relayout(gd, {shapes: dec.shapes, annotations: dec.annotations}).then(() => {
    labelCull(gd);
    if (gd._uatsLod === plan.key) gd.dataset.lodPending = '0';  // not if a later plan is on its way
    gd.dataset.lodDraws = String(Number(gd.dataset.lodDraws || 0) + 1);
  });
}
