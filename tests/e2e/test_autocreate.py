"""Topic auto-creation on Metadata, governed by auto.create.topics.enable
and num.partitions."""

import kutil
import wire

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5


def test_autocreate_on_produce_uses_num_partitions(broker_factory):
    b = broker_factory({"num.partitions": 5})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("auto")
    assert topic not in kutil.topic_names(adm)
    dels = kutil.produce(b.bootstrap, topic, [{"value": f"v{i}".encode(), "key": f"k{i}".encode()}
                                              for i in range(50)])
    assert all(d.error is None and d.offset >= 0 for d in dels)
    kutil.wait_topic_ready(adm, topic, 5)
    for p in {d.partition for d in dels}:
        assert b.partition_dir(topic, p).is_dir(), f"no directory for partition {p}"
    res = kutil.consume(b.bootstrap, topic, list(range(5)), expected=50)
    assert sorted(m.value for m in res.messages) == sorted(f"v{i}".encode() for i in range(50))


def test_autocreate_disabled(broker_factory):
    b = broker_factory({"auto.create.topics.enable": "false", "num.partitions": 2})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("noauto")
    dels = kutil.produce(b.bootstrap, topic, [{"value": b"x"}], allow_errors=True,
                         **{"message.timeout.ms": 5000})
    assert dels[0].error is not None, f"produce to a missing topic succeeded at offset {dels[0].offset}"
    assert topic not in kutil.topic_names(adm)
    assert not b.partition_dir(topic, 0).exists()
    # explicit creation still works, with the requested partition count
    kutil.create_topic(adm, topic, 4)
    dels = kutil.produce(b.bootstrap, topic, [{"value": b"y", "partition": 3}])
    assert (dels[0].partition, dels[0].offset) == (3, 0)


def test_metadata_request_flag_controls_autocreate(broker, admin, topic_name):
    """Metadata v4+ carries allow_auto_topic_creation: consumers send false
    and must not create topics by looking them up."""
    with wire.KafkaConn.to(broker.bootstrap) as c:
        _, _, topics = c.metadata_v4([topic_name], allow_auto_topic_creation=False)
        assert topics[topic_name].error_code == UNKNOWN_TOPIC_OR_PARTITION, topics[topic_name]
        assert topic_name not in kutil.topic_names(admin)

        _, _, topics = c.metadata_v4([topic_name], allow_auto_topic_creation=True)
        # Kafka answers LEADER_NOT_AVAILABLE while the new topic settles, or 0
        assert topics[topic_name].error_code in (0, LEADER_NOT_AVAILABLE), topics[topic_name]
    kutil.wait_topic_ready(admin, topic_name, 3)  # shared broker: num.partitions=3
    with wire.KafkaConn.to(broker.bootstrap) as c:
        brokers, controller, topics = c.metadata_v4([topic_name], allow_auto_topic_creation=False)
    assert brokers == [(0, "127.0.0.1", broker.port)] and controller == 0
    assert topics[topic_name].error_code == 0
    assert topics[topic_name].partitions == {p: (0, 0, [0], [0]) for p in range(3)}
