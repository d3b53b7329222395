"""Fixtures for the client compatibility suite (tests/compat/README.md).

Reuses the e2e helpers (tests/e2e/strata_broker.py, kutil.py) by putting
tests/e2e on sys.path; nothing there is modified.

compat_broker (module)  one dedicated broker per client module: own tmp data
                        dir, own ports, no initial rebalance delay, behind a
                        wiretap.WireTap that it advertises (so `bootstrap` is
                        the tap's address and every request is recorded with
                        its API version; `direct_bootstrap` bypasses it).
                        `advertised` holds the broker's ApiVersions ranges.
                        Its log is attached to every failed step.

Also the order files run in: librdkafka's suite first, under xdist's
loadfile scheduling too (pytest_xdist_make_scheduler, below).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parents[1] / "e2e"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

from strata_broker import Broker, BrokerError, check_binary, strata_bin  # noqa: E402
from wiretap import WireTap  # noqa: E402

BROKER_SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,   # Kafka's 3 s default would slow every first join
    "log.retention.check.interval.ms": 500,
}

_brokers: dict[str, Broker] = {}   # module name -> its broker


class TappedBroker(Broker):
    """A Broker whose clients go through a WireTap."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.tap = WireTap(self.host, self.port)
        self.extra_args += ["--advertised-listener", self.tap.address]
        self.advertised: dict[int, tuple[int, int]] = {}

    @property
    def bootstrap(self) -> str:
        return self.tap.address

    @property
    def direct_bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self):
        super().start()
        import wire
        with wire.KafkaConn.to(self.direct_bootstrap) as conn:
            err, self.advertised = wire.parse_api_versions_v0_response(conn.request(18, 0, b""))
        assert err == 0, f"ApiVersions v0 error {err}"
        return self

    def close(self):
        super().close()
        self.tap.close()


@pytest.fixture(scope="module")
def compat_broker(tmp_path_factory, request):
    try:
        check_binary()
    except BrokerError as e:
        pytest.fail(str(e), pytrace=False)
    label = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    base = tmp_path_factory.mktemp(label)
    b = TappedBroker(data_dir=base / "data", settings=BROKER_SETTINGS, name=label, log_dir=base)
    try:
        b.start()
    except (BrokerError, AssertionError, OSError) as e:
        b.close()
        pytest.fail(f"could not start broker {label}: {e}", pytrace=False)
    _brokers[request.module.__name__] = b
    yield b
    _brokers.pop(request.module.__name__, None)
    b.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    b = _brokers.get(item.module.__name__) if item.module else None
    if rep.failed and b is not None:
        state = "running" if b.alive() else f"NOT RUNNING (exit code {b.proc.returncode if b.proc else None})"
        rep.sections.append((f"strata broker log ({b.log_path}, {state})", b.log_tail(max_chars=20000)))


def pytest_report_header(config):
    path = strata_bin()
    state = "found" if path.is_file() else "MISSING: every step will fail; run `cargo build --release`"
    return [f"strata binary: {path} ({state})"]


# The longest file first: librdkafka's own test suite takes most of the
# suite's time, so with `pytest -n --dist loadfile` (scripts/test.sh) the
# other files spread over the other workers meanwhile, rather than wait
# for it at the end. xdist's loadfile scheduler hands out files by their
# number of tests, most first, whatever the collection order: librdkafka's
# 15 started only when franz-go's 173 were done (about 65 s late, the
# compat run of 2026-12-07), hence the scheduler below. Without xdist the
# collection order does it. Every worker collects the same order (xdist
# requires it).
LONGEST_FIRST = ("test_librdkafka_suite.py",)


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda i: i.path.name not in LONGEST_FIRST)


def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, LONGEST_FIRST files handed out before the rest."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        def _assign_work_unit(self, node):
            for scope in [s for s in self.workqueue if Path(s).name in LONGEST_FIRST][::-1]:
                self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)
