#!/usr/bin/env bash
# Log compaction benchmark: one command, rerunnable.
#   benches/compaction.sh            # builds the broker and .venv if needed; ~6 minutes
#   BENCH_DIRTY_MB=64 BENCH_REPEAT=1 benches/compaction.sh   # a quick look
# What it measures and its knobs: the docstring of benches/compaction.py.
exec "$(dirname "${BASH_SOURCE[0]}")/python_bench.sh" compaction.py "$@"
