"""Consumer groups, the seed pipeline: produce to a 12-partition topic, consume
with a group that writes each record to an idempotent sink and commits only
after writing, stop half way and resume, a second independent group, zero
lag at the end, and a reset to earliest that re-reads everything."""

import time

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

import kutil

PARTITIONS = 12
RECORDS = 6000


class Sink:
    """Idempotent sink keyed by (topic, partition, offset); counts every write."""

    def __init__(self):
        self.data: dict[tuple[str, int, int], bytes] = {}
        self.writes = 0
        self.conflicts: list[tuple] = []

    def write(self, topic, partition, offset, value):
        self.writes += 1
        key = (topic, partition, offset)
        old = self.data.get(key)
        if old is not None and old != value:
            self.conflicts.append((key, old, value))
        self.data[key] = value


def run_group_consumer(bootstrap, group, topic, sink: Sink, stop_after: int | None,
                       until_total: int | None, timeout: float = 90.0) -> list[tuple[int, int]]:
    """Subscribe, write each polled batch to the sink, then commit the next
    offsets synchronously. Stop (close) after `stop_after` records read by
    this consumer, or once the sink holds `until_total` records and the
    commits cover them. Returns the (partition, offset) read, in order."""
    c = kutil.group_consumer(bootstrap, group)
    read: list[tuple[int, int]] = []
    pending_commits: dict[int, int] = {}
    c.subscribe([topic])
    deadline = time.monotonic() + timeout
    try:
        while True:
            if stop_after is not None and len(read) >= stop_after:
                return read
            if until_total is not None and len(sink.data) >= until_total and not pending_commits:
                return read
            assert time.monotonic() < deadline, (
                f"group {group}: read {len(read)}, sink holds {len(sink.data)} of {until_total} after {timeout}s")
            msgs = c.consume(num_messages=250, timeout=0.5)
            for m in msgs:
                if m.error() is not None:
                    raise AssertionError(f"consumer error: {m.error()}")
                sink.write(m.topic(), m.partition(), m.offset(), m.value())
                read.append((m.partition(), m.offset()))
                pending_commits[m.partition()] = m.offset() + 1
            if pending_commits:
                res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in pending_commits.items()],
                               asynchronous=False)
                bad = [tp for tp in res if tp.error is not None]
                assert not bad, f"commit failed: {bad}"
                pending_commits.clear()
    finally:
        c.close()


def test_seed_pipeline_resume_second_group_lag_and_reset(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    topic = kutil.unique("pipeline")
    kutil.create_topic(adm, topic, PARTITIONS)

    # --- produce: acks=all, zstd, delivery callback
    p = kutil.producer(bs, **{"acks": "all", "compression.type": "zstd", "enable.idempotence": False})
    delivered: dict[tuple[int, int], bytes] = {}
    failures = []

    def on_delivery(err, msg):
        if err is not None:
            failures.append(err)
        else:
            delivered[(msg.partition(), msg.offset())] = msg.value()

    for i in range(RECORDS):
        while True:
            try:
                p.produce(topic, key=f"key-{i % 500}".encode(), value=f"value-{i}-".encode() * 5,
                          on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0
    assert not failures, failures[:3]
    assert len(delivered) == RECORDS
    hw = kutil.high_watermarks(bs, topic, PARTITIONS)
    assert sum(hw.values()) == RECORDS
    assert all(hw[q] > 0 for q in range(PARTITIONS)), hw

    # --- group 1: stop half way, then resume
    g1 = kutil.unique("pipe-g1")
    sink = Sink()
    first = run_group_consumer(bs, g1, topic, sink, stop_after=RECORDS // 2, until_total=None)
    assert RECORDS // 2 <= len(first) < RECORDS
    mid = kutil.committed(adm, g1, topic, list(range(PARTITIONS)))
    # what was committed is exactly what was read: per partition, the next offset
    read_next = {}
    for q, o in first:
        read_next[q] = max(read_next.get(q, 0), o + 1)
    assert {q: mid[(topic, q)].offset for q in range(PARTITIONS) if mid[(topic, q)].offset >= 0} == read_next
    kutil.wait_until(lambda: kutil.group_state(adm, g1) == "EMPTY", 20, what="g1 empty after close")

    second = run_group_consumer(bs, g1, topic, sink, stop_after=None, until_total=RECORDS)
    assert len(first) + len(second) == RECORDS, (
        f"resumed consumer re-read or skipped records: first {len(first)} + second {len(second)} != {RECORDS}")
    assert not set(first) & set(second), "records read both before and after the restart"
    assert sink.writes == RECORDS and not sink.conflicts
    assert {(q, o): v for (_, q, o), v in sink.data.items()} == delivered

    # --- group 2 reads everything independently
    g2 = kutil.unique("pipe-g2")
    sink2 = Sink()
    run_group_consumer(bs, g2, topic, sink2, stop_after=None, until_total=RECORDS)
    assert sink2.data == sink.data

    # --- lag is zero for both groups
    for g in (g1, g2):
        offs = kutil.committed(adm, g, topic, list(range(PARTITIONS)))
        lag = {q: hw[q] - offs[(topic, q)].offset for q in range(PARTITIONS)}
        print(f"lag of {g}: {lag}")
        assert all(v == 0 for v in lag.values()), f"group {g} lag {lag}"

    # --- reset group 1 to earliest while it is empty, re-consume everything
    kutil.wait_until(lambda: kutil.group_state(adm, g1) == "EMPTY", 20, what="g1 empty")
    req = ConsumerGroupTopicPartitions(g1, [TopicPartition(topic, q, 0) for q in range(PARTITIONS)])
    res = adm.alter_consumer_group_offsets([req])[g1].result(timeout=30)
    assert all(tp.error is None for tp in res.topic_partitions), res.topic_partitions
    offs = kutil.committed(adm, g1, topic, list(range(PARTITIONS)))
    assert {q: offs[(topic, q)].offset for q in range(PARTITIONS)} == {q: 0 for q in range(PARTITIONS)}

    before = dict(sink.data)
    sink.writes = 0
    again = run_group_consumer(bs, g1, topic, sink, stop_after=RECORDS, until_total=None)
    assert sorted(again) == sorted(delivered), "re-consume after the reset did not read every record once"
    assert sink.data == before and not sink.conflicts, "sink changed by the re-consume"
    offs = kutil.committed(adm, g1, topic, list(range(PARTITIONS)))
    assert {q: offs[(topic, q)].offset for q in range(PARTITIONS)} == hw


def test_alter_offsets_refused_while_group_has_members(broker_factory):
    """Resetting offsets with the AdminClient needs an empty group: a live
    member makes the broker refuse (Kafka: UNKNOWN_MEMBER_ID)."""
    b = broker_factory(kutil.GROUP_BROKER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("alter-live"), 2)
    kutil.produce(b.bootstrap, topic, [{"value": b"x", "partition": q} for q in (0, 1)])
    g = kutil.unique("alter-live")
    m = kutil.GroupMember("m", b.bootstrap, g, [topic]).start()
    try:
        m.wait_assigned(2)
        req = ConsumerGroupTopicPartitions(g, [TopicPartition(topic, 0, 0)])
        fut = adm.alter_consumer_group_offsets([req])[g]
        try:
            res = fut.result(timeout=30)
            errs = [tp.error for tp in res.topic_partitions]
        except KafkaException as e:
            errs = [e.args[0]]
        assert errs and all(e is not None for e in errs), f"alter offsets on a live group succeeded: {errs}"
        assert any(e.code() == kutil.ERR_UNKNOWN_MEMBER_ID for e in errs), errs
    finally:
        m.stop()
