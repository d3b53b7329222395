#!/usr/bin/env python3
"""Tail latency under object-store faults (issue 13): is produce and tail
fetch latency within 1.2x of a quiet run while the bucket misbehaves?

Started by benches/store_faults.sh (which builds the broker and the test
venv). One broker tiers to moto (a real S3-protocol server over HTTP)
through the fault proxy of tests/e2e/s3faults.py, with 256 KiB segments
and a 1 s hot window, so segments are uploaded, committed and deleted
locally all the time. The latency probe (tests/e2e/latency_probe.py, its
own process) produces BENCH_RATE records/s with an idempotent acks=all
producer and reads them back at the tail.

Phases of BENCH_PHASE_S seconds alternate: quiet, fault A, quiet, fault B,
..., and the whole sequence runs BENCH_REPEAT times. Every fault phase is
compared with the quiet phase just before it (drift of the machine over the
run cancels out). The verdict uses the p99 of all samples of a fault's
phases pooled over the rounds, against the pooled quiet phases before them;
the median of per-round ratios is printed next to it. A single phase's p99
is decided by one stall here (100 ms of stall is 50 samples at 500/s, and
such stalls hit quiet phases too).

The S3 server and the fault proxy stand for another machine: on a 2-core
box moto (Python, CPU-bound) would otherwise take the broker's cores and
measure this machine's size, not the broker. They run at SCHED_IDLE, as the
S3 server does in benches/catchup.py's isolation runs; the broker and the
probe run at normal priority. The broker's own work under a fault (its
retries, backoff, re-uploads) competes at full priority and is what is
measured. BENCH_IDLE_STORE=0 runs everything at one priority.

The broker's data directory is on tmpfs (/dev/shm) by default. This
machine's virtual disk stalls fdatasync for 50-800 ms at random (measured:
p99.9 47 ms, max 367 ms, in a bare write+fdatasync loop; a broker without
tiering shows the same stalls in produce latency). Every acks=all produce
waits for one, so on the disk both quiet and fault phases measure the disk.
BENCH_DATA_ON_DISK=1 puts the data directory in the work directory instead.

Writes bench-results/store-faults-<time>.json and prints a table.

Environment: BENCH_PHASE_S [15]  BENCH_REPEAT [3]  BENCH_RATE [500]
  BENCH_IDLE_STORE [1]  BENCH_DATA_ON_DISK [0]
  BENCH_FAULTS [all; comma list of: 503,500,reset,delay,hang,412,outage]
  BENCH_KEEP [0: delete the work dir afterwards]
"""

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
E2E = REPO / "tests" / "e2e"
sys.path.insert(0, str(E2E))

import kutil  # noqa: E402
import tierutil as tu  # noqa: E402
from s3faults import S3FaultProxy  # noqa: E402
from strata_broker import Broker  # noqa: E402

PHASE_S = float(os.environ.get("BENCH_PHASE_S", "15"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
RATE = int(os.environ.get("BENCH_RATE", "500"))
KEEP = os.environ.get("BENCH_KEEP", "0") == "1"
IDLE_STORE = os.environ.get("BENCH_IDLE_STORE", "1") == "1"
DATA_ON_DISK = os.environ.get("BENCH_DATA_ON_DISK", "0") == "1"
# Restores normal priority for what is measured when the rest runs idle.
NORMAL = ["chrt", "-o", "0"] if IDLE_STORE else []


class MeasuredBroker(Broker):
    def command(self):
        return NORMAL + super().command()
SEG = 256 * 1024
LIMIT = 1.2

FAULTS = {
    "503": ("503 SlowDown, every 2nd request", lambda p: p.add("status", 503, every=2)),
    "500": ("500 InternalError, every 3rd request", lambda p: p.add("status", 500, every=3)),
    "reset": ("connection reset, every 4th request", lambda p: p.add("reset", every=4)),
    "delay": ("+300 ms per request", lambda p: p.add("delay", 0.3)),
    "hang": ("2 requests hang 8 s", lambda p: p.add("hang", 8, count=2)),
    "412": ("conditional manifest writes lose the race (412 x3)",
            lambda p: p.add("status", 412, count=3, match=lambda r: r.conditional and "/manifest/" in r.path)),
    "outage": ("outage (connections refused)", None),
}


def quantile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    chosen = [f for f in os.environ.get("BENCH_FAULTS", ",".join(FAULTS)).split(",") if f]
    for f in chosen:
        if f not in FAULTS:
            sys.exit(f"unknown fault {f!r}; one of {', '.join(FAULTS)}")
    if IDLE_STORE:
        # Before any thread or child exists: moto and the proxy's threads
        # inherit it; the broker and the probe are started with NORMAL.
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    work = Path(tempfile.mkdtemp(prefix="strata-store-faults-"))
    data = work / "data" if DATA_ON_DISK else Path(tempfile.mkdtemp(prefix="strata-store-faults-", dir="/dev/shm"))
    moto = tu.MotoServer(work / "moto.log")
    proxy = S3FaultProxy(moto.port)
    bucket = tu.S3Bucket(moto.client, "bench")
    b = MeasuredBroker(data_dir=data, log_dir=work, name="broker",
               settings={**tu.TIER_SETTINGS, "num.partitions": 1},
               extra_args=["--object-store", bucket.url], env=moto.env(proxy.endpoint))
    probe = None
    try:
        b.start()
        adm = kutil.admin(b.bootstrap)
        topic = kutil.create_topic(adm, "faults", 1,
                                   config={"segment.bytes": str(SEG), "local.retention.ms": "1000"})
        ts0 = tu.ms_ago(5)
        out = work / "latency.json"
        probe = subprocess.Popen(NORMAL + [sys.executable, str(E2E / "latency_probe.py"), b.bootstrap, topic,
                                  "11", str(ts0), str(RATE), str(out)], cwd=E2E)
        tu.wait_for(lambda: (tu.remote_end(bucket, topic) >= 500 or None, "remote end"), 120,
                    "tiering before the first phase")
        phases = []  # (label, kind, round, wall start, wall end, proxy counts during)

        def phase(label, kind, rnd, setup=None, outage=False):
            proxy.clear()
            before = dict(proxy.counts)
            if setup:
                setup(proxy)
            if outage:
                proxy.down()
            start = time.time()
            time.sleep(PHASE_S)
            end = time.time()
            if outage:
                proxy.up()
            proxy.clear()
            applied = {k: v - before.get(k, 0) for k, v in proxy.counts.items() if v - before.get(k, 0)}
            if outage:
                applied["outage_s"] = round(end - start, 1)
            phases.append((label, kind, rnd, start, end, applied))
            print(f"[store-faults] round {rnd} {label}: {applied or 'no faults'}", file=sys.stderr)

        for rnd in range(REPEAT):
            for f in chosen:
                name, setup = FAULTS[f]
                phase("quiet", f, rnd)
                phase(name, f, rnd, setup, outage=(f == "outage"))
        probe.send_signal(signal.SIGTERM)
        assert probe.wait(900) == 0, "latency probe failed"
        result = json.load(open(out))
        probe = None
    finally:
        if probe is not None:
            probe.kill()
        b.close()
        proxy.close()
        moto.close()

    samples = result["samples"]

    def stats(start, end):
        prod = [p for t, p, _ in samples if start <= t < end and p is not None]
        tail = [x for t, _, x in samples if start <= t < end and x is not None]
        return {"produce_p50": quantile(prod, 0.5), "produce_p99": quantile(prod, 0.99),
                "tail_p50": quantile(tail, 0.5), "tail_p99": quantile(tail, 0.99), "n": len(prod)}

    per_phase = [{"label": l, "fault": k, "round": r, "start": s, "end": e, "applied": a, **stats(s, e)}
                 for l, k, r, s, e, a in phases]
    report = {}
    for f in chosen:
        pairs = []
        for i, ph in enumerate(per_phase):
            if ph["fault"] == f and ph["label"] != "quiet":
                pairs.append((per_phase[i - 1], ph))
        row = {"fault": FAULTS[f][0], "rounds": len(pairs),
               "applied": [x["applied"] for _, x in pairs]}
        for m, col in (("produce_p99", 1), ("tail_p99", 2)):
            # Pooled: every sample of the fault phases against every sample
            # of the quiet phases just before them. One stall of 100 ms is
            # 50 samples at 500/s: it decides a 15 s phase's p99 alone, but
            # not that of the pooled rounds.
            quiet = [smp[col] for q, _ in pairs for smp in samples
                     if q["start"] <= smp[0] < q["end"] and smp[col] is not None]
            fault = [smp[col] for _, x in pairs for smp in samples
                     if x["start"] <= smp[0] < x["end"] and smp[col] is not None]
            qp, xp = quantile(quiet, 0.99), quantile(fault, 0.99)
            ratios = [x[m] / q[m] for q, x in pairs if q[m] and x[m] is not None]
            row[m] = {"quiet_ms": qp, "fault_ms": xp, "ratio": xp / qp,
                      "per_round_ratios": ratios, "median_of_ratios": statistics.median(ratios),
                      "quiet_p50_ms": quantile(quiet, 0.5), "fault_p50_ms": quantile(fault, 0.5)}
        row["within_1.2x"] = all(row[m]["ratio"] <= LIMIT for m in ("produce_p99", "tail_p99"))
        report[f] = row
    res_dir = REPO / "bench-results"
    res_dir.mkdir(exist_ok=True)
    path = res_dir / f"store-faults-{time.strftime('%Y%m%d-%H%M%S')}.json"
    json.dump({"phase_s": PHASE_S, "repeat": REPEAT, "rate": RATE, "idle_store": IDLE_STORE,
               "data_on_disk": DATA_ON_DISK, "produced": result["produced"],
               "producer_errors": result["errors"], "unflushed": result["unflushed"],
               "report": report, "phases": per_phase}, open(path, "w"), indent=1)
    print(f"\nTail latency under object-store faults: {REPEAT} rounds of {PHASE_S:.0f} s phases, "
          f"{RATE} records/s, acks=all. p99 in ms of the fault phases' samples pooled over the rounds, "
          f"against the quiet phases just before them; in brackets the median of per-round ratios")
    print(f"{'fault':52} {'produce p99':>28} {'tail p99':>28}  verdict")
    for f, row in report.items():
        cells = []
        for m in ("produce_p99", "tail_p99"):
            r = row[m]
            cells.append(f"{r['fault_ms']:6.1f}/{r['quiet_ms']:6.1f} {r['ratio']:5.2f}x "
                         f"[{r['median_of_ratios']:4.2f}]")
        print(f"{row['fault']:52} {cells[0]:>28} {cells[1]:>28}  "
              f"{'within 1.2x' if row['within_1.2x'] else 'OVER 1.2x'}")
    print(f"producer errors: {len(result['errors'])}, unacknowledged: {result['unflushed']}; results: {path}")
    if not DATA_ON_DISK:
        shutil.rmtree(data, ignore_errors=True)
    if not KEEP:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work dir kept: {work}")


if __name__ == "__main__":
    main()
