"""kill -9 / restart cycles under load, with tiering running.

An idempotent acks=all producer (librdkafka) writes sequence-numbered
records to three partitions throughout; the broker uses 1 MiB segments and
a 1 s hot window, so segments are uploaded and deleted locally while it is
killed at random moments. Afterwards every acknowledged record must be
readable exactly once, in order, per partition, across the local/remote
boundary; the catalog must agree with the bucket and the local log. Cycle
count: STRATA_CRASH_CYCLES (default 50; `docs/reliability.md`).
"""

import os
import random
import statistics
import threading
import time

from confluent_kafka import Producer

import kutil
import tierutil as tu

CYCLES = int(os.environ.get("STRATA_CRASH_CYCLES", "50"))
PARTITIONS = 3
PAD = b"x" * 200


class SeqProducer(threading.Thread):
    """Writes value b"<partition>:<seq>|pad" to each partition in turn."""

    def __init__(self, bootstrap: str, topic: str, rate: int):
        super().__init__(daemon=True)
        self.topic = topic
        self.rate = rate
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 5, "message.timeout.ms": 600_000, "retry.backoff.ms": 50,
                           "reconnect.backoff.max.ms": 200, "socket.connection.setup.timeout.ms": 2000})
        self.acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.errors: list[str] = []
        self.sent = 0
        self.stop_sending = threading.Event()
        self.lock = threading.Lock()

    def _cb(self, err, msg):
        with self.lock:
            if err is not None:
                self.errors.append(f"{err}")
                return
            p, seq = msg.value().split(b"|", 1)[0].split(b":")
            self.acked[int(p)].append(int(seq))

    def run(self):
        seq = [0] * PARTITIONS
        t0 = time.monotonic()
        while not self.stop_sending.is_set():
            if self.sent > (time.monotonic() - t0) * self.rate:
                self.p.poll(0.005)
                continue
            part = self.sent % PARTITIONS
            try:
                self.p.produce(self.topic, value=b"%d:%d|" % (part, seq[part]) + PAD, partition=part,
                               on_delivery=self._cb)
            except BufferError:
                self.p.poll(0.05)
                continue
            seq[part] += 1
            self.sent += 1
            self.p.poll(0)

    def finish(self, timeout: float) -> int:
        self.stop_sending.set()
        self.join(10)
        return self.p.flush(timeout)


def test_kill9_cycles_lose_and_duplicate_nothing(broker_factory):
    b, bucket = tu.file_broker(broker_factory, {"num.partitions": PARTITIONS})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("crash"), PARTITIONS,
                               config={"segment.bytes": str(1 << 20), "local.retention.ms": "1000",
                                       "retention.ms": "86400000"})
    prod = SeqProducer(b.bootstrap, topic, rate=4000)
    prod.start()
    rnd = random.Random(13)
    restart_s = []
    for cycle in range(CYCLES):
        time.sleep(rnd.uniform(0.3, 1.5))
        b.kill9()
        assert b.last_returncode == -9, f"cycle {cycle}: broker had exited by itself ({b.last_returncode})"
        t = time.monotonic()
        b.start()
        restart_s.append(time.monotonic() - t)
    time.sleep(2)
    left = prod.finish(timeout=180)
    assert left == 0, f"{left} records never acknowledged"
    assert not prod.errors, f"producer errors: {prod.errors[:5]}"
    total = sum(len(v) for v in prod.acked.values())
    assert total > CYCLES * 300, f"only {total} records acknowledged over {CYCLES} cycles"

    # Every acknowledged record, exactly once, in order, from offset 0.
    res = kutil.consume(b.bootstrap, topic, list(range(PARTITIONS)), expected=total, timeout=180)
    assert not res.errors, [e.str() for e in res.errors]
    for p in range(PARTITIONS):
        msgs = [m for m in res.messages if m.partition == p]
        assert [m.offset for m in msgs] == list(range(len(msgs))), f"partition {p}: offsets not contiguous"
        seqs = [int(m.value.split(b"|", 1)[0].split(b":")[1]) for m in msgs]
        assert seqs == sorted(prod.acked[p]) == list(range(len(seqs))), \
            f"partition {p}: {len(seqs)} records read, {len(prod.acked[p])} acknowledged; " \
            f"first difference at {next((i for i, (a, c) in enumerate(zip(seqs, range(len(seqs)))) if a != c), None)}"

    # The catalog points only at objects that exist and meets the local log.
    tiered = 0
    for p in range(PARTITIONS):
        m = tu.manifest(bucket, topic, p)
        assert m is not None and m["segments"], f"partition {p}: nothing was tiered"
        end = tu.check_manifest(m)
        tu.check_segment_objects(bucket, m)
        assert tu.local_start(b, topic, p) <= end, f"partition {p}: gap between the bucket and the local log"
        tiered += len(m["segments"])
    print(f"\n{CYCLES} kill -9 cycles: {total} records acknowledged, all read back once; "
          f"{tiered} segments tiered; restart median {statistics.median(restart_s):.3f}s "
          f"max {max(restart_s):.3f}s")
