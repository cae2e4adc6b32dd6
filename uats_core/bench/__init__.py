"""`python -m uats_core.bench <subcommand>` launches the benchmarks in uats_core.entrypoints.bench; nothing
else lives here (benchmarks write run logs and drive the app, so they are entry points, not engine)."""
