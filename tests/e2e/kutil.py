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


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    c = consumer(bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=15, cached=False)
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
