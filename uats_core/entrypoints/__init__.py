"""Entry points: the programs that wire the engine (the rest of uats_core) to storage and the outside world.

The engine never imports storage, ui, gradio or sqlalchemy (tests/test_import_map.py checks it); whatever
needs the run log lives here, thin over the engine and storage:

- cli: `python -m uats_core search|runs|show|doctor|ledger|calibrate`
- calibrate: c and the in-distribution spreads that `--tau auto` reads, written beside the PRM
- eval/: the evaluation harness (`python -m uats_core.eval`): run, worker, ray_runner, ood_survival
- report: `python -m uats_core.report`, build_report(store_or_url) for the app
- theory: the Proposition 4.1/4.2 simulation
- train_controller: A-UATS's controller training

The benchmarks live outside the package, in benchmarks/ at the repository's top (`python -m benchmarks`).

The `__main__` modules under uats_core (uats_core/__main__.py, eval/, bench/, report/) are launchers that only
call one of these mains, so they sit outside the engine rule.
"""
