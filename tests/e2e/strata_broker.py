"""Start/stop/kill/restart a Strata broker process. No pytest dependency
(the benchmark harness in benches/ uses it too)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / "target" / "release" / "strata"


class BrokerError(RuntimeError):
    pass


def strata_bin() -> Path:
    return Path(os.environ.get("STRATA_BIN") or DEFAULT_BIN)


def check_binary() -> Path:
    path = strata_bin()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BrokerError(
            f"Strata broker binary not found or not executable at {path}. "
            "Build it with `cargo build --release` (or point STRATA_BIN at a binary)."
        )
    return path


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports for the servers tests start come from below the kernel's
# ephemeral range, so no client connection's local port can take one
# between its choice and the server's bind (run 17 lost a whole worker's
# shared broker to "Address already in use" on a port the kernel had
# handed out, closed, and then given to another socket). Each
# pytest-xdist worker has its own block, so two workers never choose the
# same port; within a block ports go round in turn, and one a bind finds
# in use (a server still running) is skipped.
_PORT_BLOCK = 1500
_PORT_BASE = 10000
_next_port: int | None = None


def _port_block() -> tuple[int, int]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) + 1 if worker.startswith("gw") and worker[2:].isdigit() else 0
    slots = max(1, (_ephemeral_low() - _PORT_BASE) // _PORT_BLOCK)
    start = _PORT_BASE + (index % slots) * _PORT_BLOCK
    return start, start + _PORT_BLOCK


def free_port() -> int:
    global _next_port
    start, end = _port_block()
    if _next_port is None or not start <= _next_port < end:
        # Where in the block this process starts: another process of the
        # same worker slot (a later phase) starts elsewhere.
        _next_port = start + (os.getpid() % _PORT_BLOCK)
    for _ in range(end - start):
        port = _next_port
        _next_port = start + (_next_port + 1 - start) % (end - start)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise BrokerError(f"no free port in {start}..{end}")


def port_accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# Brokers the e2e `broker_factory` started for the running test. Fixtures
# that must outlive them (an etcd cluster) stop them first in their own
# teardown: a clustered broker given SIGTERM without its metadata store
# waits out its controlled shutdown.
TEST_BROKERS: list["Broker"] = []


def stop_all(brokers, timeout: float = 15.0) -> None:
    """SIGTERM every live broker at once, then wait for all of them until
    `timeout`; SIGKILL whatever is left. Never raises."""
    live = [b for b in brokers if b.proc is not None and b.proc.poll() is None]
    for b in live:
        try:
            b.proc.send_signal(signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + timeout
    for b in live:
        try:
            b.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            b.proc.kill()
            b.proc.wait(10)
        b.last_returncode = b.proc.returncode


class Broker:
    """One Strata broker process.

    settings: Kafka-named broker settings, passed as `--set NAME=VALUE`.
    env: extra environment variables for the broker process (e.g. the
    AWS_* settings of an s3:// object store), merged over the inherited
    environment.
    The data dir and both ports are fixed at construction, so restart()
    brings the broker back on the same data and the same address.
    listeners: named listeners, {name: security protocol} in order, e.g.
    {"CLIENT": "SASL_SSL", "BROKER": "PLAINTEXT"}: each gets a free port
    (`listener_ports[name]`, `bootstrap_for(name)`), and the settings
    `listeners`, `listener.security.protocol.map` and
    `inter.broker.listener.name` (the first PLAINTEXT listener; a value in
    `settings` wins for the last two) are filled in. One listener must be
    PLAINTEXT: it is `port`, so readiness and `bootstrap` use it. Whenever
    the settings hold `listeners`, `--listen` is not passed (the broker
    refuses both).
    """

    READY_TIMEOUT = float(os.environ.get("STRATA_READY_TIMEOUT", "10"))

    def __init__(self, data_dir: str | os.PathLike | None = None, settings: dict | None = None,
                 extra_args: list[str] | None = None, log_dir: str | os.PathLike | None = None,
                 name: str = "strata", env: dict | None = None,
                 listeners: dict[str, str] | None = None):
        self.bin = check_binary()
        self._own_tmp = None
        if data_dir is None:
            self._own_tmp = tempfile.mkdtemp(prefix="strata-e2e-")
            data_dir = Path(self._own_tmp) / "data"
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log_dir = Path(log_dir) if log_dir else self.data_dir.parent
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{name}.log"
        self.host = "127.0.0.1"
        self.port = free_port()
        self.http_port = free_port()
        while self.http_port == self.port:
            self.http_port = free_port()
        self.settings = dict(settings or {})
        self.listener_ports: dict[str, int] = {}
        if listeners:
            self._named_listeners(listeners)
        self.extra_args = list(extra_args or [])
        self.env = {k: str(v) for k, v in (env or {}).items()}
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.last_returncode: int | None = None

    # ------------------------------------------------------------------
    def _named_listeners(self, listeners: dict[str, str]) -> None:
        if "listeners" in self.settings:
            raise BrokerError("give the listeners either as `listeners=` or in settings, not both")
        plaintext = [n for n, proto in listeners.items() if proto.upper() == "PLAINTEXT"]
        if not plaintext:
            raise BrokerError(f"listeners {listeners} need a PLAINTEXT listener "
                              "(the inter-broker listener, and where readiness is checked)")
        taken = {self.http_port}
        for name in listeners:
            port = free_port()
            while port in taken:
                port = free_port()
            taken.add(port)
            self.listener_ports[name] = port
        self.port = self.listener_ports[plaintext[0]]
        self.settings["listeners"] = ",".join(
            f"{n}://{self.host}:{p}" for n, p in self.listener_ports.items())
        self.settings.setdefault("listener.security.protocol.map",
                                 ",".join(f"{n}:{proto}" for n, proto in listeners.items()))
        self.settings.setdefault("inter.broker.listener.name", plaintext[0])

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def bootstrap_for(self, listener: str) -> str:
        """host:port of a named listener (given as `listeners=`)."""
        port = self.listener_ports.get(listener)
        if port is None:
            by_upper = {n.upper(): p for n, p in self.listener_ports.items()}
            port = by_upper.get(listener.upper())
        if port is None:
            raise BrokerError(f"no listener named {listener!r} (have {sorted(self.listener_ports)})")
        return f"{self.host}:{port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def command(self) -> list[str]:
        cmd = [str(self.bin), "broker", "--data-dir", str(self.data_dir)]
        if "listeners" not in self.settings:
            cmd += ["--listen", f"{self.host}:{self.port}"]
        cmd += [
            "--http-listen", f"{self.host}:{self.http_port}",
            "--log-format", "text",
        ]
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        return cmd + self.extra_args

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def spawn(self) -> "Broker":
        """Starts the process without waiting for it to be ready."""
        if self.alive():
            raise BrokerError("broker already running")
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith("STRATA_") and k != "STRATA_BIN")}
        env.setdefault("RUST_BACKTRACE", "1")
        env.update(self.env)
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start #{self.starts}: {' '.join(self.command())}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
        return self

    def start(self) -> "Broker":
        """Starts the process and waits until its Kafka listener accepts."""
        self.spawn()
        deadline = time.monotonic() + self.READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.last_returncode = self.proc.returncode
                raise BrokerError(
                    f"broker exited with code {self.proc.returncode} during startup\n"
                    f"--- log tail ---\n{self.log_tail()}")
            if port_accepts(self.host, self.port):
                return self
            time.sleep(0.05)
        self.kill9()
        raise BrokerError(
            f"broker did not accept connections on {self.bootstrap} within {self.READY_TIMEOUT}s\n"
            f"--- log tail ---\n{self.log_tail()}")

    def wait_ready(self, timeout: float = 30.0) -> "Broker":
        """Waits until `/readyz` answers 200. The Kafka listener accepts
        (into its backlog) while the broker still loads its coordinators,
        and until it is ready the admin API answers 503 (docs/admin-api.md):
        what a test that talks to the admin API first must wait for."""
        import urllib.error
        import urllib.request
        url = f"http://{self.host}:{self.http_port}/readyz"
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise BrokerError(f"broker is not running\n--- log tail ---\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        return self
                    last = r.status
            except urllib.error.HTTPError as e:
                last = f"{e.code} {e.read()[:200]!r}"
            except OSError as e:
                last = e
            time.sleep(0.05)
        raise BrokerError(f"/readyz did not answer 200 within {timeout}s (last: {last})\n"
                          f"--- log tail ---\n{self.log_tail()}")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait. Returns the exit code. If the broker does not
        exit in time it is SIGKILLed and BrokerError is raised."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                self.last_returncode = self.proc.returncode
                raise BrokerError(f"broker did not exit within {timeout}s of SIGTERM (killed)")
        self.last_returncode = self.proc.returncode
        return self.proc.returncode

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        if self.proc is not None:
            self.last_returncode = self.proc.returncode

    def restart(self, kill: bool = False) -> "Broker":
        """Stop (SIGTERM, or SIGKILL with kill=True) and start again on the
        same data dir and ports."""
        if kill:
            self.kill9()
        else:
            rc = self.stop()
            if rc != 0:
                raise BrokerError(f"broker exited with code {rc} on SIGTERM\n{self.log_tail()}")
        return self.start()

    def close(self) -> None:
        """Best-effort teardown."""
        try:
            self.stop(timeout=15)
        except BrokerError:
            pass

    # ------------------------------------------------------------------
    def rss_kib(self, field: str = "VmRSS") -> int | None:
        """Resident memory now (VmRSS), or at its peak (field="VmHWM")."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except (OSError, AssertionError):
            return None
        return None

    def cpu_seconds(self) -> float | None:
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = os.sysconf("SC_CLK_TCK")
            return (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, AssertionError, IndexError, ValueError):
            return None

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_text(self, start: int = 0) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, max_chars: int = 8000, start: int = 0) -> str:
        text = self.log_text(start)
        if len(text) > max_chars:
            text = "...[truncated]...\n" + text[-max_chars:]
        return text

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"
