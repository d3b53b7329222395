"""An HTTP-aware fault-injecting proxy in front of an S3-protocol server,
for tests only.

It reads each request the broker sends (head and body), and by the first
active rule that matches it either forwards it (optionally after a delay),
answers with an S3 error (500 InternalError, 503 SlowDown, 412
PreconditionFailed), resets the connection, or holds it unanswered and then
closes it (a timeout as the client sees it). `down()` / `up()` make an
outage: the listener closes and every connection is reset.

    p = S3FaultProxy(moto.port)
    p.add("status", 503, every=2, seconds=10)                 # throttling
    p.add("reset", every=4, seconds=10)
    p.add("status", 412, count=2, match=lambda r: r.conditional and "/manifest/" in r.path)
    p.counts["status:503"]  # how many were applied
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from strata_broker import free_port
from tierutil import listen_again
from tierutil import reset

S3_CODES = {500: "InternalError", 503: "SlowDown", 412: "PreconditionFailed"}
REASONS = {500: "Internal Server Error", 503: "Slow Down", 412: "Precondition Failed"}


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    head: bytes
    body: bytes

    @property
    def conditional(self) -> bool:
        return "if-none-match" in self.headers or "if-match" in self.headers

    @property
    def part_upload(self) -> bool:
        return "partNumber=" in self.query

    @property
    def kind(self) -> str:
        """The S3 operation, roughly: GET, PUT, HEAD, DELETE, LIST, PART,
        POST (multipart create/complete)."""
        if self.method == "GET" and "list-type=" in self.query:
            return "LIST"
        if self.part_upload:
            return "PART"
        return self.method


@dataclass
class Rule:
    action: str              # "status", "reset", "hang", "delay"
    arg: float               # status code, or seconds
    match: Callable[[Request], bool] | None
    every: int               # apply to every n-th matching request
    count: int | None        # apply at most this many times
    until: float | None      # stop applying at this monotonic time
    seen: int = 0
    applied: int = 0

    def active(self) -> bool:
        return (self.count is None or self.applied < self.count) and \
            (self.until is None or time.monotonic() < self.until)


class S3FaultProxy:
    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.port = free_port()
        self.rules: list[Rule] = []
        self.counts: Counter = Counter()
        self.requests = 0
        # Requests seen, by Request.kind.
        self.by_kind: Counter = Counter()
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.up()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- rules ---------------------------------------------------------------
    def add(self, action: str, arg: float = 0, *, match=None, every: int = 1, count: int | None = None,
            seconds: float | None = None) -> Rule:
        r = Rule(action, arg, match, every, count, time.monotonic() + seconds if seconds else None)
        with self._lock:
            self.rules.append(r)
        return r

    def clear(self):
        with self._lock:
            self.rules = []

    def _decide(self, req: Request) -> Rule | None:
        with self._lock:
            self.requests += 1
            self.by_kind[req.kind] += 1
            for r in self.rules:
                if not r.active() or (r.match is not None and not r.match(req)):
                    continue
                r.seen += 1
                if r.seen % r.every:
                    continue
                r.applied += 1
                key = r.action if r.action in ("reset", "hang", "delay") else f"status:{int(r.arg)}"
                self.counts[key] += 1
                return r
        return None

    # -- outage --------------------------------------------------------------
    def up(self):
        with self._lock:
            if self._listener is not None:
                return
            ls = listen_again(self.port)
            self._listener = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True, name="s3fault-accept").start()

    def down(self):
        with self._lock:
            ls, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
        if ls is not None:
            try:
                ls.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            ls.close()
        for c in conns:
            reset(c)

    def close(self):
        self.down()

    # -- serving -------------------------------------------------------------
    def _accept(self, ls: socket.socket):
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            with self._lock:
                if self._listener is not ls:
                    reset(c)
                    return
                self._conns.add(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True, name="s3fault-conn").start()

    def _serve(self, c: socket.socket):
        reader = _Reader(c)
        try:
            while True:
                req = reader.request()
                if req is None:
                    return
                rule = self._decide(req)
                if rule is None or rule.action == "delay":
                    if rule is not None:
                        time.sleep(rule.arg)
                    if not self._forward(c, req):
                        return
                elif rule.action == "status":
                    code = int(rule.arg)
                    body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{S3_CODES[code]}</Code>"
                            f"<Message>injected by the test</Message><RequestId>fault</RequestId></Error>").encode()
                    c.sendall(f"HTTP/1.1 {code} {REASONS[code]}\r\nContent-Type: application/xml\r\n"
                              f"Content-Length: {len(body)}\r\nx-amz-request-id: fault\r\n\r\n".encode() + body)
                elif rule.action == "reset":
                    reset(c)
                    return
                elif rule.action == "hang":
                    time.sleep(rule.arg)
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.discard(c)
            try:
                c.close()
            except OSError:
                pass

    def _forward(self, c: socket.socket, req: Request) -> bool:
        """One request on its own upstream connection (Connection: close),
        the response relayed as it comes until the server closes."""
        lines = req.head.split(b"\r\n")
        lines = [l for l in lines if l and not l.lower().startswith(b"connection:")]
        head = b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n"
        try:
            u = socket.create_connection(self.target, timeout=60)
        except OSError:
            reset(c)
            return False
        try:
            u.sendall(head + req.body)
            while True:
                data = u.recv(256 * 1024)
                if not data:
                    break
                c.sendall(data)
        finally:
            u.close()
        # The server said Connection: close; the client closes too.
        return False


class _Reader:
    def __init__(self, s: socket.socket):
        self.s = s
        self.buf = b""

    def _fill(self) -> bool:
        data = self.s.recv(256 * 1024)
        if not data:
            return False
        self.buf += data
        return True

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise OSError("client closed inside a request")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise OSError("client closed inside a request")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def request(self) -> Request | None:
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        method, target, _ = lines[0].decode().split(" ", 2)
        headers = {}
        for l in lines[1:]:
            k, _, v = l.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size_line = self._line()
                n = int(size_line.split(b";")[0], 16)
                raw += size_line + b"\r\n" + self._take(n + 2)
                if n == 0:
                    break
            body = raw
        else:
            body = self._take(int(headers.get("content-length", "0") or 0))
        path, _, query = target.partition("?")
        return Request(method, path, query, headers, head, body)
