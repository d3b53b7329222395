"""TLS listeners and SASL (PLAIN, SCRAM-SHA-256/512) end to end: real
clients (confluent-kafka, kafka-python, aiokafka) authenticating over
SASL_SSL, SASL_PLAINTEXT and mutual TLS, refusals of bad credentials and
bad certificates, SCRAM users managed with AlterUserScramCredentials and
kept across restarts, session lifetimes (connections.max.reauth.ms), and
hostile input on raw sockets (TLS garbage, stalled handshakes, oversized
SASL frames, requests before or after a refused authentication).

Owns this file and tlsutil.py (the test CA and certificates). The harness
side is Broker(listeners=...) in strata_broker.py.

Most tests share one broker per module (per xdist worker) with four
listeners: CLIENT (SASL_SSL), SASL (SASL_PLAINTEXT), MTLS (SSL, client
certificate required) and BROKER (PLAINTEXT, the inter-broker listener,
which the harness waits on). PLAIN users alice and bob on both SASL
listeners; SCRAM user admin (SHA-256 and SHA-512) from --add-scram. The
restart and session-lifetime tests start brokers of their own.
"""

from __future__ import annotations

import asyncio
import random
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

import conftest
import kutil
import tlsutil
import wire
from strata_broker import Broker, BrokerError, check_binary

try:
    import aiokafka
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context
except ImportError:  # listed in tests/requirements.txt: a missing client is a failure, not a skip
    aiokafka = None

LISTENERS = {"CLIENT": "SASL_SSL", "SASL": "SASL_PLAINTEXT", "MTLS": "SSL", "BROKER": "PLAINTEXT"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
BOB = ("bob", "bob-secret")
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret" user_bob="bob-secret";')
SCRAM_ARGS = ["--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]",
              "--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]"]
AUTH_DELAY_MS = 300          # connection.failed.authentication.delay.ms on the module broker
REAUTH_MS = 3_600_000        # connections.max.reauth.ms on the module broker
MAX_SASL_RECEIVE = 524_288   # sasl.server.max.receive.size, Kafka's default
PARTITIONS = 3

# Kafka error codes
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58
# API keys
API_METADATA, API_API_VERSIONS, API_SASL_HANDSHAKE, API_SASL_AUTHENTICATE = 3, 18, 17, 36

# What librdkafka may report for a connection a TLS listener refuses
# (handshake alert, or the alert read as the first response).
TLS_REFUSAL_CODES = {KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                     KafkaError._AUTHENTICATION}


# ---------------------------------------------------------------------------
# brokers
# ---------------------------------------------------------------------------


def start_broker(tmp_path_factory, label: str, listeners: dict[str, str], settings: dict,
                 extra_args: list[str]) -> Broker:
    """A dedicated broker with named listeners, started and ready; its log is
    attached to a failing test's report."""
    try:
        check_binary()
    except BrokerError as e:
        pytest.fail(str(e), pytrace=False)
    base = tmp_path_factory.mktemp(label)
    b = Broker(data_dir=base / "data", settings=settings, extra_args=extra_args, name=label,
               log_dir=base, listeners=listeners)
    try:
        b.start().wait_ready()
    except BrokerError as e:
        b.close()
        pytest.fail(f"could not start broker {label}: {e}", pytrace=False)
    return b


def module_settings(tls: tlsutil.TlsFiles) -> dict:
    return {
        "num.partitions": PARTITIONS,
        "group.initial.rebalance.delay.ms": 0,
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl.plain.sasl.jaas.config": PLAIN_JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": tls.broker,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": tls.ca,
        "listener.name.mtls.ssl.client.auth": "required",
        "connection.failed.authentication.delay.ms": AUTH_DELAY_MS,
        "connections.max.reauth.ms": REAUTH_MS,
    }


@dataclass
class Sec:
    broker: Broker
    tls: tlsutil.TlsFiles
    listeners: dict[str, str]

    def bs(self, listener: str) -> str:
        return self.broker.bootstrap_for(listener)

    def port(self, listener: str) -> int:
        return int(self.bs(listener).rsplit(":", 1)[1])

    def rd(self, listener: str, creds: tuple[str, str] | None = None, mechanism: str = "SCRAM-SHA-512",
           cert: str | None = "client", **extra) -> dict:
        """librdkafka configuration for a client of `listener` (bootstrap
        included): SASL credentials on SASL listeners, the CA on TLS ones,
        the client certificate `cert` (client, expired, rogue or None) on SSL."""
        proto = extra.pop("security.protocol", self.listeners[listener])
        conf = {"bootstrap.servers": self.bs(listener), "security.protocol": proto, **kutil.COMMON}
        if proto.startswith("SASL"):
            user, password = creds or ADMIN
            conf.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
        if proto.endswith("SSL"):
            conf["ssl.ca.location"] = str(self.tls.ca)
        if proto == "SSL" and cert is not None:
            key, crt = {"client": (self.tls.client_key, self.tls.client_cert),
                        "expired": (self.tls.expired_key, self.tls.expired_cert),
                        "rogue": (self.tls.rogue_key, self.tls.rogue_cert)}[cert]
            conf.update({"ssl.key.location": str(key), "ssl.certificate.location": str(crt)})
        conf.update(extra)
        return conf

    def admin(self) -> AdminClient:
        """The SCRAM-SHA-512 admin over SASL_SSL."""
        return AdminClient(self.rd("CLIENT", ADMIN))

    def high_watermark(self, topic: str, partition: int = 0) -> int:
        """Read as the admin over SASL_SSL."""
        c = Consumer({**self.rd("CLIENT", ADMIN), "group.id": kutil.unique("hw")})
        try:
            return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=15, cached=False)[1]
        finally:
            c.close()


@pytest.fixture(scope="module")
def sec_module(tmp_path_factory):
    tls = tlsutil.make_tls(tmp_path_factory.mktemp("tls"))
    b = start_broker(tmp_path_factory, "security", LISTENERS, module_settings(tls), SCRAM_ARGS)
    yield Sec(b, tls, LISTENERS)
    b.close()


@pytest.fixture
def sec(sec_module: Sec):
    """The module broker, alive before and after the test, its log attached
    to a failure."""
    b = sec_module.broker
    if not b.alive():
        pytest.fail(f"the security broker is not running; log tail:\n{b.log_tail()}", pytrace=False)
    conftest._active.append(("security", b, b.log_size()))
    yield sec_module
    if not b.alive():
        pytest.fail(f"the security broker died during this test; log:\n{b.log_tail()}", pytrace=False)


def rest(conf: dict) -> dict:
    """A client configuration without bootstrap.servers (kutil's helpers take
    the bootstrap apart)."""
    return {k: v for k, v in conf.items() if k != "bootstrap.servers"}


def new_topic(sec: Sec, prefix: str, partitions: int = PARTITIONS) -> str:
    """A topic created by the admin over SASL_SSL."""
    return kutil.create_topic(sec.admin(), kutil.unique(prefix), partitions)


# ---------------------------------------------------------------------------
# round trips with real clients
# ---------------------------------------------------------------------------

N = 200
KEYS = 10


def records() -> list[tuple[bytes, bytes]]:
    return [(f"k{i % KEYS}".encode(), f"v{i:04d}-{i % KEYS}".encode()) for i in range(N)]


def check_round_trip(sent: list[tuple], got: list[tuple], committed: dict[int, int | None]):
    """sent and got: (key, value, partition, offset), in send and in receive
    order. Every record came back exactly once, where its delivery report
    put it; each key's values in the order they were sent; the committed
    offsets are each partition's end."""
    assert len(got) == len(sent), f"consumed {len(got)} records, produced {len(sent)}"
    assert sorted(got, key=lambda r: (r[2], r[3])) == sorted(sent, key=lambda r: (r[2], r[3])), \
        "consumed records differ from the delivery reports"
    for key in {k for k, _, _, _ in sent}:
        assert [v for k, v, _, _ in got if k == key] == [v for k, v, _, _ in sent if k == key], \
            f"key {key!r}: values out of order"
    ends = {}
    for _, _, p, o in sent:
        ends[p] = max(ends.get(p, 0), o + 1)
    assert sum(ends.values()) == len(sent), f"offsets not contiguous from 0: ends {ends}"
    assert {p: committed.get(p) for p in ends} == ends, f"committed {committed}, partition ends {ends}"


def test_confluent_sasl_ssl_scram_sha512_round_trip(sec):
    conf = sec.rd("CLIENT", ADMIN, "SCRAM-SHA-512")
    adm = AdminClient(conf)
    topic = kutil.create_topic(adm, kutil.unique("rd-scram512"), PARTITIONS)
    # Metadata over a listener names that listener's endpoint.
    md = adm.list_topics(timeout=15)
    assert {(b.host, b.port) for b in md.brokers.values()} == {("127.0.0.1", sec.port("CLIENT"))}

    dels = kutil.produce(sec.bs("CLIENT"), topic, [{"key": k, "value": v} for k, v in records()],
                         **{**rest(conf), "enable.idempotence": True})
    sent = [(d.key, d.value, d.partition, d.offset) for d in dels]

    group = kutil.unique("rd-group")
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 10000})
    got, errors = [], []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < N:
            assert time.monotonic() < deadline, \
                f"group consumer got {len(got)} of {N} records in 60 s; errors {[e.str() for e in errors][:5]}"
            for m in c.consume(num_messages=500, timeout=0.5):
                if m.error() is not None:
                    errors.append(m.error())
                    continue
                got.append((m.key(), m.value(), m.partition(), m.offset()))
        nxt = {}
        for _, _, p, o in got:
            nxt[p] = max(nxt.get(p, 0), o + 1)
        res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in nxt.items()], asynchronous=False)
        assert all(tp.error is None for tp in res), [str(tp.error) for tp in res]
        mine = {tp.partition: tp.offset for tp in
                c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)}
    finally:
        c.close()
    check_round_trip(sent, got, mine)
    # and as another session of the admin sees them (OffsetFetch)
    seen = {p: tp.offset for (_, p), tp in kutil.committed(adm, group, topic, list(range(PARTITIONS))).items()}
    assert {p: seen[p] for p in nxt} == nxt


KP_CASES = {  # id: (listener, mechanism, credentials)
    "sasl_ssl-scram-sha-256": ("CLIENT", "SCRAM-SHA-256", ADMIN),
    "sasl_plaintext-plain": ("SASL", "PLAIN", ALICE),
}


def kp_conf(sec: Sec, listener: str, mechanism: str, creds: tuple[str, str]) -> dict:
    proto = sec.listeners[listener]
    conf = dict(bootstrap_servers=sec.bs(listener), security_protocol=proto, request_timeout_ms=30000,
                sasl_mechanism=mechanism, sasl_plain_username=creds[0], sasl_plain_password=creds[1])
    if proto == "SASL_SSL":
        conf["ssl_cafile"] = str(sec.tls.ca)
    return conf


@pytest.mark.parametrize("case", list(KP_CASES))
def test_kafka_python_round_trip(sec, case):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient, NewTopic
    listener, mechanism, creds = KP_CASES[case]
    conf = kp_conf(sec, listener, mechanism, creds)
    topic = kutil.unique(f"kp-{case}")

    adm = KafkaAdminClient(client_id="e2e-kp-security", **conf)
    try:
        adm.create_topics([NewTopic(name=topic, num_partitions=PARTITIONS, replication_factor=1)],
                          timeout_ms=30000)
        kutil.wait_until(lambda: topic in adm.list_topics(), 30, what=f"{topic} listed (kafka-python)")
    finally:
        adm.close()

    prod = KafkaProducer(acks="all", linger_ms=5, **conf)
    try:
        futs = [(k, v, prod.send(topic, key=k, value=v)) for k, v in records()]
        prod.flush(60)
        sent = []
        for k, v, f in futs:
            md = f.get(timeout=30)
            sent.append((k, v, md.partition, md.offset))
    finally:
        prod.close(30)

    group = kutil.unique("kp-group")
    c = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=10000, heartbeat_interval_ms=1000, fetch_max_wait_ms=100, **conf)
    got = []
    try:
        deadline = time.monotonic() + 60
        while len(got) < N:
            assert time.monotonic() < deadline, f"kafka-python group consumer got {len(got)} of {N} in 60 s"
            for recs in c.poll(timeout_ms=500).values():
                got.extend((r.key, r.value, r.partition, r.offset) for r in recs)
        c.commit()  # the consumed positions
        committed = {p: c.committed(KTP(topic, p)) for p in range(PARTITIONS)}
    finally:
        c.close()
    check_round_trip(sent, got, committed)


AIO_CASES = {  # id: (listener, mechanism, credentials)
    "sasl_ssl-plain": ("CLIENT", "PLAIN", BOB),
    "sasl_plaintext-scram-sha-512": ("SASL", "SCRAM-SHA-512", ADMIN),
}


@pytest.mark.parametrize("case", list(AIO_CASES))
def test_aiokafka_round_trip(sec, case):
    assert aiokafka is not None, "aiokafka is not installed: .venv/bin/pip install -r tests/requirements.txt"
    listener, mechanism, creds = AIO_CASES[case]
    topic = new_topic(sec, f"aio-{case}")
    proto = sec.listeners[listener]
    common = dict(bootstrap_servers=sec.bs(listener), security_protocol=proto, sasl_mechanism=mechanism,
                  sasl_plain_username=creds[0], sasl_plain_password=creds[1], request_timeout_ms=30000)
    group = kutil.unique("aio-group")

    async def go():
        if proto == "SASL_SSL":
            common["ssl_context"] = create_ssl_context(cafile=str(sec.tls.ca))
        p = AIOKafkaProducer(acks="all", linger_ms=5, **common)
        await p.start()
        try:
            pending = [(k, v, await p.send(topic, key=k, value=v)) for k, v in records()]
            sent = []
            for k, v, fut in pending:
                md = await asyncio.wait_for(fut, 60)
                sent.append((k, v, md.partition, md.offset))
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=10000, heartbeat_interval_ms=1000, fetch_max_wait_ms=100,
                             **common)
        await c.start()
        got = []
        try:
            deadline = time.monotonic() + 60
            while len(got) < N:
                assert time.monotonic() < deadline, f"aiokafka group consumer got {len(got)} of {N} in 60 s"
                for recs in (await c.getmany(timeout_ms=500)).values():
                    got.extend((r.key, r.value, r.partition, r.offset) for r in recs)
            await c.commit()  # the consumed positions
            committed = {p: await c.committed(aiokafka.TopicPartition(topic, p)) for p in range(PARTITIONS)}
        finally:
            await c.stop()
        return sent, got, committed

    sent, got, committed = asyncio.run(go())
    check_round_trip(sent, got, committed)


# ---------------------------------------------------------------------------
# refusals through librdkafka
# ---------------------------------------------------------------------------


def refused_producer(conf: dict, topic: str, n: int = 3) -> tuple[list[KafkaError], list[KafkaError | None]]:
    """Produces n records with a client the broker should refuse; returns
    (errors reported to error_cb, each record's delivery error). Every
    record is settled within message.timeout.ms (3 s)."""
    errors: list[KafkaError] = []
    reports: list[KafkaError | None] = []
    p = Producer({**conf, "error_cb": errors.append, "acks": "all", "linger.ms": 0,
                  "message.timeout.ms": 3000, "enable.idempotence": False})
    for i in range(n):
        p.produce(topic, value=f"refused-{i}".encode(), on_delivery=lambda err, msg: reports.append(err))
    left = p.flush(30)
    assert left == 0, f"{left} records neither delivered nor failed within 30 s"
    return errors, reports


REFUSALS = {  # id: (listener, mechanism, credentials)
    "scram-sha-512-wrong-password": ("CLIENT", "SCRAM-SHA-512", ("admin", "admin-secreT")),
    "scram-sha-256-unknown-user": ("CLIENT", "SCRAM-SHA-256", ("mallory", "admin-secret")),
    "plain-wrong-password": ("SASL", "PLAIN", ("alice", "bob-secret")),
    "plain-unknown-user": ("CLIENT", "PLAIN", ("mallory", "alice-secret")),
    # admin has SCRAM credentials only: PLAIN knows no admin
    "plain-scram-user": ("SASL", "PLAIN", ADMIN),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_bad_credentials_refused(sec, case):
    listener, mechanism, creds = REFUSALS[case]
    topic = new_topic(sec, "refused", 1)
    kutil.produce(sec.bs("CLIENT"), topic, [{"value": b"before"}],
                  **rest(sec.rd("CLIENT", ADMIN)))
    assert sec.high_watermark(topic) == 1

    bad = sec.rd(listener, creds, mechanism)
    errors, reports = refused_producer(bad, topic)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), \
        f"no authentication error reported; errors: {[e.str() for e in errors]}"
    assert len(reports) == 3 and all(r is not None for r in reports), \
        f"a refused client's records were delivered: {reports}"

    # an AdminClient is refused too: Metadata fails, with an authentication error
    assert not authenticates(sec, listener, creds, mechanism)

    # nothing of the refused client's was stored, and a good client is served
    assert sec.high_watermark(topic) == 1
    good = kutil.produce(sec.bs("CLIENT"), topic, [{"value": b"after"}],
                         **rest(sec.rd("CLIENT", ADMIN)))
    assert good[0].offset == 1


def _auth_counts(sec: Sec) -> dict[tuple[str, str, str], float]:
    """strata_sasl_authentications_total by (listener, mechanism, result)."""
    import urllib.request
    from prometheus_client.parser import text_string_to_metric_families
    url = f"http://{sec.broker.host}:{sec.broker.http_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        if fam.name == "strata_sasl_authentications":
            for smp in fam.samples:
                if smp.name.endswith("_total"):
                    lb = smp.labels
                    out[(lb["listener"], lb["mechanism"], lb["result"])] = smp.value
    return out


def test_authentications_are_counted_per_listener_and_mechanism(sec):
    """/metrics counts each SASL authentication by listener, mechanism and
    result: a refused SCRAM-SHA-512 client adds a failure, the admin a
    success (counters only grow, so other tests running meanwhile do no harm)."""
    key_fail = ("CLIENT", "SCRAM-SHA-512", "failure")
    key_ok = ("CLIENT", "SCRAM-SHA-512", "success")
    before = _auth_counts(sec)
    assert not authenticates(sec, "CLIENT", ("admin", "not-the-password"), "SCRAM-SHA-512")
    assert authenticates(sec, "CLIENT", ADMIN, "SCRAM-SHA-512")
    kutil.wait_until(lambda: _auth_counts(sec).get(key_fail, 0) > before.get(key_fail, 0)
                     and _auth_counts(sec).get(key_ok, 0) > before.get(key_ok, 0), 20,
                     what="a failure and a success counted on CLIENT for SCRAM-SHA-512")
    # labels stay bounded: no mechanism the listener does not offer
    assert all(m in ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "unsupported", "none")
               for (_, m, _) in _auth_counts(sec)), _auth_counts(sec)


# ---------------------------------------------------------------------------
# SCRAM users through the admin APIs
# ---------------------------------------------------------------------------


def alter_scram(adm: AdminClient, alterations) -> None:
    futs = adm.alter_user_scram_credentials(alterations, request_timeout=30)
    for user, f in futs.items():
        f.result(timeout=40)  # raises KafkaException on a per-user error


def describe_scram(adm: AdminClient, users: list[str] | None = None) -> dict[str, set[tuple[int, int]]]:
    """{user: {(mechanism value, iterations)}}."""
    if users is None:
        res = adm.describe_user_scram_credentials(request_timeout=30).result(timeout=40)
    else:
        res = {u: f.result(timeout=40)
               for u, f in adm.describe_user_scram_credentials(users, request_timeout=30).items()}
    return {u: {(ci.mechanism.value, ci.iterations) for ci in d.scram_credential_infos} for u, d in res.items()}


def authenticates(sec: Sec, listener: str, creds: tuple[str, str], mechanism: str,
                  timeout: float = 20.0) -> bool:
    """Whether a new AdminClient with these credentials gets Metadata (True)
    or an authentication error (False); anything else within `timeout`
    fails the test."""
    errors: list[KafkaError] = []
    adm = AdminClient({**sec.rd(listener, creds, mechanism), "error_cb": errors.append})
    deadline = time.monotonic() + timeout
    while True:
        try:
            adm.list_topics(timeout=0.5)
            return True
        except KafkaException:
            pass
        adm.poll(0)  # serves error_cb
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            return False
        assert time.monotonic() < deadline, \
            f"{creds[0]} ({mechanism} on {listener}): neither Metadata nor an authentication error " \
            f"in {timeout} s; errors: {[e.str() for e in errors]}"


def test_alter_user_scram_credentials(sec):
    adm = sec.admin()
    carol = kutil.unique("carol")
    alter_scram(adm, [UserScramCredentialUpsertion(
        carol, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-secret")])

    assert describe_scram(adm, [carol]) == {carol: {(ScramMechanism.SCRAM_SHA_512.value, 8192)}}
    everyone = describe_scram(adm)
    assert everyone[carol] == {(ScramMechanism.SCRAM_SHA_512.value, 8192)}
    assert {m for m, _ in everyone["admin"]} == {ScramMechanism.SCRAM_SHA_256.value,
                                                  ScramMechanism.SCRAM_SHA_512.value}, everyone["admin"]
    assert all(4096 <= it <= 16384 for _, it in everyone["admin"]), everyone["admin"]

    topic = new_topic(sec, "carol", 1)
    carol_conf = sec.rd("CLIENT", (carol, "carol-secret"), "SCRAM-SHA-512")
    dels = kutil.produce(sec.bs("CLIENT"), topic, [{"value": f"carol-{i}".encode()} for i in range(5)],
                         **rest(carol_conf))
    assert [d.offset for d in dels] == list(range(5))
    # She has a SHA-512 credential only, and the SASL_PLAINTEXT listener knows her too.
    assert not authenticates(sec, "CLIENT", (carol, "carol-secret"), "SCRAM-SHA-256")
    assert authenticates(sec, "SASL", (carol, "carol-secret"), "SCRAM-SHA-512")

    alter_scram(adm, [UserScramCredentialDeletion(carol, ScramMechanism.SCRAM_SHA_512)])
    with pytest.raises(KafkaException) as ei:
        describe_scram(adm, [carol])
    assert kutil.error_code(ei.value) == KafkaError.RESOURCE_NOT_FOUND, kutil.error_str(ei.value)
    assert carol not in describe_scram(adm)

    errors, reports = refused_producer(carol_conf, topic)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), [e.str() for e in errors]
    assert all(r is not None for r in reports), reports
    assert sec.high_watermark(topic) == 5


def test_scram_credentials_survive_restart(tmp_path_factory):
    """On a broker of its own, whose SASL_SSL listener is configured with
    the listener prefix and an inline PEM keystore and offers SCRAM only.
    A credential created through the admin API, and the bootstrapped
    admin's rotated password, survive a SIGTERM restart and a kill -9
    restart; --add-scram at the next start does not put the old password
    back."""
    tls = tlsutil.make_tls(tmp_path_factory.mktemp("tls-restart"))
    settings = {
        "num.partitions": 1,
        "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.client.ssl.keystore.type": "PEM",
        "listener.name.client.ssl.keystore.key": tls.broker_key_pem,
        "listener.name.client.ssl.keystore.certificate.chain": tls.broker_cert_pem,
    }
    listeners = {"CLIENT": "SASL_SSL", "BROKER": "PLAINTEXT"}
    b = start_broker(tmp_path_factory, "scram-restart", listeners, settings, SCRAM_ARGS)
    conftest._active.append(("scram-restart", b, 0))
    s = Sec(b, tls, listeners)
    try:
        # Only the listener's own mechanisms are offered.
        with RawConn(s, "CLIENT") as c:
            err, mechs = c.sasl_handshake("PLAIN")
            assert err == UNSUPPORTED_SASL_MECHANISM and set(mechs) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}, \
                (err, mechs)

        dave, erin = kutil.unique("dave"), kutil.unique("erin")
        alter_scram(s.admin(), [
            UserScramCredentialUpsertion(dave, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                         b"dave-secret"),
            UserScramCredentialUpsertion("admin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                         b"admin-rotated")])
        rotated = ("admin", "admin-rotated")
        assert authenticates(s, "CLIENT", rotated, "SCRAM-SHA-512")
        assert not authenticates(s, "CLIENT", ADMIN, "SCRAM-SHA-512")
        topic = kutil.create_topic(AdminClient(s.rd("CLIENT", rotated)), kutil.unique("restart"), 1)
        dave_conf = rest(s.rd("CLIENT", (dave, "dave-secret"), "SCRAM-SHA-256"))
        kutil.produce(s.bs("CLIENT"), topic, [{"value": b"dave-0"}], **dave_conf)

        b.restart()
        b.wait_ready()
        assert authenticates(s, "CLIENT", (dave, "dave-secret"), "SCRAM-SHA-256"), "dave lost on restart"
        assert authenticates(s, "CLIENT", rotated, "SCRAM-SHA-512"), "admin's rotated password lost"
        assert not authenticates(s, "CLIENT", ADMIN, "SCRAM-SHA-512"), "--add-scram overwrote admin's password"
        assert authenticates(s, "CLIENT", ADMIN, "SCRAM-SHA-256"), "admin's untouched SHA-256 credential lost"
        kutil.produce(s.bs("CLIENT"), topic, [{"value": b"dave-1"}], **dave_conf)

        # an acknowledged change survives a crash too
        alter_scram(AdminClient(s.rd("CLIENT", rotated)), [UserScramCredentialUpsertion(
            erin, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"erin-secret")])
        b.restart(kill=True)
        b.wait_ready()
        assert authenticates(s, "CLIENT", (erin, "erin-secret"), "SCRAM-SHA-512"), "erin lost on kill -9"
        assert authenticates(s, "CLIENT", (dave, "dave-secret"), "SCRAM-SHA-256")
        assert describe_scram(AdminClient(s.rd("CLIENT", rotated)), [dave, erin]) == {
            dave: {(ScramMechanism.SCRAM_SHA_256.value, 4096)},
            erin: {(ScramMechanism.SCRAM_SHA_512.value, 4096)}}
        res = kutil.consume(s.bs("CLIENT"), topic, [0], expected=2, **dave_conf)
        assert [m.value for m in res.messages] == [b"dave-0", b"dave-1"]
    finally:
        b.close()


# ---------------------------------------------------------------------------
# mutual TLS
# ---------------------------------------------------------------------------


def test_mtls_client_certificate_round_trip(sec):
    conf = sec.rd("MTLS")
    adm = AdminClient(conf)
    topic = kutil.create_topic(adm, kutil.unique("mtls"), 2)
    md = adm.list_topics(timeout=15)
    assert {(b.host, b.port) for b in md.brokers.values()} == {("127.0.0.1", sec.port("MTLS"))}
    dels = kutil.produce(sec.bs("MTLS"), topic,
                         [{"key": f"k{i % 3}".encode(), "value": f"mtls-{i}".encode(), "partition": i % 2}
                          for i in range(50)], **rest(conf))
    res = kutil.consume(sec.bs("MTLS"), topic, [0, 1], expected=50, **rest(conf))
    assert not res.errors, [e.str() for e in res.errors]
    assert sorted((m.partition, m.offset, m.key, m.value) for m in res.messages) == \
        sorted((d.partition, d.offset, d.key, d.value) for d in dels)


@pytest.mark.parametrize("cert", [None, "expired", "rogue"], ids=["no-cert", "expired-cert", "untrusted-ca"])
def test_mtls_refuses_bad_client_certificate(sec, cert):
    good = sec.rd("MTLS")
    topic = kutil.create_topic(AdminClient(good), kutil.unique("mtls-bad"), 1)
    errors, reports = refused_producer(sec.rd("MTLS", cert=cert), topic)
    assert errors, "the refused client reported no error"
    assert {e.code() for e in errors} <= TLS_REFUSAL_CODES, [e.str() for e in errors]
    assert len(reports) == 3 and all(r is not None for r in reports), f"records delivered: {reports}"
    assert sec.high_watermark(topic) == 0
    # the listener still serves a good certificate
    kutil.produce(sec.bs("MTLS"), topic, [{"value": b"good"}],
                  **rest(good))
    assert sec.high_watermark(topic) == 1


# ---------------------------------------------------------------------------
# raw sockets
# ---------------------------------------------------------------------------


class RawConn(wire.KafkaConn):
    """A raw Kafka connection to a listener, over TLS when the listener's
    protocol says so (the handshake completes in the constructor)."""

    def __init__(self, sec: Sec, listener: str, timeout: float = 15.0, cert: str | None = None,
                 client_id: str | None = "strata-e2e-raw"):
        host, port = sec.bs(listener).rsplit(":", 1)
        super().__init__(host, int(port), timeout=timeout, client_id=client_id)
        if sec.listeners[listener].endswith("SSL"):
            ctx = ssl.create_default_context(cafile=str(sec.tls.ca))
            if cert == "client":
                ctx.load_cert_chain(str(sec.tls.client_cert), str(sec.tls.client_key))
            self.sock = ctx.wrap_socket(self.sock, server_hostname=host)

    def frame(self, api_key: int, api_version: int, body: bytes) -> tuple[int, bytes]:
        """(correlation id, complete frame) of a request with header v1."""
        self.corr += 1
        payload = wire.request_header_v1(api_key, api_version, self.corr, self.client_id) + body
        return self.corr, struct.pack(">i", len(payload)) + payload

    def sasl_handshake(self, mechanism: str, version: int = 1) -> tuple[int, list[str]]:
        r = wire.Reader(self.request(API_SASL_HANDSHAKE, version, wire.kstring(mechanism)))
        return r.i16(), r.array(lambda rr: rr.string())

    def closed_without_answer(self, timeout: float) -> tuple[bool, bytes]:
        return wait_closed(self.sock, timeout)


def wait_closed(sock: socket.socket, timeout: float) -> tuple[bool, bytes]:
    """Reads until the peer closes (EOF, reset, or a TLS error or alert) or
    `timeout` passes: (closed, every byte received meanwhile)."""
    deadline = time.monotonic() + timeout
    received = b""
    while True:
        # At least one read, however late: a close that already happened
        # is seen even when the time allowed has run out meanwhile.
        remaining = deadline - time.monotonic()
        sock.settimeout(max(0.2, min(remaining, 1.0)))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            if time.monotonic() >= deadline:
                return False, received
            continue
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            return True, received
        if not chunk:
            return True, received
        received += chunk


def send_ignoring_close(sock: socket.socket, data: bytes) -> None:
    """sendall, where the broker having closed already is no error."""
    try:
        sock.sendall(data)
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        pass


def is_tls_alert_or_nothing(data: bytes) -> bool:
    """What a TLS server may say to bytes that are not TLS: nothing, or
    alert records (content type 21). Never a Kafka response."""
    return data == b"" or data[0] == 21


def sasl_authenticate_body(token: bytes) -> bytes:
    return wire.kbytes(token)


def parse_sasl_authenticate(body: bytes, version: int) -> tuple[int, str | None, bytes | None, int | None]:
    """(error code, error message, auth bytes, session lifetime ms (v1+))."""
    r = wire.Reader(body)
    err, msg, auth = r.i16(), r.string(), r.bytes_()
    return err, msg, auth, (r.i64() if version >= 1 else None)


def metadata_v1_body() -> bytes:
    return struct.pack(">i", -1)  # every topic


def parse_metadata_v1_brokers(body: bytes) -> set[tuple[str, int]]:
    """The (host, port) of each broker in a Metadata v1 response."""
    r = wire.Reader(body)
    return set(r.array(lambda rr: (rr.i32(), rr.string(), rr.i32(), rr.string())[1:3]))


def good_client_served(sec: Sec, listener: str = "CLIENT") -> None:
    """A new client of `listener` lists topics and produces one record."""
    conf = sec.rd(listener, ADMIN) if sec.listeners[listener].startswith("SASL") else sec.rd(listener)
    adm = AdminClient(conf)
    topic = kutil.create_topic(adm, kutil.unique("still-served"), 1)
    dels = kutil.produce(sec.bs(listener), topic, [{"value": b"served"}],
                         **rest(conf))
    assert dels[0].offset == 0


def test_plaintext_client_on_sasl_ssl_port_fails_cleanly(sec):
    topic = new_topic(sec, "plain-on-tls", 1)
    errors, reports = refused_producer(sec.rd("CLIENT", **{"security.protocol": "PLAINTEXT"}), topic)
    assert errors, "a PLAINTEXT client of the SASL_SSL listener reported no error"
    assert all(r is not None for r in reports), f"records delivered in plaintext: {reports}"
    # the same over a raw socket: an ApiVersions request in the clear is never answered
    host, port = sec.bs("CLIENT").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        payload = wire.request_header_v1(API_API_VERSIONS, 0, 7, "plain") + b""
        s.sendall(struct.pack(">i", len(payload)) + payload)
        closed, rx = wait_closed(s, 10)
    assert closed, f"connection still open 10 s after plaintext bytes; received {rx[:64]!r}"
    assert is_tls_alert_or_nothing(rx), f"answered plaintext with {rx[:64]!r}"
    assert sec.high_watermark(topic) == 0
    good_client_served(sec)


@pytest.mark.parametrize("listener", ["CLIENT", "MTLS"])
def test_tls_garbage_closes_only_that_connection(sec, listener):
    host, port = sec.bs(listener).rsplit(":", 1)
    garbage = random.Random(36).randbytes(4096)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        send_ignoring_close(s, garbage)
        closed, rx = wait_closed(s, 30)
    assert closed, f"connection still open 30 s after 4 KiB of garbage; received {rx[:64]!r}"
    assert is_tls_alert_or_nothing(rx), f"answered garbage with {rx[:64]!r}"
    # a ClientHello's record header claiming a record bigger than TLS allows
    with socket.create_connection((host, int(port)), timeout=15) as s:
        send_ignoring_close(s, b"\x16\x03\x01\xff\xff" + garbage)
        closed, rx = wait_closed(s, 30)
    assert closed, "connection still open 30 s after an oversized TLS record"
    good_client_served(sec, listener)


def test_stalled_tls_handshakes_are_closed(sec):
    """One socket says nothing, another stops in the middle of its
    ClientHello. Meanwhile new clients are served; each stalled socket is
    closed by the broker within 30 s."""
    host, port = sec.bs("CLIENT").rsplit(":", 1)
    t0 = time.monotonic()
    silent = socket.create_connection((host, int(port)), timeout=15)
    partial = socket.create_connection((host, int(port)), timeout=15)
    try:
        partial.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a 512-byte record, 11 bytes of it
        # served meanwhile: a raw TLS connection through its handshake, and real clients
        with RawConn(sec, "CLIENT") as c:
            assert c.api_versions()[0] == 0
        good_client_served(sec)
        good_client_served(sec, "MTLS")
        for name, s in (("silent", silent), ("partial ClientHello", partial)):
            closed, rx = wait_closed(s, max(0.0, t0 + 30 - time.monotonic()))
            assert closed, f"{name}: still open 30 s after connecting"
            assert is_tls_alert_or_nothing(rx), f"{name}: received {rx[:64]!r}"
    finally:
        silent.close()
        partial.close()
    good_client_served(sec)


def test_unauthenticated_connections_are_closed_after_30_s(sec):
    """A client of a SASL listener that never authenticates: one silent
    after ApiVersions, one trickling a frame it never finishes. The broker
    closes both 30 s after they connected (SASL_AUTHENTICATION_TIMEOUT),
    serving others meanwhile."""
    host, port = sec.bs("SASL").rsplit(":", 1)
    t0 = time.monotonic()
    conn = RawConn(sec, "SASL")
    silent = conn.sock
    trickle = socket.create_connection((host, int(port)), timeout=15)
    try:
        assert conn.api_versions()[0] == 0
        trickle.sendall(struct.pack(">i", 100) + b"\x00")
        good_client_served(sec, "SASL")
        for name, s in (("silent after ApiVersions", silent), ("trickling", trickle)):
            closed, _ = wait_closed(s, max(0.0, t0 + 45 - time.monotonic()))
            assert closed, f"{name}: still open 45 s after connecting"
        assert time.monotonic() - t0 >= 29, "closed before the 30 s allowed"
    finally:
        conn.close()
        trickle.close()


@pytest.mark.parametrize("listener", ["SASL", "CLIENT"])
def test_sasl_frames_before_authentication_are_capped(sec, listener):
    """After a SaslHandshake for PLAIN: a SaslAuthenticate frame of exactly
    sasl.server.max.receive.size is read (and refused: wrong password); one
    byte more, or a size prefix of 100 MB, closes the connection without an
    answer, and the broker's memory does not follow the prefix."""
    # exactly the cap: a PLAIN token with a long wrong password, answered
    with RawConn(sec, listener) as c:
        assert c.sasl_handshake("PLAIN")[0] == 0
        corr, frame = c.frame(API_SASL_AUTHENTICATE, 0, b"")
        fixed = len(frame) - 4 + 4  # header + the token's int32 length
        token = b"\x00alice\x00" + b"x" * (MAX_SASL_RECEIVE - fixed - len(b"\x00alice\x00"))
        corr, frame = c.frame(API_SASL_AUTHENTICATE, 0, sasl_authenticate_body(token))
        assert struct.unpack(">i", frame[:4])[0] == MAX_SASL_RECEIVE
        c.send_raw(frame)
        err, msg, _, _ = parse_sasl_authenticate(c.recv_response(corr), 0)
        assert err == SASL_AUTHENTICATION_FAILED, (err, msg)

    rss0 = sec.broker.rss_kib()
    hwm0 = sec.broker.rss_kib("VmHWM")
    for size in (MAX_SASL_RECEIVE + 1, 100 * 1024 * 1024):
        with RawConn(sec, listener) as c:
            assert c.sasl_handshake("PLAIN")[0] == 0
            corr = c.corr + 1
            header = wire.request_header_v1(API_SASL_AUTHENTICATE, 0, corr, c.client_id)
            send_ignoring_close(c.sock, struct.pack(">i", size) + header + struct.pack(">i", size - 20) + b"\x00al")
            closed, rx = c.closed_without_answer(10)
            assert closed, f"a {size}-byte SASL frame left the connection open; received {rx[:64]!r}"
            assert rx == b"", f"a {size}-byte SASL frame was answered: {rx[:64]!r}"
    rss1 = sec.broker.rss_kib()
    hwm1 = sec.broker.rss_kib("VmHWM")
    assert rss1 - rss0 < 50 * 1024, f"RSS grew from {rss0} KiB to {rss1} KiB"
    assert hwm1 - hwm0 < 50 * 1024, f"peak RSS grew from {hwm0} KiB to {hwm1} KiB"
    good_client_served(sec)


@pytest.mark.parametrize("listener", ["SASL", "CLIENT"])
def test_requests_before_authentication_are_not_served(sec, listener):
    # ApiVersions (the positive control) is answered and offers the SASL APIs
    with RawConn(sec, listener) as c:
        err, versions = c.api_versions()
        assert err == 0
        assert versions[API_SASL_HANDSHAKE][0] == 0 and versions[API_SASL_HANDSHAKE][1] >= 1, versions
        assert versions[API_SASL_AUTHENTICATE][0] == 0 and versions[API_SASL_AUTHENTICATE][1] >= 1, versions
        _, frame = c.frame(API_METADATA, 1, metadata_v1_body())
        c.send_raw(frame)
        closed, rx = c.closed_without_answer(10)
        assert closed and rx == b"", f"Metadata before authentication: closed={closed}, received {rx[:64]!r}"
    # nor as the first request
    with RawConn(sec, listener) as c:
        _, frame = c.frame(API_METADATA, 1, metadata_v1_body())
        c.send_raw(frame)
        closed, rx = c.closed_without_answer(10)
        assert closed and rx == b"", f"Metadata as the first request: closed={closed}, received {rx[:64]!r}"
    # the handshake lists the listener's mechanisms, and an unknown one is refused
    with RawConn(sec, listener) as c:
        err, mechs = c.sasl_handshake("GSSAPI")
        assert err == UNSUPPORTED_SASL_MECHANISM and set(mechs) == set(MECHANISMS), (err, mechs)


@pytest.mark.parametrize("listener", ["BROKER", "MTLS"])
def test_sasl_handshake_on_a_listener_without_sasl(sec, listener):
    """PLAINTEXT and SSL listeners have no SASL: a SaslHandshake is answered
    ILLEGAL_SASL_STATE, as Kafka answers it."""
    with RawConn(sec, listener, cert="client") as c:
        assert c.api_versions()[0] == 0
        err, _ = c.sasl_handshake("PLAIN")
        assert err == ILLEGAL_SASL_STATE, err


IGNORED_REFUSALS = {  # id: (listener, PLAIN token, Metadata sent before reading the refusal)
    "wrong-password-pipelined": ("SASL", b"\x00alice\x00wrong", True),
    "wrong-password-after-reply": ("SASL", b"\x00alice\x00wrong", False),
    "other-users-password": ("SASL", b"\x00alice\x00bob-secret", True),
    "unknown-user": ("SASL", b"\x00mallory\x00alice-secret", True),
    "empty-password-over-tls": ("CLIENT", b"\x00alice\x00", True),
}


@pytest.mark.parametrize("case", list(IGNORED_REFUSALS))
def test_client_ignoring_a_refusal_is_never_served(sec, case):
    """SaslHandshake v1 PLAIN, SaslAuthenticate v0 with bad credentials, then
    Metadata as if nothing happened: the refusal (58) is answered and the
    Metadata request never is. The right password on the same path (the
    positive control) gets its Metadata."""
    listener, token, pipelined = IGNORED_REFUSALS[case]
    with RawConn(sec, listener) as c:
        err, mechs = c.sasl_handshake("PLAIN")
        assert err == 0 and set(mechs) == set(MECHANISMS), (err, mechs)
        auth_corr, auth = c.frame(API_SASL_AUTHENTICATE, 0, sasl_authenticate_body(token))
        md_corr, md = c.frame(API_METADATA, 1, metadata_v1_body())
        c.send_raw(auth + md if pipelined else auth)
        err, msg, _, _ = parse_sasl_authenticate(c.recv_response(auth_corr), 0)
        assert err == SASL_AUTHENTICATION_FAILED, (err, msg)
        if not pipelined:
            send_ignoring_close(c.sock, md)
        closed, rx = c.closed_without_answer(10)
        assert closed, f"connection open 10 s after a refused authentication; received {rx[:64]!r}"
        assert rx == b"", f"answered after a refused authentication: {rx[:64]!r}"

    # positive control: the same bytes with the right password, Metadata answered
    with RawConn(sec, listener) as c:
        assert c.sasl_handshake("PLAIN")[0] == 0
        auth_corr, auth = c.frame(API_SASL_AUTHENTICATE, 1, sasl_authenticate_body(b"\x00alice\x00alice-secret"))
        md_corr, md = c.frame(API_METADATA, 1, metadata_v1_body())
        c.send_raw(auth + md if pipelined else auth)
        err, msg, _, lifetime = parse_sasl_authenticate(c.recv_response(auth_corr), 1)
        assert err == 0, (err, msg)
        assert REAUTH_MS - 60_000 <= lifetime <= REAUTH_MS, f"session_lifetime_ms {lifetime}"
        if not pipelined:
            c.send_raw(md)
        assert parse_metadata_v1_brokers(c.recv_response(md_corr)) == {("127.0.0.1", sec.port(listener))}


@pytest.mark.parametrize("listener", ["SASL", "CLIENT"])
def test_failed_authentication_answer_is_delayed(sec, listener):
    """connection.failed.authentication.delay.ms (300 ms here) holds the
    SASL_AUTHENTICATION_FAILED answer back, as Kafka's KIP-306 does
    (Kafka 4.4 answers a wrong PLAIN password after the delay and then
    closes): a client that waits for its answer before trying the next
    password is slowed down. The connection is closed after the answer."""
    with RawConn(sec, listener) as c:
        assert c.sasl_handshake("PLAIN")[0] == 0
        corr, frame = c.frame(API_SASL_AUTHENTICATE, 0, sasl_authenticate_body(b"\x00alice\x00wrong"))
        t0 = time.monotonic()
        c.send_raw(frame)
        err, msg, _, _ = parse_sasl_authenticate(c.recv_response(corr), 0)
        elapsed = time.monotonic() - t0
        assert err == SASL_AUTHENTICATION_FAILED, (err, msg)
        closed, rx = c.closed_without_answer(10)
        assert closed and rx == b"", f"after the refusal: closed={closed}, received {rx[:64]!r}"
    assert elapsed >= AUTH_DELAY_MS / 1000 * 0.9, \
        f"refused after {elapsed * 1000:.0f} ms; connection.failed.authentication.delay.ms={AUTH_DELAY_MS}"


# ---------------------------------------------------------------------------
# session lifetime (connections.max.reauth.ms), on a broker of its own
# ---------------------------------------------------------------------------

SHORT_SESSION_MS = 3000


def test_session_lifetime_and_reauthentication(tmp_path_factory):
    """connections.max.reauth.ms=3000: SaslAuthenticate v1 tells the session
    lifetime; a request after it ends closes the connection unanswered; a
    librdkafka producer (KIP-368 re-authentication) writing throughout
    several sessions loses nothing and duplicates nothing."""
    tls = tlsutil.make_tls(tmp_path_factory.mktemp("tls-reauth"))
    listeners = {"SASL": "SASL_PLAINTEXT", "BROKER": "PLAINTEXT"}
    settings = {"num.partitions": 1, "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl.plain.sasl.jaas.config": PLAIN_JAAS,
                "connections.max.reauth.ms": SHORT_SESSION_MS}
    b = start_broker(tmp_path_factory, "reauth", listeners, settings, [])
    conftest._active.append(("reauth", b, 0))
    s = Sec(b, tls, listeners)
    try:
        conf = s.rd("SASL", ALICE, "PLAIN")
        topic = kutil.create_topic(AdminClient(conf), kutil.unique("reauth"), 1)

        errors: list[KafkaError] = []
        acked: list[int] = []
        failed: list[KafkaError] = []
        stop = threading.Event()
        unflushed: list[int] = []

        def on_delivery(err, msg):
            (failed.append(err) if err is not None else acked.append(msg.offset()))

        def produce_steadily():
            p = Producer({**conf, "error_cb": errors.append, "acks": "all", "enable.idempotence": True,
                          "linger.ms": 0, "message.timeout.ms": 30000})
            i = 0
            while not stop.is_set():  # about 20 records a second
                p.produce(topic, value=f"r{i}".encode(), on_delivery=on_delivery)
                i += 1
                p.poll(0)
                stop.wait(0.05)
            unflushed.append(p.flush(30))

        producer = threading.Thread(target=produce_steadily, daemon=True)
        started = time.monotonic()
        producer.start()

        with RawConn(s, "SASL") as c:
            assert c.sasl_handshake("PLAIN")[0] == 0
            err, msg, _, lifetime = parse_sasl_authenticate(
                c.request(API_SASL_AUTHENTICATE, 1, sasl_authenticate_body(b"\x00bob\x00bob-secret")), 1)
            authenticated = time.monotonic()
            assert err == 0, (err, msg)
            assert 0 < lifetime <= SHORT_SESSION_MS, f"session_lifetime_ms {lifetime}"
            md = c.request(API_METADATA, 1, metadata_v1_body())
            assert parse_metadata_v1_brokers(md) == {("127.0.0.1", s.port("SASL"))}
            # Waiting for time itself: the session must be over on the broker's clock.
            time.sleep(max(0.0, authenticated + SHORT_SESSION_MS / 1000 + 0.5 - time.monotonic()))
            _, frame = c.frame(API_METADATA, 1, metadata_v1_body())
            send_ignoring_close(c.sock, frame)
            closed, rx = c.closed_without_answer(10)
            assert closed and rx == b"", f"request after the session's end: closed={closed}, received {rx[:64]!r}"

        # the producer has now run through at least two sessions
        kutil.wait_until(lambda: time.monotonic() - started >= 2.5 * SHORT_SESSION_MS / 1000, 30,
                         what="the producer running for 2.5 sessions")
        stop.set()
        producer.join(60)
        assert not producer.is_alive(), "producer did not finish"
        assert unflushed == [0], f"records undelivered after the flush: {unflushed}"
        assert not failed, f"{len(failed)} deliveries failed, first {failed[0]}"
        assert sorted(acked) == list(range(len(acked))) and len(acked) >= 20, f"acked offsets {acked[:50]}"
        auth_errors = [e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert not auth_errors, f"re-authentication failed: {auth_errors}"
        res = kutil.consume(s.bs("SASL"), topic, [0], expected=len(acked),
                            **rest(conf))
        assert [m.value for m in res.messages] == [f"r{i}".encode() for i in range(len(acked))]
    finally:
        b.close()
