"""Owned by the differential test (tests/compat/test_differential.py, issue 34).

A raw Kafka connection whose requests are built and whose responses are
decoded by kio (a codec generated from Kafka's own message schemas, flexible
versions included), so the comparison is of decoded fields, never of bytes
either broker's codec produced.

    with Conn("127.0.0.1:9092") as c:
        resp = c.call("ListOffsets", 9, replica_id=-1, topics=[{"name": "t", "partitions": [...]}])

Requests are given as nested dicts/lists; fields left out take the schema's
default, else a neutral value from NEUTRAL (replica ids -1, epochs -1, ...),
else the type's zero. `plain()` turns a decoded response into dicts, lists and
ints (error codes as ints, timedeltas as milliseconds, UUIDs as strings).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import socket
import struct
import uuid

from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (EntityField, EntityTupleField, PrimitiveTupleField,
                                    classify_field, is_optional)

API_KEYS = {}
for _k, _n in api_key_map.items():
    API_KEYS["".join(p.capitalize() for p in _n.split("_"))] = _k

# Neutral values of well-known request fields a case leaves out.
NEUTRAL = {
    "replica_id": -1, "current_leader_epoch": -1, "leader_epoch": -1, "producer_id": -1,
    "producer_epoch": -1, "generation_id": -1, "generation_id_or_member_epoch": -1,
    "timeout": 30000, "isolation_level": 0, "max_wait": 0, "min_bytes": 0,
    "max_bytes": 1 << 20, "partition_max_bytes": 1 << 20, "session_id": 0, "session_epoch": -1,
    "log_start_offset": -1, "last_fetched_epoch": -1, "rack_id": "", "acks": -1,
    "session_timeout": 10000, "rebalance_timeout": 10000, "committed_leader_epoch": -1,
    "retention_time": -1, "transaction_timeout": 60000, "replica_epoch": -1,
    "num_partitions": -1, "replication_factor": -1, "key_type": 0, "cluster_authorized_operations": False,
}


class ConnectionClosed(Exception):
    pass


def api_key(name_or_key) -> int:
    return name_or_key if isinstance(name_or_key, int) else API_KEYS[name_or_key]


def _zero(field, kind):
    t = field.metadata.get("kafka_type")
    if isinstance(kind, (EntityTupleField, PrimitiveTupleField)):
        return ()
    if is_optional(field):
        return None
    if t == "string":
        return ""
    if t == "bool":
        return False
    if t == "uuid":
        return uuid.UUID(int=0)
    if t in ("bytes", "records"):
        return b""
    if t in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(0)
    if t == "float64":
        return 0.0
    return 0


def _coerce(field, value):
    t = field.metadata.get("kafka_type")
    if value is None:
        return None
    if t in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    if t in ("datetime_i64",) and isinstance(value, int):
        return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.timezone.utc)
    if t == "uuid" and isinstance(value, str):
        return uuid.UUID(value)
    return value


def build(cls, spec: dict):
    """An instance of kio entity `cls` from a nested dict."""
    spec = dict(spec or {})
    names = {f.name for f in dataclasses.fields(cls)}
    for k in [k for k in spec if k.startswith("?")]:  # "?field": only where this version has it
        v = spec.pop(k)
        if k[1:] in names:
            spec[k[1:]] = v
    values = {}
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        if f.name in spec:
            v = spec.pop(f.name)
            if v is None:
                pass
            elif isinstance(kind, EntityTupleField):
                v = tuple(x if dataclasses.is_dataclass(x) else build(kind.type_, x) for x in v)
            elif isinstance(kind, EntityField):
                v = None if v is None else (v if dataclasses.is_dataclass(v) else build(kind.type_, v))
            elif isinstance(kind, PrimitiveTupleField):
                v = tuple(_coerce(f, x) for x in v)
            else:
                v = _coerce(f, v)
            values[f.name] = v
        elif f.default is not dataclasses.MISSING:
            values[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            values[f.name] = f.default_factory()  # type: ignore[misc]
        elif f.name in NEUTRAL:
            values[f.name] = _coerce(f, NEUTRAL[f.name])
        elif isinstance(kind, EntityField):
            values[f.name] = None if is_optional(f) else build(kind.type_, {})
        else:
            values[f.name] = _zero(f, kind)
    if spec:
        raise TypeError(f"{cls.__name__} v{cls.__version__} has no field(s) {sorted(spec)}")
    return cls(**values)


def plain(x):
    """A decoded kio response as dicts, lists, ints, strings."""
    if dataclasses.is_dataclass(x):
        return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, (tuple, list)):
        return [plain(v) for v in x]
    if isinstance(x, enum.Enum):
        return x.value
    if isinstance(x, datetime.timedelta):
        return int(x / datetime.timedelta(milliseconds=1))
    if isinstance(x, datetime.datetime):
        return int(x.timestamp() * 1000)
    if isinstance(x, uuid.UUID):
        return str(x)
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, (bytes, bytearray)):
        return bytes(x)
    return x


class Conn:
    """One blocking connection; one request at a time."""

    def __init__(self, bootstrap: str, timeout: float = 20.0, client_id: str = "strata-differential"):
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id.encode()
        self.corr = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(buf)}/{n} bytes")
            buf += chunk
        return bytes(buf)

    def frame(self, api: int, version: int, body: bytes, flexible: bool) -> bytes:
        self.corr += 1
        header = struct.pack(">hhih", api, version, self.corr, len(self.client_id)) + self.client_id
        if flexible:
            header += b"\x00"
        payload = header + body
        return struct.pack(">i", len(payload)) + payload

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_body(self) -> tuple[int, bytes]:
        (size,) = struct.unpack(">i", self._recv_exact(4))
        payload = self._recv_exact(size)
        return struct.unpack_from(">i", payload, 0)[0], payload[4:]

    def call(self, api, version: int, _entity=None, _expect_response: bool = True, **spec):
        """Sends one request (fields as keyword arguments, or a built
        `_entity`) and returns the decoded kio response entity (None when
        `_expect_response` is False, e.g. Produce acks=0)."""
        key = api_key(api)
        req_cls = load_request_schema(key, version)
        entity = _entity if _entity is not None else build(req_cls, spec)
        buf = io.BytesIO()
        entity_writer(req_cls)(buf, entity)
        self.send_raw(self.frame(key, version, buf.getvalue(), req_cls.__flexible__))
        if not _expect_response:
            return None
        corr, raw = self.recv_body()
        assert corr == self.corr, f"correlation id {corr} != {self.corr}"
        return decode_response(key, version, raw)


def decode_response(key: int, version: int, raw: bytes):
    resp_cls = load_response_schema(key, version)
    at = 0
    if resp_cls.__flexible__ and key != 18:  # ApiVersions answers with header v0
        # response header v1: tagged fields (count, then tag/size/bytes each)
        at, n = _uvarint(raw, 0)
        for _ in range(n):
            at, _tag = _uvarint(raw, at)
            at, size = _uvarint(raw, at)
            at += size
    decoded, size = entity_reader(resp_cls)(raw, at)
    if at + size != len(raw):
        raise ValueError(f"{len(raw) - at - size} bytes left after decoding {resp_cls.__name__} v{version}")
    return decoded


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return pos, result
        shift += 7
