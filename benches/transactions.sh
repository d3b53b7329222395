#!/usr/bin/env bash
# Transactions benchmark (issue 17): one command, rerunnable.
#   benches/transactions.sh                  # builds the broker and .venv if needed; under a minute
#   benches/transactions.sh --records 50000  # a quick look
# What it measures and its options: the docstring of benches/transactions.py (or --help).
exec "$(dirname "${BASH_SOURCE[0]}")/python_bench.sh" transactions.py "$@"
