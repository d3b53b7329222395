"""Consumer groups: static membership (KIP-345). A static member restarted
within its session timeout gets its partitions back without a rebalance; a
dynamic member's restart rebalances; a second live instance with the same
group.instance.id fences the first."""

import time

import pytest

from confluent_kafka import KafkaError

import kutil

SESSION_MS = 10000
PARTITIONS = 6


def _static(instance, strategy=None):
    conf = {"group.instance.id": instance, "session.timeout.ms": SESSION_MS}
    if strategy:
        conf["partition.assignment.strategy"] = strategy
    return conf


def _setup(broker_factory, partitions=PARTITIONS):
    b = broker_factory(kutil.GROUP_BROKER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("static"), partitions)
    kutil.produce(b.bootstrap, topic, [{"value": f"v{q}".encode(), "partition": q} for q in range(partitions)])
    return b, adm, topic, kutil.unique("static-g")


def _wait_stable(adm, group, members, topic, partitions=PARTITIONS, timeout=30):
    want = {(topic, q) for q in range(partitions)}

    def ok():
        snaps = [m.snapshot_assignment() for m in members]
        if set().union(*snaps) != want or sum(map(len, snaps)) != partitions:
            return None
        d = kutil.describe_group(adm, group)
        ids = {m.member_id for m in members}
        if d.state.name != "STABLE" or {x.member_id for x in d.members} != ids:
            return None
        return d
    return kutil.wait_until(ok, timeout, interval=0.2, what=f"group {group} stable with {len(members)} members")


def _settled_generation(adm, group, members, quiet=1.5, timeout=30):
    """The generation once every member reports the same one and it has not
    changed for `quiet` seconds (cooperative-sticky follows a join with a
    second rebalance)."""
    deadline = time.monotonic() + timeout
    while True:
        gens = {m.generation for m in members}
        if len(gens) == 1 and min(gens) > 0:
            gen = gens.pop()
            time.sleep(quiet)
            if {m.generation for m in members} == {gen} and kutil.group_state(adm, group) == "STABLE":
                return gen
        assert time.monotonic() < deadline, f"generation did not settle: {[m.generation for m in members]}"
        time.sleep(0.1)


@pytest.mark.parametrize("restarted,strategy", [
    ("follower", None), ("leader", None), ("only-member", None), ("follower", "cooperative-sticky")])
def test_static_member_restart_within_session_timeout_no_rebalance(broker_factory, restarted, strategy):
    """`restarted` is which member is closed and restarted: the static
    member that joined second (follower), the one that joined first (the
    group leader), or the only member of the group. `strategy` None is
    librdkafka's default (range,roundrobin)."""
    b, adm, topic, group = _setup(broker_factory)
    bs = b.bootstrap
    members = []
    try:
        first = kutil.GroupMember("first", bs, group, [topic], **_static("inst-first", strategy)).start()
        members.append(first)
        first.wait_assigned(PARTITIONS)
        if restarted != "only-member":
            second = kutil.GroupMember("second", bs, group, [topic], **_static("inst-second", strategy)).start()
            members.append(second)
        d0 = _wait_stable(adm, group, members, topic)
        victim = {"follower": members[-1], "leader": members[0], "only-member": members[0]}[restarted]
        others = [m for m in members if m is not victim]
        gen0 = _settled_generation(adm, group, members)
        victim_parts = victim.snapshot_assignment()
        instance = f"inst-{victim.name}"
        print(f"generation {gen0}; members {[(x.member_id, x.group_instance_id) for x in d0.members]}")

        t_close = time.monotonic()
        victim.stop()   # a static member does not send LeaveGroup
        d1 = kutil.describe_group(adm, group)
        assert len(d1.members) == len(members), (
            f"closing a static member removed it from the group at once: {[x.member_id for x in d1.members]}")

        time.sleep(1.0)
        again = kutil.GroupMember(victim.name + "-again", bs, group, [topic], **_static(instance, strategy)).start()
        members.append(again)
        live = others + [again]
        d2 = _wait_stable(adm, group, live, topic)
        assert time.monotonic() - t_close < SESSION_MS / 1000, "restart took longer than the session timeout"
        assert again.member_id != victim.member_id
        assert {x.group_instance_id for x in d2.members} == {f"inst-{o.name}" for o in others} | {instance}
        kutil.wait_until(lambda: again.generation > 0, 10, what="restarted member's generation")
        assert again.generation == gen0, f"restart of a static member changed the generation {gen0} -> {again.generation}"
        for o in others:
            assert not o.events_since(t_close), f"{o.name} saw a rebalance: {o.events_since(t_close)}"
            assert o.generation == gen0
        assert again.snapshot_assignment() == victim_parts, "restarted static member got a different assignment"
        # the old member id must not linger and expire later into a rebalance
        kutil.wait_until(lambda: time.monotonic() > t_close + SESSION_MS / 1000 + 1.5, 30, what="session timeout passed")
        d3 = kutil.describe_group(adm, group)
        assert d3.state.name == "STABLE" and {x.member_id for x in d3.members} == {m.member_id for m in live}
        for m in live:
            assert m.generation == gen0, f"{m.name}: generation {gen0} -> {m.generation} after the old session ran out"
            assert not m.errors, [e.str() for e in m.errors]
        for o in others:
            assert not o.events_since(t_close), f"{o.name} saw a rebalance: {o.events_since(t_close)}"
        assert [e[1] for e in again.events] == ["assign"], f"restarted member's callbacks: {again.events}"
    finally:
        for m in members:
            m.stop()


def test_dynamic_member_restart_rebalances(broker_factory):
    b, adm, topic, group = _setup(broker_factory)
    bs = b.bootstrap
    a = kutil.GroupMember("a", bs, group, [topic], **{"session.timeout.ms": SESSION_MS}).start()
    members = [a]
    try:
        a.wait_assigned(PARTITIONS)
        d = kutil.GroupMember("d", bs, group, [topic], **{"session.timeout.ms": SESSION_MS}).start()
        members.append(d)
        _wait_stable(adm, group, [a, d], topic)
        kutil.wait_until(lambda: a.generation == d.generation > 0, 10, what="same generation")
        gen0 = a.generation
        t0 = time.monotonic()
        d.stop()            # dynamic: LeaveGroup, the group rebalances at once
        kutil.wait_until(lambda: len(a.snapshot_assignment()) == PARTITIONS, 20, what="a takes all partitions")
        d2 = kutil.GroupMember("d-again", bs, group, [topic], **{"session.timeout.ms": SESSION_MS}).start()
        members.append(d2)
        _wait_stable(adm, group, [a, d2], topic)
        kinds = [e[1] for e in a.events_since(t0)]
        assert "revoke" in kinds and "assign" in kinds, f"the other member saw no rebalance: {a.events_since(t0)}"
        kutil.wait_until(lambda: a.generation == d2.generation, 10, what="same generation after restart")
        assert a.generation >= gen0 + 2, f"generation {gen0} -> {a.generation}: expected a rebalance for the leave and one for the join"
    finally:
        for m in members:
            m.stop()


def test_second_instance_with_same_instance_id_fences_the_first(broker_factory):
    b, adm, topic, group = _setup(broker_factory)
    bs = b.bootstrap
    s1 = kutil.GroupMember("s1", bs, group, [topic], **_static("dup")).start()
    members = [s1]
    try:
        s1.wait_assigned(PARTITIONS)
        kutil.wait_until(lambda: s1.generation > 0, 10, what="s1 generation")
        old_id, old_gen = s1.member_id, s1.generation
        s2 = kutil.GroupMember("s2", bs, group, [topic], **_static("dup")).start()
        members.append(s2)
        kutil.wait_until(lambda: s1.fatal is not None, 30, what="s1 gets a fatal error (fenced)")
        err = s1.fatal
        print(f"s1 fatal error: code {err.code()} name {err.name()} str {err.str()!r}")
        # librdkafka raises FENCED_INSTANCE_ID as its fatal error (_FATAL on poll)
        assert err.code() in (KafkaError._FATAL, kutil.ERR_FENCED_INSTANCE_ID), err.str()
        assert "fenced by other consumer with same group.instance.id" in err.str(), err.str()
        s2.wait_assigned(PARTITIONS)
        d = kutil.describe_group(adm, group)
        assert [(x.member_id, x.group_instance_id) for x in d.members] == [(s2.member_id, "dup")]
        assert s2.member_id != old_id
        # the broker fences the old member id on its own protocol requests too
        assert kutil.heartbeat(bs, group, old_gen, old_id, "dup") == kutil.ERR_FENCED_INSTANCE_ID
        assert kutil.heartbeat(bs, group, s2.generation, s2.member_id, "dup") == 0
        assert not s2.errors, [e.str() for e in s2.errors]
    finally:
        for m in members:
            m.stop()
