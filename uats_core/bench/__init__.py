"""`python -m uats_core.bench <subcommand>` launches the benchmarks of a checkout (benchmarks/, at the
repository's top, which the wheel leaves out); nothing else lives here."""
