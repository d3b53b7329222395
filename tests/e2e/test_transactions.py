"""Transactions (issue 17, docs/transactions.md) with real clients:
confluent-kafka (librdkafka's transaction implementation) and kafka-python
(its own). What read_committed and read_uncommitted consumers see of
committed, aborted and open transactions; the last stable offset;
offsets committed in a transaction; a zombie producer fenced; a
transaction left open past its timeout aborted; transactions across a
kill -9 of the broker; aborted records after the partitions were tiered
and the hot window emptied; DescribeTransactions / ListTransactions.

The consume-transform-produce run under kill -9 is in
test_transactions_eos.py.
"""

from __future__ import annotations

import io

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

import kutil
import tierutil as tu
import wire


def _txn_producer(b, txn_id: str, **conf):
    return kutil.producer(b.bootstrap, **{"transactional.id": txn_id, "enable.idempotence": True,
                                          "linger.ms": 5, **conf})


def _read_all(b, topic: str, partitions: int, isolation: str, timeout: float = 30.0) -> list[bytes]:
    return kutil.read_to_end(b.bootstrap, topic, partitions, isolation, timeout)


def _watermarks(b, topic: str, partition: int, isolation: str) -> tuple[int, int]:
    c = kutil.consumer(b.bootstrap, **{"isolation.level": isolation})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)
    finally:
        c.close()


def test_commit_abort_and_open_transaction_visibility(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 2)
    p = _txn_producer(broker, kutil.unique("tx"))
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic_name, value=b"committed-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic_name, value=b"aborted-%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    # A plain producer between transactions: always visible once the
    # transactions before it ended.
    plain = kutil.producer(broker.bootstrap)
    plain.produce(topic_name, value=b"plain", partition=0)
    plain.flush(30)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic_name, value=b"open-%d" % i, partition=i % 2)
    p.flush(30)

    committed = _read_all(broker, topic_name, 2, "read_committed")
    assert sorted(committed) == sorted([b"committed-%d" % i for i in range(10)] + [b"plain"])
    uncommitted = _read_all(broker, topic_name, 2, "read_uncommitted")
    assert sorted(v for v in uncommitted if v.startswith(b"aborted")) == \
        sorted(b"aborted-%d" % i for i in range(10)), "read_uncommitted sees the aborted attempt"
    assert sum(v.startswith(b"open") for v in uncommitted) == 4

    # The open transaction holds the last stable offset back: a
    # read_committed consumer's high watermark is its first offset.
    lo, hwm = _watermarks(broker, topic_name, 0, "read_uncommitted")
    _, lso = _watermarks(broker, topic_name, 0, "read_committed")
    assert lso < hwm, (lso, hwm)
    # 5 committed + marker, 5 aborted + marker, 1 plain: the open one starts at 13.
    assert lso == 13, lso

    p.commit_transaction(30)
    kutil.wait_until(lambda: _watermarks(broker, topic_name, 0, "read_committed")[1]
                     == _watermarks(broker, topic_name, 0, "read_uncommitted")[1],
                     what="the LSO to reach the high watermark after the commit")
    committed = _read_all(broker, topic_name, 2, "read_committed")
    assert sum(v.startswith(b"open") for v in committed) == 4
    assert not any(v.startswith(b"aborted") for v in committed)


def test_offsets_sent_to_a_transaction_are_committed_with_it(broker_factory):
    broker = broker_factory()
    admin = kutil.admin(broker.bootstrap)
    topic_name = kutil.create_topic(admin, kutil.unique("in"), 1)
    out_topic = kutil.create_topic(admin, kutil.unique("out"), 1)
    group = kutil.unique("eos-group")
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"in-%d" % i, "partition": 0} for i in range(20)])
    c = kutil.consumer(broker.bootstrap, **{"group.id": group, "enable.auto.commit": False,
                                            "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic_name, 0, 0)])
    got = []
    while len(got) < 20:
        m = c.poll(5)
        assert m is not None and not m.error(), m and m.error()
        got.append(m)
    p = _txn_producer(broker, kutil.unique("tx"))
    p.init_transactions(30)

    def committed_offset(isolation: str = "read_committed", timeout: float = 10):
        # read_committed: OffsetFetch with require_stable (KIP-447), which
        # an offset pending in an open transaction holds back.
        probe = kutil.consumer(broker.bootstrap, **{"group.id": group, "isolation.level": isolation})
        try:
            return probe.committed([TopicPartition(topic_name, 0)], timeout=timeout)[0].offset
        finally:
            probe.close()

    # Aborted: the offsets go with the transaction.
    p.begin_transaction()
    p.produce(out_topic, value=b"derived-aborted")
    p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 10)], c.consumer_group_metadata(), 30)
    p.abort_transaction(30)
    assert committed_offset() < 0, "offsets of an aborted transaction are never committed"
    # Open: not visible yet.
    p.begin_transaction()
    p.produce(out_topic, value=b"derived")
    p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 20)], c.consumer_group_metadata(), 30)
    assert committed_offset("read_uncommitted") < 0, "offsets of an open transaction are not visible"
    with pytest.raises(KafkaException) as e:
        committed_offset(timeout=3)
    assert e.value.args[0].code() == KafkaError._TIMED_OUT, "UNSTABLE_OFFSET_COMMIT until it ends"
    p.commit_transaction(30)
    assert committed_offset() == 20
    c.close()
    # And they survive a restart (replayed from __consumer_offsets with
    # their marker).
    broker.restart()
    assert committed_offset() == 20
    assert _read_all(broker, out_topic, 1, "read_committed") == [b"derived"]


def test_zombie_producer_is_fenced(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    txn_id = kutil.unique("zombie")
    old = _txn_producer(broker, txn_id)
    old.init_transactions(30)
    old.begin_transaction()
    old.produce(topic_name, value=b"zombie-write", partition=0)
    old.flush(30)
    new = _txn_producer(broker, txn_id)
    # The new instance's init aborts the old one's open transaction.
    new.init_transactions(60)
    new.begin_transaction()
    new.produce(topic_name, value=b"new-write", partition=0)
    new.commit_transaction(30)
    with pytest.raises(KafkaException) as e:
        old.produce(topic_name, value=b"zombie-again", partition=0)
        old.commit_transaction(30)
    err = e.value.args[0]
    assert err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                         KafkaError.INVALID_PRODUCER_EPOCH), err
    assert _read_all(broker, topic_name, 1, "read_committed") == [b"new-write"]


def test_transaction_open_past_its_timeout_is_aborted(broker_factory):
    b = broker_factory(settings={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 300})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("timeout"), 1)
    p = _txn_producer(b, kutil.unique("slow"), **{"transaction.timeout.ms": 3000,
                                                   "socket.timeout.ms": 3000,
                                                   "message.timeout.ms": 3000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"never-committed", partition=0)
    p.flush(30)
    assert _watermarks(b, topic, 0, "read_committed")[1] == 0, "the open transaction holds the LSO"
    m = tu.metrics_of(b, topic, 0)
    assert m["strata_log_last_stable_offset_lag"] == 1 and m["strata_log_ongoing_transactions"] == 1, m
    assert m["strata_transactions_ongoing"] == 1 and m["strata_transaction_oldest_age_seconds"] >= 0, m
    # The coordinator aborts it (a marker) and the LSO passes it.
    kutil.wait_until(lambda: _watermarks(b, topic, 0, "read_committed")[1] == 2, timeout=30,
                     what="the LSO to pass the timed-out transaction's marker")
    assert _read_all(b, topic, 1, "read_committed") == []
    timeouts = [v for n, lab, v in tu.scrape(b)
                if n == "strata_transactions_aborted_total" and lab.get("cause") == "timeout"]
    assert timeouts == [1], timeouts
    m = tu.metrics_of(b, topic, 0)
    assert m["strata_log_last_stable_offset_lag"] == 0 and m["strata_transactions_ongoing"] == 0, m
    with pytest.raises(KafkaException):
        p.commit_transaction(30)


@pytest.mark.parametrize("phase", ["open", "committed", "aborted"])
def test_kill_9_in_each_phase(broker_factory, phase):
    """kill -9 with a transaction open, just after its commit, just after
    its abort: the restarted broker rebuilds __transaction_state and the
    producer state; an open transaction is aborted by the producer's next
    init (or its timeout), nothing committed is lost, nothing aborted shows."""
    b = broker_factory(settings={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique(f"kill-{phase}"), 2)
    txn_id = kutil.unique("kill")
    p = _txn_producer(b, txn_id)
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=b"first-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=b"second-%d" % i, partition=i % 2)
    p.flush(30)
    if phase == "committed":
        p.commit_transaction(30)
    elif phase == "aborted":
        p.abort_transaction(30)
    b.restart(kill=True)
    want = [b"first-%d" % i for i in range(6)]
    if phase == "committed":
        want += [b"second-%d" % i for i in range(6)]
    if phase == "open":
        # Still open after the restart: the LSO stays at its first offset
        # until a new instance of the producer fences and aborts it.
        assert _watermarks(b, topic, 0, "read_committed")[1] == 4
        p2 = _txn_producer(b, txn_id)
        p2.init_transactions(60)
        p2.begin_transaction()
        p2.produce(topic, value=b"third", partition=0)
        p2.commit_transaction(30)
        want.append(b"third")
    got = _read_all(b, topic, 2, "read_committed")
    assert sorted(got) == sorted(want)
    lo, hwm = _watermarks(b, topic, 1, "read_uncommitted")
    assert _watermarks(b, topic, 1, "read_committed")[1] == hwm, "no transaction left open"


def test_aborted_records_stay_hidden_after_tiering(broker_factory):
    """Transactions across the local/remote boundary: segments are tiered
    with their .txnindex and the hot window is emptied; a read_committed
    consumer from offset 0 (served from the bucket) sees every committed
    record and no aborted one; read_uncommitted sees both."""
    b, bucket = tu.file_broker(broker_factory)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("tiered-tx"), 1, config={
        "segment.bytes": str(16 * tu.KiB), "local.retention.ms": "1000"})
    p = _txn_producer(b, kutil.unique("tier"))
    p.init_transactions(30)
    want = []
    for t in range(30):
        p.begin_transaction()
        for i in range(5):
            v = b"t%02d-%d-" % (t, i) + b"x" * 1000
            p.produce(topic, value=v, partition=0)
        if t % 3 == 2:
            p.flush(30)  # the aborted records reach the log before the abort
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
            want += [b"t%02d-%d-" % (t, i) + b"x" * 1000 for i in range(5)]
    # Roll the last segment so everything can tier.
    plain = kutil.producer(b.bootstrap)
    plain.produce(topic, value=b"tail" + b"y" * 20000, partition=0)
    plain.flush(30)
    want.append(b"tail" + b"y" * 20000)
    # 150 records, 30 markers, the tail: everything before the tail tiered.
    kutil.wait_until(lambda: _local_start(b, topic) >= 180, timeout=60,
                     what="the hot window to empty (local log start past the transactions)")
    txn_indexes = [k for k in bucket.keys() if topic in k and k.endswith(".txnindex")]
    assert len(txn_indexes) >= 5, f"the abort markers' segments went up with their .txnindex: {txn_indexes}"
    got = _read_all(b, topic, 1, "read_committed", timeout=60)
    assert got == want, f"{len(got)} records read committed, {len(want)} committed"
    everything = _read_all(b, topic, 1, "read_uncommitted", timeout=60)
    assert len(everything) == 30 * 5 + 1


def _local_start(b, topic: str) -> int:
    """ListOffsets -4 (earliest local, KIP-405)."""
    from test_newest_versions import _list_offsets
    return _list_offsets(b, 8, topic, -4)[2]


def test_kafka_python_transactions(broker, admin, topic_name):
    """kafka-python's own transaction implementation: commit, abort and
    send_offsets_to_transaction, read back by librdkafka."""
    from kafka import KafkaProducer
    from kafka.structs import OffsetAndMetadata, TopicPartition as KTP
    kutil.create_topic(admin, topic_name, 2)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=kutil.unique("kp"),
                      enable_idempotence=True)
    p.init_transactions()
    p.begin_transaction()
    for i in range(6):
        p.send(topic_name, value=b"kp-commit-%d" % i, partition=i % 2)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(6):
        p.send(topic_name, value=b"kp-abort-%d" % i, partition=i % 2)
    p.flush()
    p.abort_transaction()
    group = kutil.unique("kp-group")
    p.begin_transaction()
    p.send(topic_name, value=b"kp-with-offsets", partition=0)
    p.send_offsets_to_transaction({KTP(topic_name, 1): OffsetAndMetadata(3, "", -1)}, group)
    p.commit_transaction()
    p.close()
    got = _read_all(broker, topic_name, 2, "read_committed")
    assert sorted(got) == sorted([b"kp-commit-%d" % i for i in range(6)] + [b"kp-with-offsets"])
    probe = kutil.consumer(broker.bootstrap, **{"group.id": group})
    assert probe.committed([TopicPartition(topic_name, 1)], timeout=10)[0].offset == 3
    probe.close()


def test_describe_and_list_transactions(broker, admin, topic_name):
    """DescribeTransactions v0 and ListTransactions v0/v1 (what
    kafka-transactions.sh describe / list send), decoded with kio."""
    kutil.create_topic(admin, topic_name, 2)
    txn_id = kutil.unique("described")
    p = _txn_producer(broker, txn_id)
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic_name, value=b"x", partition=1)
    p.flush(30)

    def call(api: int, version: int, **fields):
        return _kio_call(broker, api, version, **fields)

    d = call(65, 0, transactional_ids=(txn_id, "no-such-id"))
    ours, missing = d.transaction_states
    assert int(ours.error_code.value) == 0 and ours.transaction_state == "Ongoing"
    assert [(t.topic, tuple(t.partitions)) for t in ours.topics] == [(topic_name, (1,))]
    assert ours.transaction_timeout.total_seconds() == 60 and ours.producer_epoch == 0
    assert int(missing.error_code.value) == 105  # TRANSACTIONAL_ID_NOT_FOUND
    listed = call(66, 1, state_filters=("Ongoing",), producer_id_filters=(), duration_filter=-1)
    assert txn_id in [t.transactional_id for t in listed.transaction_states]
    listed = call(66, 0, state_filters=("Bogus",), producer_id_filters=())
    assert listed.unknown_state_filters == ("Bogus",)
    p.commit_transaction(30)
    # EndTxn is answered once PrepareCommit is durable; the markers follow.
    kutil.wait_until(lambda: call(65, 0, transactional_ids=(txn_id,)).transaction_states[0]
                     .transaction_state == "CompleteCommit", what="the transaction to complete")


def _kio_call(b, api: int, version: int, **fields):
    """One request encoded and its response decoded by kio (generated from
    Kafka's message schemas), on a raw connection."""
    from kio.index import load_request_schema, load_response_schema
    from kio.serial import entity_reader, entity_writer
    from kafka.protocol.types import TaggedFields
    req_cls = load_request_schema(api, version)
    buf = io.BytesIO()
    entity_writer(req_cls)(buf, req_cls(**fields))
    with wire.KafkaConn.to(b.bootstrap) as c:
        raw = c.request(api, version, buf.getvalue(), flexible=req_cls.__flexible__)
    at = 0
    if load_response_schema(api, version).__flexible__:
        r = io.BytesIO(raw)
        TaggedFields.decode(r)
        at = r.tell()
    decoded, _ = entity_reader(load_response_schema(api, version))(raw, at)
    return decoded


def _write_txn_markers_v0(b, pid: int, epoch: int, topic: str, partition: int, coordinator_epoch: int) -> int:
    """WriteTxnMarkers v0 (non-flexible), encoded by hand: the error code."""
    import struct
    name = topic.encode()
    body = (struct.pack(">i", 1) + struct.pack(">qhb", pid, epoch, 0) + struct.pack(">i", 1)
            + struct.pack(">h", len(name)) + name + struct.pack(">ii", 1, partition)
            + struct.pack(">i", coordinator_epoch))
    with wire.KafkaConn.to(b.bootstrap) as c:
        raw = c.request(27, 0, body)
    r = wire.Reader(raw)
    markers = r.array(lambda r: (r.i64(), r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))))
    assert r.done()
    ((got_pid, ((got_topic, ((got_partition, code),)),)),) = markers
    assert (got_pid, got_topic, got_partition) == (pid, topic, partition)
    return code


@pytest.mark.parametrize("version", [0, 1])
def test_hanging_transaction_found_and_aborted_as_kafka_transactions_sh_does(broker, admin, topic_name, version):
    """`kafka-transactions.sh find-hanging` / `abort`: DescribeProducers shows
    the open transaction's start offset in the partition; WriteTxnMarkers
    with that producer's id and epoch aborts it there, and the LSO moves."""
    from kio.schema.describe_producers.v0.request import TopicRequest
    from kio.schema.write_txn_markers.v1.request import WritableTxnMarker, WritableTxnMarkerTopic
    kutil.create_topic(admin, topic_name, 1)
    p = _txn_producer(broker, kutil.unique("hanging"))
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic_name, value=b"stuck", partition=0)
    p.flush(30)
    d = _kio_call(broker, 61, 0, topics=(TopicRequest(name=topic_name, partition_indexes=(0,)),))
    (part,) = d.topics[0].partitions
    (prod,) = part.active_producers
    assert int(part.error_code.value) == 0 and prod.current_txn_start_offset == 0, prod
    assert _watermarks(broker, topic_name, 0, "read_committed")[1] == 0
    if version == 1:
        w = _kio_call(broker, 27, 1, markers=(WritableTxnMarker(
            producer_id=prod.producer_id, producer_epoch=prod.producer_epoch, transaction_result=False,
            topics=(WritableTxnMarkerTopic(name=topic_name, partition_indexes=(0,)),),
            coordinator_epoch=prod.coordinator_epoch),))
        assert [int(x.error_code.value) for x in w.markers[0].topics[0].partitions] == [0]
    else:
        assert _write_txn_markers_v0(broker, prod.producer_id, prod.producer_epoch, topic_name, 0,
                                     prod.coordinator_epoch) == 0
    assert _watermarks(broker, topic_name, 0, "read_committed")[1] == 2, "aborted: the LSO passed it"
    assert _read_all(broker, topic_name, 1, "read_committed") == []
    d = _kio_call(broker, 61, 0, topics=(TopicRequest(name=topic_name, partition_indexes=(0,)),))
    assert d.topics[0].partitions[0].active_producers[0].current_txn_start_offset == -1
