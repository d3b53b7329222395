#!/usr/bin/env python3
"""What this machine does to a log's fsyncs, with no broker involved.

A probe writes like the broker's partition logs do (FSYNC_FILES files, each
appending 8 KiB and calling fdatasync, then pausing 3 ms: a few hundred
group commits per second per file) and records every fdatasync's latency,
while one of these runs beside it:

  quiet         nothing
  cpu-idle      one SCHED_IDLE busy loop per CPU: the CPUs saturated by work
                of the lowest priority (what catch-up consumers and an S3
                server on the same VM do in benches/catchup.py)
  writer        a buffered writer at WRITER_MIB MiB/s going round a 1 GiB
                file (the chunk cache's disk tier at its default write rate),
                its dirty pages left to the kernel's flusher; the file was
                written once before (a cache that has filled: overwrites).
                The writer starts WRITER_WARMUP s before the probe, so the
                flusher is in its steady state (it writes pages 30 s after
                they were dirtied, every 5 s)
  writer-trickle  the same writer, with a sync_file_range(SYNC_FILE_RANGE_WRITE)
                pass over its file every 100 ms: what the broker's
                remote.fetch.cache.disk.writeback.ms does
  writer-fresh, writer-trickle-fresh  the same two on a new sparse file (a
                cache's first pass: every write allocates blocks)

Scenarios alternate, REPEAT rounds. Prints p50/p99/max fdatasync latency and
the count over 50 ms per scenario (median over rounds, and the ratio to
quiet in the same round) and writes bench-results/fsync-floor-<time>.json.
Files go under bench-results/ (the repository's disk, where the broker's
data dir would be).

Environment: SECONDS_PER_RUN [30] REPEAT [2] FSYNC_FILES [6] WRITER_MIB [32]
  WRITER_WARMUP [35] SCENARIOS [quiet,cpu-idle,writer,writer-trickle; also
  writer-fresh,writer-trickle-fresh]
Run: python3 benches/fsync_floor.py   (about 9 minutes with the defaults)
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SECS = float(os.environ.get("SECONDS_PER_RUN", "30"))
REPEAT = int(os.environ.get("REPEAT", "2"))
FILES = int(os.environ.get("FSYNC_FILES", "6"))
WRITER_MIB = int(os.environ.get("WRITER_MIB", "32"))
SCENARIOS = os.environ.get("SCENARIOS",
                           "quiet,cpu-idle,writer,writer-trickle").split(",")
WARMUP = float(os.environ.get("WRITER_WARMUP", "35"))
CACHE_FILE_BYTES = 1 << 30
SYNC_FILE_RANGE_WRITE = 2


def probe(work: Path, secs: float) -> list[float]:
    """fdatasync latencies (ms) of FILES appenders over `secs`."""
    lat: list[float] = []
    lock = threading.Lock()

    def appender(i: int):
        path = work / f"probe-{i}.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        buf = os.urandom(8192)
        end = time.monotonic() + secs
        mine = []
        while time.monotonic() < end:
            os.write(fd, buf)
            t = time.monotonic()
            os.fdatasync(fd)
            mine.append((time.monotonic() - t) * 1000)
            time.sleep(0.003)
        os.close(fd)
        path.unlink()
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=appender, args=(i,)) for i in range(FILES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lat


BURN = "import time\nend = time.monotonic() + {secs}\nwhile time.monotonic() < end:\n    sum(range(10000))\n"


def writer(path: Path, secs: float, trickle: bool, stop: threading.Event):
    """Buffered writes of 1 MiB at WRITER_MIB MiB/s round a 1 GiB file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    buf = os.urandom(1 << 20)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
    last_pass = time.monotonic()
    t0, n = time.monotonic(), 0
    while not stop.is_set() and time.monotonic() - t0 < secs:
        os.pwrite(fd, buf, (n << 20) % CACHE_FILE_BYTES)
        n += 1
        if trickle and time.monotonic() - last_pass >= 0.1:
            libc.sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)
            last_pass = time.monotonic()
        ahead = n / WRITER_MIB - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    os.close(fd)


def settle():
    """Flushes what earlier runs left dirty, and waits out the ext4 journal's
    next commit (5 s), which carries the discards of deleted files on a
    `discard` mount: neither belongs to the next run."""
    subprocess.run(["sync"], check=False)
    time.sleep(6)


def run(scenario: str, work: Path) -> dict:
    warm = work / "cache-warm.dat"  # written once, kept: later writes overwrite
    fresh = work / "cache-fresh.dat"
    if scenario.startswith("writer") and not scenario.endswith("fresh") and not warm.exists():
        with open(warm, "wb") as f:
            for _ in range(CACHE_FILE_BYTES >> 20):
                f.write(os.urandom(1 << 20))
    settle()
    stop = threading.Event()
    procs: list[subprocess.Popen] = []
    side = None
    if scenario == "cpu-idle":
        procs = [subprocess.Popen(["chrt", "-i", "0", sys.executable, "-c", BURN.format(secs=SECS + 5)])
                 for _ in range(os.cpu_count() or 1)]
    elif scenario in ("writer", "writer-trickle", "writer-fresh", "writer-trickle-fresh"):
        path = fresh if scenario.endswith("fresh") else warm
        side = threading.Thread(target=writer, args=(path, WARMUP + SECS + 5, "trickle" in scenario, stop))
        side.start()
        time.sleep(WARMUP)
    elif scenario != "quiet":
        raise SystemExit(f"unknown scenario {scenario}")
    time.sleep(1)
    lat = sorted(probe(work, SECS))
    stop.set()
    for p in procs:
        p.kill()
        p.wait()
    if side:
        side.join()
    fresh.unlink(missing_ok=True)

    def pct(q: float) -> float:
        return round(lat[min(len(lat) - 1, int(len(lat) * q / 100))], 2)

    return {"fsyncs": len(lat), "p50_ms": pct(50), "p99_ms": pct(99), "max_ms": round(lat[-1], 1),
            "over_50ms": sum(1 for x in lat if x > 50)}


def main():
    out_dir = REPO / "bench-results"
    out_dir.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fsync-floor-", dir=out_dir))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rounds: list[dict[str, dict]] = []
    try:
        for r in range(REPEAT):
            rnd = {}
            for s in SCENARIOS:
                print(f"[fsync-floor] round {r + 1}/{REPEAT}: {s} ...", file=sys.stderr, flush=True)
                rnd[s] = run(s, work)
            rounds.append(rnd)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"time": stamp, "seconds_per_run": SECS, "files": FILES, "writer_MiBps": WRITER_MIB,
              "cpus": os.cpu_count(), "rounds": rounds}
    path = out_dir / f"fsync-floor-{stamp}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"\nfdatasync latency of {FILES} appending files, {SECS:.0f} s per run, median of {REPEAT} rounds "
          "(ratio: to quiet in the same round, median)\n")
    print("| beside the probe | p50 ms | p99 ms | max ms | fsyncs > 50 ms | p99 ratio | max ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in SCENARIOS:
        med = {k: round(statistics.median(r[s][k] for r in rounds), 2)
               for k in ("p50_ms", "p99_ms", "max_ms", "over_50ms")}
        ratio = {k: statistics.median(r[s][k] / r["quiet"][k] for r in rounds) if "quiet" in SCENARIOS else None
                 for k in ("p99_ms", "max_ms")}
        fmt = (lambda v: f"{v:.2f}" if v is not None else "n/a")
        print(f"| {s} | {med['p50_ms']} | {med['p99_ms']} | {med['max_ms']} | {med['over_50ms']:g} "
              f"| {fmt(ratio['p99_ms'])} | {fmt(ratio['max_ms'])} |")
    print(f"\n[fsync-floor] results: {path}")


if __name__ == "__main__":
    main()
