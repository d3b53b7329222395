"""Admin APIs: CreateTopics (+validate_only, errors), DeleteTopics,
CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
DescribeCluster, Metadata, ApiVersions."""

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic, ResourceType)

import kutil
import wire

# Kafka's topic-level defaults for every config Strata supports.
KAFKA_TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime",
    "min.insync.replicas": "1",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.ms": "604800000",
    "index.interval.bytes": "4096",
}

GENERIC_INVALID_CONFIG = KafkaError(KafkaError.INVALID_CONFIG).str()


def _create_error(adm, topic: NewTopic, validate_only=False) -> KafkaException:
    fut = adm.create_topics([topic], validate_only=validate_only, request_timeout=30)[topic.topic]
    with pytest.raises(KafkaException) as ei:
        fut.result(timeout=60)
    return ei.value


def describe(adm, topic) -> dict:
    res = ConfigResource(ResourceType.TOPIC, topic)
    return adm.describe_configs([res], request_timeout=30)[res].result(timeout=60)


def incremental(adm, topic, ops: list[tuple[str, str | None, AlterConfigOpType]], validate_only=False):
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops])
    return adm.incremental_alter_configs([res], validate_only=validate_only,
                                         request_timeout=30)[res].result(timeout=60)


def _src(entry) -> ConfigSource:
    return ConfigSource(int(getattr(entry.source, "value", entry.source)))


def _assert_default(entries, name):
    e = entries[name]
    assert e.value == KAFKA_TOPIC_DEFAULTS[name], f"{name}={e.value!r}, Kafka default is {KAFKA_TOPIC_DEFAULTS[name]!r}"
    assert _src(e) == ConfigSource.DEFAULT_CONFIG, f"{name}: source {_src(e)!r}, want DEFAULT_CONFIG"


# ---------------------------------------------------------------------------
# CreateTopics
# ---------------------------------------------------------------------------


def test_create_topic_metadata(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 5)
    md = admin.list_topics(timeout=15)
    t = md.topics[topic_name]
    assert t.error is None and sorted(t.partitions) == [0, 1, 2, 3, 4]
    for p in t.partitions.values():
        assert p.leader == 0 and p.replicas == [0] and p.isrs == [0], p


def test_create_topic_default_partitions(broker, admin, topic_name):
    """num_partitions=-1 and replication_factor=-1 use the broker defaults
    (num.partitions=3 on the shared broker)."""
    admin.create_topics([NewTopic(topic_name, -1, -1)])[topic_name].result(timeout=60)
    kutil.wait_topic_ready(admin, topic_name, 3)


def test_create_topic_validate_only(broker, admin, topic_name):
    fut = admin.create_topics([NewTopic(topic_name, 4, 1, config={"retention.ms": "1000"})],
                              validate_only=True)[topic_name]
    assert fut.result(timeout=60) is None
    assert topic_name not in kutil.topic_names(admin)
    assert not broker.partition_dir(topic_name, 0).exists()
    e = _create_error(admin, NewTopic(topic_name, 4, 3), validate_only=True)
    assert kutil.error_code(e) == KafkaError.INVALID_REPLICATION_FACTOR
    e = _create_error(admin, NewTopic(topic_name, 4, 1, config={"retention.ms": "soon"}), validate_only=True)
    assert kutil.error_code(e) == KafkaError.INVALID_CONFIG
    assert topic_name not in kutil.topic_names(admin)


@pytest.mark.parametrize("rf", [0, 2, 3])
def test_create_topic_bad_replication_factor(broker, admin, topic_name, rf):
    e = _create_error(admin, NewTopic(topic_name, 1, rf))
    assert kutil.error_code(e) == KafkaError.INVALID_REPLICATION_FACTOR, kutil.error_str(e)
    assert topic_name not in kutil.topic_names(admin)


@pytest.mark.parametrize("name", ["bad/name", "spaces are bad", "..", ".", "x" * 250, "ünïcode"])
def test_create_topic_invalid_name(broker, admin, name):
    e = _create_error(admin, NewTopic(name, 1, 1))
    assert kutil.error_code(e) == KafkaError.TOPIC_EXCEPTION, kutil.error_str(e)
    assert name not in kutil.topic_names(admin)


def test_create_topic_already_exists(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 2)
    e = _create_error(admin, NewTopic(topic_name, 2, 1))
    assert kutil.error_code(e) == KafkaError.TOPIC_ALREADY_EXISTS, kutil.error_str(e)
    e = _create_error(admin, NewTopic(topic_name, 2, 1), validate_only=True)
    assert kutil.error_code(e) == KafkaError.TOPIC_ALREADY_EXISTS, kutil.error_str(e)
    assert kutil.partition_count(admin, topic_name) == 2


def test_create_topic_zero_partitions(broker, admin, topic_name):
    e = _create_error(admin, NewTopic(topic_name, 0, 1))
    assert kutil.error_code(e) == KafkaError.INVALID_PARTITIONS, kutil.error_str(e)


@pytest.mark.parametrize("config", [
    {"retention.ms": "abc"},
    {"retention.ms": "-2"},
    {"segment.bytes": "0"},
    {"max.message.bytes": "-5"},
    {"message.timestamp.type": "WallClockTime"},
    {"cleanup.policy": "compact,archive"},
    {"compression.type": "brotli"},
    {"min.insync.replicas": "0"},
    {"no.such.config": "1"},
])
def test_create_topic_invalid_config(broker, admin, topic_name, config):
    e = _create_error(admin, NewTopic(topic_name, 1, 1, config=config))
    assert kutil.error_code(e) == KafkaError.INVALID_CONFIG, kutil.error_str(e)
    assert kutil.error_str(e) and kutil.error_str(e) != GENERIC_INVALID_CONFIG, \
        f"INVALID_CONFIG without a broker error message: {kutil.error_str(e)!r}"
    assert topic_name not in kutil.topic_names(admin)


# ---------------------------------------------------------------------------
# DescribeConfigs / IncrementalAlterConfigs / AlterConfigs
# ---------------------------------------------------------------------------


def test_describe_configs_defaults(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    entries = describe(admin, topic_name)
    missing = set(KAFKA_TOPIC_DEFAULTS) - set(entries)
    assert not missing, f"DescribeConfigs lacks {sorted(missing)}"
    for name in KAFKA_TOPIC_DEFAULTS:
        _assert_default(entries, name)


def test_create_with_configs_are_dynamic(broker, admin, topic_name):
    cfg = {"retention.ms": "3600000", "segment.bytes": "2097152", "message.timestamp.type": "LogAppendTime",
           "max.message.bytes": "2000000", "retention.bytes": "123456789", "cleanup.policy": "delete",
           "compression.type": "producer"}
    kutil.create_topic(admin, topic_name, 1, config=cfg)
    entries = describe(admin, topic_name)
    for name, value in cfg.items():
        assert entries[name].value == value, name
        assert _src(entries[name]) == ConfigSource.DYNAMIC_TOPIC_CONFIG, name
    for name in set(KAFKA_TOPIC_DEFAULTS) - set(cfg):
        _assert_default(entries, name)


def test_incremental_alter_roundtrip(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    incremental(admin, topic_name, [("retention.ms", "86400000", AlterConfigOpType.SET),
                                    ("segment.ms", "3600000", AlterConfigOpType.SET)])
    e = describe(admin, topic_name)
    assert (e["retention.ms"].value, _src(e["retention.ms"])) == ("86400000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert (e["segment.ms"].value, _src(e["segment.ms"])) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    _assert_default(e, "retention.bytes")

    # validate_only changes nothing
    incremental(admin, topic_name, [("retention.ms", "1000", AlterConfigOpType.SET)], validate_only=True)
    assert describe(admin, topic_name)["retention.ms"].value == "86400000"

    # DELETE reverts to the default; the other override stays
    incremental(admin, topic_name, [("retention.ms", None, AlterConfigOpType.DELETE)])
    e = describe(admin, topic_name)
    _assert_default(e, "retention.ms")
    assert e["segment.ms"].value == "3600000"


@pytest.mark.parametrize("name,value", [
    ("retention.ms", "abc"),
    ("retention.ms", "-2"),
    ("message.timestamp.type", "Tomorrow"),
    ("cleanup.policy", "shred"),
    ("compression.type", "lzma"),
    ("segment.bytes", "-1"),
    ("no.such.config", "1"),
])
def test_incremental_alter_invalid(broker, admin, topic_name, name, value):
    kutil.create_topic(admin, topic_name, 1, config={"retention.ms": "7200000"})
    with pytest.raises(KafkaException) as ei:
        incremental(admin, topic_name, [(name, value, AlterConfigOpType.SET)])
    assert kutil.error_code(ei.value) == KafkaError.INVALID_CONFIG, kutil.error_str(ei.value)
    assert kutil.error_str(ei.value) != GENERIC_INVALID_CONFIG, "INVALID_CONFIG without a message"
    e = describe(admin, topic_name)
    assert e["retention.ms"].value == "7200000", "a rejected alter must change nothing"
    if name in KAFKA_TOPIC_DEFAULTS and name != "retention.ms":
        _assert_default(e, name)


def test_incremental_alter_unknown_topic(broker, admin, topic_name):
    with pytest.raises(KafkaException) as ei:
        incremental(admin, topic_name, [("retention.ms", "1000", AlterConfigOpType.SET)])
    assert kutil.error_code(ei.value) == KafkaError.UNKNOWN_TOPIC_OR_PART, kutil.error_str(ei.value)


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_legacy_alter_configs_replaces_all(broker, admin, topic_name):
    """Non-incremental AlterConfigs sets the complete set of overrides:
    anything not named reverts to its default."""
    kutil.create_topic(admin, topic_name, 1, config={"retention.ms": "7200000"})
    res = ConfigResource(ResourceType.TOPIC, topic_name, set_config={"segment.ms": "3600000"})
    admin.alter_configs([res], request_timeout=30)[res].result(timeout=60)
    e = describe(admin, topic_name)
    assert (e["segment.ms"].value, _src(e["segment.ms"])) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    _assert_default(e, "retention.ms")


def test_describe_configs_unknown_topic(broker, admin, topic_name):
    with pytest.raises(KafkaException) as ei:
        describe(admin, topic_name)
    assert kutil.error_code(ei.value) == KafkaError.UNKNOWN_TOPIC_OR_PART, kutil.error_str(ei.value)


# ---------------------------------------------------------------------------
# CreatePartitions
# ---------------------------------------------------------------------------


def test_create_partitions(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 12)
    kutil.produce_one_per_batch(broker.bootstrap, topic_name,
                                [{"value": f"old{i}".encode(), "partition": 0} for i in range(10)])

    # validate_only changes nothing
    admin.create_partitions([NewPartitions(topic_name, 20)], validate_only=True)[topic_name].result(timeout=60)
    assert kutil.partition_count(admin, topic_name) == 12

    admin.create_partitions([NewPartitions(topic_name, 16)])[topic_name].result(timeout=60)
    kutil.wait_topic_ready(admin, topic_name, 16)

    dels = kutil.produce_one_per_batch(broker.bootstrap, topic_name,
                                       [{"value": f"new{i}".encode(), "key": b"k", "partition": 15} for i in range(5)])
    assert [(d.partition, d.offset) for d in dels] == [(15, i) for i in range(5)]
    assert broker.partition_dir(topic_name, 15).is_dir()
    res = kutil.consume(broker.bootstrap, topic_name, [15, 0], expected=15)
    assert [m.value for m in res.by_partition()[15]] == [f"new{i}".encode() for i in range(5)]
    assert [m.value for m in res.by_partition()[0]] == [f"old{i}".encode() for i in range(10)]

    for n in (16, 10):  # equal and fewer
        with pytest.raises(KafkaException) as ei:
            admin.create_partitions([NewPartitions(topic_name, n)])[topic_name].result(timeout=60)
        assert kutil.error_code(ei.value) == KafkaError.INVALID_PARTITIONS, (n, kutil.error_str(ei.value))
    assert kutil.partition_count(admin, topic_name) == 16


def test_create_partitions_unknown_topic(broker, admin, topic_name):
    with pytest.raises(KafkaException) as ei:
        admin.create_partitions([NewPartitions(topic_name, 4)])[topic_name].result(timeout=60)
    assert kutil.error_code(ei.value) == KafkaError.UNKNOWN_TOPIC_OR_PART, kutil.error_str(ei.value)


# ---------------------------------------------------------------------------
# DeleteTopics
# ---------------------------------------------------------------------------


def test_delete_and_recreate(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 3, config={"retention.ms": "7200000"})
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"v", "partition": p} for p in range(3) for _ in range(50)])
    assert kutil.watermarks(broker.bootstrap, topic_name, 1) == (0, 50)

    admin.delete_topics([topic_name], operation_timeout=30)[topic_name].result(timeout=60)
    kutil.wait_until(lambda: topic_name not in kutil.topic_names(admin), 15, what="topic gone from metadata")
    kutil.wait_until(lambda: not any(broker.partition_dir(topic_name, p).exists() for p in range(3)),
                     15, what="partition directories removed")

    # deleting again: unknown
    with pytest.raises(KafkaException) as ei:
        admin.delete_topics([topic_name])[topic_name].result(timeout=60)
    assert kutil.error_code(ei.value) == KafkaError.UNKNOWN_TOPIC_OR_PART, kutil.error_str(ei.value)

    # recreate: same name, fresh and empty, old configs gone
    kutil.create_topic(admin, topic_name, 2)
    for p in range(2):
        assert kutil.watermarks(broker.bootstrap, topic_name, p) == (0, 0)
    res = kutil.consume(broker.bootstrap, topic_name, [0, 1], expected=0)
    assert res.messages == []
    _assert_default(describe(admin, topic_name), "retention.ms")
    dels = kutil.produce(broker.bootstrap, topic_name, [{"value": b"fresh", "partition": 1}])
    assert dels[0].offset == 0


# ---------------------------------------------------------------------------
# Cluster / Metadata / ApiVersions
# ---------------------------------------------------------------------------


def test_describe_cluster_and_brokers(broker, admin):
    desc = admin.describe_cluster(request_timeout=30).result(timeout=60)
    assert [(n.id, n.host, n.port) for n in desc.nodes] == [(0, "127.0.0.1", broker.port)]
    assert desc.controller is not None and desc.controller.id == 0
    assert desc.cluster_id, "cluster id must be set"
    md = admin.list_topics(timeout=15)
    assert {b.id: (b.host, b.port) for b in md.brokers.values()} == {0: ("127.0.0.1", broker.port)}
    assert md.cluster_id == desc.cluster_id
    assert md.controller_id == 0


REQUIRED_APIS = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 18: "ApiVersions",
    19: "CreateTopics", 20: "DeleteTopics", 32: "DescribeConfigs", 33: "AlterConfigs",
    37: "CreatePartitions", 44: "IncrementalAlterConfigs", 60: "DescribeCluster",
}


def test_api_versions_raw(broker):
    with wire.KafkaConn.to(broker.bootstrap) as c:
        err, versions = c.api_versions(0)
        assert err == 0
        missing = {k: n for k, n in REQUIRED_APIS.items() if k not in versions}
        assert not missing, f"ApiVersions does not advertise {missing}"
        for k, (lo, hi) in versions.items():
            assert 0 <= lo <= hi, (k, lo, hi)
        # the raw tests rely on these versions
        assert versions[0][0] <= 3 <= versions[0][1], f"Produce v3 not supported: {versions[0]}"
        assert versions[1][0] <= 4 <= versions[1][1], f"Fetch v4 not supported: {versions[1]}"

        # KIP-511: an ApiVersions request of a version newer than the broker
        # knows (sent, like a newer client would, with header v2) gets a
        # v0-format UNSUPPORTED_VERSION (35) answer listing the supported versions.
        c.send_raw(wire.api_versions_future_request(4242, versions[18][1] + 1))
        err2, versions2 = wire.parse_api_versions_v0_response(c.recv_response(4242))
        assert err2 == 35, f"expected UNSUPPORTED_VERSION, got {err2}"
        assert versions2.get(18) == versions[18]
