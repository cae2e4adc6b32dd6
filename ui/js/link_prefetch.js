// The studio page's head runs this with the path of the linked Figure 1's answer (ui/app_ui.py). A studio address
// that names a node (?run=…&node=…, as the address bar shows it) asks for that node's Figure 1 as the page starts
// (ui/tabs/node_page.py NodeViews.linked_figure1): Gradio's client sends the page's load only once every component
// has mounted, a second or more later. plot.js draws it as soon as the inspector's plot is mounted; the load's own
// answer holds the same figure, which plot.js then does not draw again.
(path) => {
  const q = new URLSearchParams(location.search);
  if (!q.get('run') || !q.get('node')) return;
  const ask = new URLSearchParams();
  for (const k of ['run', 'node', 't']) if (q.get(k) !== null) ask.set(k, q.get(k));
  window.__uatsLinkedFigure1 = fetch(path + '?' + ask, {credentials: 'same-origin', cache: 'no-store'})
    .then((r) => (r.ok ? r.json() : null))
    .catch(() => null);
}
