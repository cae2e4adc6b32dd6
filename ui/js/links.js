// The address bar's js_on_load (ui/tabs/links.py): mirrors what the page shows into the address (replaceState:
// no history entry per step), and binds ←/→ to the step buttons unless the user is typing. Reads the DOM the
// tree and inspector already fill, so no handler has to report the view twice.
if (!window.__uatsLinks) {
  window.__uatsLinks = true;
  const sync = () => {
    const e = document.querySelector('#tree .uats-plot');
    if (!e || !e.dataset.run) return;  // nothing opened yet: keep the address the page was opened with
    const want = new URLSearchParams();
    want.set('run', e.dataset.run);
    // a node only once the user picked one: the inspector then describes the node in the id box (the box
    // alone reads 0 before any pick, and the details block holds Gradio's progress text while loading)
    const md = document.querySelector('#node-details [data-testid="markdown"]');
    const box = document.querySelector('#node-id input');
    if (box && box.value !== '' && md && md.innerText.includes('Node ' + box.value + ' ')) want.set('node', box.value);
    const it = e.dataset.iteration;
    if (e.dataset.pinned === '1' && it !== undefined && it !== 'undefined' && it !== '') want.set('t', it);
    const q = '?' + want.toString();
    if (location.search === q) return;
    history.replaceState(history.state, '', location.pathname + q + location.hash);
    repoint(location.href.split('#')[0]);
  };
  // Under a <base> element (Gradio's page has one) Plotly writes gradient fills and clip paths as
  // url("<page address>#id"): once the address changes they name another document and paint nothing (a blank
  // colour bar). Re-point the drawn ones, and the address Plotly uses for what it draws next.
  const STALE = /url\((["']?)[^"')#]*#/g;
  const repoint = (href) => {
    const fresh = (v) => v.replace(STALE, (m, quote) => 'url(' + quote + href + '#');
    document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
      if (gd._context && gd._context._baseUrl) gd._context._baseUrl = href;
    });
    document.querySelectorAll('.js-plotly-plot [style*="url("]').forEach((el) => {
      const v = el.getAttribute('style');
      const w = fresh(v);
      if (w !== v) el.setAttribute('style', w);
    });
    for (const name of ['clip-path', 'fill', 'mask', 'filter']) {
      document.querySelectorAll('.js-plotly-plot [' + name + '*="url("]').forEach((el) => {
        const v = el.getAttribute(name);
        const w = fresh(v);
        if (w !== v) el.setAttribute(name, w);
      });
    }
  };
  setInterval(sync, 300);
  document.addEventListener('keydown', (ev) => {
    if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    if (ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight') return;
    const a = document.activeElement;
    if (a && (a.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT', 'BUTTON'].includes(a.tagName))) return;
    const btn = document.querySelector(ev.key === 'ArrowLeft' ? '#prev-btn' : '#next-btn');
    if (!btn || btn.offsetParent === null) return;  // the Search tab is not showing
    ev.preventDefault();
    btn.click();
  });
}
