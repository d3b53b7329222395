"""The compatibility scenario (scenario.py) with kcat (Debian's package, on
Debian's librdkafka): `kcat -P` per codec round, `kcat -G` group members,
`kcat -Q` and `kcat -C -o s@TS` for offsets by timestamp. kcat has no admin
commands: the topic, committed and end offsets go through confluent-kafka's
AdminClient. kcat sets no timestamps of its own (librdkafka stamps each
record when it is produced), and reports no offsets for what it produced:
both are taken from the reference read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

import scenario

CODECS = scenario.ALL_CODECS   # Debian's librdkafka is built with all five
# librdkafka before 2.11.1 (Debian 12's kcat links 2.0.2) enables gzip, snappy
# and lz4 only when the broker's Produce range includes v0 (FINDINGS.md).
# Strata advertises Produce 0-9 (issue 15), so every codec's stored-codec
# check must pass with Debian's kcat too: no step is expected to fail.


def _kcat_librdkafka() -> tuple[int, ...] | None:
    """librdkafka version kcat is linked with, from `kcat -V`."""
    kcat = shutil.which("kcat")
    if kcat is None:
        return None
    v = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", v)
    return tuple(int(x) for x in m.groups()) if m else None


_LIBRDKAFKA = _kcat_librdkafka()
SKIP = {"describe_group_live": "kcat has no admin commands and its group member runs in its own process; "
                               "test_compat_confluent_kafka.py describes a live librdkafka member"}
XFAIL: dict = {}
INSTALL = "install it with `apt-get install -y kcat` (scripts/test.sh does)"


class Driver:
    name = "kcat"
    explicit_timestamps = False
    none_is_end = False

    def __init__(self, bs: str, kcat: str):
        from test_compat_confluent_kafka import Driver as Confluent   # admin operations
        self.bs = bs
        self.kcat = kcat
        v = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"Version (\S+)", v)
        self.version = f"{m.group(1) if m else v.strip()} (librdkafka {'.'.join(map(str, _LIBRDKAFKA or ()))})"
        self.admin = Confluent(bs, client_id=scenario.REFERENCE)   # not kcat's requests

    def _run(self, args: list[str], stdin: str | None = None, timeout: float = 60) -> str:
        p = subprocess.run([self.kcat, "-b", self.bs, "-X", "broker.address.family=v4", *args], input=stdin,
                           capture_output=True, text=True, timeout=timeout)
        if p.stderr:
            print(f"--- kcat {' '.join(args)} stderr ---\n{p.stderr[-4000:]}")
        assert p.returncode == 0, f"kcat {' '.join(args)} exited {p.returncode}:\n{p.stderr[-4000:]}"
        return p.stdout

    def create_topic(self, topic, partitions):
        self.admin.create_topic(topic, partitions)

    def produce(self, topic, codec, recs):
        lines = "".join(f"{r.key}\t{r.value}\n" for r in recs)
        self._run(["-P", "-t", topic, "-K", "\t", "-X", "acks=all", "-X", f"compression.codec={codec}",
                   "-X", "linger.ms=20"], stdin=lines)
        return recs   # no partitions, offsets or timestamps reported

    def consume_group(self, topic, group, count, describe):
        out = self._run(["-G", group, topic, "-c", str(count), "-J", "-q",
                         "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true",
                         "-X", "session.timeout.ms=10000", "-X", "heartbeat.interval.ms=500",
                         "-X", "fetch.wait.max.ms=100"], timeout=60)
        got, nxt = [], {}
        for line in out.splitlines():
            if not line.strip():
                continue
            m = json.loads(line)
            got.append(scenario.parse(m["partition"], m["offset"], m["key"], m["payload"], m["ts"]))
            nxt[m["partition"]] = m["offset"] + 1
        # what kcat committed (on close, auto commit) is what it printed; kcat has
        # no admin commands to describe the group while it is a member
        return got, nxt, None

    def group_offsets(self, topic, group):
        return self.admin.group_offsets(topic, group)

    def describe_group(self, group):
        return self.admin.describe_group(group)

    def offsets_for_times(self, topic, timestamps):
        out = {}
        for t in timestamps:
            args = ["-Q"]
            for p in range(scenario.PARTITIONS):
                args += ["-t", f"{topic}:{p}:{t}"]
            res = {}
            for line in self._run(args, timeout=30).splitlines():
                # "<topic> [<partition>] offset <offset>"
                parts = line.split()
                if len(parts) == 4 and parts[0] == topic and parts[2] == "offset":
                    off = int(parts[3])
                    res[int(parts[1].strip("[]"))] = (off if off >= 0 else None, None)
            out[t] = res
        # the consumer's start position by timestamp agrees with -Q (middle timestamp)
        t = timestamps[len(timestamps) // 2]
        for p in range(scenario.PARTITIONS):
            lines = self._run(["-C", "-t", topic, "-p", str(p), "-o", f"s@{t}", "-c", "1", "-e", "-J", "-q"],
                              timeout=30).splitlines()
            first = json.loads(lines[0])["offset"] if lines else None
            assert first == out[t][p][0], f"kcat -C -o s@{t} partition {p} started at {first}, -Q said {out[t][p][0]}"
        return out


@pytest.fixture(scope="module")
def kcat_run(compat_broker):
    kcat = shutil.which("kcat")
    if kcat is None:
        return scenario.Missing(f"kcat is not on PATH: {INSTALL}")
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as e:
        return scenario.Missing(f"confluent-kafka (kcat's admin helper) is not installed ({e}): "
                                "`.venv/bin/pip install -r tests/requirements.txt`")
    return scenario.run_client(None, lambda: Driver(compat_broker.bootstrap, kcat), compat_broker, CODECS, "kcat")


@pytest.mark.parametrize("step", scenario.steps(skip=SKIP, xfail=XFAIL))
def test_kcat(step, kcat_run):
    scenario.check(kcat_run, step)
