"""The fault swarm's host (issue 9 §1): runs `controlplane.swarm` cases on a local process pool
or a Dask cluster, shows progress, times the run, writes failing scenarios and prints the table.

Why a package of its own: everything here is what docs/architecture.md keeps out of `controlplane` — the
wall clock (seeds/minute, the progress bar), processes and threads (the pool, Dask's event loop),
a fresh interpreter for the determinism reruns. The pure half (generation, oracles, shrinking)
lives in `controlplane.swarm` and `controlplane.oracles`, so the dashboard and the tests use the
same code without any of this. `python -m controlplane swarm …` forwards here.
"""
