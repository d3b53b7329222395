"""The compatibility scenario (scenario.py) with kafka-python (pure Python
protocol code): KafkaAdminClient for topics and committed offsets,
KafkaProducer, KafkaConsumer for the group, end offsets and
offsets_for_times. Codecs: gzip (stdlib), snappy (python-snappy), lz4 (lz4),
zstd (zstandard), all from PyPI wheels."""

from __future__ import annotations

import time

import pytest

import scenario

CODECS = scenario.ALL_CODECS
XFAIL: dict = {}
INSTALL = "install it with `.venv/bin/pip install -r tests/requirements.txt` (scripts/test.sh does)"
CODEC_MODULES = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}

try:
    import kafka
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import OffsetAndMetadata
except ImportError as e:  # a missing client fails every step, never skips
    kafka = None
    IMPORT_ERROR = str(e)


class Driver:
    name = "kafka-python"
    explicit_timestamps = True
    none_is_end = False

    def __init__(self, bs: str):
        self.bs = bs
        self.version = kafka.__version__
        self.common = dict(bootstrap_servers=bs, request_timeout_ms=30000)

    def create_topic(self, topic, partitions):
        adm = KafkaAdminClient(client_id="compat-kp", **self.common)
        try:
            adm.create_topics([NewTopic(name=topic, num_partitions=partitions, replication_factor=1)],
                              timeout_ms=30000)
        finally:
            adm.close()

    def produce(self, topic, codec, recs):
        from kafka import codec as kcodec
        has = {"none": True, "gzip": kcodec.has_gzip(), "snappy": kcodec.has_snappy(),
               "lz4": kcodec.has_lz4(), "zstd": kcodec.has_zstd()}
        assert has[codec], f"kafka-python has no {codec} codec: the PyPI package {CODEC_MODULES.get(codec)} " \
                           f"is missing; {INSTALL}"
        p = KafkaProducer(acks="all", compression_type=None if codec == "none" else codec, linger_ms=20,
                          **self.common)
        try:
            futs = [p.send(topic, key=r.key.encode(), value=r.value.encode(), timestamp_ms=r.ts) for r in recs]
            p.flush(60)
            for r, f in zip(recs, futs):
                md = f.get(timeout=30)
                r.partition, r.offset, r.ts = md.partition, md.offset, md.timestamp
        finally:
            p.close(30)
        return recs

    def consume_group(self, topic, group, count, describe):
        c = KafkaConsumer(group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                          session_timeout_ms=10000, heartbeat_interval_ms=500, fetch_max_wait_ms=100,
                          max_poll_records=10, **self.common)
        got, nxt = [], {}
        try:
            c.subscribe([topic])
            deadline = time.monotonic() + 45
            while len(got) < count:
                assert time.monotonic() < deadline, f"group member got {len(got)} of {count} records in 45 s"
                for recs in c.poll(timeout_ms=500).values():
                    for m in recs:
                        if len(got) == count:
                            break   # fetched but not processed: not committed
                        got.append(scenario.parse(m.partition, m.offset, m.key, m.value, m.timestamp))
                        nxt[m.partition] = m.offset + 1
            c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in nxt.items()})
            live = self.describe_group(group) if describe else None
        finally:
            c.close()   # LeaveGroup; no autocommit
        return got, nxt, live

    def group_offsets(self, topic, group):
        adm = KafkaAdminClient(client_id="compat-kp", **self.common)
        try:
            tps = [TopicPartition(topic, p) for p in range(scenario.PARTITIONS)]
            res = adm.list_consumer_group_offsets(group, partitions=tps)
        finally:
            adm.close()
        committed = {tp.partition: (om.offset if om.offset >= 0 else None) for tp, om in res.items()}
        # kafka-python's admin client has no ListOffsets: end offsets from a group-less consumer
        c = KafkaConsumer(group_id=None, **self.common)
        try:
            end = {tp.partition: o for tp, o in c.end_offsets(tps).items()}
        finally:
            c.close()
        return {p: (committed.get(p), end[p]) for p in range(scenario.PARTITIONS)}

    def describe_group(self, group):
        adm = KafkaAdminClient(client_id="compat-kp", **self.common)
        try:
            [g] = adm.describe_consumer_groups([group])
        finally:
            adm.close()
        assert g.error_code == 0, f"DescribeGroups error {g.error_code}"
        return g.state, len(g.members), g.protocol_type

    def offsets_for_times(self, topic, timestamps):
        c = KafkaConsumer(group_id=None, **self.common)
        out = {}
        try:
            tps = [TopicPartition(topic, p) for p in range(scenario.PARTITIONS)]
            for t in timestamps:
                res = c.offsets_for_times({tp: t for tp in tps})
                out[t] = {tp.partition: ((ot.offset, ot.timestamp) if ot is not None else (None, None))
                          for tp, ot in res.items()}
        finally:
            c.close()
        return out


@pytest.fixture(scope="module")
def kafka_python_run(compat_broker):
    missing = kafka is None and f"kafka-python is not installed ({IMPORT_ERROR}): {INSTALL}"
    return scenario.run_client(missing, lambda: Driver(compat_broker.bootstrap), compat_broker, CODECS, "kp")


@pytest.mark.parametrize("step", scenario.steps(xfail=XFAIL))
def test_kafka_python(step, kafka_python_run):
    scenario.check(kafka_python_run, step)
