"""Consumer groups: liveness. A member that does not poll within
max.poll.interval.ms is removed (librdkafka leaves the group) and its
partitions go to the member that keeps polling, which stays in the group
although its total processing time is well beyond max.poll.interval.ms."""

import time

from confluent_kafka import KafkaError

import kutil

PARTITIONS = 4
CONF = {"session.timeout.ms": 6000, "max.poll.interval.ms": 7000, "heartbeat.interval.ms": 500}
MAX_POLL_S = 7.0
STALL_S = 11.0


def test_slow_member_removed_after_max_poll_interval_fast_member_stays(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    topic = kutil.create_topic(adm, kutil.unique("liveness"), PARTITIONS)
    group = kutil.unique("liveness-g")
    prod = kutil.SteadyProducer(bs, topic, PARTITIONS, rate=100)
    prod.start()

    stall = {"armed": False, "started": None, "last_poll": None}

    def fast(member, msg):       # a little work per record, polls often
        time.sleep(0.005)

    def slow(member, msg):       # once armed: one record takes longer than max.poll.interval.ms
        if stall["armed"] and stall["started"] is None:
            stall["last_poll"] = member.last_poll
            stall["started"] = time.monotonic()
            time.sleep(STALL_S)

    a = kutil.GroupMember("fast", bs, group, [topic], process=fast, batch=20, **CONF).start()
    s = None
    try:
        a.wait_assigned(PARTITIONS)
        s = kutil.GroupMember("slow", bs, group, [topic], process=slow, batch=20, **CONF).start()

        def two_members():
            d = kutil.describe_group(adm, group)
            ok = (d.state.name == "STABLE" and len(d.members) == 2
                  and len(a.snapshot_assignment()) == 2 and len(s.snapshot_assignment()) == 2)
            return d if ok else None
        kutil.wait_until(two_members, 30, interval=0.2, what="two members with two partitions each")
        a_id = a.member_id
        slow_parts = s.snapshot_assignment()
        t_fast_start = time.monotonic()
        n_fast_start = len(a.records)
        stall["armed"] = True
        kutil.wait_until(lambda: stall["started"], 10, what="slow member starts its long processing")

        # the broker drops the slow member (librdkafka sends LeaveGroup once
        # max.poll.interval.ms passes without a poll); the fast one takes over
        def only_fast():
            d = kutil.describe_group(adm, group)
            if d.state.name == "STABLE" and [m.member_id for m in d.members] == [a_id]:
                return d
            return None
        d = kutil.wait_until(only_fast, MAX_POLL_S + 10, interval=0.1, what="slow member removed from the group")
        t_removed = time.monotonic()
        since_poll = t_removed - stall["last_poll"]
        print(f"slow member removed {since_poll:.2f}s after its last poll "
              f"(max.poll.interval.ms {MAX_POLL_S * 1000:.0f}, session.timeout.ms {CONF['session.timeout.ms']})")
        assert since_poll >= MAX_POLL_S - 0.2, "removed before max.poll.interval.ms although it kept heartbeating"
        assert kutil.member_assignments(d) == {a_id: {(topic, q) for q in range(PARTITIONS)}}
        kutil.wait_until(lambda: len(a.snapshot_assignment()) == PARTITIONS, 10, what="fast member owns all")
        # the fast member consumes the slow member's former partitions
        def got_moved():
            with a.lock:
                return any(t > t_removed and (tp, q) in slow_parts for t, tp, q, _, _ in a.records)
        kutil.wait_until(got_moved, 15, what="fast member reads the slow member's old partitions")

        # the slow member wakes up: its next poll reports MAX_POLL_EXCEEDED, then it rejoins
        kutil.wait_until(lambda: any(e.code() == KafkaError._MAX_POLL_EXCEEDED for e in s.errors), STALL_S + 10,
                         what="slow member told it exceeded max.poll.interval.ms")
        kutil.wait_until(two_members, 30, interval=0.2, what="slow member back in the group")

        # the fast member stayed a member all along, well past max.poll.interval.ms of work
        worked = time.monotonic() - t_fast_start
        n_fast = len(a.records) - n_fast_start
        print(f"fast member processed {n_fast} records over {worked:.1f}s (5 ms each) without leaving")
        assert worked > MAX_POLL_S and n_fast * 0.005 > 1.0
        assert a.member_id == a_id, "fast member lost its membership"
        assert not [e for e in a.errors if e.code() == KafkaError._MAX_POLL_EXCEEDED], a.errors
        assert not a.errors, [e.str() for e in a.errors]
        assert not [e for e in a.events if e[1] == "lost"], a.events

        prod.stop()
        hw = kutil.high_watermarks(bs, topic, PARTITIONS)

        def all_read():
            seen_now = a.offsets_seen() | s.offsets_seen()
            return all((topic, p, o) in seen_now for p, o in prod.acked)
        kutil.wait_until(all_read, 30, what="every produced record consumed by the group")
        assert sum(hw.values()) == len(prod.acked)
    finally:
        prod.stop_flag.set()
        a.stop()
        if s is not None:
            s.stop(timeout=STALL_S + 30)
