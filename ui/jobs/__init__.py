"""The app's background work: the pool of warm worker processes (worker, pool_state, warm, lifeline) and the
jobs it runs: searches, shadow scoring of a finished run (shadow, shadow_job) and imports of other tools' runs
(import_job)."""
