"""The `uats` command and the programs behind it: the layer above storage that wires the engine (uats_core) to
the run log (storage) and the outside world. The engine never imports it, nor storage; the app (ui/) and this
package do not import each other (tests/test_import_map.py checks it, module by module and folder by folder).

- cli: `uats search|runs|show|import|doctor|ledger|calibrate`, and the dispatch to the programs below
- calibrate: c and the in-distribution spreads that `--tau auto` reads, written beside the PRM
- eval/: the evaluation harness (`uats eval`): run, worker, ray_runner; ood_survival (`uats ood-survival`)
- report: `uats report`, and build_report(store_or_url)
- theory: the Proposition 4.1/4.2 simulation (`uats theory`)
- train_controller: A-UATS's controller training (`uats train`)

`pip install .` installs the `uats` command; in a checkout, `python -m uats` is the same command. The benchmarks
live outside the package, in benchmarks/ at the repository's top (`python -m benchmarks`).
"""
