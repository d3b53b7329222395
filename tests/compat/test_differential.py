"""Differential test (issue 34): the same request sequences to Apache Kafka
(4.4, KRaft, one node, from local-stack/kafka) and to Strata (one broker),
answers compared field by field after declared normalisations.

Owns this file and tests/compat/differential/ (kclient.py: kio codec over a
socket; engine.py: running a case, normalising, diffing; cases.py: the
catalog; README.md: how to run it and the findings). One test per case;
a failure shows every differing field. Deliberate differences are declared
on the case (`expected_difference`, with the reason) and shown, not failed.

    .venv/bin/pytest tests/compat/test_differential.py -q
    DIFF_SELF=1 ...   # Kafka against itself: checks the normalisations (no Strata needed)
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for p in (HERE / "differential", HERE.parents[1] / "local-stack" / "kafka", HERE.parent / "e2e"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import engine  # noqa: E402
from cases import CASES, XFAIL  # noqa: E402

SELF_CHECK = os.environ.get("DIFF_SELF") == "1"

# Strata set up as the Kafka beside it (apache_kafka.KafkaCluster's server.properties).
STRATA_SETTINGS = {
    "num.partitions": 1,
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.num.partitions": 3,
}
# Both brokers: small internal topics, so the coordinators' first use is quick.
KAFKA_SETTINGS = {"offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3}
REPORT = Path(os.environ.get("DIFF_REPORT", "/tmp/strata-differential-report.json"))


def _warm_up(bootstrap: str, name: str) -> None:
    """Until both coordinators answer (Kafka creates __consumer_offsets and
    __transaction_state on first use)."""
    import kclient
    deadline = time.monotonic() + 60
    with kclient.Conn(bootstrap) as c:
        for key_type, key in ((0, "differential-warmup"), (1, "differential-warmup")):
            while True:
                r = kclient.plain(c.call("FindCoordinator", 4, key_type=key_type, coordinator_keys=[key]))
                if r["coordinators"][0]["error_code"] == 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name}: coordinator {key_type} not available: {r}")
                time.sleep(0.2)
        while True:
            r = kclient.plain(c.call("InitProducerId", 4, transactional_id="differential-warmup",
                                     transaction_timeout=60000, producer_id=-1, producer_epoch=-1))
            if r["error_code"] == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: InitProducerId not served: {r}")
            time.sleep(0.2)


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    from apache_kafka import KafkaCluster
    from strata_broker import Broker, BrokerError, check_binary, free_port
    strata = None
    if not SELF_CHECK:
        try:
            check_binary()
        except BrokerError as e:
            pytest.fail(str(e), pytrace=False)
        base = tmp_path_factory.mktemp("differential")
        strata = Broker(data_dir=base / "data", settings=STRATA_SETTINGS, name="strata", log_dir=base)
        strata.spawn()  # ready-checked below, while Kafka starts
    kafka = KafkaCluster(nodes=1, settings=KAFKA_SETTINGS, port_source=free_port)
    errors = []
    try:
        kafka.start()
        if strata is not None:
            deadline = time.monotonic() + 30
            from strata_broker import port_accepts
            while not port_accepts(strata.host, strata.port):
                if not strata.alive() or time.monotonic() > deadline:
                    pytest.fail(f"strata did not start:\n{strata.log_tail()}", pytrace=False)
                time.sleep(0.05)
        targets = [("kafka", kafka.bootstrap), ("strata" if strata else "kafka-again",
                                                strata.bootstrap if strata else kafka.bootstrap)]
        threads = [threading.Thread(target=lambda t=t: _guard(errors, _warm_up, *reversed(t)))
                   for t in targets]
        [t.start() for t in threads]
        [t.join() for t in threads]
        if errors:
            pytest.fail(f"warm-up failed: {errors}", pytrace=False)
        yield {"kafka": kafka, "strata": strata, "targets": targets}
    finally:
        kafka.close()
        if strata is not None:
            strata.close()


def _guard(errors, fn, *a):
    try:
        fn(*a)
    except Exception as e:  # noqa: BLE001
        errors.append(repr(e))


_report: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _write_report():
    yield
    REPORT.write_text(json.dumps(_report, indent=1, default=repr))


def _params():
    """Every case; the known differences not fixed yet (cases.XFAIL) as
    strict xfails, so a fix makes them fail until the marker goes."""
    unknown = set(XFAIL) - {c.name for c in CASES}
    assert not unknown, f"XFAIL names no case: {sorted(unknown)}"
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[c.name])]
                         if c.name in XFAIL and not SELF_CHECK else []) for c in CASES]


@pytest.mark.parametrize("case", _params())
def test_differential(brokers, case):
    (kname, kboot), (sname, sboot) = brokers["targets"]
    if SELF_CHECK:
        case = engine.Case(case.name + "-again", case.steps, case.ignore, case.expected_difference)
    ks = engine.run_case(case, kname, kboot)
    if SELF_CHECK:
        case = engine.Case(case.name[:-6], case.steps, case.ignore, case.expected_difference)
    ss = engine.run_case(case, sname, sboot)
    unexpected, deliberate, kn, sn = engine.compare(case, ks, ss)
    _report[case.name] = {"unexpected": unexpected, "deliberate": deliberate,
                          "kafka_messages": ks.messages, "strata_messages": ss.messages,
                          "kafka": kn, "strata": sn}
    if deliberate:
        print(f"{case.name}: deliberate differences:\n  " + "\n  ".join(
            f"{d}  [{next(iter(case.expected_difference.values()))}]" for d in deliberate))
    if unexpected:
        msgs = ""
        if ks.messages or ss.messages:
            msgs = f"\nerror messages: kafka={ks.messages} strata={ss.messages}"
        pytest.fail(f"{case.name}: {len(unexpected)} field(s) differ (kafka vs {sname}):\n  "
                    + "\n  ".join(unexpected) + msgs
                    + f"\n--- kafka ---\n{json.dumps(kn, indent=1, default=repr)[:6000]}"
                    + f"\n--- {sname} ---\n{json.dumps(sn, indent=1, default=repr)[:6000]}", pytrace=False)
