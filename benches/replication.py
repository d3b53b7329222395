#!/usr/bin/env python3
"""Replication benchmark (issue 18): what replication factor 3 costs
against 1 on the same three brokers, how long a failover takes, and how
many bytes the followers copy per byte produced.

Started by benches/replication.sh (builds the broker and the test venv).

One etcd member (Debian's etcd-server) and three brokers (release binary)
on loopback, data on tmpfs unless --data-on-disk (this VM's disk stalls
fdatasync at random: benches/store_faults.py). Phases alternate on the
same cluster, so the ratios compare figures measured seconds apart:

- rf1 / rf3 throughput: --records records of --value-bytes bytes (no key,
  uncompressed) to a fresh topic of --partitions partitions at that
  replication factor (rf3 with min.insync.replicas=2), confluent-kafka,
  acks=all, idempotent, linger.ms=5; produce all, then flush().
- rf1 / rf3 latency: --rate records/s for --latency-seconds, each
  record's time from produce() to its delivery report (p50, p99), with
  linger.ms=0 so the figure is the brokers' round trip; each starts once
  the brokers are idle (the throughput phase before leaves segments to
  tier and logs to delete).
Each phase starts after one acknowledged record per partition (warm-up:
the producer id, connections, leaders and followers in place).
Order: (rf1, rf3) x --rounds. The summary's ratio is the median rf3
records/s over the median rf1 records/s, and the same for latencies.

After the last rf3 throughput phase: the bytes of the topic's segment
files on the followers over those on the leaders (2.0 means each
follower holds exactly one copy: nothing fetched twice survives).

Failover (--failovers times): a topic of one partition at RF=3 and
min.insync.replicas=2; the leader is killed with SIGKILL and the clock
runs until an acks=all record sent after the kill is acknowledged (the
client retries until then). The killed broker is started again and
rejoins the ISR before the next round. With Kafka's default
broker.session.timeout.ms (9 s, --session-ms) this is dominated by the
session timeout: the controller elects a new leader once the dead
broker's lease expires.

Bytes between brokers: over the last rf3 throughput phase, the record
bytes the followers fetched (strata_replica_fetched_bytes_total, summed
over the brokers: the record bytes of every fetch response that moved a
follower's log forward; protocol framing and responses that brought
only what the follower had are not counted) per byte of the leaders'
segments (2.0: each of two followers fetched every byte once).

Replaced broker (--replaced-mb, 0 to skip): a second cluster of three
brokers sharing one bucket (strata-s3 from local-stack/, on tmpfs); a
tiered topic of one partition at RF=3 with a hot window of
--hot-window-mb gets --replaced-mb of records and tiers them; then a
follower is killed, its data directory deleted, and it is started empty
with the same node id. Measured: the time until it is back in the ISR
and the bytes it fetched from the leader, against a full copy (at least
the bytes of every record produced).

Writes bench-results/replication-<time>.json and prints a table.
"""

import argparse
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

REPO = Path(__file__).resolve().parent.parent
E2E = REPO / "tests" / "e2e"
sys.path.insert(0, str(E2E))

import kutil  # noqa: E402
from confluent_kafka.admin import NewTopic  # noqa: E402
from etcdutil import EtcdCluster  # noqa: E402
from strata_broker import Broker, free_port, port_accepts  # noqa: E402


def quantile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


class Cluster:
    def __init__(self, args, base: Path, store_url: str | None = None, env: dict | None = None,
                 extra_settings: dict | None = None):
        self.args = args
        self.etcd = EtcdCluster(base / "etcd", members=1)
        prefix = kutil.unique("bench")
        settings = {"broker.session.timeout.ms": args.session_ms,
                    "broker.heartbeat.interval.ms": max(100, args.session_ms // 4),
                    **(extra_settings or {})}
        self.brokers = {}
        for node in (1, 2, 3):
            extra = ["--metadata", self.etcd.url(prefix), "--node-id", str(node)]
            if store_url:
                extra += ["--object-store", store_url]
            b = Broker(data_dir=base / f"b{node}" / "data", settings=settings, name=f"b{node}",
                       extra_args=extra, env=env)
            b.start()
            self.brokers[node] = b
        self.admin = kutil.admin(self.brokers[1].bootstrap)
        kutil.wait_until(lambda: len(self.admin.list_topics(timeout=10).brokers) == 3, 30, 0.2,
                         "three brokers")

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.alive())

    def create(self, name: str, partitions: int, rf: int) -> str:
        config = {"min.insync.replicas": "2"} if rf == 3 else {}
        f = self.admin.create_topics([NewTopic(name, partitions, rf, config=config)])
        f[name].result(timeout=30)

        def ready():
            t = self.admin.list_topics(topic=name, timeout=10).topics[name]
            return not t.error and len(t.partitions) == partitions and all(
                len(p.isrs) == rf and p.leader >= 0 for p in t.partitions.values())
        kutil.wait_until(ready, 30, 0.1, f"{name} ready")
        return name

    def delete(self, name: str):
        self.admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)

    def leaders(self, topic: str) -> dict[int, int]:
        t = self.admin.list_topics(topic=topic, timeout=10).topics[topic]
        return {p: pm.leader for p, pm in t.partitions.items()}

    def close(self):
        for b in self.brokers.values():
            b.close()
        self.etcd.close()


def metric(b: Broker, name: str) -> float:
    """An unlabelled sample of the broker's /metrics (0 if absent)."""
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{b.http_port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def fetched_by_followers(c: Cluster) -> float:
    return sum(metric(b, "strata_replica_fetched_bytes_total") for b in c.brokers.values() if b.alive())


def values(n_bytes: int) -> list[bytes]:
    rnd = os.urandom(n_bytes * 256)
    return [rnd[i * n_bytes:(i + 1) * n_bytes] for i in range(256)]


def producer(c: Cluster, **conf):
    return kutil.producer(c.bootstrap(), **{"enable.idempotence": True, "acks": "all",
                                             "linger.ms": 5, "compression.type": "none", **conf})


def warm_up(p, topic: str, partitions: int):
    """One acknowledged record per partition before the clock: the
    producer id, connections and leaders are in place, and the followers
    fetch."""
    for part in range(partitions):
        p.produce(topic, value=b"warm-up", partition=part)
    assert p.flush(60) == 0


def throughput(c: Cluster, args, rf: int, vals, keep: bool = False) -> dict:
    topic = c.create(kutil.unique(f"rf{rf}"), args.partitions, rf)
    p = producer(c)
    warm_up(p, topic, args.partitions)
    t0 = time.perf_counter()
    for i in range(args.records):
        while True:
            try:
                p.produce(topic, value=vals[i & 255])
                break
            except BufferError:
                p.poll(0.005)
        if i & 1023 == 0:
            p.poll(0)
    assert p.flush(300) == 0, "records left unacknowledged"
    wall = time.perf_counter() - t0
    res = {"phase": f"rf{rf}-throughput", "records": args.records, "wall_s": wall,
           "records_per_s": args.records / wall,
           "MBps": args.records * args.value_bytes / 1e6 / wall}
    if keep:
        res["topic"] = topic
    else:
        c.delete(topic)
    return res


def wait_quiet(c: Cluster, timeout: float = 60.0) -> float:
    """Waits until the brokers are idle (together under 5 % of a core over
    half a second): a throughput phase leaves work behind (sealed segments
    to tier, deleted topics' logs) that would otherwise land in the next
    latency phase. Returns the seconds waited."""
    t0 = time.perf_counter()

    def cpu():
        return sum(b.cpu_seconds() or 0.0 for b in c.brokers.values() if b.alive())
    last = cpu()
    while time.perf_counter() - t0 < timeout:
        time.sleep(0.5)
        now = cpu()
        if now - last < 0.025:
            break
        last = now
    return time.perf_counter() - t0


def latency(c: Cluster, args, rf: int, vals) -> dict:
    topic = c.create(kutil.unique(f"lat{rf}"), args.partitions, rf)
    settled = wait_quiet(c)
    # No linger: each record is sent at once, so the figure is the
    # brokers' round trip, not the client's batching delay.
    p = producer(c, **{"linger.ms": 0})
    warm_up(p, topic, args.partitions)
    lat: list[float] = []
    errors: list = []
    n = int(args.rate * args.latency_seconds)
    start = time.perf_counter()
    for i in range(n):
        due = start + i / args.rate
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        sent = time.perf_counter()

        def done(err, _m, sent=sent):
            if err:
                errors.append(err)
            else:
                lat.append((time.perf_counter() - sent) * 1000)
        p.produce(topic, value=vals[i & 255], on_delivery=done)
        p.poll(0)
    assert p.flush(60) == 0 and not errors, errors[:3]
    c.delete(topic)
    return {"phase": f"rf{rf}-latency", "records": n, "rate": args.rate,
            "p50_ms": quantile(lat, 0.5), "p99_ms": quantile(lat, 0.99), "max_ms": max(lat),
            "settled_s": round(settled, 1)}


def copies(c: Cluster, topic: str) -> dict:
    """Segment bytes on leaders and on followers of `topic`."""
    leaders = c.leaders(topic)
    lead = follow = 0
    for node, b in c.brokers.items():
        for d in Path(b.data_dir).glob(f"{topic}-*"):
            p = int(d.name.rsplit("-", 1)[1])
            size = sum(f.stat().st_size for f in d.glob("*.log"))
            if leaders.get(p) == node:
                lead += size
            else:
                follow += size
    return {"leader_bytes": lead, "follower_bytes": follow,
            "follower_bytes_per_produced_byte": follow / lead if lead else None}


def replaced_broker(args, base: Path) -> dict:
    """A follower replaced by an empty broker rejoins from the bucket's end
    plus the hot tail: its time and fetched bytes against a full copy."""
    root = Path(tempfile.mkdtemp(prefix="strata-repl-s3-", dir="/dev/shm"))
    (root / "strata").mkdir(parents=True)
    port = free_port()
    s3 = subprocess.Popen([str(REPO / "target/release/strata-s3"), "--listen", f"127.0.0.1:{port}",
                           "--root", str(root), "--bucket", "strata"],
                          stdout=subprocess.DEVNULL, stderr=open(base / "s3.log", "w"))
    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret-key",
           "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    seg = 4 << 20
    hot = args.hot_window_mb << 20
    c = None
    try:
        kutil.wait_until(lambda: port_accepts("127.0.0.1", port), 30, 0.1, "strata-s3 listening")
        c = Cluster(args, base / "replaced", store_url=f"s3://strata/replaced-{int(time.time())}", env=env,
                    extra_settings={"remote.log.manager.task.interval.ms": 500,
                                    "log.retention.check.interval.ms": 500,
                                    "replica.lag.time.max.ms": 10000})
        topic = kutil.unique("replaced")
        c.admin.create_topics([NewTopic(topic, 1, 3, config={
            "min.insync.replicas": "2", "remote.storage.enable": "true",
            "segment.bytes": str(seg), "local.retention.bytes": str(hot)})])[topic].result(timeout=30)
        kutil.wait_until(lambda: len(c.admin.list_topics(topic=topic, timeout=10).topics[topic]
                                     .partitions[0].isrs) == 3, 30, 0.2, "in sync")
        vals = values(args.value_bytes)
        p = producer(c)
        n = (args.replaced_mb << 20) // args.value_bytes
        t0 = time.perf_counter()
        for i in range(n):
            while True:
                try:
                    p.produce(topic, value=vals[i % 256], partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        assert p.flush(300) == 0
        produce_s = time.perf_counter() - t0

        def local_bytes(b):
            return sum(f.stat().st_size for f in (Path(b.data_dir) / f"{topic}-0").glob("*.log"))

        def tiered():
            sizes = {n: local_bytes(b) for n, b in c.brokers.items()}
            return sizes if all(v <= hot + 2 * seg for v in sizes.values()) else None
        kutil.wait_until(tiered, 600, 0.5, "every replica down to its hot window")
        leader = c.leaders(topic)[0]
        total = (args.replaced_mb << 20)
        victim_id = next(n for n in c.brokers if n != leader)
        victim = c.brokers[victim_id]
        victim.kill9()
        shutil.rmtree(victim.data_dir)
        Path(victim.data_dir).mkdir(parents=True)

        def in_isr():
            t = c.admin.list_topics(topic=topic, timeout=10).topics[topic]
            return victim_id in t.partitions[0].isrs
        # Out of the ISR first (its session expires), or "back" is at once.
        kutil.wait_until(lambda: not in_isr(), 120, 0.2, "the killed broker out of the ISR")
        t1 = time.perf_counter()
        victim.start()
        kutil.wait_until(in_isr, 300, 0.1, "the replaced broker back in the ISR")
        rejoin_s = time.perf_counter() - t1
        fetched = metric(victim, "strata_replica_fetched_bytes_total")
        # A full copy moves every record: at least the records' bytes.
        full = total
        return {"phase": "replaced-broker", "produced_bytes": total, "produce_s": round(produce_s, 1),
                "hot_window_bytes": hot, "rejoin_s": round(rejoin_s, 2), "fetched_bytes": int(fetched),
                "full_copy_bytes": int(full), "fetched_over_full_copy": round(fetched / full, 4),
                "leader_local_bytes": local_bytes(c.brokers[leader]),
                "tiered_starts": metric(victim, "strata_replica_tiered_starts_total")}
    finally:
        if c:
            c.close()
        s3.kill()
        shutil.rmtree(root, ignore_errors=True)


def failovers(c: Cluster, args) -> list[float]:
    topic = c.create(kutil.unique("failover"), 1, 3)
    out = []
    for _ in range(args.failovers):
        leader = c.leaders(topic)[0]
        victim = c.brokers[leader]
        p = producer(c, **{"message.timeout.ms": 120000, "linger.ms": 0})
        p.produce(topic, value=b"before")
        assert p.flush(30) == 0
        acked = threading.Event()
        victim.kill9()
        t0 = time.perf_counter()
        p.produce(topic, value=b"after", on_delivery=lambda err, _m: err or acked.set())
        while not acked.is_set() and time.perf_counter() - t0 < 120:
            p.poll(0.01)
        assert acked.is_set(), "no acknowledgement within 120 s of the kill"
        out.append(time.perf_counter() - t0)
        p.flush(10)
        victim.start()

        def full_isr():
            t = c.admin.list_topics(topic=topic, timeout=10).topics[topic]
            return len(t.partitions[0].isrs) == 3
        kutil.wait_until(full_isr, 60, 0.2, "the killed broker back in the ISR")
    c.delete(topic)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-bytes", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--latency-seconds", type=float, default=5.0)
    ap.add_argument("--failovers", type=int, default=3)
    ap.add_argument("--session-ms", type=int, default=9000)
    ap.add_argument("--data-on-disk", action="store_true")
    ap.add_argument("--replaced-mb", type=int, default=256)
    ap.add_argument("--hot-window-mb", type=int, default=16)
    ap.add_argument("--latency-only", action="store_true",
                    help="only the rf1/rf3 latency phases (no throughput, failover or replaced broker)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="strata-repl-bench-",
                                 dir=None if args.data_on_disk else "/dev/shm"))
    vals = values(args.value_bytes)
    c = Cluster(args, base)
    phases = []
    try:
        for r in range(args.rounds):
            for rf in (1, 3):
                if args.latency_only:
                    res = latency(c, args, rf, vals)
                    phases.append(res)
                    print(json.dumps(res), flush=True)
                    continue
                last = r == args.rounds - 1 and rf == 3
                fetched_before = fetched_by_followers(c)
                res = throughput(c, args, rf, vals, keep=last)
                if last:
                    # Every follower caught up before the counts are read.
                    kutil.wait_until(lambda: (lambda x: x["follower_bytes"] >= 2 * x["leader_bytes"])(
                        copies(c, res["topic"])), 60, 0.2, "followers caught up")
                    res.update(copies(c, res["topic"]))
                    res["fetched_bytes"] = fetched_by_followers(c) - fetched_before
                    res["fetched_bytes_per_leader_byte"] = (
                        res["fetched_bytes"] / res["leader_bytes"] if res["leader_bytes"] else None)
                    c.delete(res.pop("topic"))
                phases.append(res)
                print(json.dumps(res), flush=True)
                res = latency(c, args, rf, vals)
                phases.append(res)
                print(json.dumps(res), flush=True)
        fo = [] if args.latency_only else failovers(c, args)
    finally:
        c.close()
    replaced = replaced_broker(args, base) if args.replaced_mb > 0 and not args.latency_only else None
    if replaced:
        print(json.dumps(replaced), flush=True)

    def med(kind, key):
        xs = [p[key] for p in phases if p["phase"] == kind]
        return statistics.median(xs) if xs else None
    summary = {
        "rf1_records_per_s": med("rf1-throughput", "records_per_s"),
        "rf3_records_per_s": med("rf3-throughput", "records_per_s"),
        "rf1_p50_ms": med("rf1-latency", "p50_ms"), "rf3_p50_ms": med("rf3-latency", "p50_ms"),
        "rf1_p99_ms": med("rf1-latency", "p99_ms"), "rf3_p99_ms": med("rf3-latency", "p99_ms"),
        "failover_s": fo, "session_timeout_ms": args.session_ms,
        "follower_bytes_per_produced_byte": next(
            (p["follower_bytes_per_produced_byte"] for p in phases if "follower_bytes" in p), None),
        "fetched_bytes_per_leader_byte": next(
            (p["fetched_bytes_per_leader_byte"] for p in phases if "fetched_bytes" in p), None),
        "replaced_broker": replaced,
    }
    summary["rf3_over_rf1_throughput"] = (summary["rf3_records_per_s"] / summary["rf1_records_per_s"]
                                          if summary["rf1_records_per_s"] else None)
    summary["rf3_over_rf1_p99"] = summary["rf3_p99_ms"] / summary["rf1_p99_ms"]
    out = REPO / "bench-results"
    out.mkdir(exist_ok=True)
    path = out / f"replication-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"args": vars(args), "phases": phases, "summary": summary}, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"written to {path}")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
