"""Apache Kafka (KRaft) on loopback, from its Maven Central jars: the
yardstick that Strata's benchmarks and differential tests run beside it.

Owns the layout of a local Kafka cluster: one combined broker+controller
process per node (process.roles=broker,controller, a static controller
quorum), its server.properties, `kafka-storage format`, start, readiness,
kill -9 and restart. The JVM command line and the tool table are the
launcher's (`local-stack/kafka/kafka`); this module only calls it.

As a program (foreground until Ctrl-C):
    python3 local-stack/kafka/apache_kafka.py --nodes 3 --port 19092 [--dir DIR]
    local-stack/kafka/kafka cluster --nodes 1          # the same, through the launcher

As a library (tests, benches), with no dependency beyond the standard library:
    from apache_kafka import KafkaCluster
    with KafkaCluster(nodes=3) as k:
        k.bootstrap   # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
        k.kill9(2); k.start_node(2)
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE / "kafka"
DEFAULT_VERSION = "4.4.0"


class KafkaError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def fetch_jars(version: str = DEFAULT_VERSION) -> Path:
    """Resolves Kafka's jars (Maven, first use only); returns the libs dir."""
    env = dict(os.environ, KAFKA_VERSION=version)
    out = subprocess.run([str(LAUNCHER), "fetch"], env=env, check=True,
                         stdout=subprocess.PIPE, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def tool(name: str, *args: str, version: str = DEFAULT_VERSION, timeout: float = 120,
         check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs one of Kafka's command-line tools (`kafka-topics.sh`, ...) as an
    operator would type it; returns the completed process (text output)."""
    full_env = dict(os.environ, KAFKA_VERSION=version, **(env or {}))
    p = subprocess.run([str(LAUNCHER), name, *args], env=full_env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    if check and p.returncode != 0:
        raise KafkaError(f"{name} {' '.join(args)} exited {p.returncode}\n"
                         f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


class KafkaNode:
    def __init__(self, node_id: int, base: Path, port: int, controller_port: int):
        self.node_id = node_id
        self.dir = base / f"node-{node_id}"
        self.data_dir = self.dir / "data"
        self.config = self.dir / "server.properties"
        self.log_path = self.dir / "server.log"
        self.port = port
        self.controller_port = controller_port
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, max_chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-max_chars:]
        except OSError:
            return "(no log)"


class KafkaCluster:
    """`nodes` combined KRaft nodes on loopback. `settings` are extra
    server.properties (Kafka's names), applied to every node."""

    READY_TIMEOUT = float(os.environ.get("KAFKA_READY_TIMEOUT", "90"))

    def __init__(self, nodes: int = 1, base_dir: str | os.PathLike | None = None,
                 version: str = DEFAULT_VERSION, settings: dict | None = None,
                 ports: list[int] | None = None, heap: str | None = None,
                 port_source: Callable[[], int] | None = None, scram: list[str] | None = None):
        # `port_source` chooses the listener and controller ports not given
        # in `ports`. The default asks the kernel for a free one, which can
        # hand another socket the same port before the JVM binds it; a test
        # harness passes its own allocator (tests/e2e/strata_broker.free_port
        # takes ports from below the ephemeral range).
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        self.version = version
        self._own_tmp = None
        if base_dir is None:
            self._own_tmp = tempfile.mkdtemp(prefix="apache-kafka-")
            base_dir = self._own_tmp
        self.base = Path(base_dir)
        self.base.mkdir(parents=True, exist_ok=True)
        self.settings = dict(settings or {})
        # `kafka-storage format --add-scram` values (the first SCRAM users).
        self.scram = list(scram or [])
        self.heap = heap
        ports = list(ports or [])
        port = port_source or _free_port
        self.nodes = [KafkaNode(i + 1, self.base, ports[i] if i < len(ports) else port(),
                                port()) for i in range(nodes)]
        self.cluster_id = _kafka_uuid()

    # -- layout ------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id - 1]

    def _properties(self, n: KafkaNode) -> dict:
        rf = min(3, len(self.nodes))
        voters = ",".join(f"{m.node_id}@127.0.0.1:{m.controller_port}" for m in self.nodes)
        props = {
            "process.roles": "broker,controller",
            "node.id": n.node_id,
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{n.port},CONTROLLER://127.0.0.1:{n.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{n.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(n.data_dir),
            "num.partitions": 1,
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min(2, rf),
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min(2, rf),
            "group.initial.rebalance.delay.ms": 0,
        }
        props.update(self.settings)
        return props

    def _format(self, n: KafkaNode) -> None:
        n.dir.mkdir(parents=True, exist_ok=True)
        n.config.write_text("".join(f"{k}={v}\n" for k, v in self._properties(n).items()))
        if (n.data_dir / "meta.properties").exists():
            return
        scram = [a for value in self.scram for a in ("--add-scram", value)]
        tool("kafka-storage.sh", "format", "-t", self.cluster_id, "-c", str(n.config),
             "--ignore-formatted", *scram, version=self.version)

    # -- lifecycle ---------------------------------------------------------
    def spawn_node(self, node_id: int) -> KafkaNode:
        n = self.node(node_id)
        if n.alive():
            raise KafkaError(f"node {node_id} already running")
        self._format(n)
        env = dict(os.environ, KAFKA_VERSION=self.version)
        if self.heap:
            env["KAFKA_HEAP_OPTS"] = self.heap
        with open(n.log_path, "ab") as log:
            log.write(f"\n===== start node {node_id}\n".encode())
            log.flush()
            n.proc = subprocess.Popen([str(LAUNCHER), "kafka-server-start.sh", str(n.config)],
                                      stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env,
                                      start_new_session=True, preexec_fn=_die_with_parent)
        return n

    def wait_ready(self, node_ids: list[int] | None = None, timeout: float | None = None) -> None:
        """Waits until each node logged that it started and its listener accepts."""
        deadline = time.monotonic() + (timeout or self.READY_TIMEOUT)
        for nid in node_ids or [n.node_id for n in self.nodes]:
            n = self.node(nid)
            while True:
                if not n.alive():
                    raise KafkaError(f"Kafka node {nid} exited with {n.proc.returncode if n.proc else None}"
                                     f"\n--- log tail ---\n{n.log_tail()}")
                if _last_start_succeeded(n) and _port_accepts(n.port):
                    break
                if time.monotonic() > deadline:
                    raise KafkaError(f"Kafka node {nid} not ready within {timeout or self.READY_TIMEOUT}s"
                                     f"\n--- log tail ---\n{n.log_tail()}")
                time.sleep(0.1)

    def start(self) -> "KafkaCluster":
        fetch_jars(self.version)
        for n in self.nodes:
            self._format(n)
        for n in self.nodes:
            self.spawn_node(n.node_id)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def start_node(self, node_id: int, timeout: float | None = None) -> KafkaNode:
        n = self.spawn_node(node_id)
        self.wait_ready([node_id], timeout)
        return n

    def kill9(self, node_id: int) -> None:
        n = self.node(node_id)
        if n.alive():
            os.killpg(n.proc.pid, signal.SIGKILL)
            n.proc.wait(30)

    def stop_node(self, node_id: int, timeout: float = 60) -> None:
        n = self.node(node_id)
        if not n.alive():
            return
        os.killpg(n.proc.pid, signal.SIGTERM)
        try:
            n.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(n.proc.pid, signal.SIGKILL)
            n.proc.wait(30)

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM every node at once, then wait; SIGKILL what is left."""
        live = [n for n in self.nodes if n.alive()]
        for n in live:
            try:
                os.killpg(n.proc.pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for n in live:
            try:
                n.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(n.proc.pid, signal.SIGKILL)
                n.proc.wait(30)

    def close(self) -> None:
        self.stop()
        if self._own_tmp:
            import shutil
            shutil.rmtree(self._own_tmp, ignore_errors=True)

    def __enter__(self) -> "KafkaCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the process that started
    it dies (a test run killed by a timeout leaves no Kafka behind)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_STARTED = "Kafka Server started"


def _last_start_succeeded(n: KafkaNode) -> bool:
    """True when the newest start of node `n` (after its last '===== start'
    marker in the log) has logged Kafka's 'Kafka Server started'."""
    try:
        text = n.log_path.read_text(errors="replace")
    except OSError:
        return False
    return _STARTED in text[text.rfind("===== start node"):]


def _kafka_uuid() -> str:
    """A cluster id as kafka-storage random-uuid makes one: 16 random bytes,
    URL-safe base64 without padding."""
    import base64
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run Apache Kafka (KRaft) on loopback from its Maven jars.")
    ap.add_argument("--nodes", type=int, default=1, help="combined broker+controller nodes (default 1)")
    ap.add_argument("--port", type=int, default=19092,
                    help="Kafka listener of node 1; node N listens on PORT+N-1 (default 19092)")
    ap.add_argument("--dir", help="data directory (default: a new temporary one, removed on exit)")
    ap.add_argument("--version", default=os.environ.get("KAFKA_VERSION", DEFAULT_VERSION))
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="extra server.properties for every node")
    a = ap.parse_args(argv)
    settings = dict(s.split("=", 1) for s in a.set)
    k = KafkaCluster(nodes=a.nodes, base_dir=a.dir, version=a.version, settings=settings,
                     ports=[a.port + i for i in range(a.nodes)])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    try:
        k.start()
        print(f"Apache Kafka {a.version} ready: bootstrap {k.bootstrap} (logs in {k.base})", flush=True)
        while not stop and all(n.alive() for n in k.nodes):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        k.close() if a.dir is None else k.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
