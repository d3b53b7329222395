"""Owned by the Kafka Streams part of issue 34: the pytest driver for the
Kafka Streams application in tests/compat/streams/ (its README.md documents
the test, its sizes and its findings).

A Kafka Streams 4.4.0 application (streams/src/main/java/io/strata/streams/
TotalsApp.java: re-key -> repartition topic -> groupByKey -> aggregate into a
RocksDB store whose changelog is a compacted topic -> output topic;
processing.guarantee=exactly_once_v2) runs as a child JVM against a real
Strata broker. Mid-run the broker is killed with SIGKILL and restarted on the
same data dir and port, then the application is killed with SIGKILL, its
local state dir deleted (so its store must be restored from the changelog),
and started again. Every input record carries a unique id and an amount;
the last read_committed output value of every account must be exactly
(its number of records, the sum of their amounts): each input counted once.

Forty "cold" accounts get records only in the first and the last 10 % of
the input (the last 10 % is held back until the application was restarted):
their counts after the restart continue from what the restored store held.
At the end the repartition topic must have been purged (DeleteRecords).

test_streams_exactly_once_survives_kill_9       plain topics
test_streams_restore_from_bucket_hot_window     the input, repartition and
    changelog topics keep one second locally (local.retention.ms=1000, small
    segments), and the application is killed only once the changelog's local
    log start is above every cold account's last changelog record: those
    values are then in the bucket only, so the restore must read the bucket
    (also shown by the restore's start offset, below the local log start,
    and strata_remote_fetch_bytes_total).

Size: STRATA_STREAMS_RECORDS (default 200000, the CI size; 1000000 is the
full size, also with STRATA_FULL=1). The broker is never built here (STRATA_BIN or
target/release/strata); the application is built with Maven into
target/compat-streams when its sources are newer than its jar.
STRATA_STREAMS_JAVA_OPTS adds JVM options to the application (e.g.
-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.admin=debug).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

import kutil
from sizes import size
from strata_broker import Broker, BrokerError, check_binary

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MODULE = HERE / "streams"
BUILD = REPO / "target" / "compat-streams"
MAIN_CLASS = "io.strata.streams.TotalsApp"

RECORDS = size(200000, 1000000, "STRATA_STREAMS_RECORDS")   # tests/e2e/sizes.py
ACCOUNTS = 997
# "Cold" accounts get records only in the first and the last COLD_SHARE of the
# input: between the two, their latest values sit in old changelog segments
# (in the hot-window run: in the bucket only), and the late records show
# whether the restored store had them.
COLD_ACCOUNTS = 40
COLD_SHARE = 0.1
PARTITIONS = 4
HOT_WINDOW_MS = 1000
APP_HEAP = os.environ.get("STRATA_STREAMS_HEAP", "256m")
# The input is produced at a steady pace over this long, while the application runs.
PRODUCE_SECONDS = float(os.environ.get("STRATA_STREAMS_PRODUCE_SECONDS", str(max(40.0, RECORDS / 5000))))
# Bound on each wait of the run (a phase of progress, a restore); generous for 2 cores.
PHASE_TIMEOUT = float(os.environ.get("STRATA_STREAMS_PHASE_TIMEOUT", str(max(120.0, RECORDS / 1000))))
RUN_TIMEOUT = 600 + 3 * PRODUCE_SECONDS

BROKER_SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "log.retention.check.interval.ms": 500,      # the hot window enforced within a second
    "remote.log.manager.task.interval.ms": 500,  # segments sealed (segment.ms) and uploaded promptly
}
HOT_TOPIC_CONFIG = {
    "local.retention.ms": str(HOT_WINDOW_MS),
    "segment.ms": "1000",
    "segment.bytes": str(256 * 1024),
    "remote.storage.enable": "true",
}


# ----------------------------------------------------------------------------
# the application
# ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app_classpath() -> str:
    """Builds the application with Maven when its sources are newer than its
    jar; a failure to build fails the test, never skips it."""
    jar = BUILD / "strata-streams-compat-0.1.0.jar"
    deps = BUILD / "dependency"
    sources = [MODULE / "pom.xml", *MODULE.rglob("*.java")]
    fresh = jar.exists() and deps.is_dir() and all(
        s.stat().st_mtime <= jar.stat().st_mtime for s in sources)
    if not fresh:
        mvn = shutil.which("mvn")
        if mvn is None:
            pytest.fail("Maven (mvn) is needed to build tests/compat/streams: apt-get install maven "
                        "(and a JDK 17)", pytrace=False)
        r = subprocess.run([mvn, "-B", "-q", "-f", str(MODULE / "pom.xml"), "package",
                            "dependency:copy-dependencies"], capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            pytest.fail(f"mvn package failed ({r.returncode}):\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}",
                        pytrace=False)
    return f"{jar}:{deps}/*"


class App:
    """The Streams application as a child JVM; its stdout and stderr go to
    one log file, appended across starts."""

    def __init__(self, classpath: str, bootstrap: str, app_id: str, inp: str, out: str,
                 state_dir: Path, log_path: Path, hot_window_ms: int):
        self.cmd = ["java", f"-Xmx{APP_HEAP}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true",
                    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                    *os.environ.get("STRATA_STREAMS_JAVA_OPTS", "").split(),
                    "-cp", classpath, MAIN_CLASS,
                    bootstrap, app_id, inp, out, str(state_dir), str(hot_window_ms)]
        self.state_dir = state_dir
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> int:
        """Starts the JVM; returns the log offset where this start's output begins."""
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== app start #{self.starts}\n".encode())
            log.flush()
            offset = log.tell()
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        return offset

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"the Streams application exited with code {self.proc.returncode}\n"
                                 f"--- app log ({self.log_path}) ---\n{self.log_tail()}")

    def kill9(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self, timeout: float = 90) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def lines(self, start: int = 0) -> list[str]:
        with open(self.log_path, "rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace").splitlines()

    def log_tail(self, n: int = 15000) -> str:
        text = "\n".join(self.lines())
        return text[-n:]


# ----------------------------------------------------------------------------
# the output, read as it is committed
# ----------------------------------------------------------------------------


class Output:
    """Reads the output topic with isolation.level=read_committed from the
    beginning, keeping each account's committed values in order."""

    def __init__(self, bootstrap: str, topic: str):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": kutil.unique("streams-out"),
                           "isolation.level": "read_committed", "enable.auto.commit": False,
                           "enable.partition.eof": True,
                           "broker.address.family": "v4", "fetch.wait.max.ms": 200})
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        self.latest: dict[str, tuple[int, int]] = {}
        self.history: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.records = 0
        self.eof: set[int] = set()

    def drain(self, seconds: float = 0.5):
        """Reads what is there now (for at most `seconds`)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msgs = self.c.consume(10000, timeout=0.2)
            for m in msgs:
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        self.eof.add(m.partition())
                    else:
                        print(f"output consumer: {m.error()}")
                    continue
                self.eof.discard(m.partition())
                acct = m.key().decode()
                count, total = (int(x) for x in m.value().decode().split(":"))
                self.latest[acct] = (count, total)
                self.history[acct].append((count, total))
                self.records += 1
            if not msgs:
                break

    def read_to_end(self, timeout: float):
        """Reads until every partition is at its end (last stable offset)."""
        kutil.wait_until(lambda: self.drain(1) or len(self.eof) == PARTITIONS, timeout=timeout,
                         what=f"the end of every output partition ({self.records} records read)")

    def processed(self) -> int:
        """Input records reflected in the committed output."""
        return sum(c for c, _ in self.latest.values())

    def close(self):
        self.c.close()


def verify(out: Output, expected: dict[str, tuple[int, int]]):
    over = {a: (v, expected.get(a)) for a, v in out.latest.items() if v[0] > expected.get(a, (0, 0))[0]}
    assert not over, f"accounts counted more records than they have (counted twice): {list(over.items())[:10]}"
    missing = {a: (out.latest.get(a), e) for a, e in expected.items() if out.latest.get(a) != e}
    assert not missing, (f"{len(missing)} accounts' last committed (count, sum) differ from the input "
                         f"(got, expected): {list(missing.items())[:10]}")
    assert set(out.latest) == set(expected)
    # A restored store resumes where its changelog left off: within the
    # committed output an account's count only ever grows.
    back = {a: h for a, h in out.history.items() if any(x[0] >= y[0] for x, y in zip(h, h[1:]))}
    assert not back, f"committed counts went backwards or repeated: {[(a, h[:20]) for a, h in list(back.items())[:3]]}"


# ----------------------------------------------------------------------------
# the broker's view
# ----------------------------------------------------------------------------


def api(broker: Broker, path: str):
    with urllib.request.urlopen(f"http://{broker.host}:{broker.http_port}/api/v1{path}", timeout=10) as r:
        return json.loads(r.read())


def local_starts(broker: Broker, topic: str) -> dict[int, int]:
    """Each partition's local log start offset (admin API), {} while the
    topic does not exist yet."""
    try:
        d = api(broker, f"/topics/{topic}")
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return {}
        raise
    return {p["partition"]: p["local"]["local_log_start_offset"] for p in d["partitions"]}


def log_starts(broker: Broker, topic: str) -> dict[int, int]:
    """Each partition's log start offset (admin API)."""
    return {p["partition"]: p["local"]["log_start_offset"] for p in api(broker, f"/topics/{topic}")["partitions"]}


def topic_configs(broker: Broker, topic: str) -> dict[str, str]:
    return {c["name"]: c["value"] for c in api(broker, f"/topics/{topic}")["configs"]}


def metric(broker: Broker, name: str) -> float:
    with urllib.request.urlopen(f"http://{broker.host}:{broker.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (line[len(name)] in " {"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class InputProducer(threading.Thread):
    """Produces RECORDS input records at a steady pace over PRODUCE_SECONDS
    (idempotent, acks=all), so the application always has input pending
    when it or the broker is killed; the last COLD_SHARE waits for
    `late_gate`. Record i has key id-i and value
    "ACCOUNT:AMOUNT"; `expected` is (count, sum) per account."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                           "enable.idempotence": True, "message.timeout.ms": 120000,
                           "queue.buffering.max.messages": 1000000, "broker.address.family": "v4"})
        self.topic = topic
        self.expected: dict[str, tuple[int, int]] = {}
        self.cold_early: dict[str, tuple[int, int]] = {}   # cold accounts' totals after the first phase
        self.sent = 0
        self.errors: list[str] = []
        self.done = threading.Event()
        self.stop = threading.Event()
        # The cold accounts' last phase waits for this (set once the
        # application was killed and started again).
        self.late_start = int(RECORDS * (1 - COLD_SHARE))
        self.late_gate = threading.Event()

    def _ack(self, err, msg):
        if err is not None:
            self.errors.append(f"{msg.key()}: {err}")

    def run(self):
        rng = random.Random(34)
        t0 = time.monotonic()
        try:
            while self.sent < RECORDS and not self.stop.is_set():
                due = min(RECORDS, int(RECORDS * (time.monotonic() - t0) / PRODUCE_SECONDS) + 1)
                if not self.late_gate.is_set():
                    due = min(due, self.late_start)
                for i in range(self.sent, due):
                    cold = (i < RECORDS * COLD_SHARE or i >= self.late_start) and rng.random() < 0.2
                    acct = f"cold-{rng.randrange(COLD_ACCOUNTS):02d}" if cold else f"acct-{rng.randrange(ACCOUNTS):04d}"
                    amount = rng.randrange(1, 1_000_000)
                    self.p.produce(self.topic, key=f"id-{i:08d}".encode(), value=f"{acct}:{amount}".encode(),
                                   on_delivery=self._ack)
                    c, t = self.expected.get(acct, (0, 0))
                    self.expected[acct] = (c + 1, t + amount)
                    if cold and i < RECORDS * COLD_SHARE:
                        self.cold_early[acct] = self.expected[acct]
                self.sent = due
                self.p.poll(0.05)
            left = self.p.flush(150)
            if left:
                self.errors.append(f"{left} records not acknowledged within 150 s")
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append(repr(e))
        finally:
            self.done.set()


def cold_changelog_offsets(bootstrap: str, changelog: str) -> dict[int, int]:
    """Per changelog partition, the offset of the last record of a cold
    account (read_committed, to the end)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": kutil.unique("streams-cl"),
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True, "broker.address.family": "v4"})
    c.assign([TopicPartition(changelog, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    last, eof = {}, set()
    deadline = time.monotonic() + PHASE_TIMEOUT
    try:
        while len(eof) < PARTITIONS:
            assert time.monotonic() < deadline, f"{changelog} not read to its end within {PHASE_TIMEOUT}s"
            for m in c.consume(10000, timeout=1):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise AssertionError(f"reading {changelog}: {m.error()}")
                eof.discard(m.partition())
                if m.key().startswith(b"cold-"):
                    last[m.partition()] = max(last.get(m.partition(), -1), m.offset())
    finally:
        c.close()
    return last


def read_input_ids(bootstrap: str, topic: str) -> list[int]:
    """Every input record's id, read back from the input topic."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": kutil.unique("streams-in"),
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "broker.address.family": "v4"})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    ids, eof = [], set()
    deadline = time.monotonic() + PHASE_TIMEOUT
    try:
        while len(eof) < PARTITIONS:
            assert time.monotonic() < deadline, f"input not read back within {PHASE_TIMEOUT}s ({len(ids)} read)"
            for m in c.consume(10000, timeout=1):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise AssertionError(f"reading the input: {m.error()}")
                ids.append(int(m.key().decode()[3:]))
    finally:
        c.close()
    return ids


# ----------------------------------------------------------------------------
# the run
# ----------------------------------------------------------------------------


def run(tmp_path: Path, classpath: str, hot: bool):
    try:
        check_binary()
    except BrokerError as e:
        pytest.fail(str(e), pytrace=False)
    t0 = time.monotonic()
    broker = Broker(data_dir=tmp_path / "data", settings=BROKER_SETTINGS, name="strata", log_dir=tmp_path)
    broker.start()
    bs = broker.bootstrap
    app_id = kutil.unique("totals")
    inp, outp = f"{app_id}-input", f"{app_id}-output"
    repartition, changelog = f"{app_id}-by-account-repartition", f"{app_id}-totals-changelog"
    app = App(classpath, bs, app_id, inp, outp, tmp_path / "state", tmp_path / "app.log",
              HOT_WINDOW_MS if hot else 0)
    out = None
    notes = []

    def wait(pred, timeout, what):
        def check():
            app.check_alive()
            return pred()
        return kutil.wait_until(check, timeout=timeout, interval=0.5, what=what)

    producer = None
    try:
        adm = AdminClient({"bootstrap.servers": bs, "broker.address.family": "v4"})
        kutil.create_topic(adm, inp, PARTITIONS, HOT_TOPIC_CONFIG if hot else {})
        kutil.create_topic(adm, outp, PARTITIONS)

        def progress(target):
            out.drain()
            assert not producer.errors, f"input producer: {producer.errors[:5]}"
            return out.processed() >= target

        # The input flows at a steady pace for the whole run.
        producer = InputProducer(bs, inp)
        producer.start()
        app.start()
        out = Output(bs, outp)
        at = RECORDS // 4
        wait(lambda: progress(at), PHASE_TIMEOUT, f"the committed output to cover {at} records")

        # Kill the broker mid-run, restart it on the same data dir and port.
        broker.kill9()
        at, sent = out.processed(), producer.sent
        notes.append(f"{time.monotonic() - t0:.1f} s: broker killed, {at} records in the committed output, "
                     f"{sent} produced")
        assert not producer.done.is_set(), "the input was complete before the broker was killed"
        broker.start()
        notes.append(f"{time.monotonic() - t0:.1f} s: broker restarted")

        at = RECORDS * 11 // 20
        wait(lambda: progress(at), PHASE_TIMEOUT, f"the committed output to cover {at} records")
        # The cold accounts' first phase is in the committed output, so their
        # latest changelog records are in place: where are they?
        wait(lambda: progress(0) and all(out.latest.get(a) == v for a, v in list(producer.cold_early.items())),
             PHASE_TIMEOUT, "the cold accounts' first records in the committed output")
        cold = cold_changelog_offsets(bs, changelog)
        notes.append(f"{time.monotonic() - t0:.1f} s: last cold-account record per {changelog} partition: {cold}")
        assert len(cold) == PARTITIONS, "the cold accounts do not cover every changelog partition"
        if hot:
            # Wait until they are below the local log start: in the bucket only.
            def tiered():
                out.drain()
                s = local_starts(broker, changelog)
                return len(s) == PARTITIONS and all(s[p] > cold[p] for p in range(PARTITIONS))
            wait(tiered, PHASE_TIMEOUT, f"{changelog}'s local log start above the cold accounts' records")
            notes.append(f"{time.monotonic() - t0:.1f} s: {changelog} local log starts "
                         f"{local_starts(broker, changelog)}")
        app.kill9()
        out.drain()
        at, sent = out.processed(), producer.sent
        notes.append(f"{time.monotonic() - t0:.1f} s: application killed, {at} records in the committed output, "
                     f"{sent} produced")
        assert sent <= producer.late_start, "the cold accounts' last phase began before the application was killed"
        starts = local_starts(broker, changelog)
        notes.append(f"{changelog} local log starts at the kill: {starts}")
        remote_bytes_before = metric(broker, "strata_remote_fetch_bytes_total")
        shutil.rmtree(app.state_dir)   # the store must come back from the changelog
        log_from = app.start()
        producer.late_gate.set()

        def restored():
            out.drain()
            ends = [ln for ln in app.lines(log_from) if ln.startswith("RESTORE_END ")]
            return len({ln.split()[2] for ln in ends if ln.split()[1] == changelog}) == PARTITIONS
        wait(restored, PHASE_TIMEOUT, f"the store restored from all {PARTITIONS} partitions of {changelog}")
        restore = [ln for ln in app.lines(log_from) if ln.startswith("RESTORE_") and ln.split()[1] == changelog]
        notes.append(f"{time.monotonic() - t0:.1f} s: restored: " + "; ".join(restore))
        if hot:
            remote_bytes = metric(broker, "strata_remote_fetch_bytes_total") - remote_bytes_before
            notes.append(f"strata_remote_fetch_bytes_total grew by {remote_bytes:.0f} while the store was restored")
            start = {int(ln.split()[2]): int(ln.split()[4]) for ln in restore if ln.startswith("RESTORE_START ")}
            for p in range(PARTITIONS):
                # Offsets below the local log start exist only in the bucket.
                assert start.get(p) is not None and start[p] < starts[p], (
                    f"partition {p}: restore started at {start.get(p)}, not below the local log start {starts[p]}")
                assert cold[p] < starts[p]
            assert remote_bytes > 0, "no bytes served from remote segments during the restore"

        wait(lambda: producer.done.is_set() and progress(RECORDS), PHASE_TIMEOUT + PRODUCE_SECONDS,
             f"the committed output to cover all {RECORDS} records")
        assert not producer.errors, f"input producer: {producer.errors[:5]}"
        notes.append(f"{time.monotonic() - t0:.1f} s: all {RECORDS} records in the committed output")
        expected = producer.expected
        rc = app.stop()
        assert rc == 0, f"the application exited with {rc} on SIGTERM"
        out.drain(2)
        verify(out, expected)
        # Again from scratch, once no transaction is left open.
        kutil.wait_until(lambda: (kutil.ends(bs, outp, PARTITIONS, "read_committed")
                                  == kutil.ends(bs, outp, PARTITIONS, "read_uncommitted")),
                         timeout=30, what="no transaction left open on the output")
        fresh = Output(bs, outp)
        try:
            fresh.read_to_end(PHASE_TIMEOUT)
            verify(fresh, expected)
        finally:
            fresh.close()
        ids = read_input_ids(bs, inp)
        assert len(ids) == RECORDS and set(ids) == set(range(RECORDS)), (
            f"the input holds {len(ids)} records, {len(set(ids))} distinct ids: not each produced once")
        # Streams purged what it consumed from the repartition topic (DeleteRecords).
        purged = log_starts(broker, repartition)
        notes.append(f"{repartition} log start offsets: {purged}")
        assert len(purged) == PARTITIONS and all(v > 0 for v in purged.values()), (
            f"the repartition topic was never purged: log start offsets {purged}")
        cfg = {t: topic_configs(broker, t) for t in (repartition, changelog)}
        assert cfg[changelog].get("cleanup.policy") == "compact", cfg[changelog]
        if hot:
            for t in (repartition, changelog):
                assert cfg[t].get("local.retention.ms") == str(HOT_WINDOW_MS), (t, cfg[t])
        notes.append(f"{RECORDS} records, {ACCOUNTS} accounts, output {fresh.records} committed records; "
                     f"{time.monotonic() - t0:.1f} s")
        print("\n".join(notes))
    except BaseException as e:
        raise AssertionError(
            f"{e}\n--- notes ---\n" + "\n".join(notes)
            + f"\n--- app log ({app.log_path}) ---\n{app.log_tail()}"
            + f"\n--- broker log ({broker.log_path}) ---\n{broker.log_tail(15000)}") from e
    finally:
        if producer is not None:
            producer.stop.set()
        if out is not None:
            out.close()
        app.kill9()
        broker.close()


@pytest.mark.timeout(RUN_TIMEOUT)
def test_streams_exactly_once_survives_kill_9(tmp_path, app_classpath):
    run(tmp_path, app_classpath, hot=False)


@pytest.mark.timeout(RUN_TIMEOUT)
def test_streams_restore_from_bucket_hot_window(tmp_path, app_classpath):
    run(tmp_path, app_classpath, hot=True)
