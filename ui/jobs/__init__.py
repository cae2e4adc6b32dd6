"""The app's background work: the pool of warm worker processes (worker, pool_state, warm, lifeline) and the
jobs it runs: searches, and shadow scoring of a finished run (shadow, shadow_job)."""
