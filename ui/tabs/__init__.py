"""One module per tab of UATS Studio's page (search, compare, runs, cases, reports), each with a
build_*_tab function that makes the tab's components and wires its events, plus what they share
(common: AppContext, plot slots, the run cache; viewer: opening and drawing a run). The Search tab is four:
search_layout (its components), search_events and inspector (their events), search (puts them together)."""
