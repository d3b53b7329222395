"""ACL bindings and the authorizer, end to end with confluent-kafka's
AdminClient: CreateAcls, DescribeAcls and DeleteAcls answer
SECURITY_DISABLED without an authorizer; with one, a super user manages
bindings (kept in the cluster store, so across a restart), Kafka's filters
select them, a non-super user needs DESCRIBE or ALTER on the cluster, and
a new binding applies to the next request, and Metadata shows a
non-super user only the topics it may describe. APIs whose ACL checks are
not built yet are served to super users only: anyone else's connection
is closed unanswered (docs/security.md).

The module broker has a SASL_PLAINTEXT listener (SASL) with PLAIN users
alice and bob and SCRAM-SHA-512 user admin (--add-scram), admin the one
super user, and the harness's PLAINTEXT listener (BROKER).
"""

from __future__ import annotations

import io
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, ResourcePatternType, ResourceType)

import conftest
import kutil
import wire
from strata_broker import Broker, BrokerError
from test_security import start_broker, wait_closed

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
LISTENERS = {"SASL": "SASL_PLAINTEXT", "BROKER": "PLAINTEXT"}
ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret" user_bob="bob-secret";')
SETTINGS = {
    "num.partitions": 1,
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl.plain.sasl.jaas.config": PLAIN_JAAS,
    "authorizer.class.name": STANDARD_AUTHORIZER,
    "super.users": "User:admin",
}
ARGS = ["--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]"]
API_DELETE_TOPICS, API_SASL_HANDSHAKE, API_SASL_AUTHENTICATE = 20, 17, 36
TIMEOUT = 20


@pytest.fixture(scope="module")
def acl_module(tmp_path_factory):
    b = start_broker(tmp_path_factory, "acls", LISTENERS, SETTINGS, ARGS)
    yield b
    b.close()


@pytest.fixture
def acl_broker(acl_module):
    if not acl_module.alive():
        pytest.fail(f"the ACL broker is not running; log tail:\n{acl_module.log_tail()}", pytrace=False)
    conftest._active.append(("acls", acl_module, acl_module.log_size()))
    yield acl_module


def client(b, creds: tuple[str, str]) -> dict:
    user, password = creds
    mechanism = "SCRAM-SHA-512" if user == "admin" else "PLAIN"
    return {"bootstrap.servers": b.bootstrap_for("SASL"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
            **kutil.COMMON}


def admin(b, creds=ADMIN) -> AdminClient:
    return AdminClient(client(b, creds))


def ANY(**kw) -> AclBindingFilter:
    f = dict(restype=ResourceType.ANY, name=None, resource_pattern_type=ResourcePatternType.ANY,
             principal=None, host=None, operation=AclOperation.ANY,
             permission_type=AclPermissionType.ANY)
    f.update(kw)
    return AclBindingFilter(**f)


def allow(restype, name, principal, op, pattern=ResourcePatternType.LITERAL, host="*",
          permission=AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(restype, name, pattern, principal, host, op, permission)


def create(adm: AdminClient, bindings: list[AclBinding]) -> dict[AclBinding, KafkaError | None]:
    out = {}
    for b, f in adm.create_acls(bindings, request_timeout=TIMEOUT).items():
        try:
            f.result(timeout=TIMEOUT + 10)
            out[b] = None
        except KafkaException as e:
            out[b] = e.args[0]
    return out


def describe(adm: AdminClient, flt: AclBindingFilter) -> set[AclBinding]:
    return set(adm.describe_acls(flt, request_timeout=TIMEOUT).result(timeout=TIMEOUT + 10))


def error_of(future) -> KafkaError:
    with pytest.raises(KafkaException) as e:
        future.result(timeout=TIMEOUT + 10)
    return e.value.args[0]


def describe_acls_raw(bootstrap: str, creds: tuple[str, str] | None) -> tuple[int, str | None, list]:
    """DescribeAcls v1 (any binding) on a raw connection, after SASL PLAIN
    when `creds` are given: (error code, message, resources). librdkafka's
    describe_acls() drops the response's top-level error (it answers an
    empty list), so the code is read here."""
    from kafka.protocol.admin import DescribeAclsRequest
    req = DescribeAclsRequest[1](1, None, 1, None, None, 1, 1)
    with wire.KafkaConn.to(bootstrap) as conn:
        if creds:
            sasl_plain(conn, *creds)
        resp = req.RESPONSE_TYPE.decode(io.BytesIO(conn.request(29, 1, req.encode())))
    return resp.error_code, resp.error_message, resp.resources


def test_acl_apis_without_an_authorizer_answer_security_disabled(broker):
    code, message, resources = describe_acls_raw(broker.bootstrap, None)
    assert (code, resources) == (KafkaError.SECURITY_DISABLED, []), message
    adm = kutil.admin(broker.bootstrap)
    b = allow(ResourceType.TOPIC, "t", "User:alice", AclOperation.READ)
    assert create(adm, [b])[b].code() == KafkaError.SECURITY_DISABLED
    err = error_of(adm.delete_acls([ANY()], request_timeout=TIMEOUT)[ANY()])
    assert err.code() == KafkaError.SECURITY_DISABLED, err


def test_super_user_creates_describes_and_deletes_acls(acl_broker):
    adm = admin(acl_broker)
    who = f"User:{kutil.unique('carol')}"
    topic = kutil.unique("orders")
    bindings = [
        allow(ResourceType.TOPIC, topic, who, AclOperation.READ),
        allow(ResourceType.TOPIC, topic[:8], who, AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
        allow(ResourceType.GROUP, "app-", who, AclOperation.READ, pattern=ResourcePatternType.PREFIXED),
        allow(ResourceType.TOPIC, topic, who, AclOperation.DELETE, host="10.1.2.3",
              permission=AclPermissionType.DENY),
        allow(ResourceType.BROKER, "kafka-cluster", who, AclOperation.DESCRIBE),
    ]
    assert create(adm, bindings) == {b: None for b in bindings}
    # creating one that exists succeeds and changes nothing
    assert create(adm, bindings[:1]) == {bindings[0]: None}

    mine = ANY(principal=who)
    assert describe(adm, mine) == set(bindings)
    # MATCH: every binding that applies to this literal topic name (the
    # literal one, the prefixed one), never the group's
    match = ANY(restype=ResourceType.TOPIC, name=topic, resource_pattern_type=ResourcePatternType.MATCH,
                principal=who)
    assert describe(adm, match) == {b for b in bindings if b.restype == ResourceType.TOPIC}
    # LITERAL with a name: exactly that pattern
    literal = ANY(restype=ResourceType.TOPIC, name=topic[:8], resource_pattern_type=ResourcePatternType.LITERAL,
                  principal=who)
    assert describe(adm, literal) == set()
    deny = ANY(principal=who, permission_type=AclPermissionType.DENY)
    assert describe(adm, deny) == {bindings[3]}

    # DeleteAcls: each filter answers what it matched
    group_filter = ANY(restype=ResourceType.GROUP, principal=who)
    fs = adm.delete_acls([deny, group_filter], request_timeout=TIMEOUT)
    assert set(fs[deny].result(timeout=TIMEOUT + 10)) == {bindings[3]}
    assert set(fs[group_filter].result(timeout=TIMEOUT + 10)) == {bindings[2]}
    assert describe(adm, mine) == {bindings[0], bindings[1], bindings[4]}
    removed = adm.delete_acls([mine], request_timeout=TIMEOUT)[mine].result(timeout=TIMEOUT + 10)
    assert set(removed) == {bindings[0], bindings[1], bindings[4]}
    assert describe(adm, mine) == set()


def test_invalid_bindings_are_refused_one_by_one(acl_broker):
    adm = admin(acl_broker)
    who = f"User:{kutil.unique('dave')}"
    good = allow(ResourceType.TOPIC, kutil.unique("t"), who, AclOperation.READ)
    other_cluster = allow(ResourceType.BROKER, "not-the-cluster", who, AclOperation.ALTER)
    no_type = allow(ResourceType.TOPIC, kutil.unique("t"), "dave", AclOperation.READ)
    results = create(adm, [good, other_cluster, no_type])
    assert results[good] is None
    assert results[other_cluster].code() == KafkaError.INVALID_REQUEST, results[other_cluster]
    assert "kafka-cluster" in results[other_cluster].str()
    assert results[no_type].code() == KafkaError.INVALID_REQUEST, results[no_type]
    assert describe(adm, ANY(principal=who)) == {good}
    adm.delete_acls([ANY(principal=who)], request_timeout=TIMEOUT)[ANY(principal=who)].result(TIMEOUT + 10)


def test_a_non_super_user_needs_cluster_acls_and_a_grant_applies_at_once(acl_broker):
    adm = admin(acl_broker)
    alice = admin(acl_broker, ALICE)
    bootstrap = acl_broker.bootstrap_for("SASL")
    bobs = allow(ResourceType.TOPIC, kutil.unique("t"), "User:bob", AclOperation.READ)
    assert create(adm, [bobs]) == {bobs: None}
    code, message, _ = describe_acls_raw(bootstrap, ALICE)
    assert code == KafkaError.CLUSTER_AUTHORIZATION_FAILED, message
    assert create(alice, [bobs])[bobs].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    grant = allow(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.DESCRIBE)
    try:
        assert create(adm, [grant]) == {grant: None}
        # The next request is decided with the new binding (one broker:
        # the binding is in its set before CreateAcls answers).
        assert describe_acls_raw(bootstrap, ALICE)[0] == 0
        assert {grant, bobs} <= describe(alice, ANY())
        # DESCRIBE does not imply ALTER
        assert create(alice, [bobs])[bobs].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        # a DENY wins over the ALLOW
        deny = allow(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.ALL,
                     permission=AclPermissionType.DENY)
        assert create(adm, [deny]) == {deny: None}
        assert describe_acls_raw(bootstrap, ALICE)[0] == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    finally:
        for f in (ANY(principal="User:alice"), ANY(principal="User:bob")):
            adm.delete_acls([f], request_timeout=TIMEOUT)[f].result(timeout=TIMEOUT + 10)


def test_metadata_shows_a_non_super_user_only_describable_topics(acl_broker):
    adm = admin(acl_broker)
    topic = kutil.create_topic(adm, kutil.unique("md"), 2)
    alice = admin(acl_broker, ALICE)
    assert topic in adm.list_topics(timeout=TIMEOUT).topics
    # every topic: left out silently
    assert topic not in alice.list_topics(timeout=TIMEOUT).topics
    # named: refused, and a missing topic is refused the same way
    for name in (topic, kutil.unique("missing")):
        t = alice.list_topics(topic=name, timeout=TIMEOUT).topics[name]
        assert t.error is not None and t.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, t.error
        assert not t.partitions
    grant = allow(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ)   # READ implies DESCRIBE
    try:
        assert create(adm, [grant]) == {grant: None}
        md = alice.list_topics(timeout=TIMEOUT)
        assert topic in md.topics and len(md.topics[topic].partitions) == 2, md.topics.get(topic)
        assert alice.list_topics(topic=topic, timeout=TIMEOUT).topics[topic].error is None
    finally:
        f = ANY(principal="User:alice")
        adm.delete_acls([f], request_timeout=TIMEOUT)[f].result(timeout=TIMEOUT + 10)


def sasl_plain(conn: wire.KafkaConn, user: str, password: str) -> None:
    """SaslHandshake v1 and SaslAuthenticate v0 for PLAIN, on a raw connection."""
    r = wire.Reader(conn.request(API_SASL_HANDSHAKE, 1, wire.kstring("PLAIN")))
    assert r.i16() == 0
    token = b"\0" + user.encode() + b"\0" + password.encode()
    r = wire.Reader(conn.request(API_SASL_AUTHENTICATE, 0, wire.kbytes(token)))
    err, msg = r.i16(), r.string()
    assert err == 0, msg


def test_apis_without_acl_checks_yet_serve_super_users_only(acl_broker):
    bootstrap = acl_broker.bootstrap_for("SASL")
    topic = kutil.create_topic(admin(acl_broker), kutil.unique("gated"), 1)
    # DeleteTopics v0 from alice: her connection is closed unanswered
    with wire.KafkaConn.to(bootstrap) as conn:
        sasl_plain(conn, *ALICE)
        body = (1).to_bytes(4, "big") + wire.kstring(topic) + (10000).to_bytes(4, "big")
        conn.send_request(API_DELETE_TOPICS, 0, body)
        closed, received = wait_closed(conn.sock, 15)
        assert closed and received == b"", f"closed={closed}, received {received[:60]!r}"
    deadline = time.monotonic() + 15
    while "User:alice may not use DeleteTopics" not in acl_broker.log_tail(200_000):
        assert time.monotonic() < deadline, "the broker did not log why it closed alice's connection"
        time.sleep(0.1)
    # admin, the super user, is served: the topic is deleted
    adm = admin(acl_broker)
    adm.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(timeout=TIMEOUT + 10)


def test_acls_survive_a_restart(tmp_path_factory):
    b = start_broker(tmp_path_factory, "acls-restart", LISTENERS, SETTINGS, ARGS)
    try:
        binding = allow(ResourceType.GROUP, "billing", "User:erin", AclOperation.READ)
        assert create(admin(b), [binding]) == {binding: None}
        b.stop()
        b.start().wait_ready()
        assert describe(admin(b), ANY(principal="User:erin")) == {binding}
    finally:
        b.close()


def test_broker_refuses_an_unknown_authorizer(tmp_path_factory):
    base = tmp_path_factory.mktemp("bad-authorizer")
    b = Broker(data_dir=base / "data", settings={"authorizer.class.name": "com.example.MyAuthorizer"},
               name="bad-authorizer", log_dir=base)
    try:
        with pytest.raises(BrokerError) as e:
            b.start().wait_ready()
        assert "exited with code 1" in str(e.value), e.value
        assert "org.apache.kafka.metadata.authorizer.StandardAuthorizer" in b.log_tail()
    finally:
        b.close()


def produce_reports(conf: dict, topic: str, n: int, idempotent: bool) -> list:
    """Each record's delivery error (None: delivered), within 30 s."""
    reports: list = []
    p = Producer({**conf, "acks": "all", "linger.ms": 0, "message.timeout.ms": 10000,
                  "enable.idempotence": idempotent})
    for i in range(n):
        p.produce(topic, value=f"r{i}".encode(), on_delivery=lambda err, msg: reports.append(err))
    assert p.flush(30) == 0, "records neither delivered nor failed within 30 s"
    return reports


def consumer_events(conf: dict, topic: str, want, timeout: float = 30) -> tuple[list, set]:
    """Reads partition 0 of `topic` from the beginning by assignment until
    `want(records, errors)` holds: (record values, error codes seen)."""
    c = Consumer({**conf, "group.id": kutil.unique("acl-reader"), "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        return poll_until(c, want, timeout)
    finally:
        c.close()


def poll_until(c: Consumer, want, timeout: float) -> tuple[list, set]:
    """Polls until `want(record values, error codes)` holds, with a deadline."""
    values, errors = [], set()
    deadline = time.monotonic() + timeout
    while not want(values, errors):
        assert time.monotonic() < deadline, f"read {values}, errors {errors} in {timeout} s"
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            errors.add(m.error().code())
        else:
            values.append(m.value())
    return values, errors


def init_producer_id_raw(b, creds: tuple[str, str]) -> int:
    """InitProducerId v1 without a transactional id (an idempotent
    producer's), on a raw connection after SASL PLAIN: its error code."""
    with wire.KafkaConn.to(b.bootstrap_for("SASL")) as conn:
        sasl_plain(conn, *creds)
        r = wire.Reader(conn.request(22, 1, wire.kstring(None) + (60000).to_bytes(4, "big")))
        _throttle, err = r.i32(), r.i16()
    return err


def watermarks(b, topic: str) -> tuple[int, int]:
    """Partition 0's (low, high), read by admin."""
    c = Consumer({**client(b, ADMIN), "group.id": kutil.unique("hw")})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=15, cached=False)
    finally:
        c.close()


def test_producing_and_reading_need_write_and_read(acl_broker):
    adm = admin(acl_broker)
    topic = kutil.create_topic(adm, kutil.unique("rw"), 1)
    conf = client(acl_broker, ALICE)
    mine = ANY(principal="User:alice")
    try:
        # no WRITE: every record refused, nothing stored
        reports = produce_reports(conf, topic, 3, idempotent=False)
        assert [r and r.code() for r in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 3, reports
        # no WRITE on any topic: an idempotent producer gets no producer id
        assert init_producer_id_raw(acl_broker, ALICE) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        reports = produce_reports(conf, topic, 1, idempotent=True)
        assert reports[0] is not None, reports
        assert watermarks(acl_broker, topic) == (0, 0)

        write = allow(ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE)
        assert create(adm, [write]) == {write: None}
        # WRITE on a topic makes an idempotent producer (KIP-679)
        assert init_producer_id_raw(acl_broker, ALICE) == 0
        assert produce_reports(conf, topic, 3, idempotent=True) == [None] * 3

        # WRITE implies DESCRIBE (ListOffsets is answered) but not READ:
        # the fetch is refused; the group (no ACL) is refused its coordinator
        _, errors = consumer_events(conf, topic, lambda v, e: KafkaError.TOPIC_AUTHORIZATION_FAILED in e)
        read = allow(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ)
        assert create(adm, [read]) == {read: None}
        values, errors = consumer_events(conf, topic, lambda v, e: len(v) == 3)
        assert values == [b"r0", b"r1", b"r2"]
        assert KafkaError.TOPIC_AUTHORIZATION_FAILED not in errors
        assert watermarks(acl_broker, topic) == (0, 3)
    finally:
        adm.delete_acls([mine], request_timeout=TIMEOUT)[mine].result(timeout=TIMEOUT + 10)


def test_find_coordinator_needs_describe_on_the_group(acl_broker):
    """FindCoordinator v1 on a raw connection: a group alice may not
    describe is refused; one she may is found."""
    adm = admin(acl_broker)
    group = kutil.unique("fc")
    mine = ANY(principal="User:alice")

    def find() -> tuple[int, int]:
        with wire.KafkaConn.to(acl_broker.bootstrap_for("SASL")) as conn:
            sasl_plain(conn, *ALICE)
            body = wire.kstring(group) + b"\x00"   # v1-3: key, key_type GROUP
            r = wire.Reader(conn.request(10, 1, body))
            _throttle, err, _msg, node = r.i32(), r.i16(), r.string(), r.i32()
            return err, node

    try:
        assert find() == (KafkaError.GROUP_AUTHORIZATION_FAILED, -1)
        grant = allow(ResourceType.GROUP, group, "User:alice", AclOperation.DESCRIBE)
        assert create(adm, [grant]) == {grant: None}
        err, node = find()
        assert err == 0 and node >= 0, (err, node)
    finally:
        adm.delete_acls([mine], request_timeout=TIMEOUT)[mine].result(timeout=TIMEOUT + 10)


def group_consume(conf: dict, topic: str, group: str, want: int, timeout: float = 40) -> tuple[list, set]:
    """Subscribes as a member of `group` and reads until `want` records
    came or an authorization error did, committing what it read: (record
    values, error codes seen)."""
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 10000})
    c.subscribe([topic])
    denied = {KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED}
    try:
        values, errors = poll_until(c, lambda v, e: len(v) >= want or bool(e & denied), timeout)
        if values:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return values, errors


def test_a_consumer_group_needs_read_on_the_group_and_the_topic(acl_broker):
    adm = admin(acl_broker)
    topic = kutil.create_topic(adm, kutil.unique("grp"), 1)
    group = kutil.unique("acl-group")
    produce_reports(client(acl_broker, ADMIN), topic, 4, idempotent=True)
    conf = client(acl_broker, ALICE)
    mine = ANY(principal="User:alice")
    try:
        read_topic = allow(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ)
        assert create(adm, [read_topic]) == {read_topic: None}
        # READ on the topic alone: the group refuses her
        values, errors = group_consume(conf, topic, group, 4)
        assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors and not values, (values, errors)
        # a prefixed READ on the group: she joins, reads, commits
        read_group = allow(ResourceType.GROUP, group[:10], "User:alice", AclOperation.READ,
                           pattern=ResourcePatternType.PREFIXED)
        assert create(adm, [read_group]) == {read_group: None}
        values, errors = group_consume(conf, topic, group, 4)
        assert values == [b"r0", b"r1", b"r2", b"r3"], (values, errors)
        c = Consumer({**conf, "group.id": group})
        try:
            assert c.committed([TopicPartition(topic, 0)], timeout=15)[0].offset == 4
        finally:
            c.close()
        # ListGroups: her group (READ implies DESCRIBE), and only groups she may describe
        alice = admin(acl_broker, ALICE)   # kept alive until the future resolves
        listed = {g.group_id for g in alice.list_consumer_groups(
            request_timeout=TIMEOUT).result(timeout=TIMEOUT + 10).valid}
        assert group in listed, listed
        assert all(g.startswith(group[:10]) for g in listed), listed
    finally:
        adm.delete_acls([mine], request_timeout=TIMEOUT)[mine].result(timeout=TIMEOUT + 10)
