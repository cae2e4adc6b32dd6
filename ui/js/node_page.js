// The node page's own script (ui/tabs/node_page.py writes it after the node's Figure 1 JSON): the page's figure slots
// drawn by the studio's plot script (plot.js after treelod.js, run as Gradio runs a gr.HTML's js_on_load: its element,
// a trigger, props.value), Figure 1 at once; the tree (its JSON comes last) once Figure 1 is drawn, then the LaTeX
// of the page's text by Gradio's own KaTeX module. A node clicked in either figure opens that node's page at the
// same iteration.
(() => {
  const read = (id) => JSON.parse(document.getElementById(id).textContent);
  const opts = read('page-options');
  // the studio's plot script, run the way Gradio runs a js_on_load
  const plot = new Function('element', 'trigger', 'props', 'server', 'upload', 'watch', opts.plot_js);
  const trigger = (event, data) => {
    if (event !== 'select' || !data || typeof data.node_id !== 'number') return;
    const q = new URLSearchParams(location.search);
    q.set('node', String(data.node_id));
    location.assign('?' + q.toString());
  };
  const mount = (slot, value) => plot(document.getElementById(slot), trigger, {value}, {}, null, () => {});
  const figure1 = read('figure1-json');
  mount('figure1', figure1);
  // Figure 1 is the answer to the link: the tree's draw (a second at 2,000 nodes) waits until it is on screen
  const figure1Drawn = () => !figure1 || document.querySelector('#figure1 .uats-plot').dataset.drawnAt;
  const latex = () => {
    if (!opts.katex) return;
    import('./' + opts.katex).then((m) => {
      for (const id of ['node-head', 'node-details']) {
        m.default(document.getElementById(id), {delimiters: opts.latex, throwOnError: false});
      }
    }).catch((e) => console.error('uats: KaTeX did not load', e));
  };
  const tree = () => {
    if (!figure1Drawn()) { setTimeout(tree, 20); return; }
    mount('tree', read('tree-json'));
    latex();
  };
  window.__uatsNodePage = {tree};
})();
