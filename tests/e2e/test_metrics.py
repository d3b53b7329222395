"""/metrics, /healthz and /readyz (issue 19, metrics through a library).

/metrics is parsed with the Prometheus project's own Python text parser
(prometheus_client), which refuses what Prometheus would refuse (a
malformed line, a family declared twice, a sample outside its family).
Requests are counted per API with their latency histogram and network
bytes; per-partition families are labelled by topic and partition.
/healthz answers while the broker starts; /readyz says 503 with the
start-up phase until the broker has recovered its logs and its object
store answered, then 200.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import kutil
from strata_broker import Broker


def get(b: Broker, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{b.http_port}{path}", timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def families(b: Broker) -> dict:
    b.wait_ready()  # /metrics answers 503 until the broker is ready
    status, ctype, text = get(b, "/metrics")
    assert status == 200, text
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    parsed = {}
    for f in text_string_to_metric_families(text):
        assert f.name not in parsed, f"family {f.name} declared twice"
        parsed[f.name] = f
    return parsed


def sample(fams: dict, family: str, name: str, **labels) -> float | None:
    for s in fams[family].samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


def create_again(b: Broker, topic: str):
    """CreateTopics for an existing topic: an error response."""
    from confluent_kafka.admin import NewTopic
    adm = kutil.admin(b.bootstrap)  # alive until the answer: a destroyed client fails its futures
    fut = adm.create_topics([NewTopic(topic, 2, 1)])[topic]
    try:
        fut.result(timeout=30)
        raise AssertionError("creating an existing topic succeeded")
    except Exception as e:  # noqa: BLE001 - the client's KafkaException
        assert "TOPIC_ALREADY_EXISTS" in str(e), e


def test_metrics_parse_and_count_requests_per_api(broker):
    topic = kutil.create_topic(kutil.admin(broker.bootstrap), kutil.unique("metrics"), partitions=2)
    before = families(broker)
    sent_before = sample(before, "strata_network_received_bytes", "strata_network_received_bytes_total",
                         api="Produce") or 0.0
    p = kutil.producer(broker.bootstrap, **{"linger.ms": 0})
    value = b"x" * 1000
    for i in range(50):
        p.produce(topic, value=value, partition=i % 2)
        p.flush(10)
    got = kutil.consume(broker.bootstrap, topic, [0, 1], expected=50)
    assert len(got.messages) == 50

    fams = families(broker)
    # Counters are declared without their _total suffix and sampled with it.
    assert fams["strata_requests"].type == "counter"
    produced = sample(fams, "strata_requests", "strata_requests_total", api="Produce")
    assert produced is not None and produced >= 50, produced
    assert (sample(fams, "strata_requests", "strata_requests_total", api="Fetch") or 0) >= 1
    h = fams["strata_request_duration_seconds"]
    assert h.type == "histogram"
    count = sample(fams, "strata_request_duration_seconds", "strata_request_duration_seconds_count",
                   api="Produce")
    inf = sample(fams, "strata_request_duration_seconds", "strata_request_duration_seconds_bucket",
                 api="Produce", le="+Inf")
    assert count == inf and count >= 50, (count, inf)
    # Every produced value went over the wire in a Produce request.
    received = sample(fams, "strata_network_received_bytes", "strata_network_received_bytes_total",
                      api="Produce")
    assert received - sent_before >= 50 * len(value), (received, sent_before)
    sent = sample(fams, "strata_network_sent_bytes", "strata_network_sent_bytes_total", api="Fetch")
    assert sent >= 50 * len(value), sent

    # Error codes per API under Kafka's names: creating the topic again
    # answers TOPIC_ALREADY_EXISTS.
    create_again(broker, topic)
    fams = families(broker)
    assert fams["strata_request_errors"].type == "counter"
    dup = sample(fams, "strata_request_errors", "strata_request_errors_total",
                 api="CreateTopics", error="TOPIC_ALREADY_EXISTS")
    assert dup is not None and dup >= 1, fams["strata_request_errors"].samples

    # Per-partition families, labelled by topic and partition.
    for p_ in (0, 1):
        assert sample(fams, "strata_log_end_offset", "strata_log_end_offset",
                      topic=topic, partition=str(p_)) == 25
    assert fams["strata_log_commit_seconds"].type == "histogram"


def test_the_grafana_dashboard_uses_only_metrics_the_broker_serves(broker):
    """docs/grafana/strata-broker.json names no metric /metrics lacks."""
    import re
    from pathlib import Path
    dash = json.loads((Path(__file__).resolve().parents[2] / "docs/grafana/strata-broker.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    names = {n for e in exprs for n in re.findall(r"strata_[a-z0-9_]+", e)}
    assert len(names) >= 15, names
    # Families of live instruments appear once they have a sample: some
    # traffic and one error response first.
    topic = kutil.create_topic(kutil.admin(broker.bootstrap), kutil.unique("dash"), partitions=2)
    create_again(broker, topic)
    fams = families(broker)
    missing = []
    for n in sorted(names):
        base = re.sub(r"_(total|bucket|sum|count)$", "", n)
        if n not in fams and base not in fams:
            missing.append(n)
    assert not missing, f"the dashboard uses metrics /metrics does not have: {missing}"


def test_healthz_and_readyz_of_a_started_broker(broker):
    status, _, body = get(broker, "/healthz")
    assert status == 200 and body.strip() == "ok"
    # The fixture returns once the Kafka listener accepts, which it does
    # (into its backlog) while the coordinators still load: until then
    # /readyz answers 503 with the phase, then 200.
    answers = []

    def ready():
        answers.append(get(broker, "/readyz"))
        status, ctype, body = answers[-1]
        assert ctype == "application/json", answers[-1]
        if status == 503:
            assert json.loads(body)["ready"] is False, body
        return status == 200

    kutil.wait_until(ready, timeout=30, what="/readyz to answer 200")
    status, ctype, body = answers[-1]
    assert status == 200 and ctype == "application/json", (status, body)
    doc = json.loads(body)
    assert doc["ready"] is True and doc["phase"] == "ready"
    assert doc["object_store_available"] is True


class SilentServer:
    """A TCP server that accepts connections and never answers: an object
    store whose start-up check hangs."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        self.stopped = True
        for c in self.conns:
            c.close()
        self.sock.close()


def test_readyz_reports_the_start_up_phase_until_the_broker_is_ready(tmp_path):
    silent = SilentServer()
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1",
           "AWS_ALLOW_HTTP": "true", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent.port}"}
    b = Broker(data_dir=tmp_path / "data", name="readyz",
               extra_args=["--object-store", "s3://strata/readyz"], env=env)
    try:
        # Not start(): the Kafka listener opens only once the broker is
        # ready, which it is not while its object store does not answer.
        b.spawn()

        def answered():
            try:
                return get(b, "/healthz")[0] == 200
            except OSError:
                return False
        kutil.wait_until(answered, 30, 0.1, "/healthz to answer while the broker starts")
        status, ctype, body = get(b, "/readyz")
        assert status == 503 and ctype == "application/json", (status, body)
        assert json.loads(body) == {"ready": False, "phase": "checking the object store"}
        status, _, body = get(b, "/metrics")
        assert status == 503, body
        assert b.alive(), b.log_tail()
    finally:
        silent.close()
        b.kill9()

    # With a store that answers (the embedded default), a broker becomes
    # ready once it has recovered its logs.
    b2 = Broker(data_dir=tmp_path / "data2", name="readyz2")
    try:
        b2.start()
        kutil.wait_until(lambda: get(b2, "/readyz")[0] == 200, 30, 0.1, "/readyz 200")
        assert json.loads(get(b2, "/readyz")[2])["ready"] is True
    finally:
        b2.close()
