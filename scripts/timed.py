#!/usr/bin/env python3
"""Runs a command and, when it ends, prints one line with its wall time and
the CPU time it and its children used, so a suite phase's log shows where
time went and whether it was waiting or computing:

    scripts/timed.py LABEL -- CMD ARGS...

Exits with the command's exit code."""

import resource
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    label, cmd = sys.argv[1], sys.argv[3:]
    start = time.monotonic()
    code = subprocess.call(cmd)
    wall = time.monotonic() - start
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru.ru_utime + ru.ru_stime
    print(f"==> timing: {label}: {wall:.0f} s wall, {cpu:.0f} s CPU "
          f"({cpu / wall if wall else 0:.2f} cores busy on average), exit {code}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
