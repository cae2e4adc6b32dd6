// In the page head (ui/glossary.py column_tips_head), inside `(() => { const tips = {elem_id: {header: help}}; ... })()`:
// each listed table's column headers get their help as a tooltip whenever Gradio (re)draws the table.
function tip() {
  for (const [id, byHeader] of Object.entries(tips)) {
    const table = document.getElementById(id);
    if (!table) continue;
    for (const th of table.querySelectorAll('th')) {
      const text = (th.innerText || '').trim();
      if (byHeader[text] && th.title !== byHeader[text]) th.title = byHeader[text];
    }
  }
}
let queued = false;
new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; tip(); }); } })
  .observe(document.documentElement, {childList: true, subtree: true});
