"""A broker cut off the network (issue 18, step 7): three brokers and etcd;
broker 1, the leader of every partition of a topic at RF 3 with
min.insync.replicas=2, runs in its own network namespace (netutil.py)
with a producer of its own beside it. The namespace's link is cut:

- the majority side elects new leaders once broker 1's lease expires, and
  an idempotent acks=all producer there keeps being acknowledged with the
  ISR down to two;
- broker 1, a stale leader that still believes it leads, appends what the
  producer beside it sends but acknowledges none of it at acks=all (no
  follower fetches it; it cannot write an ISR change);
- healed, broker 1 follows the new leaders, truncates what nobody
  acknowledged, catches up and rejoins every ISR; its logs end byte for
  byte equal to the leaders', and every record the majority side had
  acknowledged is in the log exactly once, none of the cut-off ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from confluent_kafka.admin import NewTopic

import kutil
import netutil
from etcdutil import EtcdCluster
from strata_broker import Broker, stop_all
from test_cluster_membership import SETTINGS, internal_rf, wait_for
from test_replication import _fresh_admins, admin, log_bytes, partitions, store_partition  # noqa: F401
from test_rolling_restart import PARTITIONS, Load, check_history, read_back

CUT_SECONDS = 12

ISOLATED_PRODUCER = textwrap.dedent("""
    import json, sys, time
    from confluent_kafka import Producer
    bootstrap, topic, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    acked, errors = [], []
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "message.timeout.ms": int(seconds * 1000 / 2)})
    def done(err, m):
        (errors if err else acked).append(str(err) if err else m.key().decode())
    end, i = time.monotonic() + seconds / 2, 0
    while time.monotonic() < end:
        p.produce(topic, key=b"iso-%d" % i, value=b"cut-off", partition=i % 3, on_delivery=done)
        p.poll(0.01)
        i += 1
    p.flush(seconds)
    print(json.dumps({"sent": i, "acked": acked, "errors": sorted(set(errors))}))
""")


class NsBroker(Broker):
    """A broker started inside a network namespace."""

    def __init__(self, host: netutil.IsolatedHost, **kw):
        super().__init__(**kw)
        self.netns = host
        self.host = host.inner_ip

    def command(self) -> list[str]:
        return self.netns.prefix() + super().command()


def settings():
    s = dict(SETTINGS)
    s.update(internal_rf(3))
    s.update({"replica.lag.time.max.ms": 3000, "auto.leader.rebalance.enable": "false",
              "log.retention.check.interval.ms": 500})
    return s


def test_a_cut_off_leader_acknowledges_nothing_and_rejoins_after_truncating(tmp_path):
    net = netutil.IsolatedHost("cut")
    etcd = None
    bs: dict[int, Broker] = {}
    try:
        etcd = EtcdCluster(tmp_path / "etcd", members=1, host=net.outer_ip)
        prefix = kutil.unique("cut")
        for n in (1, 2, 3):
            # Their HTTP listeners are on the namespaces' addresses, beyond
            # loopback: the admin API needs a token there.
            kw = dict(data_dir=tmp_path / f"b{n}" / "data", settings=settings(), name=f"b{n}",
                      extra_args=["--metadata", etcd.url(prefix), "--node-id", str(n)],
                      env={"STRATA_HTTP_TOKEN": "network-partition-test-token"})
            if n == 1:
                b = NsBroker(net, **kw)
            else:
                b = Broker(**kw)
                b.host = net.outer_ip
            bs[n] = b.start()
        wait_for("three brokers", lambda: len(admin(bs[2]).list_topics(timeout=10).brokers) == 3)
        topic = kutil.unique("split")
        admin(bs[2]).create_topics([NewTopic(topic, num_partitions=PARTITIONS, replica_assignment=[[1, 2, 3]] * PARTITIONS,
                                             config={"min.insync.replicas": "2"})])[topic].result(timeout=30)

        def all_in_sync():
            ps = partitions(bs[2], topic)
            return ps and len(ps) == PARTITIONS and all(len(isr) == 3 and leader >= 0
                                                        for leader, _, isr in ps.values())
        wait_for("every replica in sync", all_in_sync, timeout=30)
        assert all(store_partition(etcd, prefix, topic, p)["leader"] == 1 for p in range(PARTITIONS))
        epochs = {p: store_partition(etcd, prefix, topic, p)["leader_epoch"] for p in range(PARTITIONS)}

        # A request in flight to the cut-off broker gets no answer, not a
        # reset: the client gives up on it after request.timeout.ms
        # (librdkafka's default 30 s) and retries at the new leader.
        load = Load(f"{bs[2].bootstrap},{bs[3].bootstrap}", topic, **{"request.timeout.ms": 5000})
        wait_for("the load acknowledging on every partition", lambda: all(load.acked.values()), timeout=30)

        net.cut()
        cut_at = time.monotonic()
        beside = subprocess.Popen(net.prefix() + [sys.executable, "-c", ISOLATED_PRODUCER,
                                                  bs[1].bootstrap, topic, str(CUT_SECONDS)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for p in range(PARTITIONS):
            wait_for(f"partition {p} led on the majority side",
                     lambda p=p: store_partition(etcd, prefix, topic, p)["leader"] in (2, 3), timeout=30)
        elected_s = time.monotonic() - cut_at
        acked_before = sum(len(v) for v in load.acked.values())
        wait_for("the majority side acknowledging at min.insync.replicas",
                 lambda: sum(len(v) for v in load.acked.values()) > acked_before + 300, timeout=60)
        for p in range(PARTITIONS):
            st = store_partition(etcd, prefix, topic, p)
            assert 1 not in st["isr"] and len(st["isr"]) == 2, st
            assert st["leader_epoch"] > epochs[p], st

        out, err = beside.communicate(timeout=CUT_SECONDS * 3)
        assert beside.returncode == 0, err[-2000:]
        isolated = json.loads(out)
        # The stale leader took the records (they are in its files) ...
        held = b"".join(log_bytes(bs[1], topic, p) for p in range(PARTITIONS))
        assert b"iso-" in held, "the cut-off leader never appended the records sent beside it"
        # ... and acknowledged none of them.
        assert isolated["acked"] == [], isolated["acked"][:5]
        assert isolated["sent"] > 0 and isolated["errors"], isolated
        print(f"cut: majority elected new leaders in {elected_s:.1f}s; the stale leader took "
              f"{isolated['sent']} records and acknowledged none ({isolated['errors']})")

        net.heal()
        healed_at = time.monotonic()
        wait_for("broker 1 back in every ISR",
                 lambda: all(1 in store_partition(etcd, prefix, topic, p)["isr"] for p in range(PARTITIONS)),
                 timeout=90)
        rejoined_s = time.monotonic() - healed_at
        time.sleep(2)
        load.finish()
        assert not load.errors, load.errors[:5]
        acked = sum(len(v) for v in load.acked.values())
        print(f"healed: broker 1 truncated and rejoined every ISR in {rejoined_s:.1f}s; "
              f"{acked} records acknowledged on the majority side, none failed")

        check_history(read_back(bs[2], topic, acked), load.acked)
        for p in range(PARTITIONS):
            leader = store_partition(etcd, prefix, topic, p)["leader"]
            wait_for(f"partition {p}: broker 1's copy equal to the leader's",
                     lambda p=p, leader=leader: log_bytes(bs[1], topic, p) == log_bytes(bs[leader], topic, p),
                     timeout=30)
            assert b"iso-" not in log_bytes(bs[1], topic, p)
        assert bs[1].alive()
    finally:
        stop_all(bs.values())
        if etcd is not None:
            etcd.close()
        net.close()
