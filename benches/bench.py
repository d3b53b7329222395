#!/usr/bin/env python3
"""Strata produce/consume benchmark driven by librdkafka's rdkafka_performance.

Started by benches/run.sh (which builds the broker and the load generator);
standard library only. In one run, on the filesystem holding the data dir:
  (a) raw disk: dd 1 MiB blocks, BENCH_RAW_BYTES written with conv=fdatasync
      (page cache + one fdatasync at the end: the ratio's denominator) and with
      oflag=direct (informational); sequential read of the fdatasync'd file
      (page cache).
  (b) broker idle RSS one second after start.
  (c) produce throughput: rdkafka_performance -P, BENCH_PRODUCE_BYTES of
      BENCH_RECORD_SIZE-byte records, acks=BENCH_ACKS, BENCH_PARTITIONS
      partitions, linger.ms=BENCH_LINGER_MS, keyless (librdkafka's default
      partitioner spreads batches over all partitions).
  (d) consume throughput: rdkafka_performance -C on every partition from
      offset 0 of that data, until all records are read.
  (e) produce latency (send -> delivery report, per message, -l -A FILE):
      rate-limited at BENCH_LAT_RATE msg/s for BENCH_LAT_SECONDS, and at full
      load for BENCH_LOADED_LAT_BYTES (includes time queued in the client).
      Both on their own topics, after (d), so (d) reads exactly (c)'s data.
  (f) broker peak RSS: VmHWM from /proc/PID/status after each phase, plus
      VmRSS polled every 100 ms; broker CPU seconds per phase.
Prints a table with ratios (against the raw disk) and writes
bench-results/bench-<time>.json (+ the broker log). Strata alone: the
comparison with Apache Kafka, measured in the same run, is
benches/vs_kafka.sh.

Environment (defaults in brackets):
  RDKAFKA_PERFORMANCE [target/bench-tools/rdkafka_performance] (set by run.sh)
  STRATA_BIN [target/release/strata]     BENCH_DIR [<repo>/bench-results/work]
  BENCH_PRODUCE_BYTES [1073741824]       BENCH_RECORD_SIZE [1024]
  BENCH_PARTITIONS [6]  BENCH_LINGER_MS [5]  BENCH_ACKS [all]
  BENCH_COMPRESSION [none] (producer codec: none, gzip, snappy, lz4, zstd)
  BENCH_RAW_BYTES [1073741824]
  BENCH_LAT_RATE [2000]  BENCH_LAT_SECONDS [10]  BENCH_LOADED_LAT_BYTES [536870912]
  BENCH_PHASE_TIMEOUT [120] (seconds, caps each client run)
  BENCH_BROKER_SET ["" ; extra "k=v,k=v" broker settings]
  BENCH_KEEP [0] (1 keeps the work dir: data, dd/latency files, client output)
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import resource
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from strata_broker import Broker, BrokerError, check_binary  # noqa: E402  (stdlib only)

MiB = 1024 * 1024

def env_int(name, default):
    return int(os.environ.get(name, default))


CFG = {
    "produce_bytes": env_int("BENCH_PRODUCE_BYTES", 1 << 30),
    "record_size": env_int("BENCH_RECORD_SIZE", 1024),
    "partitions": env_int("BENCH_PARTITIONS", 6),
    "linger_ms": env_int("BENCH_LINGER_MS", 5),
    "acks": os.environ.get("BENCH_ACKS", "all"),
    # Producer codec (librdkafka compression.codec): none, gzip, snappy, lz4, zstd.
    "compression": os.environ.get("BENCH_COMPRESSION", "none"),
    "raw_bytes": env_int("BENCH_RAW_BYTES", 1 << 30),
    "lat_rate": env_int("BENCH_LAT_RATE", 2000),
    "lat_seconds": env_int("BENCH_LAT_SECONDS", 10),
    "loaded_lat_bytes": env_int("BENCH_LOADED_LAT_BYTES", 512 * MiB),
    "phase_timeout": env_int("BENCH_PHASE_TIMEOUT", 120),
}
TOPIC = "bench"
TOPIC_LAT = "bench-lat"
TOPIC_LAT_LOADED = "bench-lat-loaded"


def pct(sorted_vals, q):
    """Nearest-rank percentile."""
    if not sorted_vals:
        return None
    return sorted_vals[max(0, math.ceil(q / 100 * len(sorted_vals)) - 1)]


def proc_status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_stat():
    """Machine-wide (busy, steal) CPU seconds from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    tck = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal ...
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / tck, (v[7] if len(v) > 7 else 0) / tck


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


# ---------------------------------------------------------------------------
# (a) raw disk, with dd
# ---------------------------------------------------------------------------

DD_RE = re.compile(r"^(\d+) bytes .* copied, ([0-9.e+-]+) s", re.M)


def dd(*args) -> dict:
    r = subprocess.run(["dd", *args], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    if r.returncode != 0:
        raise RuntimeError(f"dd {' '.join(args)} failed: {r.stderr.strip()}")
    m = DD_RE.search(r.stderr)
    if not m:
        raise RuntimeError(f"cannot parse dd output: {r.stderr!r}")
    nbytes, secs = int(m.group(1)), float(m.group(2))
    return {"bytes": nbytes, "seconds": secs, "MBps": nbytes / secs / 1e6}


def raw_disk(work: Path) -> dict:
    count = str(max(1, CFG["raw_bytes"] // MiB))
    path = work / "raw-disk-test.bin"
    subprocess.run(["sync"])
    w = dd("if=/dev/zero", f"of={path}", "bs=1M", f"count={count}", "conv=fdatasync")
    r = dd(f"if={path}", "of=/dev/null", "bs=1M")  # just written: page cache
    path.unlink()
    subprocess.run(["sync"])
    d = dd("if=/dev/zero", f"of={path}", "bs=1M", f"count={count}", "oflag=direct")
    path.unlink()
    return {"write_fdatasync": w, "write_direct": d, "read_page_cache": r}


# ---------------------------------------------------------------------------
# topics: a Metadata v1 request auto-creates them (num.partitions), so no
# client library is needed and the produce clock never includes creation
# ---------------------------------------------------------------------------


def kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def ensure_topics(host, port, topics) -> dict:
    body = struct.pack(">hhi", 3, 1, 1) + kstr("strata-bench") + struct.pack(">i", len(topics))
    body += b"".join(kstr(t) for t in topics)
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed during Metadata")
            buf += chunk
    p = 8  # size, correlation id

    def i16():
        nonlocal p
        p += 2
        return struct.unpack_from(">h", buf, p - 2)[0]

    def i32():
        nonlocal p
        p += 4
        return struct.unpack_from(">i", buf, p - 4)[0]

    def string():
        nonlocal p
        n = i16()
        p += max(n, 0)
        return None if n < 0 else buf[p - n:p].decode()

    for _ in range(i32()):  # brokers: node_id, host, port, rack
        i32(), string(), i32(), string()
    i32()  # controller id
    out = {}
    for _ in range(i32()):
        err, name = i16(), string()
        p += 1  # is_internal
        nparts = i32()
        for _ in range(nparts):
            i16(), i32(), i32()
            for _ in range(2):  # replicas, isr
                n = i32()  # (not `p += 4 * i32()`: i32 moves p itself)
                p += 4 * n
        out[name] = {"error_code": err, "partitions": nparts}
    return out


# ---------------------------------------------------------------------------
# rdkafka_performance runs
# ---------------------------------------------------------------------------

PROD_RE = re.compile(
    r"(\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset (-?\d+), (\d+) failed\) "
    r"in (\d+)ms: (\d+) msgs/s and ([0-9.]+) MB/s, (\d+) produce failures, (\d+) in queue")
CONS_RE = re.compile(r"(\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s \(([0-9.]+) MB/s\)")


class Sampler:
    """Polls the broker's VmRSS and measures its CPU seconds during a phase."""

    def __init__(self, broker: Broker, interval=0.1):
        self.b, self.interval = broker, interval
        self.max_rss = 0
        self.stop_evt = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop_evt.is_set():
            self.max_rss = max(self.max_rss, self.b.rss_kib() or 0)
            self.stop_evt.wait(self.interval)

    def __enter__(self):
        self.cpu0 = self.b.cpu_seconds() or 0.0
        self.stat0 = cpu_stat()
        self.dirty0 = meminfo("Dirty") + meminfo("Writeback")
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop_evt.set()
        self.t.join()
        self.cpu = (self.b.cpu_seconds() or 0.0) - self.cpu0
        stat1 = cpu_stat()
        self.machine_busy = stat1[0] - self.stat0[0]
        self.steal = stat1[1] - self.stat0[1]
        self.dirty_delta = meminfo("Dirty") + meminfo("Writeback") - self.dirty0
        self.hwm = proc_status(self.b.pid, "VmHWM")

    def record(self, r: dict) -> dict:
        """Adds the broker's and the machine's figures to a phase result."""
        r.update(broker_cpu_s=self.cpu, broker_rss_max_kib=self.max_rss, broker_vmhwm_kib=self.hwm,
                 machine_busy_cpu_s=self.machine_busy, steal_cpu_s=self.steal,
                 # busy CPU not used by the broker or the load generator: other
                 # processes on the machine (interference)
                 other_cpu_s=self.machine_busy - self.cpu - r.get("client_cpu_s", 0.0),
                 dirty_writeback_delta_kib=self.dirty_delta)
        return r


def run_tool(tool, args, name, work: Path) -> dict:
    cmd = [str(tool), *args]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    timed_out = False
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=CFG["phase_timeout"])
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        timed_out, rc = True, None
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    (work / f"{name}.out").write_text(f"$ {' '.join(cmd)}\n{out}\n--- stderr ---\n{err}")
    # librdkafka warns that rdkafka_performance sets consumer properties on
    # its producer and vice versa (CONFWARN): harmless, dropped.
    noise = [ln for ln in err.splitlines() if ln.strip() and "CONFWARN" not in ln]
    return {"command": " ".join(cmd), "exit_code": rc, "timed_out": timed_out, "wall_s": wall,
            "client_cpu_s": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime),
            "stdout": out, "stderr_lines": noise[:20], "stderr_line_count": len(noise)}


def produce(tool, bootstrap, topic, n, work, name, extra=()) -> dict:
    args = ["-P", "-t", topic, "-b", bootstrap, "-s", str(CFG["record_size"]), "-c", str(n),
            "-X", f"acks={CFG['acks']}", "-X", f"linger.ms={CFG['linger_ms']}",
            "-X", f"compression.codec={CFG['compression']}", "-q", *extra]
    r = run_tool(tool, args, name, work)
    m = PROD_RE.search(r["stdout"])
    if m:
        produced, nbytes, delivered, _off, failed, ms, rps, mbps, pfail, inq = m.groups()
        r.update({"records_produced": int(produced), "bytes": int(nbytes), "records_delivered": int(delivered),
                  "records_failed": int(failed), "ms": int(ms), "records_per_s": int(rps), "MBps": float(mbps),
                  "backpressure_retries": int(pfail), "left_in_queue": int(inq)})
    r["ok"] = bool(m) and r["exit_code"] == 0 and r.get("records_delivered") == n and r.get("records_failed") == 0
    del r["stdout"]
    return r


def consume(tool, bootstrap, topic, n, work) -> dict:
    parts = [a for p in range(CFG["partitions"]) for a in ("-p", str(p))]
    # -c: stop after exactly the produced count; -e: or at end of every
    # partition (so a short log ends the run instead of hanging)
    args = ["-C", "-t", topic, *parts, "-b", bootstrap, "-o", "beginning", "-c", str(n), "-e", "-q"]
    r = run_tool(tool, args, "consume", work)
    m = CONS_RE.search(r["stdout"])
    if m:
        recs, nbytes, ms, rps, mbps = m.groups()
        r.update({"records": int(recs), "bytes": int(nbytes), "ms": int(ms), "records_per_s": int(rps),
                  "MBps": float(mbps)})
    r["records_expected"] = n
    r["ok"] = bool(m) and r["exit_code"] == 0 and r.get("records") == n
    del r["stdout"]
    return r


def latency_run(tool, bootstrap, topic, n, work, name, rate=None) -> dict:
    lat_file = work / f"{name}-latency-us.txt"
    extra = ["-l", "-A", str(lat_file)] + (["-r", str(rate)] if rate else [])
    r = produce(tool, bootstrap, topic, n, work, name, extra)
    try:
        vals = sorted(int(x) for x in lat_file.read_text().split())
    except OSError:
        vals = []
    ms = [v / 1000 for v in vals]
    r["latency_ms"] = {"samples": len(ms), "p50": pct(ms, 50), "p95": pct(ms, 95), "p99": pct(ms, 99),
                       "max": ms[-1] if ms else None, "mean": sum(ms) / len(ms) if ms else None}
    r["rate_limit_msgs_per_s"] = rate
    return r


# ---------------------------------------------------------------------------


def machine_info(work: Path) -> dict:
    info = {"cpus": os.cpu_count(), "kernel": platform.release(), "mem_total_kib": meminfo("MemTotal")}
    try:
        out = subprocess.run(["df", "-PT", str(work)], capture_output=True, text=True).stdout.splitlines()[-1].split()
        info["filesystem"] = {"device": out[0], "type": out[1], "mount": out[-1]}
    except Exception:
        pass
    try:
        info["librdkafka"] = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "librdkafka1"],
                                            capture_output=True, text=True).stdout.strip() or None
    except OSError:
        pass
    try:
        info["git_rev"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip() or None
        info["git_dirty"] = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "broker"],
                                                capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    return info


LOG_PROBLEM_RE = re.compile(r"\b(WARN|ERROR)\b|panicked")


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        binary = check_binary()
    except BrokerError as e:
        print(e, file=sys.stderr)
        return 2
    tool = Path(os.environ.get("RDKAFKA_PERFORMANCE") or REPO / "target" / "bench-tools" / "rdkafka_performance")
    if not os.access(tool, os.X_OK):
        print(f"rdkafka_performance not found at {tool}; run benches/run.sh", file=sys.stderr)
        return 2

    base = Path(os.environ.get("BENCH_DIR") or REPO / "bench-results" / "work")
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    results_dir = REPO / "bench-results"
    results_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    t_run = time.monotonic()
    out = {"time": stamp, "load_generator": "rdkafka_performance", "config": CFG, "binary": str(binary),
           "tool": str(tool), "work_dir": str(work), "machine": machine_info(work)}
    n_records = CFG["produce_bytes"] // CFG["record_size"]
    broker = None
    ok = True
    try:
        print(f"[bench] work dir {work} ({out['machine'].get('filesystem', {}).get('type', '?')})", flush=True)
        print(f"[bench] raw disk: dd {CFG['raw_bytes'] // MiB} MiB conv=fdatasync, read back, oflag=direct ...",
              flush=True)
        out["raw_disk"] = raw_disk(work)

        settings = {"num.partitions": CFG["partitions"]}
        for kv in filter(None, os.environ.get("BENCH_BROKER_SET", "").split(",")):
            k, v = kv.split("=", 1)
            settings[k.strip()] = v.strip()
        broker = Broker(data_dir=work / "data", settings=settings, log_dir=work, name="broker")
        t0 = time.monotonic()
        broker.start()
        out["broker_command"] = " ".join(broker.command())
        out["broker_startup_s"] = time.monotonic() - t0
        time.sleep(1.0)
        out["rss_idle_kib"] = broker.rss_kib()
        print(f"[bench] broker pid {broker.pid} on {broker.bootstrap}, idle RSS {out['rss_idle_kib']} KiB", flush=True)
        out["topics"] = ensure_topics(broker.host, broker.port, [TOPIC, TOPIC_LAT, TOPIC_LAT_LOADED])
        for t, info in out["topics"].items():
            if info["error_code"] != 0 or info["partitions"] != CFG["partitions"]:
                raise RuntimeError(f"topic {t}: {info}, wanted {CFG['partitions']} partitions")

        bs = broker.bootstrap
        print(f"[bench] produce: {n_records} x {CFG['record_size']} B, acks={CFG['acks']}, "
              f"{CFG['partitions']} partitions, linger.ms={CFG['linger_ms']} ...", flush=True)
        with Sampler(broker) as s:
            out["produce"] = produce(tool, bs, TOPIC, n_records, work, "produce")
        s.record(out["produce"])

        print(f"[bench] consume: {n_records} records from offset 0 of {CFG['partitions']} partitions ...", flush=True)
        with Sampler(broker) as s:
            out["consume"] = consume(tool, bs, TOPIC, n_records, work)
        s.record(out["consume"])

        n_lat = CFG["lat_rate"] * CFG["lat_seconds"]
        print(f"[bench] latency: {n_lat} records at {CFG['lat_rate']}/s ...", flush=True)
        with Sampler(broker) as s:
            out["latency_rate_limited"] = latency_run(tool, bs, TOPIC_LAT, n_lat, work, "latency-rate-limited",
                                                      rate=CFG["lat_rate"])
        s.record(out["latency_rate_limited"])

        n_loaded = CFG["loaded_lat_bytes"] // CFG["record_size"]
        print(f"[bench] latency at full load: {n_loaded} records, no rate limit ...", flush=True)
        with Sampler(broker) as s:
            out["latency_full_load"] = latency_run(tool, bs, TOPIC_LAT_LOADED, n_loaded, work, "latency-full-load")
        s.record(out["latency_full_load"])

        out["rss_peak_vmhwm_kib"] = proc_status(broker.pid, "VmHWM")
        out["rss_after_kib"] = broker.rss_kib()
        t0 = time.monotonic()
        out["shutdown_exit_code"] = broker.stop(timeout=60)
        out["shutdown_s"] = time.monotonic() - t0
        out["data_dir_bytes"] = sum(f.stat().st_size for f in (work / "data").rglob("*") if f.is_file())
    except Exception as e:  # noqa: BLE001  (report what we have)
        ok = False
        out["failure"] = f"{type(e).__name__}: {e}"
        print(f"[bench] FAILED: {out['failure']}", file=sys.stderr)
    finally:
        if broker is not None:
            broker.close()
            log = broker.log_text()
            problems = [ln for ln in log.splitlines() if LOG_PROBLEM_RE.search(ln)]
            out["broker_log_problem_lines"] = len(problems)
            out["broker_log_problems"] = problems[:20]
            try:
                shutil.copy(broker.log_path, results_dir / f"bench-{stamp}-broker.log")
            except OSError:
                pass
        out["total_run_s"] = time.monotonic() - t_run
        if os.environ.get("BENCH_KEEP", "0") != "1":
            shutil.rmtree(work, ignore_errors=True)

    path = results_dir / f"bench-{stamp}.json"
    if not ok:
        path.write_text(json.dumps(out, indent=2))
        print(f"partial results: {path}", file=sys.stderr)
        return 1

    raw = out["raw_disk"]
    prod, cons = out["produce"], out["consume"]
    lr, ll = out["latency_rate_limited"], out["latency_full_load"]
    raw_w, raw_d, raw_r = raw["write_fdatasync"]["MBps"], raw["write_direct"]["MBps"], raw["read_page_cache"]["MBps"]
    idle_mib = (out["rss_idle_kib"] or 0) / 1024
    out["ratios"] = {
        "produce_vs_raw_write_fdatasync": prod.get("MBps", 0) / raw_w,
        "produce_vs_raw_write_direct": prod.get("MBps", 0) / raw_d,
        "consume_vs_raw_read_page_cache": cons.get("MBps", 0) / raw_r,
    }
    # Other processes busy during a throughput phase (a build, tests, another
    # benchmark) take CPU from the broker and the load generator on a small machine.
    out["interference"] = [
        f"{phase}: other processes used {out[phase]['other_cpu_s']:.1f} CPU s "
        f"(steal {out[phase]['steal_cpu_s']:.1f} s) in {out[phase]['wall_s']:.1f} s"
        for phase in ("produce", "consume")
        if out[phase]["other_cpu_s"] > 0.1 * out[phase]["wall_s"] * (os.cpu_count() or 1)
        or out[phase]["steal_cpu_s"] > 0.1 * out[phase]["wall_s"] * (os.cpu_count() or 1)]
    path.write_text(json.dumps(out, indent=2))

    def f(x, d=1):
        return "-" if x is None else f"{x:,.{d}f}"

    def cpu3(r):
        return f"{f(r['broker_cpu_s'])} / {f(r['client_cpu_s'])} / {f(r['other_cpu_s'])}"

    def lat3(lat):
        return f"{f(lat['p50'], 2)} / {f(lat['p95'], 2)} / {f(lat['p99'], 2)} ms"

    rt = out["ratios"]
    hwm_mib = (out["rss_peak_vmhwm_kib"] or 0) / 1024
    mb = CFG["produce_bytes"] / MiB
    rows = [
        (f"raw write dd {CFG['raw_bytes'] // MiB} MiB conv=fdatasync", f"{f(raw_w)} MB/s", "ratio denominator"),
        (f"raw write dd {CFG['raw_bytes'] // MiB} MiB oflag=direct", f"{f(raw_d)} MB/s", "informational"),
        ("raw sequential read dd (page cache)", f"{f(raw_r)} MB/s", ""),
        ("broker idle RSS", f"{f(idle_mib)} MiB", ""),
        (f"produce {mb:.0f} MiB acks={CFG['acks']}", f"{f(prod.get('MBps'))} MB/s",
         f"{f(prod.get('records_per_s'), 0)} rec/s, {prod.get('records_delivered', 0):,} delivered, "
         f"{prod.get('records_failed', '?')} failed"),
        ("  CPU s: broker / client / other", cpu3(prod),
         f"over {f(prod['wall_s'], 2)} s wall ({f(prod.get('ms', 0) / 1000, 2)} s measured); "
         f"dirty+writeback {prod['dirty_writeback_delta_kib'] / 1024:+,.1f} MiB"),
        ("consume from offset 0", f"{f(cons.get('MBps'))} MB/s",
         f"{f(cons.get('records_per_s'), 0)} rec/s, {cons.get('records', 0):,}/{cons['records_expected']:,} records"),
        ("  CPU s: broker / client / other", cpu3(cons),
         f"over {f(cons['wall_s'], 2)} s wall ({f(cons.get('ms', 0) / 1000, 2)} s measured)"),
        (f"produce latency @{CFG['lat_rate']}/s p50/p95/p99", lat3(lr['latency_ms']),
         f"max {f(lr['latency_ms']['max'], 1)} ms, {lr['latency_ms']['samples']:,} samples, "
         f"linger.ms={CFG['linger_ms']}; client CPU {f(lr['client_cpu_s'])} s (its rate limiter busy-polls)"),
        ("produce latency full load p50/p95/p99", lat3(ll['latency_ms']),
         f"send->ack incl. time queued in the client; {f(ll.get('MBps'))} MB/s with -l"),
        ("broker peak RSS (VmHWM)", f"{f(hwm_mib)} MiB",
         f"polled max: produce {f(prod['broker_rss_max_kib'] / 1024)}, consume "
         f"{f(cons['broker_rss_max_kib'] / 1024)} MiB"),
        ("produce / raw write (fdatasync)", f"{rt['produce_vs_raw_write_fdatasync']:.2f}",
         f"vs oflag=direct: {rt['produce_vs_raw_write_direct']:.2f}"),
        ("consume / raw read (page cache)", f"{rt['consume_vs_raw_read_page_cache']:.2f}", ""),
        ("SIGTERM shutdown", f"{f(out['shutdown_s'], 2)} s", f"exit code {out['shutdown_exit_code']}"),
        ("broker log WARN/ERROR lines", f"{out['broker_log_problem_lines']}", ""),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print()
    print(f"{'metric':<{w0}}  {'value':>{w1}}  notes")
    print(f"{'-' * w0}  {'-' * w1}  -----")
    for a, b, c in rows:
        print(f"{a:<{w0}}  {b:>{w1}}  {c}")
    print(f"\nMB/s = 10^6 bytes/s (as rdkafka_performance and dd print). {os.cpu_count()} CPUs shared by broker "
          f"and load generator. Total {f(out['total_run_s'])} s.")
    if out["broker_log_problems"]:
        print("broker log WARN/ERROR lines (first few):")
        for ln in out["broker_log_problems"][:5]:
            print("  " + ln)
    print(f"results: {path}")
    ok = (prod["ok"] and cons["ok"] and lr["ok"] and ll["ok"] and out["shutdown_exit_code"] == 0)
    for phase in ("produce", "consume", "latency_rate_limited", "latency_full_load"):
        if out[phase]["stderr_line_count"]:
            print(f"note: {phase}: rdkafka_performance stderr: {out[phase]['stderr_lines'][:3]}", file=sys.stderr)
    for msg in out["interference"]:
        print(f"WARNING: machine not quiet, figures disturbed: {msg}", file=sys.stderr)
    if not ok:
        print("WARNING: delivery failures, missing records, a client timeout or an unclean shutdown; "
              "see the JSON and the broker log", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
