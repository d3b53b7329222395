"""The quorum acknowledgement (docs/quorum-acks.md): three brokers on etcd,
two topics led by broker 1 at RF 3 and min.insync.replicas=2, one with
Kafka's rule and one created with quorum.ack.enable=true, an acks=all
producer on each. Broker 3, a follower of both, is stopped (SIGSTOP) for
six seconds — less than its session and replica.lag.time.max.ms, so it
stays in both ISRs, and the slow-follower rule is off:

- the ISR topic acknowledges nothing while it is stopped (every ISR
  member must hold a batch);
- the quorum topic keeps acknowledging (two of three hold each batch);
- once it resumes, both topics hold every acknowledged record exactly
  once, and broker 3's copies equal the leader's.

Then a controlled shutdown of the leader moves the quorum topic's
leadership through the fence-and-report election without a failed
request.

And a leader killed, its disk wiped and restarted at once (so the store
still names it leader) hands its partitions over rather than lead with an
empty log: to an in-sync peer on an ISR topic, through a fence on a
quorum topic (where its report abstains); no acknowledged record is lost.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

import kutil
from test_cluster_membership import SETTINGS, etcd, internal_rf, wait_for  # noqa: F401
from test_replication import _fresh_admins, admin, log_bytes, partitions, store_partition  # noqa: F401
from test_slow_followers import read_back

STOP_S = 6.0


def start(broker_factory, etcd, prefix, node, session_ms=20000):
    settings = dict(SETTINGS)
    settings.update(internal_rf(3))
    settings.update({"broker.session.timeout.ms": session_ms,
                     "replica.lag.time.max.ms": 30000,
                     "replica.slow.eviction.enable": "false",
                     "auto.leader.rebalance.enable": "false",
                     "controlled.shutdown.retry.backoff.ms": 2000})
    return broker_factory(settings=settings, label=f"{prefix}-b{node}",
                          extra_args=["--metadata", etcd.url(prefix), "--node-id", str(node)])


class Acks:
    """An idempotent acks=all producer on one partition, every 5 ms,
    recording when each record was acknowledged."""

    def __init__(self, bootstrap, topic, first_key=0):
        self.topic = topic
        self.first_key = first_key
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                           "acks": "all", "linger.ms": 0, "message.timeout.ms": 120000})
        self.acked: list[tuple[float, int]] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        i = self.first_key
        while not self.stop.is_set():
            def done(err, m, i=i):
                if err:
                    self.errors.append(str(err))
                else:
                    self.acked.append((time.monotonic(), i))
            self.p.produce(self.topic, key=b"%d" % i, value=b"v-%d" % i, partition=0, on_delivery=done)
            self.p.poll(0.005)
            i += 1
        self.p.flush(120)

    def between(self, t0, t1):
        return sum(1 for at, _ in list(self.acked) if t0 <= at < t1)

    def finish(self):
        self.stop.set()
        self.t.join(180)
        assert not self.errors, self.errors[:5]
        return sorted(i for _, i in self.acked)


def read_keys(b, topic, n):
    """(offset, key as an int) of partition 0's first n records."""
    return [(o, int(k)) for o, k in read_back(b, topic, n)]


def check(b, topic, acked):
    got = read_keys(b, topic, len(acked))
    assert [o for o, _ in got] == list(range(len(got))), f"{topic}: offsets not gap-free"
    keys = [k for _, k in got]
    assert len(keys) == len(set(keys)), f"{topic}: a record written twice"
    assert sorted(keys) == acked, f"{topic}: acknowledged records missing"


def test_a_stopped_follower_stalls_isr_acks_but_not_quorum_acks(broker_factory, etcd):
    prefix = kutil.unique("quorum")
    bs = {n: start(broker_factory, etcd, prefix, n) for n in (1, 2, 3)}
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    isr_topic, quorum_topic = kutil.unique("isrmode"), kutil.unique("quorummode")
    admin(bs[1]).create_topics([
        NewTopic(isr_topic, num_partitions=1, replica_assignment=[[1, 2, 3]], config={"min.insync.replicas": "2"}),
        NewTopic(quorum_topic, num_partitions=1, replica_assignment=[[1, 2, 3]],
                 config={"min.insync.replicas": "2", "quorum.ack.enable": "true"}),
    ])[quorum_topic].result(timeout=30)
    for t in (isr_topic, quorum_topic):
        wait_for(f"{t} in sync", lambda t=t: (lambda p: p and len(p[0][2]) == 3)(partitions(bs[1], t)))
    bootstrap = ",".join(b.bootstrap for b in bs.values())
    loads = {t: Acks(bootstrap, t) for t in (isr_topic, quorum_topic)}
    wait_for("both producers acknowledged", lambda: all(l.acked for l in loads.values()), timeout=30)

    os.kill(bs[3].pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        time.sleep(STOP_S)
    finally:
        os.kill(bs[3].pid, signal.SIGCONT)
    # The middle of the stop: requests sent before it have long completed.
    window = (stopped + 1.5, stopped + STOP_S - 0.5)
    during = {t: l.between(*window) for t, l in loads.items()}
    for t in (isr_topic, quorum_topic):
        assert 3 in store_partition(etcd, prefix, t)["isr"], "broker 3 left the ISR: the comparison is void"
    time.sleep(3)
    acked = {t: l.finish() for t, l in loads.items()}
    print(f"records acknowledged while a follower was stopped ({window[1] - window[0]:.1f}s): "
          f"ISR topic {during[isr_topic]}, quorum topic {during[quorum_topic]}")
    assert during[isr_topic] == 0, "the ISR topic acknowledged without its stopped follower"
    assert during[quorum_topic] > 50, "the quorum topic waited for its stopped follower"
    for t in (isr_topic, quorum_topic):
        check(bs[2], t, acked[t])
        wait_for(f"{t}: broker 3's copy equal to the leader's",
                 lambda t=t: log_bytes(bs[3], t, 0) == log_bytes(bs[1], t, 0), timeout=30)

    # A controlled shutdown of the leader: the quorum topic's leadership
    # moves through the fence and the replicas' reports, no request fails.
    load = Acks(bootstrap, quorum_topic, first_key=1_000_000)
    wait_for("the producer acknowledged", lambda: load.acked, timeout=30)
    epoch = store_partition(etcd, prefix, quorum_topic)["leader_epoch"]
    assert bs[1].stop() == 0, bs[1].log_tail()
    assert "still_led=0" in bs[1].log_text(), bs[1].log_tail()
    state = store_partition(etcd, prefix, quorum_topic)
    assert state["leader"] in (2, 3) and state["leader_epoch"] == epoch + 1, state
    assert "fencing" not in state, state
    time.sleep(2)
    bs[1].start()
    time.sleep(2)
    more = load.finish()
    got = read_keys(bs[2], quorum_topic, len(acked[quorum_topic]) + len(more))
    keys = [k for _, k in got]
    assert [o for o, _ in got] == list(range(len(got))), "offsets not gap-free"
    assert len(keys) == len(set(keys)), "a record written twice"
    assert sorted(keys) == sorted(acked[quorum_topic] + more), \
        "records acknowledged across the leader change missing"


@pytest.mark.parametrize("mode", ["isr", "quorum"])
def test_a_leader_restarted_on_an_empty_disk_hands_its_partition_over(broker_factory, etcd, mode):
    # Broker 1's session is short (it registers again once the session of
    # its killed process expires); its peers' are long (they are paused
    # meanwhile and must stay registered).
    session_s, peers_session_s = 12, 40
    prefix = kutil.unique("wiped")
    bs = {n: start(broker_factory, etcd, prefix, n,
                   session_ms=(session_s if n == 1 else peers_session_s) * 1000) for n in (1, 2, 3)}
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique(mode)
    config = {"min.insync.replicas": "2"}
    if mode == "quorum":
        config["quorum.ack.enable"] = "true"
    admin(bs[1]).create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2, 3]],
                                         config=config)])[topic].result(timeout=30)
    wait_for("in sync", lambda: (lambda p: p and len(p[0][2]) == 3)(partitions(bs[1], topic)))
    bootstrap = ",".join(b.bootstrap for b in bs.values())
    load = Acks(bootstrap, topic)
    wait_for("the producer acknowledged", lambda: load.acked, timeout=30)
    before = store_partition(etcd, prefix, topic)
    assert before["leader"] == 1, before

    # Broker 1 dies and comes back with nothing on disk. It registers again
    # once its old session expires; brokers 2 and 3 are paused meanwhile
    # (their sessions outlast it), so no controller elects first and the
    # store still names broker 1 leader when it is back.
    killed = time.monotonic()
    bs[1].kill9()
    shutil.rmtree(bs[1].data_dir)
    bs[1].data_dir.mkdir(parents=True)
    log_from = bs[1].log_size()
    bs[1].start()
    time.sleep(session_s / 3)
    for n in (2, 3):
        os.kill(bs[n].pid, signal.SIGSTOP)
    try:
        state = wait_for("the leadership handed over by the restarted broker",
                         lambda: (lambda s: s if s["leader"] != 1 else None)(store_partition(etcd, prefix, topic)),
                         timeout=killed + session_s * 2 - time.monotonic())
    finally:
        for n in (2, 3):
            os.kill(bs[n].pid, signal.SIGCONT)
    assert state["leader_epoch"] == before["leader_epoch"] + 1, state
    assert "handed the leadership over" in bs[1].log_text(start=log_from), bs[1].log_tail()
    if mode == "isr":
        assert state["leader"] in (2, 3) and 1 not in state["isr"], state
    else:
        assert state["leader"] == -1 and state["fencing"]["previous_leader"] == 1, state
        state = wait_for("a leader chosen from the other replicas' reports",
                         lambda: (lambda s: s if s["leader"] in (2, 3) else None)(store_partition(etcd, prefix, topic)),
                         timeout=30)
    time.sleep(2)
    acked = load.finish()
    print(f"{mode} topic: the wiped leader handed over; {state['leader']} leads at epoch "
          f"{state['leader_epoch']}; {len(acked)} records acknowledged, none lost")
    check(bs[state["leader"]], topic, acked)
    wait_for("broker 1 back in the ISR with the leader's copy",
             lambda: 1 in store_partition(etcd, prefix, topic)["isr"]
             and log_bytes(bs[1], topic, 0) == log_bytes(bs[state["leader"]], topic, 0), timeout=60)
