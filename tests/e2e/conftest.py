"""Fixtures for the Strata end-to-end tests.

Fixtures
--------
shared_broker (session)  one broker for all tests that do not restart or
                         reconfigure it: num.partitions=3,
                         log.retention.check.interval.ms=500.
broker (function)        the shared broker, checked alive before and after
                         each test (a test that crashes it fails, with the log).
broker_factory           start dedicated brokers (own data dir, own ports,
                         own settings, optional extra args / environment /
                         data dir); stopped at the end of the test.
admin                    confluent-kafka AdminClient on `broker`.
moto (session)           an S3 server (moto) with bucket `strata`
                         (tierutil.MotoServer), started on first use.
s3_bucket                tierutil.S3Bucket on s3://strata/<unique per test>;
                         s3_bucket.env is the broker environment for it.

On any test failure the relevant broker log (the part written during that
test) is attached to the report. A missing binary is a test failure, never a
skip.
"""

from __future__ import annotations

import pytest

import kutil
from strata_broker import TEST_BROKERS, Broker, BrokerError, check_binary, stop_all

SHARED_SETTINGS = {
    "num.partitions": 3,
    "log.retention.check.interval.ms": 500,
    # Tiered topics (the default) are retained by the tiering manager.
    "remote.log.manager.task.interval.ms": 500,
}

_active: list[tuple[str, Broker, int]] = []  # (label, broker, log offset at test start)


def _start(tmp_path_factory, label: str, settings: dict, extra_args: list[str] | None = None,
           env: dict | None = None, data_dir=None) -> Broker:
    try:
        check_binary()
    except BrokerError as e:
        pytest.fail(str(e), pytrace=False)
    base = tmp_path_factory.mktemp(label)
    b = Broker(data_dir=data_dir or base / "data", settings=settings, name=label,
               extra_args=extra_args, env=env, log_dir=base)
    try:
        # Started means ready: the admin API answers 503 until then.
        b.start().wait_ready()
    except BrokerError as e:
        pytest.fail(f"could not start broker {label}: {e}", pytrace=False)
    return b


@pytest.fixture(scope="session")
def shared_broker(tmp_path_factory):
    b = _start(tmp_path_factory, "shared", SHARED_SETTINGS)
    yield b
    b.close()


@pytest.fixture
def broker(shared_broker: Broker):
    mark = shared_broker.log_size()
    if not shared_broker.alive():
        pytest.fail(f"shared broker is not running (exit code {shared_broker.proc.returncode}); "
                    f"log tail:\n{shared_broker.log_tail()}", pytrace=False)
    _active.append(("shared", shared_broker, mark))
    yield shared_broker
    if not shared_broker.alive():
        pytest.fail(f"shared broker died during this test (exit code {shared_broker.proc.returncode}); "
                    f"log:\n{shared_broker.log_tail(start=mark)}", pytrace=False)


@pytest.fixture
def broker_factory(tmp_path_factory, request):
    started = TEST_BROKERS
    started.clear()

    def make(settings: dict | None = None, label: str | None = None, extra_args: list[str] | None = None,
             env: dict | None = None, data_dir=None) -> Broker:
        label = label or f"{request.node.name[:40]}-{len(started)}".replace("[", "_").replace("]", "_")
        merged = {"log.retention.check.interval.ms": 500}
        merged.update(settings or {})
        b = _start(tmp_path_factory, label, merged, extra_args=extra_args, env=env, data_dir=data_dir)
        started.append(b)
        _active.append((label, b, 0))
        return b

    yield make
    # All at once: a cluster's brokers stopped one by one would each move
    # their leaderships to the next one to stop.
    stop_all(started)
    started.clear()


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    import tierutil
    try:
        server = tierutil.MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    except Exception as e:  # noqa: BLE001 - a missing S3 server is a failure, not a skip
        pytest.fail(f"could not start the S3 server (moto): {e}", pytrace=False)
    yield server
    server.close()


@pytest.fixture
def s3_bucket(moto, request):
    """s3://strata/<unique prefix for this test> (read directly from moto)."""
    import tierutil
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:50].strip("-")
    b = tierutil.S3Bucket(moto.client, kutil.unique(base or "t"))
    b.env = moto.env()
    return b


@pytest.fixture
def admin(broker):
    return kutil.admin(broker.bootstrap)


@pytest.fixture
def topic_name(request):
    """A unique topic name derived from the test name."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60].strip("-")
    return kutil.unique(base or "t")


@pytest.fixture(autouse=True)
def _reset_active():
    _active.clear()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and _active:
        for label, b, mark in _active:
            rep.sections.append((f"strata broker log [{label}] ({b.log_path})",
                                 b.log_tail(max_chars=20000, start=mark)))


def pytest_report_header(config):
    from strata_broker import strata_bin
    path = strata_bin()
    state = "found" if path.is_file() else "MISSING: tests needing a broker will fail; run `cargo build --release`"
    return [f"strata binary: {path} ({state})"]
