#!/usr/bin/env bash
# Reproduces the table in BENCHMARKS.md: Ant-v5 on its own XML, stable-baselines3's PPO defaults,
# 32768 env steps per run, mjsweep batches of N = 1, 2, 4, ... up to 2 x usable cores, the naive
# multiprocessing.Pool at N = usable cores, and the 10,000-run dry-run and status figures.
# Run it on a quiet machine (the table's first line shows the load it started under); about 9 minutes
# on 2 cores. Extra arguments go to `sweep bench`, e.g. `scripts/bench.sh --max-workers 32` on 16 cores.
#   scripts/bench.sh     # bench-<host>.md: the Markdown table as pasted into BENCHMARKS.md;
#                        # bench-<host>.json: the same figures for scripts
set -euo pipefail
host="$(hostname)"
sweep bench --env Ant-v5 --steps 32768 --markdown "bench-${host}.md" --json "$@" > "bench-${host}.json"
cat "bench-${host}.md"
