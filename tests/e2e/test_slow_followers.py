"""The slow-follower rule (docs/slow-followers.md): three brokers on etcd,
a partition at RF 3, an idempotent acks=all producer, and one follower
made slow but never lagging: it is stopped (SIGSTOP) for 250 ms of every
500 ms, as a noisy neighbour or a stalling disk would, so it always
catches up within `replica.lag.time.max.ms` and the lag rule never takes
it out.

The leader takes it out of the ISR for its fetch-to-ack latency, keeps
it replicating, and takes it back once it has been healthy for a window;
at `min.insync.replicas` = RF it stays (durability wins). Every
acknowledged record reads back once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

import kutil
from test_cluster_membership import SETTINGS, etcd, metric_values, wait_for  # noqa: F401
from test_replication import _fresh_admins, admin, partitions, store_partition  # noqa: F401

WINDOW_MS = 3000


def start(broker_factory, etcd, prefix, node):
    settings = dict(SETTINGS)
    settings.update({"replica.lag.time.max.ms": 15000,
                     "replica.slow.eviction.window.ms": WINDOW_MS,
                     "replica.slow.eviction.min.ms": 50,
                     "offsets.topic.replication.factor": 3,
                     "transaction.state.log.replication.factor": 3})
    return broker_factory(settings=settings, label=f"{prefix}-b{node}",
                          extra_args=["--metadata", etcd.url(prefix), "--node-id", str(node)])


def labelled(b, name):
    """Samples of `name` on broker b: {labels: value} (once it is ready:
    /metrics answers 503 before)."""
    b.wait_ready()
    with urllib.request.urlopen(f"http://127.0.0.1:{b.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1:].rsplit("} ", 1)
            out[labels] = float(value)
    return out


class Load:
    """An idempotent acks=all producer sending one record every 10 ms,
    recording each delivery's latency."""

    def __init__(self, b, topic):
        self.topic = topic
        self.p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True,
                           "acks": "all", "linger.ms": 0, "message.timeout.ms": 120000})
        self.acked = []
        self.failed = []
        self.latencies = []  # (sent at, seconds)
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        i = 0
        while not self.stop.is_set():
            sent = time.monotonic()

            def done(err, m, i=i, sent=sent):
                if err:
                    self.failed.append(err)
                else:
                    self.acked.append(i)
                    self.latencies.append((sent, time.monotonic() - sent))
            self.p.produce(self.topic, key=b"k-%d" % i, value=b"v-%d" % i, partition=0,
                           on_delivery=done)
            self.p.poll(0)
            i += 1
            time.sleep(0.01)
        assert self.p.flush(120) == 0

    def finish(self):
        self.stop.set()
        self.t.join()
        assert not self.failed, self.failed[:5]
        return self.acked

    def p99_between(self, t0, t1):
        xs = sorted(s for at, s in self.latencies if t0 <= at < t1)
        return xs[min(len(xs) - 1, int(len(xs) * 0.99))] if xs else None


class Throttle:
    """Stops a process for `stopped` seconds of every `period`."""

    def __init__(self, pid, stopped=0.25, period=0.5):
        self.pid, self.stopped, self.period = pid, stopped, period
        self.halt = threading.Event()
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.halt.is_set():
            os.kill(self.pid, signal.SIGSTOP)
            time.sleep(self.stopped)
            os.kill(self.pid, signal.SIGCONT)
            time.sleep(self.period - self.stopped)

    def end(self):
        self.halt.set()
        self.t.join()
        os.kill(self.pid, signal.SIGCONT)


def cluster(broker_factory, etcd, min_isr):
    prefix = kutil.unique("slow")
    bs = {n: start(broker_factory, etcd, prefix, n) for n in (1, 2, 3)}
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("slowf")
    admin(bs[1]).create_topics([NewTopic(topic, 1, 3, config={
        "min.insync.replicas": str(min_isr)})])[topic].result(timeout=30)
    wait_for("three replicas in sync", lambda: (lambda p: p and len(p[0][2]) == 3)(partitions(bs[1], topic)))
    leader = store_partition(etcd, prefix, topic)["leader"]
    controller = next(n for n, b in bs.items() if metric_values(b)["strata_cluster_active_controller"] == 1)
    # Slow down a follower that is not the controller (its pauses would
    # only add noise to membership).
    slow = next((n for n in bs if n not in (leader, controller)), None) or next(n for n in bs if n != leader)
    return prefix, bs, topic, leader, slow


def read_back(b, topic, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": kutil.unique("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.offset(), m.key()))
    c.close()
    return got


def test_a_slow_follower_leaves_the_isr_keeps_replicating_and_rejoins(broker_factory, etcd):
    prefix, bs, topic, leader, slow = cluster(broker_factory, etcd, min_isr=2)
    load = Load(bs[leader], topic)
    wait_for("the load acknowledging", lambda: load.acked, timeout=30)
    throttled_at = time.monotonic()
    throttle = Throttle(bs[slow].pid)
    try:
        wait_for("the slow follower out of the ISR",
                 lambda: slow not in store_partition(etcd, prefix, topic)["isr"], timeout=30)
        evicted_at = time.monotonic()
        state = store_partition(etcd, prefix, topic)
        assert sorted(state["isr"]) == sorted(n for n in bs if n != slow), state
        evictions = labelled(bs[leader], "strata_partition_isr_slow_evictions_total")
        assert sum(evictions.values()) >= 1, evictions
        p99s = labelled(bs[leader], "strata_partition_follower_ack_latency_p99_seconds")
        print(f"ack p99 per follower at eviction: {p99s}")
        # Still slow: it stays out, and keeps copying the log.
        time.sleep(WINDOW_MS / 1000 * 2)
        assert slow not in store_partition(etcd, prefix, topic)["isr"]
        wait_for(f"follower {slow} within 200 records of the leader", lambda: next(
            v for k, v in labelled(bs[leader], "strata_partition_follower_lag_records").items()
            if f'replica="{slow}"' in k) < 200, timeout=30)
    finally:
        throttle.end()
    healthy_at = time.monotonic()
    wait_for("the follower back in the ISR once healthy",
             lambda: slow in store_partition(etcd, prefix, topic)["isr"], timeout=WINDOW_MS / 1000 * 6)
    rejoined_s = time.monotonic() - healthy_at
    acked = load.finish()
    before = load.p99_between(throttled_at, evicted_at)
    after = load.p99_between(evicted_at + 0.5, healthy_at)
    print(f"acks=all p99: {before and before * 1000:.0f} ms while the slow follower was in the ISR "
          f"({evicted_at - throttled_at:.1f}s), {after and after * 1000:.0f} ms after it left; "
          f"rejoined {rejoined_s:.1f}s after it became healthy; {len(acked)} records acknowledged")
    got = read_back(bs[leader], topic, len(acked))
    assert sorted(int(k.split(b"-")[1]) for _, k in got) == sorted(acked)
    assert [o for o, _ in got] == list(range(len(got)))


def test_at_min_insync_replicas_the_slow_follower_stays(broker_factory, etcd):
    prefix, bs, topic, leader, slow = cluster(broker_factory, etcd, min_isr=3)
    load = Load(bs[leader], topic)
    throttle = Throttle(bs[slow].pid)
    try:
        deadline = time.monotonic() + WINDOW_MS / 1000 * 3
        while time.monotonic() < deadline:
            assert len(store_partition(etcd, prefix, topic)["isr"]) == 3
            time.sleep(0.2)
    finally:
        throttle.end()
    acked = load.finish()
    assert sum(labelled(bs[leader], "strata_partition_isr_slow_evictions_total").values()) == 0
    got = read_back(bs[leader], topic, len(acked))
    assert sorted(int(k.split(b"-")[1]) for _, k in got) == sorted(acked)
