"""A TCP proxy in front of the broker that records, per client.id, the
(API key, API version) of every Kafka request passing through it. The broker
advertises the proxy's address (--advertised-listener), so a client's every
connection after bootstrap goes through it too. Responses are relayed
untouched."""

from __future__ import annotations

import socket
import struct
import threading
from collections import Counter

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit", 9: "OffsetFetch",
    10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
    15: "DescribeGroups", 16: "ListGroups", 17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics",
    20: "DeleteTopics", 22: "InitProducerId", 32: "DescribeConfigs", 33: "AlterConfigs",
    37: "CreatePartitions", 42: "DeleteGroups", 44: "IncrementalAlterConfigs", 47: "OffsetDelete",
    60: "DescribeCluster", 61: "DescribeProducers",
}


def api_name(key: int) -> str:
    return API_NAMES.get(key, f"api{key}")


class WireTap:
    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, upstream_port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.seen: Counter = Counter()          # (client_id, api key, api version) -> requests
        self.unparsed: list[str] = []           # connections whose request stream could not be parsed
        self._socks: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="wiretap-accept", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(self.upstream, timeout=10)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                if self._closed:
                    c.close()
                    u.close()
                    return
                self._socks += [c, u]
            threading.Thread(target=self._requests, args=(c, u), daemon=True).start()
            threading.Thread(target=self._relay, args=(u, c), daemon=True).start()

    @staticmethod
    def _close(*socks):
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _relay(self, src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._close(src, dst)

    def _requests(self, src, dst):
        buf = bytearray()
        parsing = True
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                if not parsing:
                    continue
                buf += data
                while len(buf) >= 4:
                    n = struct.unpack_from(">i", buf, 0)[0]
                    if n < 10:
                        parsing = False
                        self.unparsed.append(f"frame size {n}")
                        break
                    if len(buf) < 4 + n:
                        break
                    key, ver, _corr, cid_len = struct.unpack_from(">hhih", buf, 4)
                    cid = bytes(buf[14:14 + cid_len]).decode(errors="replace") if cid_len >= 0 else None
                    with self.lock:
                        self.seen[(cid, key, ver)] += 1
                    del buf[:4 + n]
        except OSError:
            pass
        finally:
            self._close(src, dst)

    def versions(self, exclude_client_ids=()) -> dict[int, set[int]]:
        """{api key: {versions}} of every request, less those of the given client.ids."""
        out: dict[int, set[int]] = {}
        with self.lock:
            for (cid, key, ver) in self.seen:
                if cid not in exclude_client_ids:
                    out.setdefault(key, set()).add(ver)
        return out

    def close(self):
        with self.lock:
            self._closed = True
            socks, self._socks = self._socks, []
        self.sock.close()
        self._close(*socks)
