#!/usr/bin/env python3
"""Strata produce/consume benchmark, with the machine's own disk as the yardstick.

SECONDARY MODE (BENCH_CLIENT=python benches/run.sh): confluent-kafka clients in
Python processes. They burn several times the broker's CPU, so on a small
machine these figures are client-bound and understate the broker; the primary
benchmark is benches/bench.py (librdkafka's rdkafka_performance).

In one run, on the same filesystem:
  (a) raw disk: sequential write of BENCH_RAW_BYTES in 1 MiB blocks + one
      final fsync; the same with fdatasync after every 1 MiB (bounded to
      BENCH_RAW_SYNC_BYTES); sequential read of the written file (page cache).
  (b) broker idle RSS right after start.
  (c) produce throughput: BENCH_PRODUCE_BYTES of BENCH_RECORD_SIZE-byte
      records, acks=all, BENCH_PARTITIONS partitions, linger.ms=BENCH_LINGER_MS,
      from BENCH_PRODUCERS confluent-kafka processes; latency percentiles from
      delivery callbacks (send -> ack, includes client queueing at saturation);
      plus an unloaded latency probe (BENCH_PROBE_RATE msg/s for 3 s, linger 0).
  (d) consume throughput from offset 0 of that data (BENCH_CONSUMERS processes).
  (e) broker RSS (max) and CPU seconds under load.
Prints a table with ratios and writes bench-results/bench-<time>.json.

Environment (defaults in brackets):
  STRATA_BIN [target/release/strata]   BENCH_DIR [<repo>/bench-results/work]
  BENCH_PRODUCE_BYTES [1073741824]     BENCH_RECORD_SIZE [1024]
  BENCH_PARTITIONS [6]                 BENCH_PRODUCERS [2]   BENCH_CONSUMERS [2]
  BENCH_LINGER_MS [5]                  BENCH_ACKS [all]
  BENCH_RAW_BYTES [1073741824]         BENCH_RAW_SYNC_BYTES [134217728]
  BENCH_PROBE_RATE [2000]              BENCH_PHASE_TIMEOUT [90] (seconds, caps each phase)
  BENCH_BROKER_SET ["" ; extra "k=v,k=v" broker settings]   BENCH_KEEP [0]
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from strata_broker import Broker, BrokerError, check_binary  # noqa: E402
# The helpers both load generators share live in bench.py.
from bench import Sampler, env_int, pct  # noqa: E402
from bench import machine_info as _machine_info  # noqa: E402


def machine_info(work: Path) -> dict:
    info = _machine_info(work)
    try:
        import confluent_kafka
        info["confluent_kafka"] = confluent_kafka.version()[0]
        info["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return info

MiB = 1024 * 1024


CFG = {
    "produce_bytes": env_int("BENCH_PRODUCE_BYTES", 1 << 30),
    "record_size": env_int("BENCH_RECORD_SIZE", 1024),
    "partitions": env_int("BENCH_PARTITIONS", 6),
    "producers": env_int("BENCH_PRODUCERS", 2),
    "consumers": env_int("BENCH_CONSUMERS", 2),
    "linger_ms": env_int("BENCH_LINGER_MS", 5),
    "acks": os.environ.get("BENCH_ACKS", "all"),
    "raw_bytes": env_int("BENCH_RAW_BYTES", 1 << 30),
    "raw_sync_bytes": env_int("BENCH_RAW_SYNC_BYTES", 128 * MiB),
    "probe_rate": env_int("BENCH_PROBE_RATE", 2000),
    "phase_timeout": env_int("BENCH_PHASE_TIMEOUT", 90),
}


# ---------------------------------------------------------------------------
# (a) raw disk
# ---------------------------------------------------------------------------


def raw_disk(work: Path) -> dict:
    block = os.urandom(MiB)
    path = work / "raw-disk-test.bin"
    n = CFG["raw_bytes"] // MiB
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.monotonic()
    for _ in range(n):
        os.write(fd, block)
    os.fsync(fd)
    t_write = time.monotonic() - t0
    os.close(fd)

    # read back (page cache: the file was just written)
    fd = os.open(path, os.O_RDONLY)
    t0 = time.monotonic()
    got = 0
    while True:
        b = os.read(fd, MiB)
        if not b:
            break
        got += len(b)
    t_read = time.monotonic() - t0
    os.close(fd)
    assert got == n * MiB
    os.unlink(path)

    # write with fdatasync after every 1 MiB (what a broker fsyncing each batch group pays)
    ns = CFG["raw_sync_bytes"] // MiB
    path2 = work / "raw-disk-sync.bin"
    fd = os.open(path2, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.monotonic()
    for _ in range(ns):
        os.write(fd, block)
        os.fdatasync(fd)
    t_sync = time.monotonic() - t0
    os.close(fd)
    os.unlink(path2)
    return {
        "write_final_fsync_MBps": n * MiB / t_write / 1e6,
        "write_fdatasync_every_MiB_MBps": ns * MiB / t_sync / 1e6,
        "read_page_cache_MBps": got / t_read / 1e6,
        "bytes_written": n * MiB,
        "bytes_written_synced_each_MiB": ns * MiB,
    }


# ---------------------------------------------------------------------------
# (c) producers, (d) consumers: child processes (spawned, so no librdkafka
# state crosses a fork)
# ---------------------------------------------------------------------------


def producer_proc(idx, bootstrap, topic, n_records, conf_extra, start_evt, deadline_s, out_q):
    from confluent_kafka import Producer
    rs = CFG["record_size"]
    parts = CFG["partitions"]
    conf = {"bootstrap.servers": bootstrap, "acks": CFG["acks"], "enable.idempotence": False,
            "linger.ms": CFG["linger_ms"], "compression.type": "none",
            "queue.buffering.max.kbytes": 256 * 1024, "batch.size": 1_000_000,
            "message.timeout.ms": 120_000}
    extra = dict(conf_extra)
    rate = extra.pop("_rate", None)
    conf.update(extra)
    p = Producer(conf)
    body = os.urandom(max(rs - 8, 0))
    sent_at = array("d", bytes(8 * n_records))
    lat = array("d")
    errors = [0]
    acked_bytes = [0]
    mono = time.monotonic

    def cb(err, msg):
        if err is not None:
            errors[0] += 1
            return
        seq = struct.unpack_from(">Q", msg.value())[0]
        lat.append(mono() - sent_at[seq])
        acked_bytes[0] += len(msg.value())

    p.list_topics(topic, timeout=30)  # warm metadata before the clock starts
    start_evt.wait()
    c0 = os.times()
    t0 = mono()
    deadline = t0 + deadline_s
    sent = 0
    for i in range(n_records):
        if rate:
            target = t0 + i / rate
            while mono() < target:
                p.poll(0.0005)
        elif i % 4096 == 0 and mono() > deadline:
            break
        v = struct.pack(">Q", i) + body
        while True:
            try:
                sent_at[i] = mono()
                p.produce(topic, v, partition=(i + idx) % parts, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.001)
        sent += 1
        if i % 64 == 0:
            p.poll(0)
    left = p.flush(max(5.0, deadline - mono() + 30))
    t1 = mono()
    ct = os.times()
    out_q.put({"idx": idx, "t0": t0, "t1": t1, "sent": sent, "client_cpu_s": ct.user + ct.system - c0.user - c0.system, "acked": len(lat), "errors": errors[0],
               "undelivered": left, "bytes": acked_bytes[0], "lat": lat.tobytes()})


def consumer_proc(idx, bootstrap, topic, assignment, start_evt, deadline_s, out_q):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{os.getpid()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": False, "fetch.max.bytes": 64 * MiB,
                  "max.partition.fetch.bytes": 16 * MiB, "queued.max.messages.kbytes": 256 * 1024,
                  "fetch.wait.max.ms": 100})
    want = sum(hi for _, hi in assignment)
    c.assign([TopicPartition(topic, p, 0) for p, _ in assignment])
    start_evt.wait()
    c0 = os.times()
    t0 = time.monotonic()
    deadline = t0 + deadline_s
    n = 0
    nbytes = 0
    errors = 0
    while n < want and time.monotonic() < deadline:
        for m in c.consume(num_messages=10000, timeout=0.5):
            if m.error() is not None:
                errors += 1
                continue
            n += 1
            nbytes += len(m.value())
    t1 = time.monotonic()
    c.close()
    ct = os.times()
    out_q.put({"idx": idx, "t0": t0, "t1": t1, "records": n, "client_cpu_s": ct.user + ct.system - c0.user - c0.system, "want": want, "bytes": nbytes, "errors": errors})


def run_producers(ctx, bootstrap, topic, n_procs, total_records, conf_extra, timeout):
    q = ctx.Queue()
    start = ctx.Event()
    per = [total_records // n_procs + (1 if i < total_records % n_procs else 0) for i in range(n_procs)]
    procs = [ctx.Process(target=producer_proc, args=(i, bootstrap, topic, per[i], conf_extra, start, timeout, q))
             for i in range(n_procs)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let them connect and fetch metadata
    start.set()
    results = [q.get(timeout=timeout + 120) for _ in procs]
    for p in procs:
        p.join(30)
    lat = array("d")
    for r in results:
        a = array("d")
        a.frombytes(r.pop("lat"))
        lat.extend(a)
    lat_ms = sorted(x * 1000 for x in lat)
    t0 = min(r["t0"] for r in results)
    t1 = max(r["t1"] for r in results)
    nbytes = sum(r["bytes"] for r in results)
    return {
        "processes": n_procs,
        "client_cpu_s": sum(r["client_cpu_s"] for r in results),
        "records_acked": sum(r["acked"] for r in results),
        "records_sent": sum(r["sent"] for r in results),
        "errors": sum(r["errors"] for r in results),
        "undelivered": sum(r["undelivered"] for r in results),
        "bytes": nbytes,
        "seconds": t1 - t0,
        "MBps": nbytes / (t1 - t0) / 1e6,
        "records_per_s": sum(r["acked"] for r in results) / (t1 - t0),
        "latency_ms": {"p50": pct(lat_ms, 50), "p95": pct(lat_ms, 95), "p99": pct(lat_ms, 99),
                       "max": lat_ms[-1] if lat_ms else None},
    }


def run_consumers(ctx, bootstrap, topic, n_procs, hw, timeout):
    parts = sorted(hw)
    groups = [[(p, hw[p]) for p in parts[i::n_procs]] for i in range(n_procs)]
    groups = [g for g in groups if g]
    q = ctx.Queue()
    start = ctx.Event()
    procs = [ctx.Process(target=consumer_proc, args=(i, bootstrap, topic, g, start, timeout, q))
             for i, g in enumerate(groups)]
    for p in procs:
        p.start()
    time.sleep(1.0)
    start.set()
    results = [q.get(timeout=timeout + 60) for _ in procs]
    for p in procs:
        p.join(30)
    t0 = min(r["t0"] for r in results)
    t1 = max(r["t1"] for r in results)
    nbytes = sum(r["bytes"] for r in results)
    return {
        "processes": len(groups),
        "client_cpu_s": sum(r["client_cpu_s"] for r in results),
        "records": sum(r["records"] for r in results),
        "records_expected": sum(r["want"] for r in results),
        "errors": sum(r["errors"] for r in results),
        "bytes": nbytes,
        "seconds": t1 - t0,
        "MBps": nbytes / (t1 - t0) / 1e6,
        "records_per_s": sum(r["records"] for r in results) / (t1 - t0),
    }


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        binary = check_binary()
    except BrokerError as e:
        print(e, file=sys.stderr)
        return 2

    base = Path(os.environ.get("BENCH_DIR") or REPO / "bench-results" / "work")
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    results_dir = REPO / "bench-results"
    results_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    ctx = mp.get_context("spawn")
    out = {"time": stamp, "config": CFG, "binary": str(binary), "work_dir": str(work),
           "machine": machine_info(work)}
    broker = None
    try:
        print(f"[bench] work dir {work} ({out['machine'].get('filesystem', {}).get('type', '?')})", flush=True)
        print(f"[bench] raw disk: writing {CFG['raw_bytes'] / MiB:.0f} MiB ...", flush=True)
        out["raw_disk"] = raw_disk(work)

        settings = {"num.partitions": CFG["partitions"]}
        for kv in filter(None, os.environ.get("BENCH_BROKER_SET", "").split(",")):
            k, v = kv.split("=", 1)
            settings[k.strip()] = v.strip()
        broker = Broker(data_dir=work / "data", settings=settings, log_dir=work, name="broker")
        t0 = time.monotonic()
        broker.start()
        out["broker_startup_s"] = time.monotonic() - t0
        time.sleep(1.0)
        out["rss_idle_kib"] = broker.rss_kib()
        print(f"[bench] broker pid {broker.pid} up, idle RSS {out['rss_idle_kib']} KiB", flush=True)

        from confluent_kafka.admin import AdminClient, NewTopic
        adm = AdminClient({"bootstrap.servers": broker.bootstrap})
        topic = "bench"
        adm.create_topics([NewTopic(topic, CFG["partitions"], 1)])[topic].result(timeout=60)
        del adm

        n_records = CFG["produce_bytes"] // CFG["record_size"]
        print(f"[bench] produce: {n_records} x {CFG['record_size']} B, acks={CFG['acks']}, "
              f"{CFG['partitions']} partitions, linger.ms={CFG['linger_ms']}, "
              f"{CFG['producers']} producer processes ...", flush=True)
        with Sampler(broker) as s:
            out["produce"] = run_producers(ctx, broker.bootstrap, topic, CFG["producers"], n_records, {},
                                           CFG["phase_timeout"])
        out["produce"]["broker_cpu_s"] = s.cpu
        out["rss_produce_max_kib"] = s.max_rss

        probe_n = CFG["probe_rate"] * 3
        print(f"[bench] latency probe: {probe_n} records at {CFG['probe_rate']}/s, linger.ms=0 ...", flush=True)
        out["latency_probe"] = run_producers(ctx, broker.bootstrap, topic, 1, probe_n,
                                             {"linger.ms": 0, "_rate": CFG["probe_rate"]}, 30)

        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-wm"})
        hw = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)[1]
              for p in range(CFG["partitions"])}
        c.close()
        out["high_watermarks"] = hw
        print(f"[bench] consume: {sum(hw.values())} records from offset 0, "
              f"{min(CFG['consumers'], CFG['partitions'])} consumer processes ...", flush=True)
        with Sampler(broker) as s:
            out["consume"] = run_consumers(ctx, broker.bootstrap, topic, CFG["consumers"], hw, CFG["phase_timeout"])
        out["consume"]["broker_cpu_s"] = s.cpu
        out["rss_consume_max_kib"] = s.max_rss
        out["rss_after_kib"] = broker.rss_kib()

        t0 = time.monotonic()
        out["shutdown_exit_code"] = broker.stop(timeout=60)
        out["shutdown_s"] = time.monotonic() - t0
        out["data_dir_bytes"] = sum(f.stat().st_size for f in (work / "data").rglob("*") if f.is_file())
    finally:
        if broker is not None:
            broker.close()
            try:
                shutil.copy(broker.log_path, results_dir / f"bench-{stamp}-broker.log")
            except OSError:
                pass
        if os.environ.get("BENCH_KEEP", "0") != "1":
            shutil.rmtree(work, ignore_errors=True)

    raw = out["raw_disk"]
    prod, cons, probe = out["produce"], out["consume"], out["latency_probe"]
    out["ratios"] = {
        "produce_vs_raw_write_final_fsync": prod["MBps"] / raw["write_final_fsync_MBps"],
        "produce_vs_raw_write_fdatasync_each_MiB": prod["MBps"] / raw["write_fdatasync_every_MiB_MBps"],
        "consume_vs_raw_read_page_cache": cons["MBps"] / raw["read_page_cache_MBps"],
    }
    path = results_dir / f"bench-{stamp}.json"
    path.write_text(json.dumps(out, indent=2))

    def f(x, d=1):
        return "-" if x is None else f"{x:,.{d}f}"

    lat, plat = prod["latency_ms"], probe["latency_ms"]
    rows = [
        ("raw write, 1 MiB blocks + final fsync", f"{f(raw['write_final_fsync_MBps'])} MB/s", ""),
        ("raw write, fdatasync every 1 MiB", f"{f(raw['write_fdatasync_every_MiB_MBps'])} MB/s", ""),
        ("raw sequential read (page cache)", f"{f(raw['read_page_cache_MBps'])} MB/s", ""),
        ("broker idle RSS", f"{f((out['rss_idle_kib'] or 0) / 1024)} MiB", ""),
        (f"produce acks={CFG['acks']} ({prod['processes']} procs)", f"{f(prod['MBps'])} MB/s",
         f"{f(prod['records_per_s'], 0)} rec/s, {prod['records_acked']:,} acked, {prod['errors']} errors"),
        ("  latency at saturation p50/p95/p99", f"{f(lat['p50'], 2)} / {f(lat['p95'], 2)} / {f(lat['p99'], 2)} ms",
         "send->ack incl. client queueing"),
        (f"  latency probe @{CFG['probe_rate']}/s p50/p95/p99",
         f"{f(plat['p50'], 2)} / {f(plat['p95'], 2)} / {f(plat['p99'], 2)} ms", "linger.ms=0"),
        ("  broker CPU during produce", f"{f(prod['broker_cpu_s'])} s",
         f"{f(prod['seconds'])} s wall; producer clients used {f(prod['client_cpu_s'])} CPU s"),
        (f"consume from 0 ({cons['processes']} procs)", f"{f(cons['MBps'])} MB/s",
         f"{f(cons['records_per_s'], 0)} rec/s, {cons['records']:,}/{cons['records_expected']:,} records"),
        ("  broker CPU during consume", f"{f(cons['broker_cpu_s'])} s",
         f"{f(cons['seconds'])} s wall; consumer clients used {f(cons['client_cpu_s'])} CPU s"),
        ("broker RSS max (produce / consume)",
         f"{f(out['rss_produce_max_kib'] / 1024)} / {f(out['rss_consume_max_kib'] / 1024)} MiB", ""),
        ("produce / raw write (final fsync)", f"{out['ratios']['produce_vs_raw_write_final_fsync']:.2f}", ""),
        ("produce / raw write (fdatasync each MiB)", f"{out['ratios']['produce_vs_raw_write_fdatasync_each_MiB']:.2f}", ""),
        ("consume / raw read (page cache)", f"{out['ratios']['consume_vs_raw_read_page_cache']:.2f}", ""),
        ("SIGTERM shutdown", f"{f(out['shutdown_s'], 2)} s", f"exit code {out['shutdown_exit_code']}"),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print()
    print(f"{'metric':<{w0}}  {'value':>{w1}}  notes")
    print(f"{'-' * w0}  {'-' * w1}  -----")
    for a, b, c in rows:
        print(f"{a:<{w0}}  {b:>{w1}}  {c}")
    print(f"\n{os.cpu_count()} CPUs shared by broker and clients: if broker CPU + client CPU ~= "
          f"{os.cpu_count()} x wall time, the machine (not the disk) is the limit.")
    print(f"results: {path}")
    ok = (prod["errors"] == 0 and prod["undelivered"] == 0 and cons["records"] == cons["records_expected"]
          and out["shutdown_exit_code"] == 0)
    if not ok:
        print("WARNING: errors, undelivered/missing records, or unclean shutdown; see JSON and broker log",
              file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
