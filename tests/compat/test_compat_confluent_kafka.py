"""The compatibility scenario (scenario.py) with confluent-kafka (librdkafka
bundled in the wheel): AdminClient for topics, committed and end offsets;
Producer; Consumer for the group and offsets_for_times."""

from __future__ import annotations

import time

import pytest

import scenario

CODECS = scenario.ALL_CODECS   # all five are compiled into the wheel's librdkafka
XFAIL: dict = {}

try:
    import confluent_kafka
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
except ImportError as e:  # a missing client fails every step, never skips
    confluent_kafka = None
    IMPORT_ERROR = str(e)

INSTALL = "install it with `.venv/bin/pip install -r tests/requirements.txt` (scripts/test.sh does)"
COMMON = {"socket.timeout.ms": 20000, "broker.address.family": "v4"}


class Driver:
    name = "confluent-kafka"
    explicit_timestamps = True
    none_is_end = False

    def __init__(self, bs: str, client_id: str = "rdkafka"):
        self.bs = bs
        self.version = f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
        self.common = {**COMMON, "client.id": client_id}
        self.admin = AdminClient({"bootstrap.servers": bs, **self.common})

    def create_topic(self, topic, partitions):
        self.admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30)[topic].result(60)

    def produce(self, topic, codec, recs):
        p = Producer({"bootstrap.servers": self.bs, "acks": "all", "compression.type": codec,
                      "linger.ms": 20, "message.timeout.ms": 30000, **self.common})
        errors = []

        def cb_for(r):
            def cb(err, msg):
                if err is not None:
                    errors.append(f"seq {r.seq}: {err}")
                else:
                    r.partition, r.offset, r.ts = msg.partition(), msg.offset(), msg.timestamp()[1]
            return cb
        for r in recs:
            p.produce(topic, key=r.key, value=r.value, timestamp=r.ts, on_delivery=cb_for(r))
            p.poll(0)
        assert p.flush(60) == 0, "records undelivered after 60 s"
        assert not errors, f"{len(errors)} deliveries failed: {errors[:5]}"
        return recs

    def consume_group(self, topic, group, count, describe):
        c = Consumer({"bootstrap.servers": self.bs, "group.id": group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                      "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100, **self.common})
        got, nxt = [], {}
        try:
            c.subscribe([topic])
            deadline = time.monotonic() + 45
            while len(got) < count:
                assert time.monotonic() < deadline, f"group member got {len(got)} of {count} records in 45 s"
                for m in c.consume(num_messages=10, timeout=0.5):
                    if m.error() is not None:
                        assert m.error().code() == KafkaError._PARTITION_EOF, f"consumer error {m.error()}"
                        continue
                    if len(got) == count:
                        break   # fetched but not processed: not committed
                    got.append(scenario.parse(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1]))
                    nxt[m.partition()] = m.offset() + 1
            res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in nxt.items()], asynchronous=False)
            errs = [tp for tp in res if tp.error is not None]
            assert not errs, f"commit errors {errs}"
            live = self.describe_group(group) if describe else None
        finally:
            c.close()
        return got, nxt, live

    def group_offsets(self, topic, group):
        from confluent_kafka import ConsumerGroupTopicPartitions
        tps = [TopicPartition(topic, p) for p in range(scenario.PARTITIONS)]
        res = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])[group].result(30)
        committed = {}
        for tp in res.topic_partitions:
            assert tp.error is None, f"offset fetch error {tp}"
            committed[tp.partition] = tp.offset if tp.offset >= 0 else None
        ends = self.admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=30)
        end = {tp.partition: f.result(30).offset for tp, f in ends.items()}
        return {p: (committed.get(p), end[p]) for p in range(scenario.PARTITIONS)}

    def describe_group(self, group):
        d = self.admin.describe_consumer_groups([group], request_timeout=30)[group].result(40)
        # librdkafka exposes the protocol type only as is_simple_consumer_group (type "")
        return d.state.name, len(d.members), "" if d.is_simple_consumer_group else "consumer"

    def offsets_for_times(self, topic, timestamps):
        c = Consumer({"bootstrap.servers": self.bs, "group.id": "compat-unused", **self.common})
        out = {}
        try:
            for t in timestamps:
                res = c.offsets_for_times([TopicPartition(topic, p, t) for p in range(scenario.PARTITIONS)],
                                          timeout=15)
                for tp in res:
                    assert tp.error is None, f"offsets_for_times({t}) partition {tp.partition}: {tp.error}"
                out[t] = {tp.partition: (tp.offset if tp.offset >= 0 else None, None) for tp in res}
        finally:
            c.close()
        return out


@pytest.fixture(scope="module")
def confluent_run(compat_broker):
    missing = confluent_kafka is None and f"confluent-kafka is not installed ({IMPORT_ERROR}): {INSTALL}"
    return scenario.run_client(missing, lambda: Driver(compat_broker.bootstrap), compat_broker, CODECS,
                               "confluent")


@pytest.mark.parametrize("step", scenario.steps(xfail=XFAIL))
def test_confluent_kafka(step, confluent_run):
    scenario.check(confluent_run, step)
