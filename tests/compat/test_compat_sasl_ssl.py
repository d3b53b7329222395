"""Every client, authenticated (issue 36): kafkajs, kcat, franz-go, the Java
client and Kafka's command-line tools each connect to a SASL_SSL listener
(SCRAM-SHA-512, the broker's certificate verified against the test CA),
produce 100 keyed records with acks=all to a topic of their own, read them
back as a member of a consumer group (subscribe) and commit; the same client
with a wrong password is refused.

Owns this file and its drivers: sasl_ssl/SaslSslClient.java (the Java
client, kafka-clients from local-stack/kafka's jars), franz-go/saslssl/
(a kgo program built in the franz-go module) and the `ssl`/`sasl` arguments
of kafkajs/scenario.js. Kafka's tools run through local-stack/kafka, as in
test_kafka_tools.py. Certificates: tests/e2e/tlsutil.py; named listeners:
tests/e2e/strata_broker.py.

One broker for the module: listener CLIENT (SASL_SSL, SCRAM-SHA-512 only)
and BROKER (PLAINTEXT, the inter-broker listener, where the harness waits
for readiness). SCRAM user `admin` comes from --add-scram; the clients'
user is created by admin with AlterUserScramCredentials. confluent-kafka,
as admin over SASL_SSL, is the yardstick: it creates each client's topic
(3 partitions), reads the log back by assignment, and reads the committed
and end offsets.

Per client, one test per step (README.md, "Every client, authenticated"):

  produce          the log holds the 100 records exactly once; each key in one
                   partition, in send order; where the client reports acks,
                   each record is at its acknowledged partition and offset
  group_consume    the group member got every record of the log exactly once,
                   each key in send order; what it says it committed is the end
  committed        the committed offsets (read back) are the end offsets
  wrong_password   the client with a wrong password gets an authentication
                   error within the deadline and writes nothing

kcat: Debian 12's kcat links librdkafka 2.0.2, whose SCRAM client-final
message repeats the client nonce (every librdkafka before 2.6.1,
confluentinc/librdkafka#4895). Apache Kafka 3.9 accepts it and 4.x
refuses it; Strata accepts exactly that form, as 3.9 does (FINDINGS.md,
"Issue 36"), so the kcat steps run Debian's kcat as it is, and
test_kcat_system_librdkafka pins the doubled nonce down.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import conftest
import kutil
import tlsutil
from strata_broker import Broker, BrokerError, check_binary

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
KAFKAJS = HERE / "kafkajs"
FRANZ = HERE / "franz-go"
JAVA_SRC = HERE / "sasl_ssl" / "SaslSslClient.java"
sys.path.insert(0, str(HERE / "kafka_tools"))
import toolkit  # noqa: E402  (local-stack/kafka: the launcher, Kafka's jars)

LISTENERS = {"CLIENT": "SASL_SSL", "BROKER": "PLAINTEXT"}
ADMIN = ("admin", "admin-secret")
USER = ("compat-client", "compat-client-secret")   # created through AlterUserScramCredentials
WRONG_PASSWORD = "compat-client-secreT"
PARTITIONS = 3
N = 100
KEYS = 10
REFUSAL_DEADLINE = 30.0     # s: a wrong password must be refused within this

CLIENTS = ("kafkajs", "kcat", "franz-go", "java", "kafka-cli")
STEPS = ("produce", "group_consume", "committed", "wrong_password")
# What each client's refusal must say: an authentication error, not a timeout.
REFUSED = {
    "kafkajs": "KafkaJSSASLAuthenticationError",
    "kcat": "Authentication failed during authentication due to invalid credentials",
    "franz-go": "SASL_AUTHENTICATION_FAILED",
    "java": "org.apache.kafka.common.errors.SaslAuthenticationException",
    "kafka-cli": "org.apache.kafka.common.errors.SaslAuthenticationException",
}

INSTALL_PY = "`.venv/bin/pip install -r tests/requirements.txt` (scripts/test.sh does)"
INSTALL_NODE = ("`npm ci --prefix tests/compat/kafkajs` (scripts/test.sh does; Node.js 20 and npm: "
                "`apt-get install -y nodejs npm`)")
INSTALL_KCAT = "`apt-get install -y kcat` (scripts/test.sh does)"
INSTALL_GO = "Go >= 1.26 on PATH or at /usr/local/go/bin/go (tests/compat/franz-go/README.md)"
INSTALL_JAVA = ("Java 17+ and Maven: `apt-get install -y maven openjdk-17-jdk-headless`; Kafka's jars come "
                "from `local-stack/kafka/kafka fetch` (first use)")


def records(client: str) -> list[tuple[str, str]]:
    """What a client produces, in send order: (key, value)."""
    return [(f"key-{i % KEYS:02d}", f"{client}:{i:03d}") for i in range(N)]


# ---------------------------------------------------------------------------
# the broker and the yardstick
# ---------------------------------------------------------------------------


@dataclass
class Env:
    broker: Broker
    tls: tlsutil.TlsFiles
    dir: Path

    @property
    def bs(self) -> str:
        """The SASL_SSL listener."""
        return self.broker.bootstrap_for("CLIENT")

    def rd(self, creds: tuple[str, str] = ADMIN) -> dict:
        """librdkafka (confluent-kafka) settings for the SASL_SSL listener."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": creds[0], "sasl.password": creds[1], "ssl.ca.location": str(self.tls.ca),
                "client.id": "strata-compat-reference"}

    def admin(self):
        return kutil.admin(self.bs, **self.rd())

    def end_offsets(self, topic: str) -> dict[int, int]:
        """ListOffsets(latest) through the AdminClient (a Consumer closed
        this soon after its start can leave its group-coordinator connection
        mid-SCRAM, which librdkafka logs as an authentication error)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec
        adm = self.admin()
        futs = adm.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)},
                                request_timeout=30)
        return {tp.partition: f.result(timeout=40).offset for tp, f in futs.items()}

    def java_properties(self, password: str, bootstrap: bool) -> Path:
        """A Java client's settings for the SASL_SSL listener, Kafka's names;
        with bootstrap.servers for the Java driver, without for the tools
        (--bootstrap-server)."""
        user = USER[0]
        lines = ["security.protocol=SASL_SSL",
                 "sasl.mechanism=SCRAM-SHA-512",
                 "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                 f'username="{user}" password="{password}";',
                 "ssl.truststore.type=PEM",
                 f"ssl.truststore.location={self.tls.ca}"]
        if bootstrap:
            lines.append(f"bootstrap.servers={self.bs}")
        name = f"{'java' if bootstrap else 'cli'}-{'good' if password == USER[1] else 'bad'}.properties"
        path = self.dir / name
        path.write_text("\n".join(lines) + "\n")
        return path


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    try:
        check_binary()
        from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
    except BrokerError as e:
        pytest.fail(str(e), pytrace=False)
    except ImportError as e:
        pytest.fail(f"confluent-kafka is not installed ({e}): {INSTALL_PY}", pytrace=False)
    base = tmp_path_factory.mktemp("sasl-ssl")
    tls = tlsutil.make_tls(base / "tls")
    settings = {
        "group.initial.rebalance.delay.ms": 0,
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": tls.broker,   # key + chain
    }
    b = Broker(data_dir=base / "data", settings=settings, name="sasl-ssl", log_dir=base, listeners=LISTENERS,
               extra_args=["--add-scram", f"SCRAM-SHA-512=[name={ADMIN[0]},password={ADMIN[1]}]"])
    try:
        b.start().wait_ready()
    except BrokerError as e:
        b.close()
        pytest.fail(f"could not start the SASL_SSL broker: {e}", pytrace=False)
    conftest._brokers[__name__] = b   # its log is attached to a failed step
    e = Env(b, tls, base)
    try:
        adm = e.admin()   # kept until the futures are done
        futs = adm.alter_user_scram_credentials([UserScramCredentialUpsertion(
            USER[0], ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), USER[1].encode())],
            request_timeout=30)
        for f in futs.values():
            f.result(timeout=40)
        yield e
    finally:
        conftest._brokers.pop(__name__, None)
        b.close()


# ---------------------------------------------------------------------------
# drivers: one per client; each returns what its client reported
# ---------------------------------------------------------------------------


@dataclass
class Refusal:
    refused: bool        # the client reported a failure (not a delivery)
    text: str            # what it reported (and logged)
    seconds: float


def run(argv: list[str], what: str, timeout: float, **kw) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{what} did not finish within {timeout}s\nstdout:\n{(e.stdout or '')[-3000:]}\n"
                             f"stderr:\n{(e.stderr or '')[-3000:]}") from None


def checked(p: subprocess.CompletedProcess, what: str) -> str:
    if p.stderr:
        print(f"--- {what} stderr ---\n{p.stderr[-4000:]}")
    assert p.returncode == 0, f"{what} exited {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-4000:]}"
    return p.stdout


class Kafkajs:
    """kafkajs/scenario.js with {"ssl": {"ca"}, "sasl": {"mechanism": "scram-sha-512", ...}}."""
    name = "kafkajs"

    def __init__(self, env: Env):
        self.env = env
        self.node = shutil.which("node")
        v = self._ok("versions", {})
        self.version = f"{v['kafkajs']} (node {v['node']})"

    @staticmethod
    def missing() -> str | None:
        if shutil.which("node") is None:
            return f"node is not on PATH: {INSTALL_NODE}"
        if not (KAFKAJS / "node_modules" / "kafkajs" / "package.json").is_file():
            return f"kafkajs is not installed in {KAFKAJS / 'node_modules'}: {INSTALL_NODE}"
        return None

    def _call(self, command: str, args: dict, password: str = USER[1], timeout: float = 90) -> tuple[dict, str]:
        conn = {"bootstrap": self.env.bs, "ssl": {"ca": str(self.env.tls.ca)},
                "sasl": {"mechanism": "scram-sha-512", "username": USER[0], "password": password}}
        with tempfile.TemporaryDirectory(prefix="compat-kafkajs-sasl-") as d:
            inp, out = Path(d) / "in.json", Path(d) / "out.json"
            inp.write_text(json.dumps({**conn, **args}))
            p = run([self.node, str(KAFKAJS / "scenario.js"), command, str(inp), str(out)],
                    f"kafkajs {command}", timeout, cwd=KAFKAJS)
            res = json.loads(out.read_text()) if out.exists() else {}
        if p.stderr:
            print(f"--- kafkajs {command} stderr ---\n{p.stderr[-4000:]}")
        return res, p.stderr

    def _ok(self, command: str, args: dict):
        res, err = self._call(command, args)
        assert "ok" in res, f"kafkajs {command} failed: {res.get('error')}\nstderr:\n{err[-4000:]}"
        return res["ok"]

    def produce(self, topic, recs):
        ts = int(time.time() * 1000)
        acks = self._ok("produce", {"topic": topic, "codec": "none", "records": [
            {"seq": i, "key": k, "value": v, "ts": ts} for i, (k, v) in enumerate(recs)]})
        by_seq = {a["seq"]: a for a in acks}
        return [(k, v, by_seq[i]["partition"], by_seq[i]["offset"]) for i, (k, v) in enumerate(recs)]

    def consume(self, topic, group, count):
        res = self._ok("consume", {"topic": topic, "group": group, "count": count, "describe": False})
        return ([(p, o, k, v) for p, o, k, v, _ts in res["records"]],
                {int(p): o for p, o in res["committed"].items()})

    def bad_produce(self, topic):
        t0 = time.monotonic()
        res, err = self._call("produce", {"topic": topic, "codec": "none", "retries": 0, "records": [
            {"seq": 0, "key": "refused", "value": "refused", "ts": int(time.time() * 1000)}]},
            password=WRONG_PASSWORD, timeout=REFUSAL_DEADLINE + 30)
        return Refusal("ok" not in res, f"{res}\n{err}", time.monotonic() - t0)


def _librdkafka_of(kcat: str, env: dict | None = None) -> tuple[int, ...] | None:
    v = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10,
                       env={**os.environ, **(env or {})}).stdout
    m = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", v)
    return tuple(int(x) for x in m.groups()) if m else None


class Kcat:
    """kcat -P / -G with -X settings, on the system's librdkafka."""
    name = "kcat"

    def __init__(self, env: Env, kcat: str, lib_env: dict, note: str):
        self.env = env
        self.kcat = kcat
        self.lib_env = lib_env
        v = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10,
                           env={**os.environ, **lib_env}).stdout
        m = re.search(r"Version (\S+)", v)
        lib = _librdkafka_of(kcat, lib_env)
        self.version = f"{m.group(1) if m else '?'} (librdkafka {'.'.join(map(str, lib or ()))}{note})"

    @staticmethod
    def missing() -> str | None:
        return None if shutil.which("kcat") else f"kcat is not on PATH: {INSTALL_KCAT}"

    def _argv(self, password: str, args: list[str]) -> list[str]:
        return [self.kcat, "-b", self.env.bs, "-X", "security.protocol=SASL_SSL",
                "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", f"sasl.username={USER[0]}",
                "-X", f"sasl.password={password}", "-X", f"ssl.ca.location={self.env.tls.ca}",
                "-X", "broker.address.family=v4", *args]

    def _run(self, args, password=USER[1], stdin=None, timeout=60) -> subprocess.CompletedProcess:
        return run(self._argv(password, args), f"kcat {' '.join(args)}", timeout, input=stdin,
                   env={**os.environ, **self.lib_env})

    def produce(self, topic, recs):
        lines = "".join(f"{k}\t{v}\n" for k, v in recs)
        checked(self._run(["-P", "-t", topic, "-K", "\t", "-X", "acks=all", "-X", "linger.ms=20"], stdin=lines),
                "kcat -P")
        return None   # kcat reports no partitions or offsets

    def consume(self, topic, group, count):
        out = checked(self._run(["-G", group, topic, "-c", str(count), "-J", "-q",
                                 "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true",
                                 "-X", "session.timeout.ms=10000", "-X", "heartbeat.interval.ms=500",
                                 "-X", "fetch.wait.max.ms=100"]), "kcat -G")
        got = []
        for line in out.splitlines():
            if line.strip():
                m = json.loads(line)
                got.append((m["partition"], m["offset"], m["key"], m["payload"]))
        return got, None   # commits what it printed when it closes (auto commit)

    def bad_produce(self, topic):
        t0 = time.monotonic()
        p = self._run(["-P", "-t", topic, "-K", "\t", "-X", "acks=all", "-X", "message.timeout.ms=10000"],
                      password=WRONG_PASSWORD, stdin="refused\trefused\n", timeout=REFUSAL_DEADLINE + 30)
        return Refusal(p.returncode != 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}", time.monotonic() - t0)


def _franz_run_module():
    """tests/compat/franz-go/run.py (go_bin, go_env), loaded as
    test_compat_franz_go.py loads it."""
    name = "strata_franz_run"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FRANZ / "run.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


class FranzGo:
    """franz-go/saslssl, built with `go build` in the franz-go module (its
    go.sum pins franz-go; the Go build cache holds kgo from the kgo/kadm
    suites' builds)."""
    name = "franz-go"

    def __init__(self, env: Env, out_dir: Path):
        self.env = env
        fr = _franz_run_module()
        self.bin = out_dir / "saslssl"
        cmd = [fr.go_bin(), "build", "-o", str(self.bin), "./saslssl"]
        t0 = time.monotonic()
        p = run(cmd, "go build ./saslssl", 900, cwd=FRANZ, env=fr.go_env())
        assert p.returncode == 0, f"`{' '.join(cmd)}` (in {FRANZ}) failed:\n{p.stdout}\n{p.stderr}"
        print(f"franz-go: built saslssl in {time.monotonic() - t0:.1f}s")
        v = json.loads(checked(run([str(self.bin), "-mode", "version"], "saslssl version", 30), "saslssl version"))
        self.version = f"{v['franz-go']} ({v['go']})"

    @staticmethod
    def missing() -> str | None:
        try:
            _franz_run_module().go_bin()
        except RuntimeError as e:
            return f"{e}: {INSTALL_GO}"
        return None

    def _argv(self, mode: str, topic: str, password: str = USER[1], *extra: str) -> list[str]:
        return [str(self.bin), "-mode", mode, "-seeds", self.env.bs, "-ca", str(self.env.tls.ca),
                "-user", USER[0], "-password", password, "-topic", topic, *extra]

    def produce(self, topic, recs):
        p = run(self._argv("produce", topic), "saslssl produce", 90,
                input=json.dumps([{"key": k, "value": v} for k, v in recs]))
        acks = json.loads(checked(p, "saslssl produce"))["acks"]
        return [(a["key"], a["value"], a["partition"], a["offset"]) for a in acks]

    def consume(self, topic, group, count):
        p = run(self._argv("consume", topic, USER[1], "-group", group, "-count", str(count)), "saslssl consume", 90)
        res = json.loads(checked(p, "saslssl consume"))
        return ([(r["partition"], r["offset"], r["key"], r["value"]) for r in res["records"]],
                {int(k): v for k, v in res["committed"].items()})

    def bad_produce(self, topic):
        t0 = time.monotonic()
        p = run(self._argv("bad-produce", topic, WRONG_PASSWORD), "saslssl bad-produce", REFUSAL_DEADLINE + 30)
        res = json.loads(checked(p, "saslssl bad-produce"))
        return Refusal("error" in res, f"{res}\n{p.stderr[-3000:]}", time.monotonic() - t0)


def _java_ok() -> str | None:
    if shutil.which("java") is None or shutil.which("javac") is None:
        return f"java or javac is not on PATH: {INSTALL_JAVA}"
    return None


def kafka_libs() -> Path:
    """Kafka 4.4.0's jars (local-stack/kafka; Maven on first use)."""
    return toolkit.apache_kafka.fetch_jars()


class Java:
    """sasl_ssl/SaslSslClient.java, compiled once per source and jar set
    into target/compat-sasl-ssl/ (reused by later runs)."""
    name = "java"

    def __init__(self, env: Env):
        self.env = env
        self.libs = kafka_libs()
        java_version = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
        key = hashlib.sha256(JAVA_SRC.read_bytes() + f"|{sorted(os.listdir(self.libs))}|{java_version}".encode())
        self.classes = REPO / "target" / "compat-sasl-ssl" / f"java-{key.hexdigest()[:16]}"
        if not (self.classes / "SaslSslClient.class").is_file():
            self.classes.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix="java-", dir=self.classes.parent))
            cmd = ["javac", "-nowarn", "-cp", f"{self.libs}/*", "-d", str(tmp), str(JAVA_SRC)]
            checked(run(cmd, "javac SaslSslClient.java", 300), "javac SaslSslClient.java")
            try:
                tmp.rename(self.classes)
            except OSError:   # another process compiled it meanwhile
                shutil.rmtree(tmp, ignore_errors=True)
        self.good = env.java_properties(USER[1], bootstrap=True)
        self.bad = env.java_properties(WRONG_PASSWORD, bootstrap=True)
        self.version = "kafka-clients " + self._run(["version"]).stdout.split("\t")[1].strip()

    missing = staticmethod(_java_ok)

    def _run(self, args: list[str], stdin: str | None = None, timeout: float = 90, check: bool = True):
        argv = ["java", "-XX:TieredStopAtLevel=1", "-Xmx256M",
                f"-Dlog4j2.configurationFile={REPO / 'local-stack' / 'kafka' / 'log4j2-tools.properties'}",
                "-cp", f"{self.classes}:{self.libs}/*", "SaslSslClient", *args]
        p = run(argv, f"SaslSslClient {args[0]}", timeout, input=stdin)
        if check:
            checked(p, f"SaslSslClient {args[0]}")
        return p

    def produce(self, topic, recs):
        out = self._run(["produce", str(self.good), topic], stdin="".join(f"{k}\t{v}\n" for k, v in recs)).stdout
        acks = []
        for line in out.splitlines():
            kind, p, o, k, v = line.split("\t")
            assert kind == "ack", line
            acks.append((k, v, int(p), int(o)))
        return acks

    def consume(self, topic, group, count):
        out = self._run(["consume", str(self.good), topic, group, str(count)]).stdout
        got, committed = [], {}
        for line in out.splitlines():
            f = line.split("\t")
            if f[0] == "rec":
                got.append((int(f[1]), int(f[2]), f[3], f[4]))
            elif f[0] == "committed":
                committed[int(f[1])] = int(f[2])
        return got, committed

    def bad_produce(self, topic):
        t0 = time.monotonic()
        p = self._run(["bad-produce", str(self.bad), topic], timeout=REFUSAL_DEADLINE + 30)
        return Refusal(p.stdout.startswith("refused\t"), f"{p.stdout}\n{p.stderr[-3000:]}", time.monotonic() - t0)


class KafkaCli:
    """Kafka 4.4.0's kafka-console-producer, kafka-console-consumer and
    kafka-consumer-groups, with --command-config pointing at the same Java
    settings; run through local-stack/kafka/kafka as an operator types them."""
    name = "kafka-cli"

    def __init__(self, env: Env):
        self.env = env
        toolkit.prepare_jvm(env.broker.bootstrap)   # the tools' class-data archive (PLAINTEXT listener)
        self.good = env.java_properties(USER[1], bootstrap=False)
        self.bad = env.java_properties(WRONG_PASSWORD, bootstrap=False)
        self.version = f"Kafka {toolkit.apache_kafka.DEFAULT_VERSION}"

    missing = staticmethod(_java_ok)

    def _tool(self, name: str, *args: str, stdin: str | None = None, timeout: float = 90):
        # as toolkit.tool (its JVM options and class-data archive), with stdin
        opts = toolkit.JVM_OPTS + (f" -XX:SharedArchiveFile={toolkit._cds_archive} -Xlog:cds=off"
                                   if toolkit._cds_archive else "")
        argv = [str(toolkit.apache_kafka.LAUNCHER), name, *args]
        return run(argv, " ".join([name, *args]), timeout, input=stdin,
                   env={**os.environ, "KAFKA_VERSION": toolkit.apache_kafka.DEFAULT_VERSION,
                        "KAFKA_OPTS": (os.environ.get("KAFKA_OPTS", "") + " " + opts).strip()})

    def _producer(self, topic: str, config: Path, lines: str, timeout: float = 90):
        # --sync: each send waits for its acknowledgement, and a failed one
        # ends the tool with exit code 1 (asynchronous sends are only
        # logged). --timeout is the producer's linger.ms (default 1000: a
        # second per synchronous send).
        return self._tool("kafka-console-producer.sh", "--bootstrap-server", self.env.bs, "--topic", topic,
                          "--command-config", str(config), "--request-required-acks", "all",
                          "--sync", "--timeout", "0",
                          "--reader-property", "parse.key=true", "--reader-property", "key.separator=\t",
                          stdin=lines, timeout=timeout)

    def produce(self, topic, recs):
        checked(self._producer(topic, self.good, "".join(f"{k}\t{v}\n" for k, v in recs)),
                "kafka-console-producer")
        return None   # it reports no offsets

    def consume(self, topic, group, count):
        out = checked(self._tool(
            "kafka-console-consumer.sh", "--bootstrap-server", self.env.bs, "--topic", topic, "--group", group,
            "--from-beginning", "--max-messages", str(count), "--timeout-ms", "30000",
            "--command-config", str(self.good), "--formatter-property", "print.partition=true",
            "--formatter-property", "print.offset=true", "--formatter-property", "print.key=true"),
            "kafka-console-consumer")
        got = []
        for line in out.splitlines():   # Partition:P<TAB>Offset:O<TAB>key<TAB>value
            if line.startswith("Partition:"):
                p, o, k, v = line.split("\t", 3)
                got.append((int(p.split(":")[1]), int(o.split(":")[1]), k, v))
        return got, None   # commits its position when it closes (auto commit)

    def group_view(self, group: str) -> dict[int, tuple[int, int, int]]:
        """kafka-consumer-groups --describe --command-config: {partition:
        (CURRENT-OFFSET, LOG-END-OFFSET, LAG)}."""
        out = checked(self._tool("kafka-consumer-groups.sh", "--bootstrap-server", self.env.bs, "--describe",
                                 "--group", group, "--command-config", str(self.good)), "kafka-consumer-groups")
        return {int(r["PARTITION"]): (int(r["CURRENT-OFFSET"]), int(r["LOG-END-OFFSET"]), int(r["LAG"]))
                for r in toolkit.table(out, "GROUP") if r.get("CURRENT-OFFSET", "-") != "-"}

    def bad_produce(self, topic):
        t0 = time.monotonic()
        p = self._producer(topic, self.bad, "refused\trefused\n", timeout=REFUSAL_DEADLINE + 30)
        return Refusal(p.returncode != 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}",
                       time.monotonic() - t0)


# ---------------------------------------------------------------------------
# a client's run: stages recorded, checked by the steps
# ---------------------------------------------------------------------------


@dataclass
class Run:
    client: str
    topic: str
    group: str
    missing: str | None = None
    version: str = "?"
    sent: list = field(default_factory=list)          # [(key, value)] in send order
    acks: list | None = None                          # [(key, value, partition, offset)] if reported
    log: list = field(default_factory=list)           # reference read: [(p, o, key, value)] in (p, o) order
    consumed: list = field(default_factory=list)      # the group member's [(p, o, key, value)] in delivery order
    claimed: dict | None = None                       # {p: next offset} the client says it committed
    committed: dict = field(default_factory=dict)     # {p: offset or None} read back
    ends: dict = field(default_factory=dict)          # {p: end offset}
    group_view: dict | None = None                    # kafka-consumer-groups' view (kafka-cli)
    refusal: Refusal | None = None
    ends_after_refusal: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    done: set = field(default_factory=set)
    seconds: dict = field(default_factory=dict)

    def stage(self, name: str, fn):
        t0 = time.monotonic()
        try:
            fn()
            self.done.add(name)
        except Exception as e:  # noqa: BLE001 - recorded, reported by the steps that need it
            self.errors[name] = "".join(traceback.format_exception(e)).rstrip()
        finally:
            self.seconds[name] = round(time.monotonic() - t0, 2)

    def need(self, *stages):
        if self.missing:
            pytest.fail(self.missing, pytrace=False)
        for s in stages:
            if s in self.errors:
                pytest.fail(f"[{self.client} {self.version}] stage {s} failed:\n{self.errors[s]}", pytrace=False)
            if s not in self.done:
                pytest.fail(f"[{self.client}] stage {s} did not run (failed stages: {sorted(self.errors)})",
                            pytrace=False)


def make_driver(client: str, env: Env, tmp: Path):
    if client == "kafkajs":
        return Kafkajs.missing(), lambda: Kafkajs(env)
    if client == "kcat":
        if (m := Kcat.missing()):
            return m, None
        return None, lambda: Kcat(env, shutil.which("kcat"), {}, "")
    if client == "franz-go":
        return FranzGo.missing(), lambda: FranzGo(env, tmp)
    if client == "java":
        return Java.missing(), lambda: Java(env)
    if client == "kafka-cli":
        return KafkaCli.missing(), lambda: KafkaCli(env)
    raise ValueError(client)


def run_client(client: str, env: Env, tmp: Path) -> Run:
    tag = client.replace("-", "")
    r = Run(client, topic=kutil.unique(f"sasl-{tag}"), group=kutil.unique(f"sasl-{tag}-group"))
    missing, make = make_driver(client, env, tmp)
    if missing:
        r.missing = f"{client} is not installed: {missing}"
        return r
    driver = None

    def start():
        nonlocal driver
        driver = make()
        r.version = driver.version
    r.stage("driver", start)
    if driver is None:
        r.errors.setdefault("driver", "no driver")
        return r
    adm = env.admin()
    r.stage("create_topic", lambda: kutil.create_topic(adm, r.topic, PARTITIONS))
    if "create_topic" in r.errors:
        return r
    r.sent = records(client)

    def produce():
        r.acks = driver.produce(r.topic, list(r.sent))
    r.stage("produce", produce)

    def reference():
        res = kutil.consume(env.bs, r.topic, list(range(PARTITIONS)), expected=N, timeout=30, **env.rd())
        assert not res.errors, [e.str() for e in res.errors]
        r.log = sorted((m.partition, m.offset, m.key.decode(), m.value.decode()) for m in res.messages)
    r.stage("reference_read", reference)

    def consume():
        r.consumed, r.claimed = driver.consume(r.topic, r.group, N)
    r.stage("consume", consume)

    def offsets():
        offs = kutil.committed(adm, r.group, r.topic, list(range(PARTITIONS)))
        r.committed = {p: (offs[(r.topic, p)].offset if offs[(r.topic, p)].offset >= 0 else None)
                       for p in range(PARTITIONS)}
        r.ends = env.end_offsets(r.topic)
        if hasattr(driver, "group_view"):
            r.group_view = driver.group_view(r.group)
    r.stage("offsets", offsets)

    def refusal():
        r.refusal = driver.bad_produce(r.topic)
        r.ends_after_refusal = env.end_offsets(r.topic)
    r.stage("wrong_password", refusal)
    print(f"{client} {r.version}: topic {r.topic}; stage seconds {r.seconds}; failed stages "
          f"{sorted(r.errors) or 'none'}")
    return r


@pytest.fixture(scope="module")
def runs(env, tmp_path_factory):
    done: dict[str, Run] = {}

    def get(client: str) -> Run:
        if client not in done:
            done[client] = run_client(client, env, tmp_path_factory.mktemp(f"sasl-{client}"))
        return done[client]
    return get


# ---------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------


def per_key(rows) -> dict[str, list[str]]:
    """rows of (.., key, value) -> {key: [values in row order]}."""
    out: dict[str, list[str]] = {}
    for *_, k, v in rows:
        out.setdefault(k, []).append(v)
    return out


def check_produce(r: Run):
    r.need("produce", "reference_read")
    stored = Counter((k, v) for _, _, k, v in r.log)
    sent = Counter(r.sent)
    assert stored == sent, (f"the log does not hold exactly the {N} records sent: missing "
                            f"{sorted((sent - stored).elements())[:10]}, extra or duplicated "
                            f"{sorted((stored - sent).elements())[:10]}")
    for p in range(PARTITIONS):
        offs = [o for q, o, _, _ in r.log if q == p]
        assert offs == list(range(len(offs))), f"partition {p}: offsets {offs[:20]} are not 0..{len(offs) - 1}"
    parts: dict[str, set[int]] = {}
    for p, _, k, _ in r.log:
        parts.setdefault(k, set()).add(p)
    spread = {k: sorted(ps) for k, ps in parts.items() if len(ps) > 1}
    assert not spread, f"keys in more than one partition: {spread}"
    assert per_key(r.log) == per_key(r.sent), "a key's records are stored out of send order"
    if r.acks is not None:
        at = {(p, o): (k, v) for p, o, k, v in r.log}
        wrong = [(k, v, p, o, at.get((p, o))) for k, v, p, o in r.acks if at.get((p, o)) != (k, v)]
        assert not wrong, f"{len(wrong)} records not where {r.client} was told they are " \
                          f"(key, value, partition, offset, stored there): {wrong[:5]}"


def check_group_consume(r: Run):
    r.need("reference_read", "consume")
    positions = [(p, o) for p, o, _, _ in r.consumed]
    twice = [pos for pos, n in Counter(positions).items() if n > 1]
    assert not twice, f"the group member got {len(twice)} records more than once: {twice[:10]}"
    log_at = {(p, o): (k, v) for p, o, k, v in r.log}
    missed = sorted(set(log_at) - set(positions))
    assert not missed, f"the group member got {len(positions)} records; never got {missed[:10]}"
    extra = sorted(set(positions) - set(log_at))
    assert not extra, f"the group member got records that are not in the log: {extra[:10]}"
    wrong = [(p, o, k, v) for p, o, k, v in r.consumed if log_at[(p, o)] != (k, v)]
    assert not wrong, f"records delivered differ from the log: {wrong[:5]}"
    assert per_key(r.consumed) == per_key(r.sent), "a key's records were delivered out of send order"
    if r.claimed is not None:
        ends = {p: max(o for q, o, _, _ in r.log if q == p) + 1 for p in {q for q, *_ in r.log}}
        assert r.claimed == ends, f"{r.client} says it committed {r.claimed}; the partitions end at {ends}"


def check_committed(r: Run):
    r.need("consume", "offsets")
    assert sum(r.ends.values()) == N, f"end offsets {r.ends} do not add up to {N}"
    want = {p: (e if e > 0 else None) for p, e in r.ends.items()}   # nothing to commit in an empty partition
    assert r.committed == want, f"committed offsets read back {r.committed}, end offsets {r.ends}"
    if r.group_view is not None:
        view = {p: (e, e, 0) for p, e in r.ends.items() if e > 0}
        assert r.group_view == view, \
            f"kafka-consumer-groups --describe shows {r.group_view} (current, log end, lag); expected {view}"


def check_wrong_password(r: Run):
    r.need("wrong_password")
    ref = r.refusal
    assert ref.refused, f"{r.client} with a wrong password was not refused:\n{ref.text[-3000:]}"
    assert REFUSED[r.client] in ref.text, \
        f"{r.client} failed without the authentication error {REFUSED[r.client]!r}:\n{ref.text[-3000:]}"
    assert ref.seconds < REFUSAL_DEADLINE, f"refused only after {ref.seconds:.1f}s (deadline {REFUSAL_DEADLINE}s)"
    if r.ends:
        assert r.ends_after_refusal == r.ends, \
            f"end offsets moved from {r.ends} to {r.ends_after_refusal} with a wrong password"


CHECKS = {"produce": check_produce, "group_consume": check_group_consume, "committed": check_committed,
          "wrong_password": check_wrong_password}


@pytest.mark.parametrize("client,step", [pytest.param(c, s, id=f"{c}-{s}") for c in CLIENTS for s in STEPS])
def test_sasl_ssl(client, step, runs):
    CHECKS[step](runs(client))


def test_kcat_system_librdkafka(env):
    """kcat on the system's librdkafka authenticates with SCRAM-SHA-512.
    Before 2.6.1 its client-final-message repeats the client nonce
    (c-nonce + c-nonce + s-nonce, librdkafka#4895): Strata accepts that one
    form, as Apache Kafka 3.9 does (4.x refuses it), so Debian's kcat
    works."""
    kcat = shutil.which("kcat")
    assert kcat is not None, f"kcat is not on PATH: {INSTALL_KCAT}"
    version = _librdkafka_of(kcat)
    p = run([kcat, "-b", env.bs, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
             "-X", f"sasl.username={USER[0]}", "-X", f"sasl.password={USER[1]}",
             "-X", f"ssl.ca.location={env.tls.ca}", "-X", "broker.address.family=v4", "-L", "-m", "5"],
            "kcat -L", 60)
    shown = f"kcat -L on librdkafka {version}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    assert p.returncode == 0 and "1 brokers" in p.stdout, shown
    print(shown)
