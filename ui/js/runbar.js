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
  let observed = null;
  const tick = () => {
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
