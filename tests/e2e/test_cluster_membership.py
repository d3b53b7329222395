"""Brokers form a cluster through a real etcd (issue 18, first step):
registration under a lease, one controller elected through etcd, every
broker's Metadata and DescribeCluster list the live brokers (with racks)
and agree on the controller; a crashed controller is replaced after its
session expires, a cleanly stopped one at once; a node id held by a live
broker is refused; losing one etcd member of three stops nothing, losing
quorum keeps brokers serving, and the cluster recovers when it returns.
Checked with confluent-kafka (librdkafka) and kafka-python.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

import kutil
from etcdutil import EtcdCluster
from strata_broker import TEST_BROKERS, stop_all

SESSION_MS = 3000
SETTINGS = {
    "broker.session.timeout.ms": SESSION_MS,
    "broker.heartbeat.interval.ms": 500,
}


@pytest.fixture
def etcd(tmp_path):
    c = EtcdCluster(tmp_path / "etcd", members=1)
    yield c
    # The brokers go first: without their store they would wait out a
    # controlled shutdown (set up after broker_factory, this fixture is
    # torn down before it).
    stop_all(TEST_BROKERS)
    c.close()


@pytest.fixture
def etcd3(tmp_path):
    c = EtcdCluster(tmp_path / "etcd3", members=3)
    yield c
    stop_all(TEST_BROKERS)
    c.close()


def internal_rf(n):
    """The coordinators' topics at the cluster's size (Kafka's default
    of 3 waits for three brokers)."""
    rf = min(n, 3)
    return {"offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf}


def start_cluster(broker_factory, etcd, prefix, n=3, racks=True, extra=None):
    brokers = {}
    for node in range(1, n + 1):
        settings = dict(SETTINGS)
        settings.update(internal_rf(n))
        settings.update(extra or {})
        if racks:
            settings["broker.rack"] = f"zone-{'abc'[(node - 1) % 3]}"
        brokers[node] = broker_factory(
            settings=settings, label=f"{prefix}-b{node}",
            extra_args=["--metadata", etcd.url(prefix), "--node-id", str(node)])
    return brokers


def metadata(b):
    return AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)


def wait_for(what, f, timeout=20.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = f()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - the condition is not there yet
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def metric_values(b) -> dict[str, float]:
    """Unlabelled samples of the broker's /metrics (once it is ready)."""
    import urllib.request
    b.wait_ready()
    with urllib.request.urlopen(f"http://127.0.0.1:{b.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def brokers_seen(b):
    md = metadata(b)
    return {i: (m.host, m.port) for i, m in md.brokers.items()}, md.controller_id


def test_three_brokers_see_each_other_and_one_controller(broker_factory, etcd):
    prefix = kutil.unique("members")
    bs = start_cluster(broker_factory, etcd, prefix)
    expected = {i: ("127.0.0.1", b.port) for i, b in bs.items()}
    controllers = set()
    for b in bs.values():
        seen, ctl = wait_for("all three brokers listed",
                             lambda b=b: (lambda s: s if s[0] == expected else None)(brokers_seen(b)))
        controllers.add(ctl)
    assert len(controllers) == 1 and controllers <= set(bs), controllers

    # DescribeCluster (KIP-700) gives racks and the same cluster id everywhere.
    ids = set()
    for b in bs.values():
        a = AdminClient({"bootstrap.servers": b.bootstrap})  # alive until the result
        d = a.describe_cluster(request_timeout=10).result(timeout=30)
        assert {n.id: n.rack for n in d.nodes} == {1: "zone-a", 2: "zone-b", 3: "zone-c"}
        assert d.controller.id in bs
        ids.add(d.cluster_id)
    assert len(ids) == 1

    # kafka-python sees the same cluster.
    from kafka import KafkaAdminClient
    ka = KafkaAdminClient(bootstrap_servers=bs[2].bootstrap, request_timeout_ms=10000)
    try:
        desc = ka.describe_cluster()
        assert sorted(x["node_id"] for x in desc["brokers"]) == [1, 2, 3]
        assert desc["controller_id"] in bs
    finally:
        ka.close()

    # /metrics: every broker sees three, exactly one says it is the controller.
    active = 0
    for b in bs.values():
        m = metric_values(b)
        assert m["strata_cluster_brokers"] == 3 and m["strata_cluster_metadata_connected"] == 1
        assert m["strata_cluster_controller_id"] == controllers.copy().pop()
        active += m["strata_cluster_active_controller"]
    assert active == 1

    # etcd holds readable records: the cluster id, three brokers, the controller.
    keys = etcd.get_prefix(f"/{prefix}/")
    assert f"/{prefix}/cluster_id" in keys and f"/{prefix}/controller" in keys
    assert sorted(k for k in keys if "/brokers/" in k) == [f"/{prefix}/brokers/{i}" for i in (1, 2, 3)]


def test_controller_failover(broker_factory, etcd):
    prefix = kutil.unique("failover")
    bs = start_cluster(broker_factory, etcd, prefix)
    _, first = wait_for("a controller", lambda: (lambda s: s if s[1] in bs else None)(
        brokers_seen(bs[1])))

    # kill -9: the others replace it once its session (lease) expires.
    bs[first].kill9()
    t0 = time.monotonic()
    other = next(i for i in bs if i != first)
    seen, new = wait_for("a new controller", lambda: (lambda s: s if s[1] not in (first, -1) else None)(
        brokers_seen(bs[other])), timeout=SESSION_MS / 1000 + 10)
    took = time.monotonic() - t0
    print(f"controller {first} killed: controller {new} after {took:.2f} s "
          f"(session timeout {SESSION_MS / 1000:.1f} s)")
    assert first not in seen
    assert took < SESSION_MS / 1000 + 5

    # Restarted at once (its old lease still alive), it waits and rejoins.
    bs[first].start()
    wait_for("the restarted broker listed", lambda: first in brokers_seen(bs[other])[0],
             timeout=SESSION_MS / 1000 * 2 + 10)

    # A clean stop hands the controller over within a second or so.
    _, ctl = brokers_seen(bs[other])
    bs[ctl].stop()
    t0 = time.monotonic()
    survivor = next(i for i in bs if i != ctl and bs[i].alive())
    wait_for("controller handed over", lambda: (lambda s: s[1] not in (ctl, -1) and ctl not in s[0])(
        brokers_seen(bs[survivor])), timeout=10)
    took = time.monotonic() - t0
    print(f"controller {ctl} stopped cleanly: replaced after {took:.2f} s")
    assert took < 2.5


def test_a_node_id_held_by_a_live_broker_is_refused(broker_factory, etcd, tmp_path):
    from strata_broker import Broker, BrokerError
    prefix = kutil.unique("dup")
    start_cluster(broker_factory, etcd, prefix, n=1)
    dup = Broker(data_dir=tmp_path / "dup", settings=SETTINGS, name="dup",
                 extra_args=["--metadata", etcd.url(prefix), "--node-id", "1"])
    try:
        # The listener may be bound before the registration is refused:
        # what counts is that the process exits, saying why.
        try:
            dup.start()
        except BrokerError:
            pass
        assert dup.proc.wait(SESSION_MS / 1000 * 2 + 10) == 1
        assert "node id 1 is already registered by another live broker" in dup.log_text()
    finally:
        dup.close()


def test_a_data_dir_of_another_cluster_is_refused(broker_factory, etcd, tmp_path):
    from strata_broker import Broker, BrokerError
    loner = Broker(data_dir=tmp_path / "loner", settings=SETTINGS, name="loner")
    loner.start()
    loner.stop()
    prefix = kutil.unique("other")
    start_cluster(broker_factory, etcd, prefix, n=1)
    joiner = Broker(data_dir=tmp_path / "loner", settings=SETTINGS, name="joiner",
                    extra_args=["--metadata", etcd.url(prefix), "--node-id", "2"])
    try:
        with pytest.raises(BrokerError) as e:
            joiner.start()
        assert "belongs to cluster" in str(e.value)
    finally:
        joiner.close()


def produce_and_read(b, topic, n=20):
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all"})
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": kutil.unique("g"),
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 20
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.close()
    assert got >= n


def test_etcd_member_loss_and_quorum_loss(broker_factory, etcd3):
    prefix = kutil.unique("quorum")
    bs = start_cluster(broker_factory, etcd3, prefix, n=2, racks=False)
    wait_for("both brokers listed", lambda: len(brokers_seen(bs[1])[0]) == 2)
    _, ctl = brokers_seen(bs[1])

    # One member of three gone: nothing changes, for longer than a session.
    etcd3.kill_member("m0")
    time.sleep(SESSION_MS / 1000 * 2)
    for b in bs.values():
        seen, c = brokers_seen(b)
        assert set(seen) == {1, 2} and c == ctl
    # Every broker serves as before (topics, consumer groups).
    topic = kutil.unique("q")
    produce_and_read(bs[1], topic)

    # Quorum gone: brokers keep serving what needs no metadata write.
    etcd3.kill_member("m1")
    time.sleep(SESSION_MS / 1000 * 2)
    for b in bs.values():
        assert b.alive()
        seen, _ = brokers_seen(b)
        assert set(seen) >= {1, 2} - set(), seen
    produce_and_read(bs[1], topic)

    # Quorum back: sessions renewed or re-registered, one controller again.
    etcd3.start_member("m0")
    etcd3.start_member("m1")
    etcd3.wait_healthy()
    for b in bs.values():
        wait_for("both brokers and a controller after quorum returned",
                 lambda b=b: (lambda s: set(s[0]) == {1, 2} and s[1] in (1, 2))(brokers_seen(b)),
                 timeout=30)
    # A broker's view keeps the last snapshot while the store is out of
    # reach, so the registrations are checked in etcd itself: renewed, or
    # (leases that expired during the outage) made again.
    want = [f"/{prefix}/brokers/{i}" for i in (1, 2)]
    wait_for("both registrations in etcd after quorum returned",
             lambda: sorted(k for k in etcd3.get_prefix(f"/{prefix}/") if "/brokers/" in k) == want,
             timeout=30)


def test_readme_cluster_lines_as_written(etcd, tmp_path):
    """The README's two-broker lines, run with the addresses moved to free
    ports and the test's etcd: both brokers join one cluster, with racks."""
    import os
    import re
    import signal
    import subprocess
    from pathlib import Path

    from strata_broker import free_port, port_accepts, strata_bin
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = next(b for b in re.findall(r"```(?:sh)?\n(.*?)```", readme, flags=re.S)
                 if "--metadata etcd://127.0.0.1:2379" in b)
    text = block.replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("strata broker")]
    assert len(lines) == 2, block
    port_map = {"2379": str(etcd.client_ports["m0"])}
    for old in ("9092", "9093", "9644", "9645"):
        port_map[old] = str(free_port())
    procs, kafka_ports = [], []
    try:
        for i, line in enumerate(lines):
            cmd = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{port_map.get(m.group(1), m.group(1))}", line)
            cmd = cmd.replace("--data-dir d1", f"--data-dir {tmp_path / 'd1'}").replace(
                "--data-dir d2", f"--data-dir {tmp_path / 'd2'}")
            cmd = cmd.replace("strata broker", f"{strata_bin()} broker", 1)
            kafka_ports.append(int(re.search(r"--listen 127\.0\.0\.1:(\d+)", cmd).group(1)))
            env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") or k == "STRATA_BIN"}
            log = open(tmp_path / f"readme-{i}.log", "wb")
            procs.append(subprocess.Popen(cmd, shell=True, env=env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
        for port in kafka_ports:
            wait_for("README broker listening", lambda port=port: port_accepts("127.0.0.1", port))
        a = AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka_ports[0]}"})
        d = wait_for("both brokers", lambda: (lambda r: r if len(r.nodes) == 2 else None)(
            a.describe_cluster(request_timeout=10).result(timeout=30)))
        assert {n.id: n.rack for n in d.nodes} == {1: "zone-a", 2: "zone-b"}
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(30)
            except Exception:  # noqa: BLE001 - already gone
                pass
