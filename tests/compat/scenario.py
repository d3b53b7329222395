"""The scenario every client runs, and its checks (tests/compat/README.md).

A client module supplies a *driver* (one method per stage, below) and gets
one pytest test per step. `run_scenario` drives the stages once per module
against that module's broker, recording what the client reported and, as
the yardstick, what an independent reader saw:

  create_topic        6 partitions, through the client's admin API
  produce:<codec>     PER_ROUND keyed records per codec, acks=all, explicit
                      CreateTime timestamps where the client can set them
  reference_read      every record read back by partition assignment with
                      librdkafka (confluent-kafka), and the stored batches'
                      compression read from the segment files
  consume_a           a group member reads FIRST_SHARE of the records,
                      commits exactly what it processed, describes the group
                      through the client's admin API (still a member), closes
                      (LeaveGroup)
  group_offsets_a     committed vs end offsets through the client's admin API
  consume_b           a new member of the same group reads the rest
  group_offsets_b     committed vs end offsets again (lag 0)
  describe_group      the group described through the client's admin API
                      once both members have left
  offsets_for_times   ListOffsets by timestamp for chosen timestamps

Every request of the client passes through a wire tap (wiretap.py) that
records its API version; the yardstick's own requests use client.id
REFERENCE and are left out.

Driver methods (recs are `Rec`s; partitions/offsets the client does not
report stay None):

  create_topic(topic, partitions)
  produce(topic, codec, recs) -> recs with partition, offset (and ts) filled in
  consume_group(topic, group, count, describe) -> (records in delivery order,
                     {partition: next offset committed}, describe_group(group)
                     taken after the commit and before leaving if `describe`,
                     else None; None also where the client cannot)
  group_offsets(topic, group) -> {partition: (committed or None, end offset)}
  describe_group(group) -> (state, number of members, protocol type)
  offsets_for_times(topic, timestamps) -> {ts: {partition: (offset or None,
                                                          timestamp or None)}}
Attributes: name, version, explicit_timestamps (bool),
none_is_end (bool: the client answers "no offset at or after ts" with the
end offset instead of -1, as kafkajs documents).
"""

from __future__ import annotations

import struct
import time
import traceback
from dataclasses import dataclass, field, replace

import pytest

import kutil

PARTITIONS = 6
KEYS = 24
PER_ROUND = 60                 # records per codec round
FIRST_SHARE = 0.4              # share of the records the first group member reads
TS_STEP = 10                   # ms between explicit timestamps
ALL_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_ID = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# Broker bugs the scenario found are fixed, not marked: FINDINGS.md lists
# them. A client module marks a step xfail(strict=True) only for a feature
# another issue covers.
REFERENCE = "strata-compat-reference"   # client.id of the yardstick's own requests (not the client's)
PAD = "compressible-payload-" * 8   # values compress well (librdkafka sends a batch
                                    # uncompressed when compression would not shrink it)


@dataclass
class Rec:
    seq: int
    codec: str
    key: str
    value: str
    ts: int | None = None          # CreateTime (planned, reported or read)
    partition: int | None = None
    offset: int | None = None


def value_of(codec: str, seq: int) -> str:
    return f"{codec}:{seq:05d}:{PAD}"


def parse(partition: int, offset: int, key, value, ts) -> Rec:
    """A consumed record -> Rec (seq and codec from the value)."""
    k = key.decode() if isinstance(key, (bytes, bytearray)) else key
    v = value.decode() if isinstance(value, (bytes, bytearray)) else value
    codec, seq, _ = v.split(":", 2)
    return Rec(int(seq), codec, k, v, int(ts) if ts is not None else None, partition, offset)


def plan(codecs, explicit_ts: bool, base_ts: int) -> dict[str, list[Rec]]:
    out, seq = {}, 0
    for c in codecs:
        rs = []
        for _ in range(PER_ROUND):
            rs.append(Rec(seq, c, f"key-{seq % KEYS:02d}", value_of(c, seq),
                          base_ts + seq * TS_STEP if explicit_ts else None))
            seq += 1
        out[c] = rs
    return out


class EmptyGroupProtocolType(AssertionError):
    """DescribeGroups of an emptied consumer group lost its protocol type
    (FINDINGS.md, broker bug 1, fixed); state and members checked out."""


class WrongStoredCodec(AssertionError):
    """A codec round's batches were stored with another compression than the
    one the client was configured with (raised only after the round trip
    itself checked out, so an xfail can be limited to it)."""


@dataclass
class Run:
    client: str
    version: str
    codecs: tuple
    driver: object
    broker: object
    topic: str
    group: str
    planned: dict = field(default_factory=dict)
    sent: dict = field(default_factory=dict)        # codec -> [Rec] as the client reported
    truth: list = field(default_factory=list)       # reference read, offset order per partition
    batches: dict = field(default_factory=dict)     # partition -> [(base, last, codec id)]
    a: list = field(default_factory=list)
    a_commit: dict = field(default_factory=dict)
    committed_a: dict = field(default_factory=dict)  # read independently (librdkafka AdminClient)
    offsets_a: dict = field(default_factory=dict)    # the client's admin API
    b: list = field(default_factory=list)
    b_commit: dict = field(default_factory=dict)
    committed_b: dict = field(default_factory=dict)
    offsets_b: dict = field(default_factory=dict)
    live: tuple | None = None                       # (state, members, protocol type) with member A in
    described: tuple = ()                           # the same after both left
    queries: list = field(default_factory=list)
    times: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)      # stage -> traceback text
    done: set = field(default_factory=set)
    seconds: dict = field(default_factory=dict)

    def need(self, *stages):
        for s in stages:
            if s in self.errors:
                pytest.fail(f"[{self.client}] stage {s} failed:\n{self.errors[s]}", pytrace=False)
            if s not in self.done:
                pytest.fail(f"[{self.client}] stage {s} did not run (an earlier stage failed: "
                            f"{sorted(self.errors)})", pytrace=False)

    # derived views of the reference read
    def total(self) -> int:
        return sum(len(v) for v in self.planned.values())

    def by_partition(self) -> dict[int, list[Rec]]:
        out: dict[int, list[Rec]] = {p: [] for p in range(PARTITIONS)}
        for r in self.truth:
            out[r.partition].append(r)
        return out

    def end_offsets(self) -> dict[int, int]:
        return {p: (rs[-1].offset + 1 if rs else 0) for p, rs in self.by_partition().items()}


def _stage(run: Run, name: str, fn):
    t0 = time.monotonic()
    try:
        fn()
        run.done.add(name)
    except BaseException as e:  # noqa: BLE001 - recorded, reported by the steps that need it
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        run.errors[name] = "".join(traceback.format_exception(e)).rstrip()
    finally:
        run.seconds[name] = round(time.monotonic() - t0, 2)


def _independent_committed(bs: str, group: str, topic: str) -> dict[int, int | None]:
    adm = kutil.admin(bs, **{"client.id": REFERENCE})
    offs = kutil.committed(adm, group, topic, list(range(PARTITIONS)))
    return {p: (offs[(topic, p)].offset if offs[(topic, p)].offset >= 0 else None) for p in range(PARTITIONS)}


def stored_batches(broker, topic: str, partition: int) -> list[tuple[int, int, int]]:
    """(base offset, last offset, compression id) of every record batch in the
    partition's segment files, read from disk."""
    out = []
    d = broker.partition_dir(topic, partition)
    for f in sorted(d.glob("*.log")):
        data = f.read_bytes()
        pos = 0
        while pos + 27 <= len(data):
            base, blen = struct.unpack_from(">qi", data, pos)
            if blen <= 0 or pos + 12 + blen > len(data):
                break
            magic = data[pos + 16]
            assert magic == 2, f"{f}: batch at {pos} has magic {magic}"
            attrs, last_delta = struct.unpack_from(">hi", data, pos + 21)
            out.append((base, base + last_delta, attrs & 7))
            pos += 12 + blen
    return out


def run_scenario(driver, broker, codecs, tag: str) -> Run:
    bs = broker.bootstrap
    run = Run(driver.name, driver.version, tuple(codecs), driver, broker,
              topic=kutil.unique(f"compat-{tag}"), group=kutil.unique(f"compat-{tag}-group"))
    base_ts = (int(time.time() * 1000) - 10 * 60 * 1000) // 1000 * 1000   # 10 min ago, whole second
    run.planned = plan(codecs, driver.explicit_timestamps, base_ts)

    def create():
        driver.create_topic(run.topic, PARTITIONS)
        kutil.wait_topic_ready(kutil.admin(bs, **{"client.id": REFERENCE}), run.topic, PARTITIONS)
    _stage(run, "create_topic", create)
    if "create_topic" in run.errors:
        return run

    for c in codecs:
        def prod(c=c):
            got = driver.produce(run.topic, c, [replace(r) for r in run.planned[c]])
            assert len(got) == len(run.planned[c]), f"{len(got)} acknowledgements for {len(run.planned[c])} records"
            run.sent[c] = got
        _stage(run, f"produce:{c}", prod)

    def reference():
        res = kutil.consume(bs, run.topic, list(range(PARTITIONS)), expected=None, timeout=60,
                            **{"client.id": REFERENCE})
        assert not res.errors, f"reference read errors: {[e.str() for e in res.errors]}"
        run.truth = sorted((parse(m.partition, m.offset, m.key, m.value, m.timestamp[1]) for m in res.messages),
                           key=lambda r: (r.partition, r.offset))
        run.batches = {p: stored_batches(broker, run.topic, p) for p in range(PARTITIONS)}
    _stage(run, "reference_read", reference)

    total = run.total()
    n_a = int(total * FIRST_SHARE)

    def consume_a():
        run.a, run.a_commit, run.live = driver.consume_group(run.topic, run.group, n_a, True)
        run.committed_a = _independent_committed(bs, run.group, run.topic)
    _stage(run, "consume_a", consume_a)

    def offsets_a():
        run.offsets_a = driver.group_offsets(run.topic, run.group)
    _stage(run, "group_offsets_a", offsets_a)

    def consume_b():
        run.b, run.b_commit, _ = driver.consume_group(run.topic, run.group, total - len(run.a), False)
        run.committed_b = _independent_committed(bs, run.group, run.topic)
    if "consume_a" not in run.errors:
        _stage(run, "consume_b", consume_b)

    def offsets_b():
        run.offsets_b = driver.group_offsets(run.topic, run.group)
    if "consume_b" in run.done:
        _stage(run, "group_offsets_b", offsets_b)

    def describe():
        run.described = driver.describe_group(run.group)
    if "consume_b" in run.done:
        _stage(run, "describe_group", describe)

    def times():
        run.queries = query_timestamps(run.truth)
        run.times = driver.offsets_for_times(run.topic, run.queries)
    if "reference_read" in run.done:
        _stage(run, "offsets_for_times", times)
    return run


def query_timestamps(truth: list[Rec]) -> list[int]:
    ts = sorted({r.ts for r in truth})
    assert ts, "no records to query"
    have = set(ts)
    picks = {ts[0] - 1000, ts[-1] + 1000}                       # before all, after all
    for i in (0, 1, len(ts) // 3, len(ts) // 2, len(ts) - 1):  # exact timestamps
        picks.add(ts[i])
    for i in (len(ts) // 5, (3 * len(ts)) // 4):                # between two timestamps
        t = ts[i] + 1
        while t in have:
            t += 1
        picks.add(t)
    return sorted(picks)


# ----------------------------------------------------------------------------
# steps
# ----------------------------------------------------------------------------

STEPS = (["create_topic"] + [f"produce_{c}" for c in ALL_CODECS]
         + ["per_key_order", "group_commit", "group_resume", "offsets_for_times", "group_lag",
            "describe_group_live", "describe_group_empty", "api_versions"])


def steps(skip: dict[str, str] | None = None, xfail: dict | None = None):
    """pytest params for every step. skip: step -> reason the client cannot
    do it at all (a codec it has no codec for, kcat's live describe); never
    for a missing install. xfail: step -> reason, or (reason, exception
    class) to expect only that failure; always strict."""
    skip, xfail = skip or {}, xfail or {}
    out = []
    for s in STEPS:
        marks = []
        if s in skip:
            marks.append(pytest.mark.skip(reason=skip[s]))
        if s in xfail:
            reason, raises = xfail[s] if isinstance(xfail[s], tuple) else (xfail[s], None)
            marks.append(pytest.mark.xfail(strict=True, reason=reason, raises=raises))
        out.append(pytest.param(s, marks=marks, id=s))
    return out


@dataclass
class Missing:
    """A client that is not installed: every step fails with how to install it."""
    message: str


def check(run, step: str):
    if isinstance(run, Missing):
        pytest.fail(run.message, pytrace=False)
    if step.startswith("produce_"):
        return check_produce(run, step.removeprefix("produce_"))
    globals()[f"check_{step}"](run)


def check_create_topic(run: Run):
    run.need("create_topic")
    md = kutil.admin(run.broker.bootstrap, **{"client.id": REFERENCE}).list_topics(run.topic, timeout=15).topics[run.topic]
    assert md.error is None and sorted(md.partitions) == list(range(PARTITIONS)), \
        f"metadata of {run.topic}: error {md.error}, partitions {sorted(md.partitions)}"


def _fmt(r: Rec) -> str:
    return f"seq {r.seq} key {r.key} ts {r.ts} -> {r.partition}@{r.offset}"


def check_produce(run: Run, codec: str):
    run.need(f"produce:{codec}", "reference_read")
    planned = {r.seq: r for r in run.planned[codec]}
    stored = {r.seq: r for r in run.truth if r.codec == codec}
    missing = sorted(set(planned) - set(stored))
    assert not missing, f"{len(missing)} acknowledged {codec} records not in the log, first seqs {missing[:10]}"
    dup = len([r for r in run.truth if r.codec == codec]) - len(stored)
    assert dup == 0, f"{dup} {codec} records stored twice"
    for s, r in planned.items():
        got = stored[s]
        assert (got.key, got.value) == (r.key, r.value), f"record {s} stored as key {got.key!r}"
        if r.ts is not None:
            assert got.ts == r.ts, f"record {s}: CreateTime {r.ts} sent, {got.ts} stored"
    # what the client was told in its acknowledgements
    for r in run.sent[codec]:
        t = stored[r.seq]
        if r.partition is not None:
            assert (r.partition, r.offset) == (t.partition, t.offset), \
                f"record {r.seq} acknowledged at {r.partition}@{r.offset}, stored at {t.partition}@{t.offset}"
        if r.ts is not None and r.ts >= 0 and t.ts is not None:
            assert r.ts == t.ts, f"record {r.seq} acknowledged with timestamp {r.ts}, stored {t.ts}"
    # stored batches: this round's records sit in batches of this codec only
    want = CODEC_ID[codec]
    mine: dict[int, set[int]] = {}
    for r in stored.values():
        mine.setdefault(r.partition, set()).add(r.offset)
    others = {(r.partition, r.offset) for r in run.truth if r.codec != codec}
    n_batches, wrong = 0, []
    for p, offs in mine.items():
        covered = set()
        for base, last, cid in run.batches[p]:
            if last < min(offs) or base > max(offs):
                continue
            n_batches += 1
            assert not any((p, o) in others for o in range(base, last + 1)), \
                f"partition {p} batch {base}..{last} mixes {codec} with other rounds' records"
            covered.update(range(base, last + 1))
            if cid != want:
                wrong.append(f"partition {p} batch {base}..{last}: compression id {cid}")
        assert offs <= covered, f"partition {p}: offsets {sorted(offs - covered)[:10]} in no stored batch"
    assert n_batches > 0
    if wrong:
        raise WrongStoredCodec(f"{len(wrong)} of {n_batches} {codec} batches stored with another compression "
                               f"than {want} ({codec}): {wrong[:6]}")


def check_per_key_order(run: Run):
    run.need("reference_read", *(f"produce:{c}" for c in run.codecs))
    truth_by_key: dict[str, list[Rec]] = {}
    for r in run.truth:
        truth_by_key.setdefault(r.key, []).append(r)
    assert len(truth_by_key) == KEYS
    for k, rs in truth_by_key.items():
        parts = {r.partition for r in rs}
        assert len(parts) == 1, f"key {k} spread over partitions {sorted(parts)}"
        seqs = [r.seq for r in sorted(rs, key=lambda r: r.offset)]
        assert seqs == sorted(seqs), f"key {k}: stored out of send order: {seqs}"
    # partitions used at all (a key partitioner spreading 12 keys)
    assert len({r.partition for r in run.truth}) > 1, "every key landed in one partition"
    # the order the group members delivered, when they ran
    for label, recs in (("first member", run.a), ("second member", run.b)):
        by_key: dict[str, list[int]] = {}
        for r in recs:
            by_key.setdefault(r.key, []).append(r.seq)
        for k, seqs in by_key.items():
            assert seqs == sorted(seqs), f"{label} delivered key {k} out of order: {seqs}"


def _check_consumed(run: Run, recs: list[Rec], label: str):
    truth = {(r.partition, r.offset): r for r in run.truth}
    for r in recs:
        t = truth.get((r.partition, r.offset))
        assert t is not None, f"{label} got {r.partition}@{r.offset}, not in the log"
        assert (r.key, r.value) == (t.key, t.value), f"{label} got {r.partition}@{r.offset} key {r.key!r}, log has {t.key!r}"
        if r.ts is not None:
            assert r.ts == t.ts, f"{label} got {r.partition}@{r.offset} with timestamp {r.ts}, log has {t.ts}"


def check_group_commit(run: Run):
    run.need("reference_read", "consume_a")
    _check_consumed(run, run.a, "first member")
    n_a = int(run.total() * FIRST_SHARE)
    assert len(run.a) == n_a, f"first member processed {len(run.a)} records, asked for {n_a}"
    got: dict[int, list[int]] = {}
    for r in run.a:
        got.setdefault(r.partition, []).append(r.offset)
    for p, offs in got.items():
        assert offs == list(range(len(offs))), f"first member: partition {p} offsets {offs[:20]}... not 0..{len(offs) - 1}"
    want = {p: len(offs) for p, offs in got.items()}
    assert run.a_commit == want, f"the client committed {run.a_commit}, processed up to {want}"
    stored = {p: o for p, o in run.committed_a.items() if o is not None}
    assert stored == want, f"committed offsets read back {stored}, committed {want}"


def check_group_resume(run: Run):
    run.need("reference_read", "consume_a", "consume_b")
    _check_consumed(run, run.b, "second member")
    first_b: dict[int, int] = {}
    for r in run.b:
        first_b.setdefault(r.partition, r.offset)
    ends = run.end_offsets()
    for p in range(PARTITIONS):
        start = run.committed_a.get(p) or 0
        if p in first_b:
            assert first_b[p] == start, f"second member started partition {p} at {first_b[p]}, committed {start}"
    a_set = {(r.partition, r.offset) for r in run.a}
    b_list = [(r.partition, r.offset) for r in run.b]
    again = sorted(a_set & set(b_list))
    assert not again, f"{len(again)} committed records delivered again, first {again[:10]}"
    assert len(b_list) == len(set(b_list)), "second member got a record twice"
    everything = {(r.partition, r.offset) for r in run.truth}
    missed = sorted(everything - a_set - set(b_list))
    assert not missed, f"{len(missed)} records never delivered to the group, first {missed[:10]}"
    assert run.b_commit == {p: e for p, e in ends.items() if e > (run.committed_a.get(p) or 0)}, \
        f"second member committed {run.b_commit}, end offsets {ends}"
    want = {p: (e if e > 0 else None) for p, e in ends.items()}   # nothing to commit in an empty partition
    assert run.committed_b == want, f"committed offsets read back {run.committed_b}, end offsets {ends}"


def check_offsets_for_times(run: Run):
    run.need("reference_read", "offsets_for_times")
    parts = run.by_partition()
    ends = run.end_offsets()
    bad = []
    for t in run.queries:
        answer = run.times.get(t)
        assert answer is not None, f"no answer for timestamp {t}"
        for p in range(PARTITIONS):
            hit = next((r for r in parts[p] if r.ts >= t), None)
            if hit is None:
                want = (ends[p] if run.driver.none_is_end else None, None)
            else:
                want = (hit.offset, hit.ts)
            off, ts = answer.get(p, ("missing", None))
            if off != want[0] or (ts is not None and ts != want[1]):
                bad.append(f"ts {t} partition {p}: got offset {off} timestamp {ts}, expected {want[0]} timestamp {want[1]}")
    assert not bad, f"{len(bad)} wrong answers:\n" + "\n".join(bad[:20])


def check_group_lag(run: Run):
    run.need("reference_read", "consume_a", "group_offsets_a", "consume_b", "group_offsets_b")
    ends = run.end_offsets()
    unconsumed = run.total() - len(run.a)
    lag_a = {}
    for p in range(PARTITIONS):
        committed, end = run.offsets_a[p]
        assert committed == run.a_commit.get(p), \
            f"after the first member: partition {p} committed {committed} per the client's admin API, committed {run.a_commit.get(p)}"
        assert end == ends[p], f"after the first member: partition {p} end offset {end}, log ends at {ends[p]}"
        lag_a[p] = end - (committed or 0)
    assert sum(lag_a.values()) == unconsumed, f"lag {lag_a} sums to {sum(lag_a.values())}, {unconsumed} unconsumed"
    for p in range(PARTITIONS):
        committed, end = run.offsets_b[p]
        want = ends[p] if ends[p] > 0 else None   # an empty partition has nothing committed
        assert (committed, end) == (want, ends[p]), \
            f"after the second member: partition {p} committed {committed} end {end}, expected lag 0 at {ends[p]}"


def check_describe_group_live(run: Run):
    run.need("consume_a")
    assert run.live is not None, f"{run.client}'s driver returned no description"
    state, members, protocol_type = run.live
    assert (str(state).lower(), members, protocol_type) == ("stable", 1, "consumer"), \
        f"group described as state {state!r}, {members} members, protocol type {protocol_type!r} with its " \
        f"one member in; expected Stable, 1, 'consumer'"


def check_describe_group_empty(run: Run):
    run.need("describe_group")
    state, members, protocol_type = run.described
    assert (str(state).lower(), members) == ("empty", 0), \
        f"group described as state {state!r} with {members} members after both members left; expected Empty, 0"
    # Kafka keeps a classic group's protocol type when its last member leaves
    # (ClassicGroup.initNextGeneration clears only the protocol name).
    if protocol_type != "consumer":
        raise EmptyGroupProtocolType(f"empty group described with protocol type {protocol_type!r}; "
                                     "Kafka answers 'consumer'")


def used_versions(run: Run) -> dict[int, set[int]]:
    return run.broker.tap.versions(exclude_client_ids={REFERENCE})


def check_api_versions(run: Run):
    """Every request the client sent used a version the broker advertises."""
    import wiretap
    used = used_versions(run)
    assert used, "no requests recorded by the wire tap"
    assert not run.broker.tap.unparsed, f"request streams the tap could not parse: {run.broker.tap.unparsed}"
    adv = run.broker.advertised

    def ok(k, v):
        return k in adv and adv[k][0] <= v <= adv[k][1]
    # ApiVersions is the one request sent before the client knows the ranges:
    # a version above them is answered in v0 with UNSUPPORTED_VERSION and the
    # ranges (KIP-511), and the client retries within them.
    bad = [f"{wiretap.api_name(k)} v{v} (advertised {adv.get(k)})"
           for k, vs in sorted(used.items()) for v in sorted(vs) if not ok(k, v) and k != 18]
    assert not bad, f"requests outside the advertised ranges: {bad}"
    assert any(ok(18, v) for v in used.get(18, ())), \
        f"no ApiVersions request within {adv.get(18)}: {sorted(used.get(18, ()))}"


def versions_line(run: Run) -> str:
    import wiretap
    return ", ".join(f"{wiretap.api_name(k)} v{'/'.join(map(str, sorted(vs)))}"
                     for k, vs in sorted(used_versions(run).items()))


def run_client(missing: str | None, make_driver, broker, codecs, tag: str):
    """A client module's run: `Missing(missing)` if the client is not
    installed (every step then fails with how to install it), else the
    scenario with `make_driver()`, its summary printed."""
    if missing:
        return Missing(missing)
    run = run_scenario(make_driver(), broker, codecs, tag)
    print(summary(run))
    return run


def summary(run: Run) -> str:
    return (f"{run.client} {run.version}: topic {run.topic}, {run.total()} records, codecs {','.join(run.codecs)}; "
            f"stage seconds {run.seconds}; failed stages {sorted(run.errors) or 'none'}; "
            f"API versions used: {versions_line(run)}")
