#!/usr/bin/env bash
# Reproduces the table in BENCHMARKS.md: Ant-v5 on its own XML, stable-baselines3's PPO defaults,
# 8192 env steps per run, mjsweep batches of N = 1, 2, 4, ... up to 2 x usable cores, the naive
# multiprocessing.Pool at N = usable cores, and the 10,000-run dry-run and status figures.
# Run it on a quiet machine (the report shows the load it started under); a few minutes on 2 cores.
#   scripts/bench.sh            # prints the Markdown table and keeps a copy in bench-<host>.md
# Add --json to the sweep command for the same figures as one JSON object.
set -euo pipefail
sweep bench --env Ant-v5 --steps 8192 | tee "bench-$(hostname).md"
