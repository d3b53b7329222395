"""A real etcd cluster for tests: Debian's `etcd-server` (3.4), installed by
scripts/test.sh. One or more members on free loopback ports, each with its
own data dir; members can be killed and started again to take quorum away
and give it back. A missing etcd binary is a test failure, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from strata_broker import free_port


def etcd_bin() -> str:
    b = os.environ.get("STRATA_ETCD_BIN") or shutil.which("etcd") or "/usr/bin/etcd"
    if not Path(b).exists():
        raise RuntimeError("etcd not found: install Debian's etcd-server (scripts/test.sh does) "
                           "or set STRATA_ETCD_BIN")
    return b


class EtcdCluster:
    def __init__(self, base: Path, members: int = 1, host: str = "127.0.0.1"):
        self.bin = etcd_bin()
        # The address members listen on (another than loopback when a
        # broker in a network namespace must reach them: netutil.py).
        self.host = host
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        self.names = [f"m{i}" for i in range(members)]
        # free_port() may hand out a port twice once its socket is closed.
        ports: list[int] = []
        while len(ports) < 2 * members:
            p = free_port()
            if p not in ports:
                ports.append(p)
        self.client_ports = {n: ports[2 * i] for i, n in enumerate(self.names)}
        self.peer_ports = {n: ports[2 * i + 1] for i, n in enumerate(self.names)}
        self.procs: dict[str, subprocess.Popen] = {}
        self.token = f"strata-{os.getpid()}-{time.monotonic_ns()}"
        for n in self.names:
            self.start_member(n)
        self.wait_healthy()

    def _cmd(self, n: str) -> list[str]:
        client = f"http://{self.host}:{self.client_ports[n]}"
        peer = f"http://{self.host}:{self.peer_ports[n]}"
        initial = ",".join(f"{m}=http://{self.host}:{self.peer_ports[m]}" for m in self.names)
        return [self.bin, "--name", n, "--data-dir", str(self.base / n),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", initial, "--initial-cluster-token", self.token,
                "--initial-cluster-state", "new",
                # Faster elections on loopback than the WAN-friendly defaults.
                "--heartbeat-interval", "50", "--election-timeout", "500"]

    def start_member(self, n: str) -> None:
        log = open(self.base / f"{n}.log", "ab")
        self.procs[n] = subprocess.Popen(self._cmd(n), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

    def kill_member(self, n: str) -> None:
        p = self.procs.get(n)
        if p and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(10)

    def endpoints(self) -> str:
        return ",".join(f"{self.host}:{self.client_ports[n]}" for n in self.names)

    def url(self, prefix: str) -> str:
        return f"etcd://{self.endpoints()}/{prefix}"

    def _post(self, n: str, path: str, body: dict, timeout: float = 2.0) -> dict:
        req = urllib.request.Request(f"http://{self.host}:{self.client_ports[n]}{path}",
                                     data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def healthy(self) -> bool:
        """A linearizable read succeeds on some live member (quorum is there)."""
        for n in self.names:
            if self.procs[n].poll() is not None:
                continue
            try:
                self._post(n, "/v3/kv/range", {"key": "aGVhbHRo"})
                return True
            except Exception:  # noqa: BLE001 - not up, no quorum: try the next
                continue
        return False

    def wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if time.monotonic() > deadline:
                logs = "\n".join((self.base / f"{n}.log").read_text(errors="replace")[-2000:]
                                 for n in self.names)
                raise RuntimeError(f"etcd did not become healthy\n{logs}")
            time.sleep(0.1)

    def get_prefix(self, prefix: str) -> dict[str, bytes]:
        """Every key under `prefix` (full keys) and its value."""
        import base64
        start = prefix.encode()
        end = start[:-1] + bytes([start[-1] + 1])
        for n in self.names:
            if self.procs[n].poll() is not None:
                continue
            try:
                r = self._post(n, "/v3/kv/range", {"key": base64.b64encode(start).decode(),
                                                   "range_end": base64.b64encode(end).decode()})
            except Exception:  # noqa: BLE001
                continue
            return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", ""))
                    for kv in r.get("kvs", [])}
        raise RuntimeError("no etcd member answered")

    def close(self) -> None:
        for n in self.names:
            self.kill_member(n)
