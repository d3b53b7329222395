"""Consumer groups through the AdminClient: ListGroups (with a state
filter), DescribeGroups, DeleteGroups (only when empty), OffsetDelete
(refused for subscribed topics), and committed offsets removed with their
topic."""

from confluent_kafka import ConsumerGroupState, KafkaException, TopicPartition

import kutil

PARTITIONS = 4


def _listed(adm, states=None) -> dict[str, str]:
    kw = {"states": states} if states is not None else {}
    res = adm.list_consumer_groups(request_timeout=30, **kw).result(timeout=40)
    assert not res.errors, res.errors
    return {g.group_id: g.state.name for g in res.valid}


def _commit_simple(bootstrap, group, offsets: dict[tuple[str, int], int], metadata=None):
    """Commit from a consumer that never joins the group (assign + commit)."""
    c = kutil.consumer(bootstrap, **{"group.id": group})
    try:
        tps = [TopicPartition(t, q, o, metadata) if metadata else TopicPartition(t, q, o)
               for (t, q), o in offsets.items()]
        res = c.commit(offsets=tps, asynchronous=False)
        assert all(tp.error is None for tp in res), res
    finally:
        c.close()


def _stable(adm, group, members, topic):
    def ok():
        if sum(len(m.snapshot_assignment()) for m in members) != PARTITIONS:
            return None
        d = kutil.describe_group(adm, group)
        if d.state.name == "STABLE" and {x.member_id for x in d.members} == {m.member_id for m in members}:
            return d
        return None
    return kutil.wait_until(ok, 30, interval=0.2, what=f"group {group} stable")


def test_list_and_describe_groups(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    topic = kutil.create_topic(adm, kutil.unique("adm-groups"), PARTITIONS)
    live, empty, simple = kutil.unique("live"), kutil.unique("empty"), kutil.unique("simple")

    m1 = kutil.GroupMember("m1", bs, live, [topic], **{"client.id": "client-one"}).start()
    m2 = None
    try:
        m1.wait_assigned(PARTITIONS)
        m2 = kutil.GroupMember("m2", bs, live, [topic], **{"client.id": "client-two",
                                                            "group.instance.id": "inst-two"}).start()
        d = _stable(adm, live, [m1, m2], topic)

        e = kutil.GroupMember("e", bs, empty, [topic]).start()
        e.wait_assigned(PARTITIONS)
        e.stop()
        _commit_simple(bs, simple, {(topic, 0): 5})
        _commit_simple(bs, empty, {(topic, 1): 7})   # the emptied group keeps offsets too
        kutil.wait_until(lambda: kutil.group_state(adm, empty) == "EMPTY", 20, what="empty group")

        # describe the live group
        assert d.group_id == live
        assert d.state == ConsumerGroupState.STABLE
        assert not d.is_simple_consumer_group
        assert d.partition_assignor == "range", d.partition_assignor
        by_id = {x.member_id: x for x in d.members}
        assert set(by_id) == {m1.member_id, m2.member_id}
        assert by_id[m1.member_id].client_id == "client-one"
        assert by_id[m2.member_id].client_id == "client-two"
        assert by_id[m1.member_id].group_instance_id is None
        assert by_id[m2.member_id].group_instance_id == "inst-two"
        assert all(x.host and "127.0.0.1" in x.host for x in d.members), [x.host for x in d.members]
        assigned = {x.member_id: {(tp.topic, tp.partition) for tp in x.assignment.topic_partitions}
                    for x in d.members}
        assert assigned == {m1.member_id: m1.snapshot_assignment(), m2.member_id: m2.snapshot_assignment()}
        assert set().union(*assigned.values()) == {(topic, q) for q in range(PARTITIONS)}

        # describe the empty group and a group that never existed
        de = kutil.describe_group(adm, empty)
        assert de.state == ConsumerGroupState.EMPTY and not de.members
        try:
            dn = kutil.describe_group(adm, kutil.unique("never"))
            assert dn.state == ConsumerGroupState.DEAD and not dn.members, dn
        except KafkaException as ex:   # newer brokers: GROUP_ID_NOT_FOUND
            assert kutil.error_code(ex) == kutil.ERR_GROUP_ID_NOT_FOUND, ex

        # list, with and without a state filter
        every = _listed(adm)
        assert {live: "STABLE", empty: "EMPTY", simple: "EMPTY"}.items() <= every.items(), every
        assert "__consumer_offsets" not in every
        stable = _listed(adm, {ConsumerGroupState.STABLE})
        assert live in stable and empty not in stable and simple not in stable, stable
        empties = _listed(adm, {ConsumerGroupState.EMPTY})
        assert {empty, simple} <= set(empties) and live not in empties, empties
        both = _listed(adm, {ConsumerGroupState.EMPTY, ConsumerGroupState.STABLE})
        assert {live, empty, simple} <= set(both)
        assert not (set(_listed(adm, {ConsumerGroupState.PREPARING_REBALANCING})) & {live, empty, simple})
    finally:
        m1.stop()
        if m2 is not None:
            m2.stop()


def test_delete_group_only_when_empty(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    topic = kutil.create_topic(adm, kutil.unique("adm-del"), PARTITIONS)
    group = kutil.unique("del")
    m = kutil.GroupMember("m", bs, group, [topic]).start()
    try:
        m.wait_assigned(PARTITIONS)
        _stable(adm, group, [m], topic)
        kutil.produce(bs, topic, [{"value": b"x", "partition": q} for q in range(PARTITIONS)])
        kutil.wait_until(lambda: len(kutil.committed(adm, group)) == PARTITIONS, 30, what="member commits")

        fut = adm.delete_consumer_groups([group], request_timeout=30)[group]
        try:
            fut.result(timeout=40)
            raise AssertionError("deleting a group with a live member succeeded")
        except KafkaException as ex:
            assert kutil.error_code(ex) == kutil.ERR_NON_EMPTY_GROUP, kutil.error_str(ex)
        assert kutil.group_state(adm, group) == "STABLE"
        assert len(kutil.committed(adm, group)) == PARTITIONS, "failed delete touched the offsets"
    finally:
        m.stop()

    kutil.wait_until(lambda: kutil.group_state(adm, group) == "EMPTY", 20, what="group empty")
    adm.delete_consumer_groups([group], request_timeout=30)[group].result(timeout=40)
    assert group not in _listed(adm)
    assert kutil.committed(adm, group) == {}, "offsets of a deleted group are still returned"
    offs = kutil.committed(adm, group, topic, list(range(PARTITIONS)))
    assert all(tp.offset < 0 for tp in offs.values()), offs

    # deleting again (or a group that never existed) is GROUP_ID_NOT_FOUND
    for g in (group, kutil.unique("never")):
        try:
            adm.delete_consumer_groups([g], request_timeout=30)[g].result(timeout=40)
            raise AssertionError(f"deleting missing group {g} succeeded")
        except KafkaException as ex:
            assert kutil.error_code(ex) == kutil.ERR_GROUP_ID_NOT_FOUND, kutil.error_str(ex)

    # the deletion is durable
    b.restart()
    adm = kutil.admin(bs)
    assert group not in _listed(adm)
    assert kutil.committed(adm, group) == {}


def test_offset_delete_only_for_unsubscribed_topics(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    subscribed = kutil.create_topic(adm, kutil.unique("od-sub"), 2)
    other = kutil.create_topic(adm, kutil.unique("od-other"), 2)
    group = kutil.unique("od")
    m = kutil.GroupMember("m", bs, group, [subscribed], commit=False).start()
    try:
        m.wait_assigned(2)
        # the live member commits offsets for its topic and for one it does not subscribe to
        res = None

        def commit_all():
            nonlocal res
            try:
                res = m.call(lambda c: c.commit(
                    offsets=[TopicPartition(subscribed, 0, 1), TopicPartition(subscribed, 1, 2),
                             TopicPartition(other, 0, 3), TopicPartition(other, 1, 4)], asynchronous=False))
                return True
            except KafkaException as ex:   # e.g. a rebalance right after joining
                return kutil.error_code(ex) != kutil.ERR_REBALANCE_IN_PROGRESS and ex
        ok = kutil.wait_until(commit_all, 20, what="commit")
        assert ok is True, ok
        assert all(tp.error is None for tp in res), res
        before = {k: v.offset for k, v in kutil.committed(adm, group).items()}
        assert before == {(subscribed, 0): 1, (subscribed, 1): 2, (other, 0): 3, (other, 1): 4}

        err, parts = kutil.offset_delete(bs, group, {other: [0, 1], subscribed: [0]})
        assert err == 0, err
        assert parts == {(other, 0): 0, (other, 1): 0, (subscribed, 0): kutil.ERR_GROUP_SUBSCRIBED_TO_TOPIC}, parts
        after = {k: v.offset for k, v in kutil.committed(adm, group).items()}
        assert after == {(subscribed, 0): 1, (subscribed, 1): 2}, after
    finally:
        m.stop()

    # once the group is empty, the subscribed topic's offsets can be deleted too
    kutil.wait_until(lambda: kutil.group_state(adm, group) == "EMPTY", 20, what="group empty")
    err, parts = kutil.offset_delete(bs, group, {subscribed: [1]})
    assert (err, parts) == (0, {(subscribed, 1): 0})
    assert {k: v.offset for k, v in kutil.committed(adm, group).items()} == {(subscribed, 0): 1}
    # unknown group
    err, _ = kutil.offset_delete(bs, kutil.unique("never"), {subscribed: [0]})
    assert err == kutil.ERR_GROUP_ID_NOT_FOUND
    # durable
    b.restart()
    adm = kutil.admin(bs)
    assert {k: v.offset for k, v in kutil.committed(adm, group).items()} == {(subscribed, 0): 1}


def test_deleting_a_topic_removes_its_committed_offsets(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    doomed = kutil.create_topic(adm, kutil.unique("doomed"), 2)
    kept = kutil.create_topic(adm, kutil.unique("kept"), 2)
    groups = [kutil.unique("tdel-a"), kutil.unique("tdel-b")]
    for g in groups:
        _commit_simple(bs, g, {(doomed, 0): 11, (doomed, 1): 12, (kept, 0): 13}, metadata="m")
    assert {k: v.offset for k, v in kutil.committed(adm, groups[0]).items()} == \
        {(doomed, 0): 11, (doomed, 1): 12, (kept, 0): 13}

    adm.delete_topics([doomed], operation_timeout=30)[doomed].result(timeout=60)
    kutil.wait_until(lambda: doomed not in kutil.topic_names(adm), 30, what="topic deleted")
    for g in groups:
        got = {k: v.offset for k, v in kutil.committed(adm, g).items()}
        assert got == {(kept, 0): 13}, f"{g}: offsets after deleting {doomed}: {got}"

    # a topic re-created under the same name starts without stale offsets
    kutil.create_topic(adm, doomed, 2)
    kutil.produce(bs, doomed, [{"value": b"new", "partition": q} for q in (0, 1)])
    offs = kutil.committed(adm, groups[0], doomed, [0, 1])
    assert all(tp.offset < 0 for tp in offs.values()), offs
    c = kutil.group_consumer(bs, groups[0])
    c.subscribe([doomed])
    try:
        got = kutil.wait_until(lambda: c.poll(0.3), 30, what="a record of the re-created topic")
        assert got.error() is None and got.offset() == 0, (got.error(), got.offset())
    finally:
        c.close()

    # the removal survives a restart
    b.restart()
    adm = kutil.admin(bs)
    got = {k: v.offset for k, v in kutil.committed(adm, groups[1]).items()}
    assert got == {(kept, 0): 13}, f"after restart: {got}"
