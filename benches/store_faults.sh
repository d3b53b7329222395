#!/usr/bin/env bash
# Tail latency under object-store faults: one command, rerunnable.
#   benches/store_faults.sh          # builds the broker and .venv if needed; ~12 minutes
#   BENCH_PHASE_S=5 BENCH_REPEAT=1 benches/store_faults.sh   # a quick look
# What it measures and its knobs: the docstring of benches/store_faults.py.
exec "$(dirname "${BASH_SOURCE[0]}")/python_bench.sh" store_faults.py "$@"
