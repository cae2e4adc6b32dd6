// Runs and Cases tabs (ui/tabs/runs.py, ui/tabs/cases.py): after a row opened its run, the Search tab is shown, here
// in the page. Sent from the server as the Tabs' new value, the Tabs became an output whose loading status Gradio
// refreshes on every later event, reading every component of the page each time (a third of a node click's time).
// A row that opened nothing leaves its message (the notice, in orange) where it is.
() => {
  const notice = document.getElementById('notice');
  if (notice && notice.offsetParent !== null && notice.classList.contains('bad')) return;
  const tab = document.querySelector('button[role="tab"][data-tab-id="search"]');
  if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
}
