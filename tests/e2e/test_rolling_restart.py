"""Controlled shutdown and a rolling restart (issue 18, docs/controlled-shutdown.md).

Three brokers on etcd, a topic at replication factor 3 and
min.insync.replicas=2. An idempotent acks=all producer runs throughout
while each broker in turn is stopped with SIGTERM and started again: the
stopping broker first has the controller move its leaderships away, so no
delivery fails (beyond librdkafka's own retries) and every acknowledged
record is read back exactly once, offsets gap-free per partition.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, ElectionType, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

import kutil
from test_cluster_membership import SETTINGS, etcd, internal_rf, wait_for  # noqa: F401
from test_replication import _fresh_admins, admin, partitions, store_partition  # noqa: F401

PARTITIONS = 3


def start(broker_factory, etcd, prefix, node):
    settings = dict(SETTINGS)
    settings.update(internal_rf(3))
    settings.update({"replica.lag.time.max.ms": 3000,
                     "controlled.shutdown.retry.backoff.ms": 5000})
    return broker_factory(settings=settings, label=f"{prefix}-b{node}",
                          extra_args=["--metadata", etcd.url(prefix), "--node-id", str(node)])


class Load:
    """An idempotent acks=all producer in a thread: what was acknowledged
    and what failed."""

    def __init__(self, bootstrap, topic, **producer_config):
        self.topic = topic
        self.acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 5, "message.timeout.ms": 120000, **producer_config})
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def delivered(self, err, m):
        if err:
            self.errors.append(str(err))
        else:
            self.acked[m.partition()].append(int(m.key()))

    def run(self):
        i = 0
        while not self.stop.is_set():
            try:
                self.p.produce(self.topic, key=b"%d" % i, value=b"v-%d" % i, partition=i % PARTITIONS,
                               on_delivery=self.delivered)
                i += 1
            except BufferError:
                pass
            self.p.poll(0.001 if i % 50 else 0.02)
        self.p.flush(120)

    def finish(self):
        self.stop.set()
        self.thread.join(180)


def read_back(b, topic, expected):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": kutil.unique("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}
    n, deadline = 0, time.monotonic() + 120
    while n < expected and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got[m.partition()].append((m.offset(), int(m.key())))
        n += 1
    c.close()
    return got


def check_history(got, acked):
    """The whole history of each partition read back (`read_back`) against
    what the producer had acknowledged (`Load.acked`): offsets unique and
    gap-free, no record twice, every acknowledged record there."""
    for p in range(PARTITIONS):
        offsets = [o for o, _ in got[p]]
        assert offsets == list(range(len(offsets))), f"partition {p}: offsets not gap-free"
        keys = [k for _, k in got[p]]
        assert len(keys) == len(set(keys)), f"partition {p}: a record was written twice"
        assert sorted(keys) == sorted(acked[p]), f"partition {p}: acknowledged records missing"


def test_a_rolling_restart_under_load_fails_no_request(broker_factory, etcd):
    prefix = kutil.unique("roll")
    bs = {n: start(broker_factory, etcd, prefix, n) for n in (1, 2, 3)}
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("rolling")
    admin(bs[1]).create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
                               )[topic].result(timeout=30)

    def all_in_sync():
        ps = partitions(bs[1], topic)
        return ps and len(ps) == PARTITIONS and all(len(isr) == 3 and leader >= 0
                                                    for leader, _, isr in ps.values())
    wait_for("every replica in sync", all_in_sync, timeout=30)
    load = Load(",".join(b.bootstrap for b in bs.values()), topic)
    wait_for("the load acknowledging on every partition", lambda: all(load.acked.values()), timeout=30)
    stops = {}
    for n, b in bs.items():
        led = [p for p in range(PARTITIONS) if store_partition(etcd, prefix, topic, p)["leader"] == n]
        began = time.monotonic()
        assert b.stop() == 0, b.log_tail()
        stops[n] = time.monotonic() - began
        log = b.log_text()
        if led:
            assert "controlled shutdown: leaderships moved away" in log and "still_led=0" in log, \
                b.log_tail()
        b.start()
        wait_for(f"broker {n} back in every ISR", all_in_sync, timeout=60)
        time.sleep(1)
    time.sleep(2)
    load.finish()
    assert not load.errors, load.errors[:5]
    acked = sum(len(v) for v in load.acked.values())
    print(f"rolling restart: {acked} records acknowledged, none failed; SIGTERM to exit per broker "
          f"{ {n: round(s, 1) for n, s in stops.items()} } s")
    assert acked > 1000, acked
    check_history(read_back(bs[1], topic, acked), load.acked)

    # The last broker restarted leads nothing now: a preferred leader
    # election (ElectLeaders, as kafka-leader-election.sh sends) hands each
    # partition back to its first replica.
    before = {p: store_partition(etcd, prefix, topic, p) for p in range(PARTITIONS)}
    moved = [p for p, st in before.items() if st["leader"] != st["replicas"][0]]
    assert moved, f"expected leaders away from their preferred replica after the restart: {before}"
    result = admin(bs[2]).elect_leaders(ElectionType.PREFERRED,
                                        [TopicPartition(topic, p) for p in range(PARTITIONS)]).result(timeout=60)
    for tp, err in result.items():
        if tp.partition in moved:
            assert err is None, (tp, err)
        else:
            assert err is not None and err.code() == KafkaError.ELECTION_NOT_NEEDED, (tp, err)
    after = {p: store_partition(etcd, prefix, topic, p) for p in range(PARTITIONS)}
    for p, st in after.items():
        assert st["leader"] == st["replicas"][0], (p, st)
        assert st["leader_epoch"] == before[p]["leader_epoch"] + (p in moved), (p, before[p], st)
    wait_for("metadata shows the preferred leaders",
             lambda: all(partitions(bs[3], topic)[p][0] == after[p]["leader"] for p in range(PARTITIONS)))
