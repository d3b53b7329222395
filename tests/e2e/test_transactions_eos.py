"""Exactly-once consume-transform-produce under kill -9 (issue 17's proof),
with confluent-kafka (librdkafka's transactions) and with kafka-python (its
own implementation): an app reads 12 input partitions in a consumer group
(read_committed), writes one result per input record to 12 output
partitions and sends its offsets to the same transaction. The app is
killed with SIGKILL several times, and so is the broker; after the run a
read_committed consumer of the output finds every input record's result
exactly once, and a read_uncommitted one also sees the aborted attempts.

CI size: 6,000 records. Full size (the issue's 100,000):
    STRATA_EOS_RECORDS=100000 .venv/bin/pytest tests/e2e/test_transactions_eos.py -q
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import pytest

import kutil
from sizes import size

RECORDS = size(6000, 100000, "STRATA_EOS_RECORDS")   # tests/e2e/sizes.py: STRATA_FULL=1 for 100,000
PARTITIONS = 12

APP = r'''
import sys, time
from confluent_kafka import Consumer, Producer, KafkaException
bootstrap, in_topic, out_topic, group, txn_id = sys.argv[1:6]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": "eos-app",
              "session.timeout.ms": 6000, "enable.auto.commit": False,
              "isolation.level": "read_committed", "auto.offset.reset": "earliest",
              "broker.address.family": "v4"})
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
              "transaction.timeout.ms": 10000, "broker.address.family": "v4"})
p.init_transactions(60)
c.subscribe([in_topic])
while True:
    msgs = c.consume(50, 1.0)
    msgs = [m for m in msgs if not m.error()]
    if not msgs:
        continue
    p.begin_transaction()
    for m in msgs:
        p.produce(out_topic, key=m.value(), value=b"result-of-" + m.value(), partition=m.partition())
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 60)
    time.sleep(0.1)  # "processing": keeps the kills landing mid-run
    p.commit_transaction(60)
    print("committed", len(msgs), flush=True)
'''


# The same app on kafka-python's own transaction implementation (no static
# membership: a restarted instance joins as a new member).
APP_KAFKA_PYTHON = r'''
import sys, time
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import OffsetAndMetadata
bootstrap, in_topic, out_topic, group, txn_id = sys.argv[1:6]
c = KafkaConsumer(in_topic, bootstrap_servers=bootstrap, group_id=group, isolation_level="read_committed",
                  enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=6000,
                  heartbeat_interval_ms=1000, max_poll_records=50)
p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, enable_idempotence=True,
                  transaction_timeout_ms=10000)
p.init_transactions()
while True:
    batch = c.poll(timeout_ms=1000)
    if not batch:
        continue
    p.begin_transaction()
    offsets = {}
    for tp, msgs in batch.items():
        for m in msgs:
            p.send(out_topic, key=m.value, value=b"result-of-" + m.value, partition=m.partition)
        offsets[tp] = OffsetAndMetadata(msgs[-1].offset + 1, "", -1)
    time.sleep(0.1)
    p.send_offsets_to_transaction(offsets, group)
    p.commit_transaction()
    print("committed", sum(len(v) for v in batch.values()), flush=True)
'''
APPS = {"confluent-kafka": APP, "kafka-python": APP_KAFKA_PYTHON}


def _count_output(b, topic: str, isolation: str) -> list[bytes]:
    return kutil.read_to_end(b.bootstrap, topic, PARTITIONS, isolation, timeout=120)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("client", list(APPS))
def test_consume_transform_produce_exactly_once_under_kill_9(broker_factory, tmp_path, client):
    b = broker_factory(settings={"group.initial.rebalance.delay.ms": 0,
                                 "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})
    adm = kutil.admin(b.bootstrap)
    in_topic = kutil.create_topic(adm, kutil.unique("eos-in"), PARTITIONS)
    out_topic = kutil.create_topic(adm, kutil.unique("eos-out"), PARTITIONS)
    group, txn_id = kutil.unique("eos-group"), kutil.unique("eos-app")
    kutil.produce(b.bootstrap, in_topic,
                  [{"value": b"in-%06d" % i, "partition": i % PARTITIONS} for i in range(RECORDS)])
    app_log = open(tmp_path / "app.log", "ab")
    app = None

    def start_app():
        return subprocess.Popen([sys.executable, "-c", APPS[client], b.bootstrap, in_topic, out_topic, group,
                                 txn_id],
                                stdout=app_log, stderr=subprocess.STDOUT)

    def committed_total() -> int:
        return len(_count_output(b, out_topic, "read_committed"))

    def progressed_past(n: int, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            nonlocal app
            if app.poll() is not None:  # the app dies on a broker restart: run it again
                app = start_app()
            done = committed_total()
            if done > n:
                return done
            time.sleep(0.5)
        raise AssertionError(f"no progress past {n} records in {timeout}s (app log: {tmp_path / 'app.log'})")

    app = start_app()
    kills = 0
    try:
        done = 0
        # Alternate: kill -9 the app, then the broker, while work remains.
        for round_ in range(3):
            step = RECORDS // 8
            done = progressed_past(min(done + step, RECORDS - 1))
            if done >= RECORDS:
                break
            app.kill()
            app.wait()
            kills += 1
            app = start_app()
            done = progressed_past(min(done + step, RECORDS - 1))
            if done >= RECORDS:
                break
            # The broker dies mid-transaction; the app is restarted with it
            # (confluent-kafka 2.16.1's transactional producer does not
            # recover its partition connection after the broker's kill -9:
            # its broker thread spins in TRY_CONNECT; docs/transactions.md).
            b.restart(kill=True)
            app.kill()
            app.wait()
            app = start_app()
            kills += 1
        deadline = time.monotonic() + 300
        while committed_total() < RECORDS:
            assert time.monotonic() < deadline, "the app did not finish"
            if app.poll() is not None:
                app = start_app()
            time.sleep(1)
    finally:
        if app is not None and app.poll() is None:
            app.kill()
            app.wait()
        app_log.close()
    committed = _count_output(b, out_topic, "read_committed")
    counts = Counter(committed)
    dupes = {v: n for v, n in counts.items() if n > 1}
    assert not dupes, f"{len(dupes)} results read committed more than once, e.g. {list(dupes.items())[:3]}"
    want = {b"result-of-in-%06d" % i for i in range(RECORDS)}
    missing = want - set(counts)
    assert not missing, f"{len(missing)} input records have no committed result, e.g. {sorted(missing)[:3]}"
    assert set(counts) == want
    everything = _count_output(b, out_topic, "read_uncommitted")
    assert len(everything) >= len(committed)
    print(f"{client}: {RECORDS} records, {kills} kills: {len(committed)} results read committed, "
          f"{len(everything) - len(committed)} more in aborted attempts (read uncommitted)")
    assert kills >= 2, "the run must have killed the app and the broker"
