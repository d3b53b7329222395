#!/usr/bin/env python3
"""Log compaction benchmark (issue 16, docs/compaction.md): how fast the
cleaner compacts, what it costs producers, and what compacting a tiered
topic costs in object-store requests.

Started by benches/compaction.sh (builds the broker and the test venv).

1. Cleaner throughput and producer latency (local log). A compacted topic
   ("table", 16 MiB segments, remote storage off) is held back from the
   cleaner by min.compaction.lag.ms=1h while BENCH_DIRTY_MB of updates to
   BENCH_KEYS keys (values of BENCH_VALUE bytes, lz4) are produced. Then a
   quiet phase of BENCH_PHASE_S seconds, then min.compaction.lag.ms=0: the
   cleaner compacts the dirty log while the latency probe
   (tests/e2e/latency_probe.py, its own process: BENCH_RATE records/s,
   idempotent, acks=all, read back at the tail) keeps producing to another
   topic. Throughput = dirty bytes (what the round added to the table's
   local size) / the pass's duration (the broker's own `cleaned ... ms=`
   log lines); the pass reads the clean part too.
   The producer's p99 during the passes (pooled over BENCH_REPEAT rounds) is
   compared with the p99 of the quiet phases before them: a ratio in the
   same run, since this machine's speed drifts.
2. Tiered compaction's requests. A compacted topic (BENCH_TIERED_MB of
   distinct keys, BENCH_TIERED_SEGMENT_MB segments) with
   local.retention.ms=1000 tiers to moto (a real S3-protocol server) through
   a counting HTTP proxy (tests/e2e/s3faults.py). After its first cleaning
   the whole cleaned log is in the bucket and off the disk; then half of
   the keys (every other one) get a new value, and the pass that follows reads every remote
   segment (one GET each: no local copy is left), rewrites each, uploads
   it and swaps it in. Every request the proxy sees from that pass's start
   until the bucket settled is counted by kind and reported per GiB of
   remote data the pass read (strata_remote_compaction_read_bytes_total).
   That window also holds the upload of the new, cleaned segments.

The broker's data directory is on tmpfs (/dev/shm) unless
BENCH_DATA_ON_DISK=1: this machine's disk stalls fdatasync 50-800 ms at
random (benches/store_faults.py), which would decide every p99 here.
moto and the proxy run at SCHED_IDLE, standing for another machine.

Writes bench-results/compaction-<time>.json and prints a summary.

Environment: BENCH_DIRTY_MB [256]  BENCH_KEYS [100000]  BENCH_VALUE [1000]
  BENCH_REPEAT [3]  BENCH_PHASE_S [10]  BENCH_RATE [500]
  BENCH_TIERED_MB [128]  BENCH_TIERED_SEGMENT_MB [16]  BENCH_DATA_ON_DISK [0]  BENCH_KEEP [0]
  BENCH_PARTS [local,tiered]  BENCH_BROKER_SET [name=value,...: the local part's broker]
"""

import json
import os
import re
import shutil
import signal
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
from store_faults import MeasuredBroker, NORMAL, quantile  # noqa: E402

DIRTY_MB = int(os.environ.get("BENCH_DIRTY_MB", "256"))
KEYS = int(os.environ.get("BENCH_KEYS", "100000"))
VALUE = int(os.environ.get("BENCH_VALUE", "1000"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
PHASE_S = float(os.environ.get("BENCH_PHASE_S", "10"))
RATE = int(os.environ.get("BENCH_RATE", "500"))
TIERED_MB = int(os.environ.get("BENCH_TIERED_MB", "128"))
TIERED_SEGMENT_MB = int(os.environ.get("BENCH_TIERED_SEGMENT_MB", "16"))
DATA_ON_DISK = os.environ.get("BENCH_DATA_ON_DISK", "0") == "1"
KEEP = os.environ.get("BENCH_KEEP", "0") == "1"
PARTS = os.environ.get("BENCH_PARTS", "local,tiered").split(",")
# Broker settings for the local part, e.g. "log.cleaner.io.max.bytes.per.second=100000000".
BROKER_SET = dict(kv.split("=", 1) for kv in os.environ.get("BENCH_BROKER_SET", "").split(",") if kv)
HOLD = "3600000"
CLEANED = re.compile(r"cleaned topic=(\S+) partition=\d+ .*? read=(\d+) written=(\d+) .*?ms=(\d+)")


def fill(bootstrap: str, topic: str, mb: int, keys: int, seed: int, stride: int = 1) -> int:
    """Produces about `mb` MiB of updates to `keys` keys, every `stride`-th
    one (cycling); returns the records sent."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "compression.type": "lz4", "acks": "all", "queue.buffering.max.kbytes": 1 << 20})
    rnd = os.urandom(1 << 20)
    n = mb * (1 << 20) // VALUE
    for i in range(n):
        k = (i % keys) * stride
        off = (i * 7919 + seed) % ((1 << 20) - VALUE)
        while True:
            try:
                p.produce(topic, key=b"key-%d" % k, value=rnd[off:off + VALUE])
                break
            except BufferError:
                p.poll(0.05)
        if i % 10_000 == 0:
            p.poll(0)
    assert p.flush(300) == 0, "records left unacknowledged"
    return n


def cleaned_lines(b, topic: str, start: int) -> list[tuple[int, int, int]]:
    return [(int(r), int(w), int(ms)) for t, r, w, ms in CLEANED.findall(b.log_text(start)) if t == topic]


def wait_pass(b, topic: str, start: int, timeout: float = 600) -> list[tuple[int, int, int]]:
    """Waits until the cleaner is done with `topic` (a pass logged, then no
    more for 2 s); returns the passes' (read, written, ms)."""
    deadline = time.monotonic() + timeout
    seen, quiet_since = [], None
    while time.monotonic() < deadline:
        now = cleaned_lines(b, topic, start)
        if len(now) != len(seen):
            seen, quiet_since = now, time.monotonic()
        elif seen and time.monotonic() - quiet_since > 2:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"no cleaning pass of {topic} finished within {timeout}s")


def part_local(b, data: Path) -> dict:
    adm = kutil.admin(b.bootstrap)
    probe_topic = kutil.create_topic(adm, "probe", 1, config={"remote.storage.enable": "false"})
    table = kutil.create_topic(adm, "table", 1, config={
        "cleanup.policy": "compact", "segment.bytes": str(16 << 20), "remote.storage.enable": "false",
        "min.compaction.lag.ms": HOLD})
    out = data.parent / "latency.json" if DATA_ON_DISK else Path(tempfile.mkdtemp()) / "latency.json"
    probe = subprocess.Popen(NORMAL + [sys.executable, str(E2E / "latency_probe.py"), b.bootstrap, probe_topic,
                                       "17", str(tu.ms_ago(5)), str(RATE), str(out)], cwd=E2E)
    rounds = []
    clean_bytes = 0   # the table's size after the previous round's pass
    try:
        time.sleep(3)
        for rnd in range(REPEAT):
            t0 = time.monotonic()
            fill(b.bootstrap, table, DIRTY_MB, KEYS, seed=rnd)
            fill_s = time.monotonic() - t0
            time.sleep(2)
            size = tu.local_bytes(b, table)
            dirty = size - clean_bytes
            q0 = time.time()
            time.sleep(PHASE_S)
            q1 = time.time()
            mark = b.log_size()
            tu.alter(adm, table, {"min.compaction.lag.ms": "0"})
            c0 = time.time()
            passes = wait_pass(b, table, mark)
            pass_ms = sum(ms for _, _, ms in passes)
            c1 = c0 + pass_ms / 1000 + 0.5   # the passes, and the alter's own round trip
            tu.alter(adm, table, {"min.compaction.lag.ms": HOLD})
            after = clean_bytes = tu.local_bytes(b, table)
            rounds.append({"round": rnd, "fill_s": fill_s, "log_bytes": size, "dirty_bytes": dirty,
                           "after_bytes": after,
                           "passes": passes, "pass_ms": pass_ms, "quiet": (q0, q1), "cleaning": (c0, c1),
                           "mb_per_s": dirty / (1 << 20) / (pass_ms / 1000) if pass_ms else None})
            print(f"[compaction] round {rnd}: {size / (1 << 20):.0f} MiB ({dirty / (1 << 20):.0f} MiB dirty) -> "
                  f"{after / (1 << 20):.0f} MiB "
                  f"in {pass_ms} ms ({rounds[-1]['mb_per_s']:.0f} MiB/s), {len(passes)} pass(es)", file=sys.stderr)
        probe.send_signal(signal.SIGTERM)
        assert probe.wait(900) == 0, "latency probe failed"
        probe = None
        samples = json.load(open(out))["samples"]
    finally:
        if probe is not None:
            probe.kill()

    def pooled(key, col):
        return [s[col] for r in rounds for s in samples
                if r[key][0] <= s[0] < r[key][1] and s[col] is not None]
    lat = {}
    for name, col in (("produce", 1), ("tail", 2)):
        q, c = pooled("quiet", col), pooled("cleaning", col)
        lat[name] = {"quiet_p99_ms": quantile(q, 0.99), "cleaning_p99_ms": quantile(c, 0.99),
                     "quiet_p50_ms": quantile(q, 0.5), "cleaning_p50_ms": quantile(c, 0.5),
                     "samples": [len(q), len(c)],
                     "ratio": quantile(c, 0.99) / quantile(q, 0.99) if q and c else None}
    return {"rounds": rounds, "latency": lat}


def tiered_and_gone(b, bucket, topic: str):
    """Waits until every sealed segment is in the bucket and off the disk
    (only the active segment is left locally)."""
    def done():
        local = tu.local_segments(b, topic)
        active = max(local)
        return len(local) == 1 and tu.remote_end(bucket, topic, compacted=True) >= active
    kutil.wait_until(done, 180, 0.5, f"{topic}: the cleaned log tiered and off the disk")


def part_tiered(work: Path, data: Path) -> dict:
    moto = tu.MotoServer(work / "moto.log")
    proxy = S3FaultProxy(moto.port)
    bucket = tu.S3Bucket(moto.client, "bench-compaction")
    b = MeasuredBroker(data_dir=data, log_dir=work, name="tiered",
                       settings={**tu.TIER_SETTINGS, "log.cleaner.backoff.ms": 200},
                       extra_args=["--object-store", bucket.url], env=moto.env(proxy.endpoint))
    try:
        b.start()
        adm = kutil.admin(b.bootstrap)
        topic = kutil.create_topic(adm, "tiered", 1, config={
            "cleanup.policy": "compact", "segment.bytes": str(TIERED_SEGMENT_MB << 20), "local.retention.ms": "1000",
            "file.delete.delay.ms": "0", "min.compaction.lag.ms": HOLD, "min.cleanable.dirty.ratio": "0.1"})
        keys = TIERED_MB * (1 << 20) // VALUE
        fill(b.bootstrap, topic, TIERED_MB, keys, seed=1)
        mark = b.log_size()
        tu.alter(adm, topic, {"min.compaction.lag.ms": "0"})
        wait_pass(b, topic, mark)
        tu.alter(adm, topic, {"min.compaction.lag.ms": HOLD})
        tiered_and_gone(b, bucket, topic)
        remote_before = tu.metric(b, "strata_remote_log_size_bytes", topic, 0)
        # Every other key: each remote segment loses half its records.
        fill(b.bootstrap, topic, TIERED_MB // 2, keys // 2, seed=2, stride=2)
        time.sleep(2)
        read0 = tu.metric(b, "strata_remote_compaction_read_bytes_total", topic, 0) or 0
        written0 = tu.metric(b, "strata_remote_compaction_written_bytes_total", topic, 0) or 0
        uploads0 = tu.metric(b, "strata_remote_upload_segments_total", topic, 0) or 0
        proxy.by_kind.clear()
        mark = b.log_size()
        t0 = time.monotonic()
        tu.alter(adm, topic, {"min.compaction.lag.ms": "0"})
        passes = wait_pass(b, topic, mark)
        tiered_and_gone(b, bucket, topic)
        time.sleep(2)
        window_s = time.monotonic() - t0
        counts = dict(proxy.by_kind)
        read = (tu.metric(b, "strata_remote_compaction_read_bytes_total", topic, 0) or 0) - read0
        written = (tu.metric(b, "strata_remote_compaction_written_bytes_total", topic, 0) or 0) - written0
        uploads = (tu.metric(b, "strata_remote_upload_segments_total", topic, 0) or 0) - uploads0
        replaced = tu.metric(b, "strata_log_cleaner_remote_segments_replaced_total", topic, 0)
        gib = read / (1 << 30)
        return {"remote_bytes_before": remote_before, "remote_read_bytes": read, "remote_written_bytes": written,
                "segments_uploaded_in_window": uploads, "remote_segments_replaced_total": replaced,
                "passes": passes, "window_s": window_s, "requests": counts,
                "requests_total": sum(counts.values()),
                "requests_per_gib_read": {k: v / gib for k, v in counts.items()} if gib else None}
    finally:
        b.close()
        proxy.close()
        moto.close()


def main():
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    work = Path(tempfile.mkdtemp(prefix="strata-compaction-"))
    base = work if DATA_ON_DISK else Path(tempfile.mkdtemp(prefix="strata-compaction-", dir="/dev/shm"))
    b = MeasuredBroker(data_dir=base / "local", log_dir=work, name="local",
                       settings={"log.cleaner.backoff.ms": 200, "log.retention.check.interval.ms": 1000,
                                 **BROKER_SET})
    local = tiered = None
    if "local" in PARTS:
        try:
            b.start()
            local = part_local(b, base / "local")
        finally:
            b.close()
        shutil.rmtree(base / "local", ignore_errors=True)
    if "tiered" in PARTS:
        tiered = part_tiered(work, base / "tiered")

    res_dir = REPO / "bench-results"
    res_dir.mkdir(exist_ok=True)
    path = res_dir / f"compaction-{time.strftime('%Y%m%d-%H%M%S')}.json"
    json.dump({"dirty_mb": DIRTY_MB, "keys": KEYS, "value": VALUE, "repeat": REPEAT, "rate": RATE,
               "broker_set": BROKER_SET,
               "data_on_disk": DATA_ON_DISK, "local": local, "tiered": tiered}, open(path, "w"), indent=1)
    if local:
        report_local(local)
    if tiered:
        report_tiered(tiered)
    print(f"results: {path}")
    shutil.rmtree(base, ignore_errors=True)
    if not KEEP:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work dir kept: {work}")


def report_local(local: dict):
    rates = [r["mb_per_s"] for r in local["rounds"] if r["mb_per_s"]]
    print(f"\nCleaner: {DIRTY_MB} MiB of updates to {KEYS} keys ({VALUE} B values, lz4) per round, "
          f"{REPEAT} rounds: {', '.join(f'{x:.0f}' for x in rates)} MiB/s of dirty log compacted")
    for name, v in local["latency"].items():
        print(f"  {name} p99 while cleaning {v['cleaning_p99_ms']:.1f} ms vs quiet {v['quiet_p99_ms']:.1f} ms: "
              f"{v['ratio']:.2f}x (p50 {v['cleaning_p50_ms']:.1f} vs {v['quiet_p50_ms']:.1f}; "
              f"samples {v['samples'][1]} / {v['samples'][0]})")


def report_tiered(t: dict):
    print(f"Tiered: a pass read {t['remote_read_bytes'] / (1 << 20):.1f} MiB of remote segments, uploaded "
          f"{t['remote_written_bytes'] / (1 << 20):.1f} MiB cleaned; {t['segments_uploaded_in_window']:.0f} new "
          f"segments tiered in the same {t['window_s']:.0f} s window")
    print(f"  requests in the window: {t['requests']} (total {t['requests_total']})")
    if t["requests_per_gib_read"]:
        print("  per GiB of remote data compacted: " +
              ", ".join(f"{k} {v:.0f}" for k, v in sorted(t["requests_per_gib_read"].items())))


if __name__ == "__main__":
    main()
