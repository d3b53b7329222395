#!/usr/bin/env python3
"""Historical read path benchmark (issue 5), driven by librdkafka's
rdkafka_performance against a real S3-protocol server on loopback
(strata-s3 from local-stack/, or s3s-fs with BENCH_S3=s3s-fs).

Started by benches/catchup.sh (which builds the broker, the load generator,
the server and the helpers in benches/tools). In one run:
  1. catch-up throughput: BENCH_BYTES of 1 KiB records in 6 partitions,
     fully tiered (local.retention.ms=1000, segment.ms seals the tail); one
     consumer reads it from offset 0. Next to it, in the same run:
       (a) the same read of a topic that stayed on local disk,
       (b) the sequential read: the same consumer and broker with read-ahead
           off and one GET at a time (remote.fetch.readahead.max.chunks=0,
           remote.fetch.max.concurrent.gets=1): one chunk at a time, as
           Kafka's tiered storage reads;
       (b') a bare sequential GET loop over the same objects, no broker and
           no consumer (strata-seq-read, same object_store client);
       (c) the server's own ceiling: the same objects read with 8 GETs in
           parallel by strata-seq-read, without broker or consumer;
     then the remote reads again through a proxy adding BENCH_LATENCY_MS to
     every object-store request (strata-delay-proxy).
  2. isolation: a producer at BENCH_TAIL_RATE msg/s and a tail consumer
     measuring end-to-end latency (rdkafka_performance -l), first alone, then
     while two consumers catch up from offset 0 of the tiered history, and
     while a control (the same bucket read without the broker) runs.
  3. GET sharing: two consumers read the same tiered history at once, with
     a cold cache; the broker's GET count is compared with the number of
     chunks in the bucket.
Page caches are dropped before each read (a bucket in /dev/shm stays in
memory, like an object store's own caches; BENCH_S3_ON_DISK=1 for a bucket
read cold from disk). Ratios are against baselines
measured in the same run. Writes bench-results/catchup-<time>.json (with
the CPU seconds of broker, server and consumer per read) and prints a table.

Environment: BENCH_BYTES [1073741824]  BENCH_LATENCY_MS [20]
  BENCH_SEGMENT_BYTES [67108864]  BENCH_CHUNK_BYTES [broker default]
  BENCH_TAIL_RATE [5000] BENCH_TAIL_SECONDS [20]  BENCH_KEEP [0]
  BENCH_BROKER_SET ["" ; extra "k=v,k=v" broker settings]
  BENCH_ONLY ["" = all; comma list of throughput,latency,sharing,isolation]
  BENCH_REPEAT [3; local and prefetcher reads, median reported]
  BENCH_NICE_CLIENTS [1: in the isolation run, what stands for other machines
    (the catch-up consumers, the S3 server, the control's readers) runs at a
    low priority: SCHED_IDLE (chrt -i 0), or nice 19 with BENCH_IDLE_CLIENTS=0]
  BENCH_S3_ON_DISK [0: the bucket lives in /dev/shm, as another machine's
    storage would not share the broker's disk and ext4 journal; 1: work dir]
  BENCH_ISOLATION_CONTROL [1: each isolation pair also runs a control, the
    same bucket read by two strata-seq-read processes (8 GETs each) without
    the broker: what such traffic costs the tail on this machine anyway]
  BENCH_ISOLATION_REPEAT [3; quiet and catch-up runs alternate, medians reported]
  BENCH_ISOLATION_QUOTA [0: skip; N: the catch-up runs again with
    remote.log.manager.fetch.max.bytes.per.second at N B/s]
  BENCH_ISOLATION_UNCAPPED [1; 0: skip the catch-up runs with the default
    settings (the adaptive history rate on)]
  BENCH_ISOLATION_ADAPTIVE_OFF [1: each pair also runs the catch-up with
    remote.fetch.adaptive.enable=false (full speed): the baseline the
    adaptive rate is judged against, in the same invocation; 0: skip]
  BENCH_BROKER_LOG [the brokers' log filter; e.g. info,strata_broker::remote::adaptive_rate=trace
    logs every tick of the adaptive history rate; keep with BENCH_KEEP=1]
  BENCH_LOCAL_CATCHUP [0; 1: also an isolation run whose catch-up reads local disk]
  BENCH_VMSTAT, BENCH_STRACE=<strace -e expr>, BENCH_PERF_TRACE (fsyncs over
    10 ms and block requests, via perf), BENCH_PERF_SCHED (perf sched record of
    4 s of the catch-up) [diagnostics of the isolation runs; keep with BENCH_KEEP=1]
  BENCH_S3 [strata-s3 | s3s-fs]  BENCH_PERF [unset; 1: perf record the reads]
  RDKAFKA_PERFORMANCE, S3S_FS, STRATA_BIN, BENCH_TOOLS_DIR (set by catchup.sh)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from strata_broker import Broker, free_port  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

MiB = 1024 * 1024
CONS_RE = re.compile(r"(\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s \(([0-9.]+) MB/s\)")
PROD_RE = re.compile(r"(\d+) messages produced \((\d+) bytes\), (\d+) delivered .* in (\d+)ms: (\d+) msgs/s and "
                     r"([0-9.]+) MB/s")

CFG = {
    "bytes": int(os.environ.get("BENCH_BYTES", 1 << 30)),
    "record_size": 1024,
    "partitions": 6,
    "segment_bytes": int(os.environ.get("BENCH_SEGMENT_BYTES", 64 * MiB)),
    "latency_ms": int(os.environ.get("BENCH_LATENCY_MS", 20)),
    "tail_rate": int(os.environ.get("BENCH_TAIL_RATE", 5000)),
    "tail_seconds": int(os.environ.get("BENCH_TAIL_SECONDS", 20)),
    "chunk_bytes": int(os.environ.get("BENCH_CHUNK_BYTES", 4 * MiB)),
}
TOOL = Path(os.environ.get("RDKAFKA_PERFORMANCE") or REPO / "target/bench-tools/rdkafka_performance")
S3S = Path(os.environ.get("S3S_FS") or REPO / "target/bench-tools/bin/s3s-fs")
TOOLS = Path(os.environ.get("BENCH_TOOLS_DIR") or REPO / "target/release")
ACCESS, SECRET = "bench", "bench-secret-key"
SERVER = os.environ.get("BENCH_S3", "strata-s3")
# The catch-up consumers and the S3 server stand for other machines: on one
# 2-core box they would otherwise take the CPU the broker's tail path needs
# (BENCH_NICE_CLIENTS=0 runs them at normal priority).
NICE_OTHERS = os.environ.get("BENCH_NICE_CLIENTS", "1") == "1"
IDLE_OTHERS = os.environ.get("BENCH_IDLE_CLIENTS", "1") == "1"
NICE_CLIENTS = (["chrt", "-i", "0"] if IDLE_OTHERS else ["nice", "-n", "19"]) if NICE_OTHERS else []
ISOLATION_REPEAT = max(1, int(os.environ.get("BENCH_ISOLATION_REPEAT", 3)))
ISOLATION_QUOTA = int(os.environ.get("BENCH_ISOLATION_QUOTA", 0))
REPEAT = int(os.environ.get("BENCH_REPEAT", 3))
ONLY = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))


def want(section):
    return not ONLY or section in ONLY


def log(msg):
    print(f"[catchup] {msg}", flush=True)


def wait_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {port}")


def metrics(b: Broker) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{b.http_port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def metric_sum(m, name, topic=None):
    return sum(v for k, v in m.items()
               if k.split("{")[0] == name and (topic is None or f'topic="{topic}"' in k))


def commit_buckets(m) -> list[tuple[float, float]]:
    """strata_log_commit_seconds' cumulative buckets: [(le, count)]."""
    out = []
    for k, v in m.items():
        if k.startswith("strata_log_commit_seconds_bucket{"):
            le = k.split('le="')[1].split('"')[0]
            out.append((float("inf") if le == "+Inf" else float(le), v))
    return sorted(out)


def commit_quantiles(before, after) -> dict:
    """Commit latency (append to durable) quantiles, in ms, of the rounds
    between two metric scrapes (upper bounds of power-of-two buckets)."""
    a, b = dict(commit_buckets(before)), commit_buckets(after)
    diff = [(le, c - a.get(le, 0.0)) for le, c in b]
    total = diff[-1][1] if diff else 0
    out = {"commit_rounds": int(total)}
    for q in (50, 90, 99):
        le = next((le for le, c in diff if total and c >= q / 100 * total), None)
        out[f"commit_p{q}_ms"] = None if le is None or le == float("inf") else round(le * 1e3, 3)
    return out


def run(args, name, work, timeout=900):
    cmd = [str(TOOL), *args]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    (work / f"{name}.out").write_text(f"$ {' '.join(cmd)}\n{r.stdout}\n--- stderr ---\n{r.stderr}")
    return r.stdout, time.monotonic() - t0


def produce(bs, topic, n, work, name, extra=()):
    out, wall = run(["-P", "-t", topic, "-b", bs, "-s", str(CFG["record_size"]), "-c", str(n),
                     "-X", "acks=1", "-X", "linger.ms=5", "-q", *extra], name, work)
    m = PROD_RE.search(out)
    return {"MBps": float(m.group(6)) if m else None, "records": int(m.group(3)) if m else 0, "wall_s": wall}


def children_cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def consume(bs, topic, n, work, name, extra=()):
    parts = [a for p in range(CFG["partitions"]) for a in ("-p", str(p))]
    c0 = children_cpu()
    out, wall = run(["-C", "-t", topic, *parts, "-b", bs, "-o", "beginning", "-c", str(n), "-e", "-q",
                     *extra], name, work)
    m = CONS_RE.search(out)
    return {"MBps": float(m.group(5)) if m else None, "records": int(m.group(1)) if m else 0,
            "expected": n, "wall_s": wall, "ok": bool(m) and int(m.group(1)) == n,
            "consumer_cpu_s": round(children_cpu() - c0, 2)}


def create_topics(b: Broker, topics: dict[str, dict]):
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    fs = a.create_topics([NewTopic(t, CFG["partitions"], 1, config=c) for t, c in topics.items()])
    for f in fs.values():
        f.result(30)


def wait_tiered(b: Broker, topic: str, timeout=600):
    """Until every partition is sealed, uploaded and gone from local disk."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = metrics(b)
        done = all(
            m.get(f'strata_local_log_start_offset{{topic="{topic}",partition="{p}"}}', -1)
            == m.get(f'strata_log_end_offset{{topic="{topic}",partition="{p}"}}', -2)
            and m.get(f'strata_remote_log_end_offset{{topic="{topic}",partition="{p}"}}', -1)
            == m.get(f'strata_log_end_offset{{topic="{topic}",partition="{p}"}}', -2)
            for p in range(CFG["partitions"]))
        if done:
            return
        time.sleep(1)
    raise RuntimeError(f"{topic} not fully tiered after {timeout}s")


def median_run(runs: list[dict]) -> dict:
    """The run with the median MB/s, with every run's MB/s beside it."""
    ok = sorted((r for r in runs if r.get("MBps")), key=lambda r: r["MBps"])
    if not ok:
        return runs[-1] if runs else {}
    return dict(ok[len(ok) // 2], runs_MBps=[r.get("MBps") for r in runs],
                runs_gets=[r.get("gets") for r in runs])


def stat_cpu(stat: Path) -> tuple[str, float]:
    """(name, user + system CPU seconds) from a /proc .../stat file."""
    try:
        text = stat.read_text()
        fields = text.rsplit(")", 1)[1].split()
        return text[text.index("(") + 1:text.rindex(")")], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return "", 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    return stat_cpu(Path(f"/proc/{pid}/stat"))[1]


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def renice(pid: int, nice: int):
    """Sets the niceness of every thread of `pid` (Linux threads have one
    each; setpriority on the pid alone moves only the main thread)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if IDLE_OTHERS:
                os.sched_setscheduler(int(tid), os.SCHED_IDLE if nice else os.SCHED_OTHER, os.sched_param(0))
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except OSError as e:
            log(f"cannot renice thread {tid} of {pid}: {e}")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of `pid`'s threads, summed by thread name (the broker's
    request workers are strata-worker, the historical path strata-prefetch)."""
    out: dict[str, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        name, secs = stat_cpu(Path(f"/proc/{pid}/task/{tid}/stat"))
        if name:
            out[name] = out.get(name, 0.0) + secs
    return out


def median_isolation(runs: list[dict]) -> dict:
    """Each figure's median over the runs, with every run's figures beside."""
    keys = ("tail_p50_ms", "tail_p99_ms", "tail_max_ms", "producer_MBps", "during_p50_ms", "during_p99_ms",
            "during_max_ms", "catchup_seconds", "catchup_MBps", "commit_p50_ms", "commit_p90_ms", "commit_p99_ms",
            "during_commit_p50_ms", "during_commit_p90_ms", "during_commit_p99_ms")
    out = {k: sorted(r[k] for r in runs)[len(runs) // 2] for k in keys if all(r.get(k) is not None for r in runs)}
    out["runs"] = runs
    return out


def p99_ratios(quiet: list[dict], busy: list[dict]) -> list[float]:
    """Per pair: the tail's p99 while the others read / the quiet run's p99."""
    return [round(c["during_p99_ms"] / q["tail_p99_ms"], 2) for q, c in zip(quiet, busy)
            if q.get("tail_p99_ms") and c.get("during_p99_ms")]


def pct(vals, q):
    if not vals:
        return None
    vals = sorted(vals)
    return vals[min(len(vals) - 1, int(round(q / 100 * (len(vals) - 1))))]


def start_broker(work, data, store_url, env, settings, name):
    # Every (re)start is a cold start: the chunk cache's disk tier survives
    # restarts by design, so it goes too.
    shutil.rmtree(Path(data) / "remote-cache", ignore_errors=True)
    b = Broker(data_dir=data, settings=settings, log_dir=work, name=name,
               extra_args=["--object-store", store_url], env=env)
    b.start()
    return b


def tail_run(b, work, name, with_catchup: list[str], control: list[list[str]] | None = None,
             control_env: dict | None = None):
    """Producer at a steady rate + tail consumer measuring e2e latency. The
    catch-up consumers (if any) start 2 s into the production and read the
    whole history; the tail's latency is taken over the whole run and over
    the messages produced while they were reading. With `control`, those
    commands run in the window instead (a load that does not involve the
    broker, at the catch-up's scheduling class)."""
    bs = b.bootstrap
    rate = CFG["tail_rate"]
    n = rate * CFG["tail_seconds"]
    history = CFG["bytes"] // CFG["record_size"]
    lat_file = work / f"{name}-e2e-us.txt"
    parts = [a for p in range(CFG["partitions"]) for a in ("-p", str(p))]
    cons = subprocess.Popen([str(TOOL), "-C", "-t", "tail", *parts, "-b", bs, "-o", "end", "-c", str(n), "-l",
                             "-A", str(lat_file), "-q"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    catchers: list[subprocess.Popen] = []
    window: dict[str, float] = {}

    def catch_up():
        time.sleep(2)
        window["m0"] = metrics(b)
        window["served0"] = metric_sum(window["m0"], "strata_remote_fetch_bytes_total")
        window["cpu0"] = thread_cpu(b.proc.pid)
        window["start"] = time.monotonic()
        for j, cmd in enumerate(control or []):
            catchers.append(subprocess.Popen([*NICE_CLIENTS, *cmd], stdout=open(work / f"{name}-control{j}.out", "w"),
                                             stderr=subprocess.DEVNULL, env={**os.environ, **(control_env or {})}))
        for i, topic in enumerate(with_catchup):
            catchers.append(subprocess.Popen(
                [*NICE_CLIENTS, str(TOOL), "-C", "-t", topic, *parts, "-b", bs, "-o", "beginning", "-c", str(history),
                 "-q", "-X", f"client.id=catchup-{name}-{i}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        sched = None
        if os.environ.get("BENCH_PERF_SCHED"):  # scheduler trace of 4 s of the catch-up: work/<name>.sched
            time.sleep(1)
            sched = subprocess.Popen(["perf", "sched", "record", "-o", str(work / f"{name}.sched"), "sleep", "4"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        codes = [c.wait() for c in catchers]
        if sched:
            sched.wait()
        window["m1"] = metrics(b)
        window["end"] = time.monotonic()
        window["cpu1"] = thread_cpu(b.proc.pid)
        window["finished"] = all(c == 0 for c in codes)

    vmstat = subprocess.Popen(["vmstat", "-t", "1"], stdout=open(work / f"{name}.vmstat", "w")) \
        if os.environ.get("BENCH_VMSTAT") else None
    tracer = None
    if os.environ.get("BENCH_STRACE") and with_catchup:
        tracer = subprocess.Popen(["strace", "-f", "-tt", "-T", "-e", os.environ["BENCH_STRACE"], "-p", str(b.proc.pid),
                                   "-o", str(work / f"{name}.strace")], stderr=subprocess.DEVNULL)
    perf_tracers = []
    if os.environ.get("BENCH_PERF_TRACE"):
        # fdatasync calls over 10 ms and the ext4 journal's commits, system-wide
        # (tracepoints: far less intrusive than strace)
        perf_tracers = [
            subprocess.Popen(["perf", "trace", "-a", "-e", "fdatasync,fsync", "--duration", "10",
                              "-o", str(work / f"{name}.fsync")], stderr=subprocess.DEVNULL),
            subprocess.Popen(["perf", "record", "-q", "-a", "-e", "block:block_rq_issue",
                              "-o", str(work / f"{name}.block.data")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        ]
    time.sleep(3)
    runner = threading.Thread(target=catch_up) if with_catchup or control else None
    run_m0 = metrics(b)
    produce_start = time.monotonic()
    if runner:
        runner.start()
    prod = produce(bs, "tail", n, work, f"{name}-producer", extra=["-r", str(rate), "-l"])
    try:
        cons.wait(timeout=60)
    except subprocess.TimeoutExpired:
        cons.kill()
    if runner:
        for c in catchers:
            c.kill()  # still reading when the tail run ended: "catchup_finished" says so
        runner.join()
    if tracer:
        tracer.terminate()
        tracer.wait()
    for t in perf_tracers:
        t.send_signal(2)
        t.wait()
    if vmstat:
        vmstat.kill()
        vmstat.wait()
    try:
        vals = [int(x) / 1000 for x in lat_file.read_text().split()]
    except OSError:
        vals = []
    out = {"producer_MBps": prod["MBps"], "producer_records": prod["records"],
           "tail_samples": len(vals), "tail_p50_ms": pct(vals, 50), "tail_p99_ms": pct(vals, 99),
           "tail_max_ms": max(vals) if vals else None}
    out.update(commit_quantiles(run_m0, metrics(b)))
    if "m1" in window:
        out.update({f"during_{k}": v for k, v in commit_quantiles(window["m0"], window["m1"]).items()})
    if control:
        rates = []
        for j in range(len(control)):
            try:
                rates.append(float((work / f"{name}-control{j}.out").read_text().split()[2]))
            except (OSError, IndexError, ValueError):
                pass
        out["control_MBps_each"] = rates
    if "start" in window:
        # Messages come at `rate` per second in production order, so the
        # i-th latency is of a message produced about i / rate s in.
        lo = int((window["start"] - produce_start) * rate)
        hi = int((window["end"] - produce_start) * rate)
        during = vals[lo:hi]
        out.update({"catchup_seconds": round(window["end"] - window["start"], 2),
                    "catchup_finished": window.get("finished", False),
                    # remote bytes served to them (0 for a local catch-up)
                    "catchup_MBps": round((metric_sum(metrics(b), "strata_remote_fetch_bytes_total")
                                           - window["served0"]) / 1e6 / (window["end"] - window["start"]), 1),
                    # the broker's CPU seconds per second of the window, by thread name
                    "broker_cpu_per_s": {k: round((v - window["cpu0"].get(k, 0.0))
                                                  / (window["end"] - window["start"]), 3)
                                         for k, v in window.get("cpu1", {}).items()
                                         if v - window["cpu0"].get(k, 0.0) > 0},
                    "during_samples": len(during), "during_p50_ms": pct(during, 50),
                    "during_p99_ms": pct(during, 99), "during_max_ms": max(during) if during else None})
    return out


def main():
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results_dir = REPO / "bench-results"
    results_dir.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="catchup-", dir=results_dir))
    out = {"time": stamp, "config": CFG, "work": str(work)}
    procs = []
    brokers = []
    try:
        # --- S3-protocol server and latency proxy ------------------------------
        # The bucket stands for another machine's storage: on tmpfs by default,
        # so the server's file system work (journal handles for atime and
        # metadata updates) cannot hold up the broker's fsyncs through the
        # shared ext4 journal, which a real object store never shares.
        # BENCH_S3_ON_DISK=1 keeps it in the work dir on the broker's disk.
        if os.environ.get("BENCH_S3_ON_DISK", "0") == "1" or not Path("/dev/shm").is_dir():
            root = work / "s3"
        else:
            root = Path(tempfile.mkdtemp(prefix="strata-bench-s3-", dir="/dev/shm"))
            out["s3_root"] = str(root)
        (root / "strata").mkdir(parents=True)
        s3_port = free_port()
        if SERVER == "s3s-fs":
            cmd = [str(S3S), "--host", "127.0.0.1", "--port", str(s3_port),
                   "--access-key", ACCESS, "--secret-key", SECRET, str(root)]
        else:
            cmd = [str(TOOLS / "strata-s3"), "--listen", f"127.0.0.1:{s3_port}", "--root", str(root),
                   "--bucket", "strata"]
        out["s3_server"] = SERVER
        procs.append(subprocess.Popen(cmd, stdout=open(work / "s3.log", "w"), stderr=subprocess.STDOUT))
        wait_port(s3_port)
        proxy_port = free_port()
        procs.append(subprocess.Popen([str(TOOLS / "strata-delay-proxy"), f"127.0.0.1:{proxy_port}",
                                       f"127.0.0.1:{s3_port}", str(CFG["latency_ms"])],
                                      stdout=subprocess.DEVNULL, stderr=open(work / "proxy.log", "w")))
        wait_port(proxy_port)
        env = {"AWS_ACCESS_KEY_ID": ACCESS, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
               "AWS_ALLOW_HTTP": "true", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s3_port}"}
        if os.environ.get("BENCH_BROKER_LOG"):  # e.g. info,strata_broker::remote::adaptive_rate=trace
            env["STRATA_LOG_LEVEL"] = os.environ["BENCH_BROKER_LOG"]
        slow_env = dict(env, AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy_port}")
        url = f"s3://strata/catchup-{stamp}"
        settings = {"num.partitions": CFG["partitions"], "remote.log.manager.task.interval.ms": 500,
                    "log.retention.check.interval.ms": 500, "remote.fetch.chunk.bytes": CFG["chunk_bytes"]}
        for kv in filter(None, os.environ.get("BENCH_BROKER_SET", "").split(",")):
            k, v = kv.split("=", 1)
            settings[k.strip()] = v.strip()
        # Baseline (b): what Kafka's tiered storage does, one chunk at a time
        # with no read-ahead, through the same broker and consumer.
        SEQUENTIAL = dict(settings, **{"remote.fetch.readahead.max.chunks": 0,
                                       "remote.fetch.max.concurrent.gets": 1})
        data = work / "data"
        b = start_broker(work, data, url, env, settings, "broker-1")
        brokers.append(b)
        seg = str(CFG["segment_bytes"])
        create_topics(b, {
            "history": {"segment.bytes": seg, "local.retention.ms": "1000", "segment.ms": "5000"},
            "local-history": {"segment.bytes": seg, "remote.storage.enable": "false"},
            "tail": {"remote.storage.enable": "false"},
        })
        n = CFG["bytes"] // CFG["record_size"]
        log(f"producing {n} x 1 KiB into history and local-history ...")
        out["produce_history"] = produce(b.bootstrap, "history", n, work, "produce-history")
        out["produce_local"] = produce(b.bootstrap, "local-history", n, work, "produce-local")
        log("waiting until history is fully tiered ...")
        t0 = time.time()
        wait_tiered(b, "history")
        out["tiering_wait_s"] = time.time() - t0
        m = metrics(b)
        out["history_local_bytes"] = metric_sum(m, "strata_local_log_size_bytes", "history")
        out["history_remote_bytes"] = metric_sum(m, "strata_remote_log_size_bytes", "history")
        logs = sorted(p for p in (root / "strata").rglob("*.log") if "/history/" in str(p))
        out["remote_objects"] = len(logs)
        chunks = sum(-(-p.stat().st_size // CFG["chunk_bytes"]) for p in logs)
        out["remote_chunks"] = chunks

        s3_pid = procs[0].pid

        def timed_remote_read(b, name, env_):
            """A consumer reading history from offset 0, with the CPU seconds
            the broker and the S3 server spent meanwhile."""
            m0, c0 = metrics(b), (cpu_seconds(b.proc.pid), cpu_seconds(s3_pid))
            perf = None
            if os.environ.get("BENCH_PERF"):  # a CPU profile of broker + server: work/<name>.perf
                perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-o",
                                         str(work / f"{name}.perf"), "-p", f"{b.proc.pid},{s3_pid}"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
            r = consume(b.bootstrap, "history", n, work, name)
            if perf:
                perf.send_signal(2)
                perf.wait()
            m1, c1 = metrics(b), (cpu_seconds(b.proc.pid), cpu_seconds(s3_pid))
            (work / f"{name}-metrics.txt").write_text(
                "".join(f"{k} {v}\n" for k, v in sorted(m1.items()) if "remote" in k or "prefetch" in k))
            for k, metric in (("gets", "strata_remote_get_total"), ("cache_hits", "strata_remote_cache_hits_total"),
                              ("cache_misses", "strata_remote_cache_misses_total")):
                r[k] = metric_sum(m1, metric) - metric_sum(m0, metric)
            r["broker_cpu_s"] = round(c1[0] - c0[0], 2)
            r["s3_server_cpu_s"] = round(c1[1] - c0[1], 2)
            return r

        def seq_read(env_, parallel=1):
            args = [str(TOOLS / "strata-seq-read"), f"{url}/topics/history", str(CFG["chunk_bytes"])]
            if parallel > 1:
                args.append(str(parallel))
            r = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **env_}, timeout=3600)
            nbytes, secs, mbps = r.stdout.split()
            return {"bytes": int(nbytes), "seconds": float(secs), "MBps": float(mbps)}

        # --- 1. catch-up throughput ---------------------------------------------
        if want("throughput"):
            out["page_cache_dropped"] = drop_caches()
            locals_, remotes = [], []
            for rep in range(REPEAT):
                drop_caches()
                log(f"(a) local read of local-history from offset 0 [{rep + 1}/{REPEAT}] ...")
                c0 = cpu_seconds(b.proc.pid)
                r = consume(b.bootstrap, "local-history", n, work, f"consume-local-{rep}")
                r["broker_cpu_s"] = round(cpu_seconds(b.proc.pid) - c0, 2)
                locals_.append(r)
                b.stop()  # a cold chunk cache for every remote read
                b = start_broker(work, data, url, env, settings, f"broker-1-{rep}")
                brokers.append(b)
                drop_caches()
                log(f"remote read of history from offset 0 (prefetcher) [{rep + 1}/{REPEAT}] ...")
                remotes.append(timed_remote_read(b, f"consume-remote-{rep}", env))
            out["local_read"] = median_run(locals_)
            out["remote_read"] = median_run(remotes)
            b.stop()
            log("(b) sequential: the same read, one chunk at a time, no read-ahead ...")
            b = start_broker(work, data, url, env, SEQUENTIAL, "broker-sequential")
            brokers.append(b)
            drop_caches()
            out["sequential_read"] = timed_remote_read(b, "consume-sequential", env)
            b.stop()
            b = start_broker(work, data, url, env, settings, "broker-1b")
            brokers.append(b)
            drop_caches()
            log("(b') a bare sequential GET loop over the same objects, no broker, no consumer ...")
            out["bare_sequential_read"] = seq_read(env)
            drop_caches()
            log("(c) the server's own ceiling: 8 parallel GETs, no broker ...")
            out["server_ceiling"] = dict(seq_read(env, 8), parallel_gets=8)

        # --- with added latency --------------------------------------------------
        if want("latency"):
            b.stop()
            log(f"restart against the store through a {CFG['latency_ms']} ms proxy (cold cache) ...")
            b = start_broker(work, data, url, slow_env, settings, "broker-2")
            brokers.append(b)
            runs = []
            for rep in range(REPEAT):
                if rep:
                    b.stop()
                    b = start_broker(work, data, url, slow_env, settings, f"broker-2-{rep}")
                    brokers.append(b)
                drop_caches()
                runs.append(timed_remote_read(b, f"consume-remote-latency-{rep}", slow_env))
            out["remote_read_latency"] = median_run(runs)
            b.stop()
            b = start_broker(work, data, url, slow_env, SEQUENTIAL, "broker-2-sequential")
            brokers.append(b)
            drop_caches()
            out["sequential_read_latency"] = timed_remote_read(b, "consume-sequential-latency", slow_env)
            drop_caches()
            out["bare_sequential_read_latency"] = seq_read(slow_env)

        # --- 3. GET sharing: two readers, cold cache -----------------------------
        if want("sharing"):
            b.stop()
            log("two consumers of the same history at once, cold cache ...")
            b = start_broker(work, data, url, env, settings, "broker-3")
            brokers.append(b)
            res = {}

            def reader(i):
                res[i] = consume(b.bootstrap, "history", n, work, f"consume-twice-{i}",
                                 extra=["-X", f"client.id=twin-{i}"])
            ts = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            m = metrics(b)
            out["two_readers"] = {"readers": res, "gets": metric_sum(m, "strata_remote_get_total"),
                                  "chunks_in_bucket": chunks,
                                  "cache_hits": metric_sum(m, "strata_remote_cache_hits_total"),
                                  "cache_misses": metric_sum(m, "strata_remote_cache_misses_total")}

        # --- 2. isolation ---------------------------------------------------------
        if want("isolation"):
            if NICE_OTHERS:
                renice(s3_pid, 19)
            quiet, busy, local_busy, served, quota_busy, control_busy = [], [], [], [], [], []
            off_busy = []
            quota_settings = dict(settings, **{"remote.log.manager.fetch.max.bytes.per.second": ISOLATION_QUOTA})
            off_settings = dict(settings, **{"remote.fetch.adaptive.enable": "false"})
            # Quiet and catch-up runs alternate, each on a fresh broker (cold
            # cache): a p99 over 20 s moves by a third from run to run here.
            for i in range(ISOLATION_REPEAT):
                k = f"[{i + 1}/{ISOLATION_REPEAT}]"

                def fresh(run_settings: dict, name: str, what: str):
                    """Replaces the broker with a fresh one and announces the run."""
                    nonlocal b
                    b.stop()
                    b = start_broker(work, data, url, env, run_settings, name)
                    brokers.append(b)
                    # Earlier writeback is not part of the run. Note that
                    # this also flushes, between runs, what a run left dirty
                    # (the chunk cache's disk tier, if enabled, writes
                    # through the page cache): such deferred costs show up
                    # only in the control that follows on the same broker,
                    # or not at all (docs/remote-cache-disk.md).
                    subprocess.run(["sync"], check=False)
                    log(f"isolation: {what} {k} ...")

                fresh(settings, f"broker-q{i}", "tail producer + consumer alone")
                quiet.append(tail_run(b, work, f"tail-quiet-{i}", []))
                if os.environ.get("BENCH_ISOLATION_UNCAPPED", "1") == "1":
                    fresh(settings, f"broker-c{i}", "the same with two consumers catching up from offset 0")
                    busy.append(tail_run(b, work, f"tail-catchup-{i}", ["history", "history"]))
                    served.append(metric_sum(metrics(b), "strata_remote_fetch_bytes_total"))
                if os.environ.get("BENCH_ISOLATION_ADAPTIVE_OFF", "1") == "1":
                    fresh(off_settings, f"broker-o{i}", "the same with the adaptive history rate off (full speed)")
                    off_busy.append(tail_run(b, work, f"tail-full-{i}", ["history", "history"]))
                if ISOLATION_QUOTA:
                    fresh(quota_settings, f"broker-l{i}", f"the same with the catch-up capped at {ISOLATION_QUOTA} B/s")
                    quota_busy.append(tail_run(b, work, f"tail-quota-{i}", ["history", "history"]))
                if os.environ.get("BENCH_ISOLATION_CONTROL", "1") == "1":
                    # The control: the same object-store traffic read by two
                    # processes outside the broker (8 GETs in parallel each),
                    # at the catch-up's scheduling class. What this does to
                    # the tail is the machine's floor, not the broker's.
                    log(f"isolation: control, two readers of the bucket without the broker {k} ...")
                    reader = [str(TOOLS / "strata-seq-read"), f"{url}/topics/history", str(CFG["chunk_bytes"]), "8"]
                    control_busy.append(tail_run(b, work, f"tail-control-{i}", [], control=[reader, reader],
                                                 control_env=env))
                if os.environ.get("BENCH_LOCAL_CATCHUP", "0") == "1":
                    log(f"isolation: the same with two consumers reading local-history from offset 0 {k} ...")
                    local_busy.append(tail_run(b, work, f"tail-localcatchup-{i}", ["local-history", "local-history"]))
            if NICE_OTHERS:
                renice(s3_pid, 0)
            out["tail_quiet"] = median_isolation(quiet)
            out["tail_with_catchup"] = median_isolation(busy) if busy else {}
            out["tail_with_catchup"]["remote_bytes_served"] = served
            out["during_p99_ratio_per_pair"] = p99_ratios(quiet, busy)
            if local_busy:
                out["tail_with_local_catchup"] = median_isolation(local_busy)
            if control_busy:
                out["tail_with_control"] = median_isolation(control_busy)
                out["control_p99_ratio_per_pair"] = p99_ratios(quiet, control_busy)
            if off_busy:
                out["tail_with_full_speed_catchup"] = median_isolation(off_busy)
                out["full_speed_p99_ratio_per_pair"] = p99_ratios(quiet, off_busy)
            if quota_busy:
                out["tail_with_quota_catchup"] = median_isolation(quota_busy)
                out["tail_with_quota_catchup"]["quota_Bps"] = ISOLATION_QUOTA
    except Exception as e:  # noqa: BLE001
        out["failure"] = f"{type(e).__name__}: {e}"
        log(f"FAILED: {out['failure']}")
    finally:
        for b in brokers:
            b.close()
        for p in procs:
            p.kill()
            p.wait()
    path = results_dir / f"catchup-{stamp}.json"
    path.write_text(json.dumps(out, indent=2))
    report(out)
    print(f"[catchup] results: {path}")
    if out.get("s3_root"):
        shutil.rmtree(out["s3_root"], ignore_errors=True)  # memory, not disk: never kept
    if os.environ.get("BENCH_KEEP", "0") != "1":
        shutil.rmtree(work, ignore_errors=True)
    return 1 if "failure" in out else 0


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "n/a"


def report(o):
    g = lambda k, f="MBps": (o.get(k) or {}).get(f)  # noqa: E731
    rows = [
        ("local read (a)", g("local_read"), ""),
        ("remote read, prefetcher", g("remote_read"),
         f"{ratio(g('remote_read'), g('local_read'))} x local, {ratio(g('remote_read'), g('sequential_read'))} x sequential"),
        ("sequential: one chunk at a time, no read-ahead (b)", g("sequential_read"), ""),
        ("bare sequential GET loop, no broker or consumer (b')", g("bare_sequential_read"),
         f"prefetcher = {ratio(g('remote_read'), g('bare_sequential_read'))} x this"),
        ("server ceiling: 8 parallel GETs, no broker (c)", g("server_ceiling"),
         f"prefetcher = {ratio(g('remote_read'), g('server_ceiling'))} x this"),
        (f"remote read, +{CFG['latency_ms']} ms/request", g("remote_read_latency"),
         f"{ratio(g('remote_read_latency'), g('local_read'))} x local, "
         f"{ratio(g('remote_read_latency'), g('sequential_read_latency'))} x sequential"),
        (f"sequential (b), +{CFG['latency_ms']} ms", g("sequential_read_latency"), ""),
        (f"bare sequential GET loop (b'), +{CFG['latency_ms']} ms", g("bare_sequential_read_latency"),
         f"prefetcher = {ratio(g('remote_read_latency'), g('bare_sequential_read_latency'))} x this"),
    ]
    print("\n| read of the same history from offset 0 | MB/s | ratio |\n| --- | --- | --- |")
    for name, v, r in rows:
        print(f"| {name} | {v if v is not None else 'n/a'} | {r} |")
    q, c = o.get("tail_quiet") or {}, o.get("tail_with_catchup") or {}

    def isolation_table(title: str, column: str, busy: dict):
        """The quiet runs' medians next to `busy`'s, with their ratios."""
        print(f"\n| {title} (medians) | quiet | {column} | ratio |\n| --- | --- | --- | --- |")
        for label, kq, kb in (("tail p50 ms, while they read", "tail_p50_ms", "during_p50_ms"),
                              ("tail p99 ms, while they read", "tail_p99_ms", "during_p99_ms"),
                              ("tail p99 ms, whole 20 s run", "tail_p99_ms", "tail_p99_ms"),
                              ("producer MB/s", "producer_MBps", "producer_MBps")):
            print(f"| {label} | {q.get(kq)} | {busy.get(kb)} | {ratio(busy.get(kb), q.get(kq))} |")

    isolation_table("isolation, adaptive history rate (default)", "with 2 catch-up readers", c)
    if o.get("during_p99_ratio_per_pair"):
        print(f"tail p99 while reading / quiet p99, each pair: {o['during_p99_ratio_per_pair']}; "
              f"catch-up: {[r.get('catchup_MBps') for r in c.get('runs', [])]} MB/s for both readers together "
              f"over {[r.get('catchup_seconds') for r in c.get('runs', [])]} s "
              f"(finished: {[r.get('catchup_finished') for r in c.get('runs', [])]})")
    fc = o.get("tail_with_full_speed_catchup")
    if fc:
        isolation_table("isolation, adaptive history rate off (full speed)", "with 2 catch-up readers", fc)
        print(f"tail p99 while reading / quiet p99, each pair: {o.get('full_speed_p99_ratio_per_pair')}; "
              f"catch-up: {[r.get('catchup_MBps') for r in fc.get('runs', [])]} MB/s for both readers together "
              f"over {[r.get('catchup_seconds') for r in fc.get('runs', [])]} s")
    qc = o.get("tail_with_quota_catchup")
    if qc:
        isolation_table(f"isolation, catch-up capped at {qc['quota_Bps'] / MiB:.0f} MiB/s",
                        "with 2 catch-up readers", qc)
        print(f"catch-up: {[r.get('catchup_MBps') for r in qc.get('runs', [])]} MB/s for both readers together "
              f"over {[r.get('catchup_seconds') for r in qc.get('runs', [])]} s")
    cc = o.get("tail_with_control")
    if cc:
        isolation_table("control: the same bucket read by two processes without the broker", "with the control", cc)
        print(f"control p99 while reading / quiet p99, each pair: {o.get('control_p99_ratio_per_pair')}; "
              f"control readers' MB/s: {[r.get('control_MBps_each') for r in cc.get('runs', [])]}")
    lc = o.get("tail_with_local_catchup")
    if lc:
        print(f"catch-up from local disk instead: tail p99 {lc.get('tail_p99_ms')} ms "
              f"({ratio(lc.get('tail_p99_ms'), q.get('tail_p99_ms'))} x quiet)")
    t = o.get("two_readers") or {}
    print(f"\nGET sharing: two readers at once -> {t.get('gets')} GETs for {t.get('chunks_in_bucket')} chunks")


if __name__ == "__main__":
    sys.exit(main())
