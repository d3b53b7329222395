#!/usr/bin/env bash
# Replication benchmark (issue 18): one command, rerunnable.
#   benches/replication.sh                   # builds the broker and .venv if needed; a few minutes
#   benches/replication.sh --records 50000   # a quick look
# What it measures and its options: the docstring of benches/replication.py (or --help).
# The replaced-broker phase needs strata-s3 (local-stack/).
cargo build --release -p strata-local-stack --manifest-path "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml"
exec "$(dirname "${BASH_SOURCE[0]}")/python_bench.sh" replication.py "$@"
