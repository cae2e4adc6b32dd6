"""The project's benchmarks, outside the package (the wheel leaves this folder out): speed targets live here,
never in test assertions. `python -m benchmarks <subcommand>` (cli.py) runs them from a checkout:

- prm, uncertainty, engine, gpu: the PRM's MC-dropout cost and uncertainty quality, the engine's search time,
  a published PRM shape on a GPU (cli.py, uncertainty.py, engine.py, gpu.py);
- app: the app's latencies and their targets (app.py, with app_first.py, app_pair.py, app_targets.py);
- eval: the evaluation grid's throughput with and without cross-problem batching (eval_batching.py).

They sit above every layer: they drive the engine, the run log and the app alike. The timing helper they share
with the `uats calibrate` command is uats_core.timing.
"""
