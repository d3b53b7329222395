"""Consumer groups across broker restarts (SIGTERM and kill -9): committed
offsets with their metadata and leader epochs come back, group membership is
rebuilt from __consumer_offsets so running members carry on without a
rebalance, and a static member that reconnects after the restart gets its
assignment back without one."""

import time

import pytest
from confluent_kafka import KafkaError, TopicPartition

import kutil

PARTITIONS = 4
TRANSPORT_ERRORS = (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT)


def _restart(b, mode):
    if mode == "sigterm":
        rc = b.stop()
        assert rc == 0, f"broker exited with code {rc} on SIGTERM"
        b.start()
    else:
        b.kill9()
        b.start()


def _wait_stable(adm, group, members, topic, timeout=30):
    want = {(topic, q) for q in range(PARTITIONS)}

    def ok():
        snaps = [m.snapshot_assignment() for m in members]
        if set().union(*snaps) != want or sum(map(len, snaps)) != PARTITIONS:
            return None
        d = kutil.describe_group(adm, group)
        if d.state.name != "STABLE" or {x.member_id for x in d.members} != {m.member_id for m in members}:
            return None
        return d
    return kutil.wait_until(ok, timeout, interval=0.2, what=f"group {group} stable")


@pytest.mark.parametrize("mode", ["sigterm", "kill9"])
def test_committed_offsets_and_metadata_survive_restart(broker_factory, mode):
    b = broker_factory(kutil.GROUP_BROKER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("commit-restart"), PARTITIONS)
    kutil.produce(b.bootstrap, topic, [{"value": f"{q}-{i}".encode(), "partition": q}
                                       for q in range(PARTITIONS) for i in range(20)])

    # group 1: a subscribed member commits offsets with metadata, then leaves
    g1 = kutil.unique("cr-sub")
    want1 = {q: (3 + q, f"sub meta {q} ✓", 0) for q in range(PARTITIONS)}
    c = kutil.group_consumer(b.bootstrap, g1)
    c.subscribe([topic])
    def assigned():
        c.poll(0.2)
        return len(c.assignment()) == PARTITIONS
    kutil.wait_until(assigned, 30, what="assignment")
    res = c.commit(offsets=[TopicPartition(topic, q, o, m, e) for q, (o, m, e) in want1.items()],
                   asynchronous=False)
    assert all(tp.error is None for tp in res), res
    c.close()

    # group 2: a manually assigned consumer (no group membership) commits
    g2 = kutil.unique("cr-simple")
    want2 = {q: (10 + q, "x" * (100 + q), 0) for q in range(PARTITIONS)}
    c = kutil.consumer(b.bootstrap, **{"group.id": g2})
    c.assign([TopicPartition(topic, q, 0) for q in range(PARTITIONS)])
    res = c.commit(offsets=[TopicPartition(topic, q, o, m, e) for q, (o, m, e) in want2.items()],
                   asynchronous=False)
    assert all(tp.error is None for tp in res), res
    c.close()

    def fetched(g):
        offs = kutil.committed(adm, g, topic, list(range(PARTITIONS)))
        return {q: (offs[(topic, q)].offset, offs[(topic, q)].metadata, offs[(topic, q)].leader_epoch)
                for q in range(PARTITIONS)}
    assert fetched(g1) == want1
    assert fetched(g2) == want2

    _restart(b, mode)
    adm = kutil.admin(b.bootstrap)
    kutil.wait_topic_ready(adm, topic, PARTITIONS)
    assert fetched(g1) == want1, f"committed offsets of {g1} after {mode} restart"
    assert fetched(g2) == want2, f"committed offsets of {g2} after {mode} restart"
    # ... and every committed partition, when asked for the whole group
    assert set(kutil.committed(adm, g1)) == {(topic, q) for q in range(PARTITIONS)}

    # a new member of group 1 resumes exactly at the committed offsets
    c = kutil.group_consumer(b.bootstrap, g1)
    c.subscribe([topic])
    first: dict[int, int] = {}
    deadline = time.monotonic() + 30
    try:
        while len(first) < PARTITIONS and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                first.setdefault(m.partition(), m.offset())
    finally:
        c.close()
    assert first == {q: o for q, (o, _, _) in want1.items()}


@pytest.mark.parametrize("mode", ["sigterm", "kill9"])
def test_running_members_carry_on_across_restart(broker_factory, mode):
    """Members keep running while the broker restarts: the group is rebuilt
    from __consumer_offsets (same members, same generation), so their
    heartbeats are accepted and nobody rebalances."""
    b = broker_factory(kutil.GROUP_BROKER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("member-restart"), PARTITIONS)
    group = kutil.unique("mr")
    conf = {"session.timeout.ms": 10000}
    dyn = kutil.GroupMember("dynamic", b.bootstrap, group, [topic], **conf).start()
    members = [dyn]
    try:
        dyn.wait_assigned(PARTITIONS)
        st = kutil.GroupMember("static", b.bootstrap, group, [topic], **conf, **{"group.instance.id": "st-1"}).start()
        members.append(st)
        d0 = _wait_stable(adm, group, members, topic)
        kutil.wait_until(lambda: dyn.generation == st.generation > 0, 10, what="same generation")
        gen0 = dyn.generation
        ids0 = {x.member_id: (x.group_instance_id, {(tp.topic, tp.partition) for tp in x.assignment.topic_partitions})
                for x in d0.members}

        t0 = time.monotonic()
        _restart(b, mode)
        adm = kutil.admin(b.bootstrap)
        d1 = kutil.describe_group(adm, group)
        print(f"after {mode} restart: {d1.state.name}, {[(x.member_id, x.group_instance_id) for x in d1.members]}")
        assert d1.state.name == "STABLE", f"group state after restart: {d1.state.name}"
        ids1 = {x.member_id: (x.group_instance_id, {(tp.topic, tp.partition) for tp in x.assignment.topic_partitions})
                for x in d1.members}
        assert ids1 == ids0, "membership/assignments not restored"

        # both members heartbeat successfully for a while (several heartbeats and
        # past the broker's reconnect window) without any rebalance
        time.sleep(4)
        d2 = kutil.describe_group(adm, group)
        assert d2.state.name == "STABLE" and {x.member_id for x in d2.members} == set(ids0)
        for m in members:
            assert m.generation == gen0, f"{m.name}: generation {gen0} -> {m.generation}"
            assert not m.events_since(t0), f"{m.name} rebalanced after the restart: {m.events_since(t0)}"
            # transport errors while the broker was down are expected
            assert not [e for e in m.errors if e.code() not in TRANSPORT_ERRORS], [e.str() for e in m.errors]
    finally:
        for m in members:
            m.stop()


@pytest.mark.parametrize("mode", ["sigterm", "kill9"])
def test_static_member_reconnecting_after_restart_no_rebalance(broker_factory, mode):
    """The static member's process is replaced while the broker restarts;
    its new instance joins (same group.instance.id, within the session
    timeout) and gets its partitions back without a rebalance."""
    b = broker_factory(kutil.GROUP_BROKER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("static-restart"), PARTITIONS)
    group = kutil.unique("sr")
    conf = {"session.timeout.ms": 15000}
    dyn = kutil.GroupMember("dynamic", b.bootstrap, group, [topic], **conf).start()
    members = [dyn]
    try:
        dyn.wait_assigned(PARTITIONS)
        st = kutil.GroupMember("static", b.bootstrap, group, [topic], **conf, **{"group.instance.id": "st-1"}).start()
        members.append(st)
        _wait_stable(adm, group, members, topic)
        kutil.wait_until(lambda: dyn.generation == st.generation > 0, 10, what="same generation")
        gen0 = dyn.generation
        st_parts = st.snapshot_assignment()

        t0 = time.monotonic()
        st.stop()                      # static: no LeaveGroup
        _restart(b, mode)
        st2 = kutil.GroupMember("static-again", b.bootstrap, group, [topic], **conf,
                                **{"group.instance.id": "st-1"}).start()
        members.append(st2)
        adm = kutil.admin(b.bootstrap)
        d = _wait_stable(adm, group, [dyn, st2], topic)
        kutil.wait_until(lambda: st2.generation > 0, 10, what="restarted member's generation")
        print(f"static member back after {time.monotonic() - t0:.2f}s; generation {gen0} -> {st2.generation}; "
              f"dynamic member events {dyn.events_since(t0)}")
        assert {x.group_instance_id for x in d.members} == {None, "st-1"}
        assert st2.generation == gen0, f"static member's return changed the generation {gen0} -> {st2.generation}"
        assert not dyn.events_since(t0), f"the dynamic member saw a rebalance: {dyn.events_since(t0)}"
        assert dyn.generation == gen0
        assert st2.snapshot_assignment() == st_parts, "static member came back to a different assignment"
    finally:
        for m in members:
            m.stop()
