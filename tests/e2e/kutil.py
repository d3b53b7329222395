"""Helpers around confluent-kafka (librdkafka) used by the e2e tests."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

# librdkafka noise goes to stderr; pytest captures it and shows it on failure.
COMMON = {"socket.timeout.ms": 20000, "broker.address.family": "v4"}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def wait_until(pred, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """Poll pred() until it returns a truthy value; return that value.
    On timeout raise AssertionError naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last value: {last!r})")
        time.sleep(interval)


def admin(bootstrap: str, **conf) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **COMMON, **conf})


def producer(bootstrap: str, **conf) -> Producer:
    base = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
            "linger.ms": 5, "message.timeout.ms": 30000, **COMMON}
    base.update(conf)
    return Producer(base)


def consumer(bootstrap: str, **conf) -> Consumer:
    # group.id is mandatory for the Python Consumer, but the tests only ever
    # use assign(), never subscribe() or commit, so no group APIs are needed.
    base = {"bootstrap.servers": bootstrap, "group.id": unique("e2e"),
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "auto.offset.reset": "error", "enable.partition.eof": True,
            "fetch.wait.max.ms": 100, **COMMON}
    base.update(conf)
    return Consumer(base)


def error_code(exc: BaseException) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].code()
    return None


def error_str(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].str()
    return str(exc)


# ----------------------------------------------------------------------------
# topics
# ----------------------------------------------------------------------------


def topic_names(adm: AdminClient) -> set[str]:
    return set(adm.list_topics(timeout=15).topics)


def partition_count(adm: AdminClient, topic: str) -> int | None:
    md = adm.list_topics(timeout=15).topics.get(topic)
    if md is None or md.error is not None:
        return None
    return len(md.partitions)


def wait_topic_ready(adm: AdminClient, topic: str, partitions: int, timeout: float = 30.0):
    def ready():
        full = adm.list_topics(timeout=15)
        md = full.topics.get(topic)
        if md is None or md.error is not None or len(md.partitions) != partitions:
            return False
        return all(p.leader in full.brokers and p.error is None for p in md.partitions.values())
    wait_until(ready, timeout, what=f"topic {topic} with {partitions} partitions, each with a leader")


def create_topic(adm: AdminClient, name: str, partitions: int = 1, config: dict | None = None,
                 replication_factor: int = 1) -> str:
    fut = adm.create_topics([NewTopic(name, partitions, replication_factor, config=config or {})],
                            operation_timeout=30, request_timeout=30)[name]
    fut.result(timeout=60)
    wait_topic_ready(adm, name, partitions)
    return name


# ----------------------------------------------------------------------------
# produce
# ----------------------------------------------------------------------------


@dataclass
class Delivery:
    index: int
    error: KafkaError | None
    partition: int
    offset: int
    timestamp: tuple[int, int]
    key: bytes | None
    value: bytes | None


def produce(bootstrap: str, topic: str, records: list[dict], allow_errors: bool = False,
            flush_timeout: float = 60.0, **conf) -> list[Delivery]:
    """Produce records (dicts with value/key/headers/partition/timestamp) and
    wait for all delivery reports. Returns them in produce order."""
    p = producer(bootstrap, **conf)
    results: list[Delivery | None] = [None] * len(records)

    def cb_for(i):
        def cb(err, msg):
            results[i] = Delivery(i, err, msg.partition(), msg.offset(), msg.timestamp(),
                                  msg.key(), msg.value())
        return cb

    for i, r in enumerate(records):
        kw = {k: r[k] for k in ("key", "headers", "partition", "timestamp") if k in r and r[k] is not None}
        while True:
            try:
                p.produce(topic, value=r.get("value"), on_delivery=cb_for(i), **kw)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    remaining = p.flush(flush_timeout)
    assert remaining == 0, f"{remaining} messages still undelivered after {flush_timeout}s flush"
    assert all(r is not None for r in results), "missing delivery reports"
    if not allow_errors:
        errs = [r for r in results if r.error is not None]
        assert not errs, f"{len(errs)} deliveries failed, first: {errs[0].error}"
    return results  # type: ignore[return-value]


def produce_one_per_batch(bootstrap: str, topic: str, records: list[dict], **conf) -> list[Delivery]:
    """Produce each record in its own request, hence its own batch: the next
    record is only handed to the client after the previous one is acked."""
    p = producer(bootstrap, **{"linger.ms": 0, **conf})
    out: list[Delivery] = []
    for i, r in enumerate(records):
        got: list[Delivery] = []

        def cb(err, msg, i=i):
            got.append(Delivery(i, err, msg.partition(), msg.offset(), msg.timestamp(),
                                msg.key(), msg.value()))

        kw = {k: r[k] for k in ("key", "headers", "partition", "timestamp") if k in r and r[k] is not None}
        p.produce(topic, value=r.get("value"), on_delivery=cb, **kw)
        assert p.flush(30) == 0, "record not delivered within 30s"
        assert got and got[0].error is None, f"delivery {i} failed: {got and got[0].error}"
        out.append(got[0])
    return out


# ----------------------------------------------------------------------------
# consume
# ----------------------------------------------------------------------------


@dataclass
class Msg:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list | None
    timestamp: tuple[int, int]


@dataclass
class ConsumeResult:
    messages: list[Msg] = field(default_factory=list)
    errors: list[KafkaError] = field(default_factory=list)         # partition-level (topic set)
    client_errors: list[KafkaError] = field(default_factory=list)  # client-level (topic None), e.g.
    # coordinator lookups the group-less tests never need; reported on timeout only

    def all_error_codes(self) -> set[int]:
        return {e.code() for e in self.errors + self.client_errors}

    def by_partition(self) -> dict[int, list[Msg]]:
        out: dict[int, list[Msg]] = {}
        for m in self.messages:
            out.setdefault(m.partition, []).append(m)
        return out


def consume(bootstrap: str, topic: str, partitions: list[int] | dict[int, int],
            expected: int | None = None, timeout: float = 60.0,
            stop_on_partition_error: bool = True, stop_on_codes: tuple = (), **conf) -> ConsumeResult:
    """Assign the partitions (list -> from OFFSET_BEGINNING, dict -> from the
    given offsets) and read until every partition reports EOF and, if given,
    at least `expected` messages arrived. Raises AssertionError on timeout,
    with all errors seen. Partition-level errors (other than EOF) stop the
    read and are returned in .errors if stop_on_partition_error."""
    if isinstance(partitions, dict):
        assignment = [TopicPartition(topic, p, o) for p, o in partitions.items()]
    else:
        assignment = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions]
    c = consumer(bootstrap, **conf)
    res = ConsumeResult()
    eof: set[int] = set()
    want = {tp.partition for tp in assignment}
    try:
        c.assign(assignment)
        deadline = time.monotonic() + timeout
        while True:
            if eof == want and (expected is None or len(res.messages) >= expected):
                return res
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"consume({topic}) timed out after {timeout}s: got {len(res.messages)} messages "
                    f"(expected {expected}), EOF on {sorted(eof)} of {sorted(want)}, errors: "
                    f"{[e.str() for e in res.errors][:10]}, client errors: {[e.str() for e in res.client_errors][:10]}")
            for m in c.consume(num_messages=2000, timeout=0.5):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    (res.errors if m.topic() is not None else res.client_errors).append(err)
                    if err.code() in stop_on_codes or (m.topic() is not None and stop_on_partition_error):
                        return res
                    continue
                eof.discard(m.partition())
                res.messages.append(Msg(m.topic(), m.partition(), m.offset(), m.key(), m.value(),
                                        m.headers(), m.timestamp()))
    finally:
        c.close()


def read_to_end(bootstrap: str, topic: str, partitions: int, isolation: str,
                timeout: float = 60.0) -> list[bytes]:
    """Every record value from offset 0 to each partition's end as a consumer
    of `isolation` sees it (the last stable offset for read_committed), in
    arrival order. Fails unless every partition reaches its end in time."""
    c = consumer(bootstrap, **{"isolation.level": isolation, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[bytes] = []
        eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(eof) < partitions:
            assert time.monotonic() < deadline, f"{isolation}: no end on {set(range(partitions)) - eof}"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                eof.add(m.partition())
                continue
            eof.discard(m.partition())
            out.append(m.value())
        return out
    finally:
        c.close()


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    c = consumer(bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=15, cached=False)
    finally:
        c.close()


def ends(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[int]:
    """Each partition's end for `isolation`: the last stable offset for
    read_committed, the high watermark for read_uncommitted."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("ends"),
                  "isolation.level": isolation, "broker.address.family": "v4"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)]
    finally:
        c.close()


def offsets_for_times(bootstrap: str, topic: str, partition: int, timestamps: list[int]) -> list[int]:
    c = consumer(bootstrap)
    try:
        out = []
        for ts in timestamps:
            r = c.offsets_for_times([TopicPartition(topic, partition, ts)], timeout=15)
            assert r[0].error is None, f"offsets_for_times({ts}) error {r[0].error}"
            out.append(r[0].offset)
        return out
    finally:
        c.close()


SEGMENT_LOG = re.compile(r"^(\d{20})\.log$")


def segment_sizes(broker, topic: str, partition: int = 0) -> dict[int, int]:
    """{base offset: size} of the partition's .log segment files, sorted."""
    d = broker.partition_dir(topic, partition)
    if not d.is_dir():
        have = sorted(p.name for p in broker.data_dir.iterdir())[:30]
        raise AssertionError(f"partition directory {d} does not exist; data dir holds {have}")
    out = {}
    for f in d.iterdir():
        m = SEGMENT_LOG.match(f.name)
        if m:
            out[int(m.group(1))] = f.stat().st_size
    return dict(sorted(out.items()))


# ----------------------------------------------------------------------------
# consumer groups (used by test_groups*.py)
# ----------------------------------------------------------------------------

import struct  # noqa: E402
import threading  # noqa: E402

# Broker settings for group tests: no initial rebalance delay (Kafka's 3 s
# default would add 3 s to every first join).
GROUP_BROKER = {"group.initial.rebalance.delay.ms": 0}

# Kafka error codes the group tests look for.
ERR_UNKNOWN_MEMBER_ID = 25
ERR_REBALANCE_IN_PROGRESS = 27
ERR_GROUP_ID_NOT_FOUND = 69
ERR_NON_EMPTY_GROUP = 68
ERR_FENCED_INSTANCE_ID = 82
ERR_GROUP_SUBSCRIBED_TO_TOPIC = 86


def group_consumer(bootstrap: str, group: str, **conf) -> Consumer:
    """A consumer for subscribe(): manual commits, earliest reset, short
    heartbeats so rebalances are quick."""
    base = {"bootstrap.servers": bootstrap, "group.id": group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
            "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 5000, **COMMON}
    base.update(conf)
    return Consumer(base)


def cgmd_generation(c: Consumer) -> tuple[int, str]:
    """(generation, member id) from librdkafka's serialized consumer group
    metadata: "CGMDv2:" + int32 generation (host order) + group id NUL +
    member id NUL + ..."""
    b = c.consumer_group_metadata()
    assert b[:7] == b"CGMDv2:", f"unexpected consumer_group_metadata format {b[:16]!r}"
    gen = struct.unpack("=i", b[7:11])[0]
    rest = b[11:]
    _, _, rest = rest.partition(b"\x00")
    member, _, _ = rest.partition(b"\x00")
    return gen, member.decode()


def describe_group(adm: AdminClient, group: str, timeout: float = 30.0):
    """confluent-kafka ConsumerGroupDescription of one group."""
    return adm.describe_consumer_groups([group], request_timeout=timeout)[group].result(timeout=timeout + 10)


def group_state(adm: AdminClient, group: str) -> str:
    return describe_group(adm, group).state.name  # e.g. "STABLE", "EMPTY", "DEAD"


def member_assignments(desc) -> dict[str, set[tuple[str, int]]]:
    """{member id: {(topic, partition)}} of a ConsumerGroupDescription."""
    return {m.member_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
            for m in desc.members}


def committed(adm: AdminClient, group: str, topic: str | None = None,
              partitions: list[int] | None = None, timeout: float = 30.0) -> dict[tuple[str, int], TopicPartition]:
    """Committed offsets via AdminClient.list_consumer_group_offsets:
    {(topic, partition): TopicPartition (offset, metadata, leader_epoch)}.
    Without topic, every committed partition of the group."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    tps = None if topic is None else [TopicPartition(topic, p) for p in partitions]
    req = ConsumerGroupTopicPartitions(group, tps)
    res = adm.list_consumer_group_offsets([req], request_timeout=timeout)[group].result(timeout=timeout + 10)
    out = {}
    for tp in res.topic_partitions:
        assert tp.error is None, f"offset fetch error for {tp}: {tp.error}"
        out[(tp.topic, tp.partition)] = tp
    return out


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    c = consumer(bootstrap)
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)[1]
                for p in range(partitions)}
    finally:
        c.close()


# --- raw wire requests librdkafka's AdminClient does not offer --------------

def offset_delete(bootstrap: str, group: str, topics: dict[str, list[int]]) -> tuple[int, dict[tuple[str, int], int]]:
    """OffsetDelete v0 (API 47): (top-level error, {(topic, partition): error})."""
    import wire
    body = wire.kstring(group) + struct.pack(">i", len(topics))
    for t, ps in topics.items():
        body += wire.kstring(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
    with wire.KafkaConn.to(bootstrap) as conn:
        r = wire.Reader(conn.request(47, 0, body))
    err = r.i16()
    r.i32()  # throttle
    out = {}

    def topic(rr):
        name = rr.string()

        def part(r2):
            p = r2.i32()
            out[(name, p)] = r2.i16()
        rr.array(part)
    r.array(topic)
    return err, out


def group_with_offsets(bootstrap: str, topic: str, records: int, offsets: dict[int, int],
                       prefix: str = "group", value: bytes = b"v") -> str:
    """Fills each partition in `offsets` with `records` records, then
    commits `offsets` ({partition: offset}) for a new group with no
    members; returns the group's id (lag and reset tests)."""
    p = producer(bootstrap)
    for part in offsets:
        for i in range(records):
            p.produce(topic, value=value, partition=part)
    assert p.flush(30) == 0
    group = unique(prefix)
    c = group_consumer(bootstrap, group)
    c.commit(offsets=[TopicPartition(topic, part, o) for part, o in offsets.items()], asynchronous=False)
    c.close()
    return group


def heartbeat(bootstrap: str, group: str, generation: int, member_id: str,
              instance_id: str | None = None) -> int:
    """Heartbeat v3 (API 12) sent on behalf of a member; returns the error code."""
    import wire
    body = wire.kstring(group) + struct.pack(">i", generation) + wire.kstring(member_id) + wire.kstring(instance_id)
    with wire.KafkaConn.to(bootstrap) as conn:
        r = wire.Reader(conn.request(12, 3, body))
    r.i32()  # throttle
    return r.i16()


# --- a subscribed consumer driven by its own thread --------------------------

class GroupMember:
    """A subscribe()d confluent-kafka consumer polled in its own thread.

    Records every message (monotonic time, topic, partition, offset, value),
    every rebalance callback, and every error. After each polled batch it
    commits the next offsets of what it processed (synchronously) when
    `commit` is true; on revoke it first commits the revoked partitions'
    progress, so whoever takes them over continues where it stopped.
    `process(member, msg)` runs per message (e.g. to sleep).
    """

    def __init__(self, name: str, bootstrap: str, group: str, topics: list[str],
                 commit: bool = True, process=None, batch: int = 200, **conf):
        self.name = name
        self.topics = topics
        self.commit_enabled = commit
        self.process = process
        self.batch = batch
        self.consumer = group_consumer(bootstrap, group, **conf)
        self.lock = threading.Lock()
        self.records: list[tuple[float, str, int, int, bytes | None]] = []
        self.events: list[tuple[float, str, list[tuple[str, int]]]] = []
        self.assignment: set[tuple[str, int]] = set()
        self.errors: list[KafkaError] = []
        self.commit_errors: list[str] = []
        self.fatal: KafkaError | None = None
        self.generation = -1
        self.member_id = ""
        self.last_poll = time.monotonic()
        self._progress: dict[tuple[str, int], int] = {}   # next offset to commit
        self._committed: dict[tuple[str, int], int] = {}
        self._stop = threading.Event()
        self._calls: list = []   # (fn, done event, result box) run on the member's thread
        self.closed = threading.Event()
        self.close_error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)

    # -- callbacks (run inside poll on the member's thread)
    def _on_assign(self, c, parts):
        tps = [(p.topic, p.partition) for p in parts]
        with self.lock:
            self.events.append((time.monotonic(), "assign", tps))
            self.assignment |= set(tps)

    def _on_revoke(self, c, parts):
        tps = [(p.topic, p.partition) for p in parts]
        self._commit(set(tps))
        with self.lock:
            self.events.append((time.monotonic(), "revoke", tps))
            self.assignment -= set(tps)

    def _on_lost(self, c, parts):
        tps = [(p.topic, p.partition) for p in parts]
        with self.lock:
            self.events.append((time.monotonic(), "lost", tps))
            self.assignment -= set(tps)

    def _commit(self, only: set | None = None):
        if not self.commit_enabled:
            return
        todo = [TopicPartition(t, p, o) for (t, p), o in self._progress.items()
                if self._committed.get((t, p)) != o and (only is None or (t, p) in only)]
        if not todo:
            return
        try:
            res = self.consumer.commit(offsets=todo, asynchronous=False)
            for tp in res or []:
                if tp.error is None:
                    self._committed[(tp.topic, tp.partition)] = tp.offset
                else:
                    self.commit_errors.append(f"{tp.topic}/{tp.partition}: {tp.error}")
        except KafkaException as e:
            self.commit_errors.append(error_str(e))

    def _run(self):
        c = self.consumer
        c.subscribe(self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
        try:
            while not self._stop.is_set():
                msgs = c.consume(num_messages=self.batch, timeout=0.2)
                self.last_poll = time.monotonic()
                now = time.monotonic()
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            with self.lock:
                                self.errors.append(err)
                            # librdkafka reports a fatal error (e.g. fenced) as _FATAL
                            if err.fatal() or err.code() == KafkaError._FATAL:
                                self.fatal = err
                        continue
                    with self.lock:
                        self.records.append((now, m.topic(), m.partition(), m.offset(), m.value()))
                    self._progress[(m.topic(), m.partition())] = m.offset() + 1
                    if self.process is not None:
                        self.process(self, m)
                self._commit()
                self._run_calls()
                try:
                    self.generation, self.member_id = cgmd_generation(c)
                except Exception:  # noqa: BLE001 - informational only
                    pass
                if self.fatal is not None:
                    break
        finally:
            try:
                c.close()
            except BaseException as e:  # noqa: BLE001
                self.close_error = e
            self.closed.set()

    def _run_calls(self):
        with self.lock:
            calls, self._calls = self._calls, []
        for fn, done, box in calls:
            try:
                box["result"] = fn(self.consumer)
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                box["error"] = e
            done.set()

    # -- control (main thread)
    def call(self, fn, timeout: float = 30.0):
        """Run fn(consumer) on the member's own thread (the Python client
        must not be used from two threads at once) and return its result."""
        done, box = threading.Event(), {}
        with self.lock:
            self._calls.append((fn, done, box))
        assert done.wait(timeout), f"member {self.name} did not run the call within {timeout}s"
        if "error" in box:
            raise box["error"]
        return box["result"]

    def start(self) -> "GroupMember":
        self.thread.start()
        return self

    def stop(self, timeout: float = 30.0):
        """Leave: stop polling and close() the consumer (LeaveGroup for a
        dynamic member; a static member does not leave)."""
        self._stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"member {self.name} did not stop within {timeout}s"

    def snapshot_assignment(self) -> set[tuple[str, int]]:
        with self.lock:
            return set(self.assignment)

    def events_since(self, t: float) -> list[tuple[float, str, list[tuple[str, int]]]]:
        with self.lock:
            return [e for e in self.events if e[0] >= t]

    def offsets_seen(self) -> set[tuple[str, int, int]]:
        with self.lock:
            return {(t, p, o) for _, t, p, o, _ in self.records}

    def wait_assigned(self, n: int | None = None, timeout: float = 30.0):
        """Wait until the member has an assignment (of exactly n partitions if given)."""
        def ok():
            a = self.snapshot_assignment()
            return a if (len(a) == n if n is not None else a) else None
        return wait_until(ok, timeout, what=f"member {self.name} assigned {n if n is not None else 'any'} partitions")


class SteadyProducer(threading.Thread):
    """Produces round-robin over every partition at about `rate` records/s
    until stopped; remembers every acknowledged (partition, offset)."""

    def __init__(self, bootstrap, topic, partitions, rate=400):
        super().__init__(daemon=True)
        self.p = producer(bootstrap, **{"acks": "all", "linger.ms": 5, "enable.idempotence": False})
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.acked: set[tuple[int, int]] = set()
        self.failed = []
        self.stop_flag = threading.Event()
        self.unflushed = -1

    def _cb(self, err, msg):
        if err is not None:
            self.failed.append(err)
        else:
            self.acked.add((msg.partition(), msg.offset()))

    def run(self):
        i = 0
        t0 = time.monotonic()
        while not self.stop_flag.is_set():
            due = int((time.monotonic() - t0) * self.rate)
            while i < due:
                try:
                    self.p.produce(self.topic, value=f"r{i}".encode(), partition=i % self.partitions,
                                   on_delivery=self._cb)
                    i += 1
                except BufferError:
                    break
            self.p.poll(0.01)
        self.unflushed = self.p.flush(60)

    def stop(self):
        """Stop producing and wait for every delivery report."""
        self.stop_flag.set()
        self.join(90)
        assert not self.is_alive(), "producer thread did not stop"
        assert self.unflushed == 0, f"{self.unflushed} records undelivered"
        assert not self.failed, f"{len(self.failed)} deliveries failed, first {self.failed[0]}"
