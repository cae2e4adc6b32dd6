// The run bar's js_on_load (ui/tabs/runbar.py): keeps the bar under the message line, copies the hint into each
// disabled control's tooltip, and brings the tree back under the bar after Run, Step, Resume and replay.
if (!window.__uatsRunBar) {
  window.__uatsRunBar = true;
  const ids = props.explained;  // the controls whose disabled state the hint explains (runbar.py EXPLAINED)
  const TREE_MOVERS = '#run-btn, #step-btn, #resume-btn, #prev-btn, #play-btn, #next-btn';
  const fitBar = () => {  // the bar sticks just under the notice, whatever the notice's height
    const notice = document.getElementById('notice');
    const h = notice && notice.offsetParent !== null ? notice.getBoundingClientRect().height : 0;
    const px = Math.round(h) + 'px';
    if (document.documentElement.style.getPropertyValue('--uats-notice-h') !== px) {
      document.documentElement.style.setProperty('--uats-notice-h', px);
    }
  };
  // A run's end is said once the tree shows it. One poll brings a burst's last frames and the run's final status
  // together; the status line and the hint changed at once while the tree drew its frames one after another (plot.js
  // drain), so "finished" stood over a tree still growing. While the tree has frames to draw, a copy of what the line
  // said before stands over it (.uats-status-held) until its last frame is drawn. Gradio's own nodes are only made
  // transparent, at once: their markdown sets visibility itself (a hidden parent did not hide it) and fades opacity.
  const ended = new RegExp('\\b(' + props.ended.join('|') + ')\\b');
  const drawing = () => {
    const gd = document.querySelector('#tree .uats-plot');
    return !!gd && ((gd._uatsQueue || []).length > 0 || !!gd._uatsBusy);
  };
  const own = (el) => [...el.childNodes].filter(n => !(n.classList && n.classList.contains('uats-status-held')));
  const holder = (el) => {
    let before = own(el).map(n => n.cloneNode(true)), held = null;
    let hidden = [];
    const release = () => {
      if (drawing()) { requestAnimationFrame(release); return; }
      held.remove(); held = null;
      const shown = hidden;
      for (const n of shown) n.style.opacity = '';  // at once too: Gradio's fade back in is restored a frame later
      requestAnimationFrame(() => { for (const n of shown) n.style.transition = ''; });
      hidden = [];
      el.style.position = '';
      before = own(el).map(n => n.cloneNode(true));
    };
    return () => {  // a MutationObserver's callback: it runs before the page paints the change
      if (held) return;
      if (!ended.test(el.innerText) || !drawing()) { before = own(el).map(n => n.cloneNode(true)); return; }
      held = document.createElement('div');
      held.className = 'uats-status-held';
      Object.assign(held.style, {position: 'absolute', inset: '0'});
      held.replaceChildren(...before.map(n => n.cloneNode(true)));
      hidden = own(el).filter(n => n.nodeType === Node.ELEMENT_NODE);
      for (const n of hidden) Object.assign(n.style, {transition: 'none', opacity: '0'});  // Gradio fades it
      el.appendChild(held);
      el.style.position = 'relative';
      requestAnimationFrame(release);
    };
  };
  const watched = {};
  const watch = () => {
    for (const id of ['run-status', 'run-hint']) {
      const el = document.getElementById(id);
      if (!el || watched[id] === el || !window.MutationObserver) continue;
      new MutationObserver(holder(el)).observe(el, {childList: true, subtree: true, characterData: true});
      watched[id] = el;
    }
  };
  let observed = null;
  const tick = () => {
    watch();
    // a ResizeObserver moves the bar in the frame the notice changes size: with the tick alone a new message
    // covered the bar for up to 200 ms (a screenshot caught it)
    const notice = document.getElementById('notice');
    if (notice && notice !== observed && window.ResizeObserver) {
      new ResizeObserver(fitBar).observe(notice);
      observed = notice;
    }
    fitBar();
    const hint = document.getElementById('run-hint');
    const why = hint ? hint.innerText.trim() : '';
    if (hint && hint.title !== why) hint.title = why;  // the line may be cut short: its tooltip is whole
    const status = document.getElementById('run-status');  // its lines too (one line each, RUN_BAR_CSS)
    const said = status ? status.innerText.trim() : '';
    if (status && status.title !== said) status.title = said;
    for (const el of document.querySelectorAll('#run-bar .info-text')) {  // a control's help, as its tooltip
      const box = el.closest('.block'); if (box && box.title !== el.textContent.trim()) box.title = el.textContent.trim();
    }
    for (const id of ids) {
      const el = document.getElementById(id);
      const b = el && (el.tagName === 'BUTTON' ? el : el.querySelector('button'));
      if (!b) continue;
      const want = b.disabled ? (why || 'Not available now') : '';
      if (b.title !== want) b.title = want;
    }
  };
  setInterval(tick, 200);
  // Run, Step and Resume grow the tree, replay moves it: bring it under the bar if the page was scrolled away
  document.addEventListener('click', (ev) => {
    if (!ev.target.closest || !ev.target.closest(TREE_MOVERS)) return;
    const tree = document.getElementById('tree'), bar = document.getElementById('run-bar');
    if (!tree || !bar || tree.offsetParent === null) return;
    const top = tree.getBoundingClientRect().top, below = bar.getBoundingClientRect().bottom + 6;
    if (top < below || top > window.innerHeight - 120) window.scrollBy({top: top - below, behavior: 'instant'});
  }, true);
}
