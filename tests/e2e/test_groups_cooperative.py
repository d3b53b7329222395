"""Consumer groups: cooperative-sticky rebalancing under load. Three members
join and then leave one by one while a producer keeps producing; nothing is
lost, committed offsets end at the high watermark, and members keep their
unmoved partitions (and keep consuming them) across every rebalance."""

import time

import kutil

PARTITIONS = 12
CONF = {"partition.assignment.strategy": "cooperative-sticky"}


def _wait_balanced(adm, group, topic, members, what, timeout=45.0):
    """Wait until the live members own every partition between them, with no
    overlap, each has at least one, and the broker reports the group Stable
    with exactly these members."""
    want = {(topic, q) for q in range(PARTITIONS)}

    def ok():
        snaps = [m.snapshot_assignment() for m in members]
        union = set().union(*snaps)
        if union != want or sum(len(s) for s in snaps) != PARTITIONS or not all(snaps):
            return None
        d = kutil.describe_group(adm, group)
        if d.state.name != "STABLE" or len(d.members) != len(members):
            return None
        if {m.member_id for m in members} != {x.member_id for x in d.members}:
            return None
        return d
    return kutil.wait_until(ok, timeout, interval=0.2, what=what)


def _max_gap(times: list[float], lo: float, hi: float) -> float:
    """Largest gap between consecutive arrival times, within [lo, hi] (the
    window edges count as arrivals, so no data at all gives hi - lo)."""
    pts = [lo] + sorted(t for t in times if lo <= t <= hi) + [hi]
    return max(b - a for a, b in zip(pts, pts[1:]))


def test_cooperative_sticky_join_and_leave_under_load(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    topic = kutil.create_topic(adm, kutil.unique("coop"), PARTITIONS)
    group = kutil.unique("coop-g")

    prod = kutil.SteadyProducer(bs, topic, PARTITIONS)
    prod.start()
    members = {}
    phases = []  # (label, start, end, incumbents, before {name: set}, after {name: set})
    try:
        members["c1"] = kutil.GroupMember("c1", bs, group, [topic], **CONF).start()
        d = _wait_balanced(adm, group, topic, [members["c1"]], "c1 owns all partitions")
        assert d.partition_assignor == "cooperative-sticky", d.partition_assignor
        time.sleep(1.5)

        def phase(label, action, live_after, incumbents):
            before = {n: members[n].snapshot_assignment() for n in incumbents}
            start = time.monotonic()
            action()
            _wait_balanced(adm, group, topic, [members[n] for n in live_after], f"group balanced after {label}")
            end = time.monotonic()
            after = {n: members[n].snapshot_assignment() for n in incumbents}
            phases.append((label, start, end, incumbents, before, after))
            print(f"{label}: rebalanced in {end - start:.2f}s; "
                  + "; ".join(f"{n} {len(before[n])}->{len(after[n])}" for n in incumbents))
            time.sleep(1.5)  # steady consumption between rebalances

        def join(name):
            def go():
                members[name] = kutil.GroupMember(name, bs, group, [topic], **CONF).start()
            return go

        phase("c2 joins", join("c2"), ["c1", "c2"], ["c1"])
        phase("c3 joins", join("c3"), ["c1", "c2", "c3"], ["c1", "c2"])
        phase("c3 leaves", lambda: members["c3"].stop(), ["c1", "c2"], ["c1", "c2"])
        phase("c2 leaves", lambda: members["c2"].stop(), ["c1"], ["c1"])

        prod.stop()
        assert not prod.failed, prod.failed[:3]
        hw = kutil.high_watermarks(bs, topic, PARTITIONS)
        assert sum(hw.values()) == len(prod.acked)

        def caught_up():
            offs = kutil.committed(adm, group, topic, list(range(PARTITIONS)))
            return all(offs[(topic, q)].offset == hw[q] for q in range(PARTITIONS))
        kutil.wait_until(caught_up, 60, interval=0.3, what="c1 committed up to the high watermark")
        members["c1"].stop()
    finally:
        prod.stop_flag.set()
        for m in members.values():
            m._stop.set()
        for m in members.values():
            m.thread.join(30)

    # --- nothing lost or skipped
    seen = set()
    for m in members.values():
        seen |= {(q, o) for _, _, q, o, _ in m.records}
    missing = prod.acked - seen
    assert not missing, f"{len(missing)} produced records never consumed, e.g. {sorted(missing)[:10]}"
    offs = kutil.committed(adm, group, topic, list(range(PARTITIONS)))
    assert {q: offs[(topic, q)].offset for q in range(PARTITIONS)} == hw
    for m in members.values():
        assert not m.errors, f"{m.name} errors: {[e.str() for e in m.errors][:5]}"
        assert not [e for e in m.events if e[1] == "lost"], f"{m.name} lost partitions: {m.events}"
    dups = sum(len(m.records) for m in members.values()) - len(seen)
    print(f"produced {len(prod.acked)}, consumed {len(seen)} distinct, {dups} redeliveries")

    # --- per rebalance: incumbents lose only moved partitions, keep consuming the rest
    for label, start, end, incumbents, before, after in phases:
        for n in incumbents:
            m = members[n]
            evs = [e for e in m.events if start <= e[0] <= end + 0.5]
            revoked = {tp for _, kind, tps in evs if kind == "revoke" for tp in tps}
            kept = before[n] & after[n]
            moved = before[n] - after[n]
            assert not (revoked & kept), (
                f"{label}: {n} had retained partitions revoked: {sorted(revoked & kept)} (events {evs})")
            assert revoked == moved, f"{label}: {n} revoked {sorted(revoked)} but moved away {sorted(moved)}"
            if "leaves" in label:
                assert not revoked, f"{label}: {n} had partitions revoked although it only gains: {evs}"
                assert before[n] <= after[n]
            else:
                assert kept, f"{label}: {n} kept nothing ({before[n]} -> {after[n]})"
            times = [t for t, tp_topic, q, _, _ in m.records if (tp_topic, q) in kept]
            cb_times = [e[0] for e in evs] or [start]
            window_lo, window_hi = min(cb_times) - 1.0, max(cb_times) + 1.0
            last_before = max((t for t in times if t < min(cb_times)), default=None)
            first_after = min((t for t in times if t > max(cb_times)), default=None)
            during = sum(1 for t in times if min(cb_times) <= t <= max(cb_times))
            pause = _max_gap(times, window_lo, window_hi)
            span = (first_after - last_before) if (first_after and last_before) else float("nan")
            steady = _max_gap(times, end + 0.2, end + 1.4)  # same partitions, no rebalance
            print(f"  {label}: {n} kept {len(kept)} partitions; callbacks over "
                  f"{max(cb_times) - min(cb_times):.3f}s; last-before -> first-after {span:.3f}s; "
                  f"largest gap on kept partitions around the rebalance {pause:.3f}s; "
                  f"{during} records on kept partitions between its callbacks; "
                  f"steady-state largest gap afterwards {steady:.3f}s")
            assert pause < 5.0, f"{label}: {n} stopped consuming its kept partitions for {pause:.2f}s"
