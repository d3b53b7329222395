"""The suites' one size switch, STRATA_FULL (docs/test-suite.md): tests
whose size makes them long run a smaller size by default, with the same
fault kinds and assertions, and their full size with STRATA_FULL=1. A
suite's own variable (STRATA_OUTAGE_S, STRATA_EOS_RECORDS,
STRATA_STREAMS_RECORDS, STRATA_FRANZ_RECORDS) still sets its size and wins
over both. Used by tests/e2e and tests/compat (which puts tests/e2e on
sys.path)."""

from __future__ import annotations

import os

FULL = os.environ.get("STRATA_FULL", "").strip() not in ("", "0")


def size(default: float, full: float, var: str | None = None, cast=int):
    """`var` from the environment if set, else `full` under STRATA_FULL=1,
    else `default`."""
    if var and os.environ.get(var, "").strip():
        return cast(os.environ[var])
    return cast(full if FULL else default)
