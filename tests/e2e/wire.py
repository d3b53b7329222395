"""Hand-rolled Kafka wire protocol pieces, in pure Python.

Used by the tests that must send bytes no real client would send (corrupt
CRCs, garbage frames) and by the tests that need exact control over the
request (one batch holding several records, raw long-poll Fetch).

Only non-flexible (pre-KIP-482) request/response versions are implemented:
    ApiVersions v0, Produce v3, Fetch v4.
The encoders are cross-checked against kafka-python's independent encoders
in test_wire_selfcheck.py, which needs no broker.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

# --------------------------------------------------------------------------
# CRC32C (Castagnoli), table driven, reflected polynomial 0x82F63B78.
# --------------------------------------------------------------------------


def _make_crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _make_crc32c_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    crc ^= 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# --------------------------------------------------------------------------
# Varints (zigzag, as used inside v2 records)
# --------------------------------------------------------------------------


def zigzag_varint(value: int) -> bytes:
    v = (value << 1) ^ (value >> 63)
    v &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        if v & ~0x7F:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        else:
            out.append(v)
            return bytes(out)


def read_zigzag_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


# --------------------------------------------------------------------------
# Record batch v2 (magic 2)
# --------------------------------------------------------------------------


@dataclass
class Rec:
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    offset: int = -1  # filled in by the decoder


def _bytes_field(b: bytes | None) -> bytes:
    if b is None:
        return zigzag_varint(-1)
    return zigzag_varint(len(b)) + b


def encode_record(offset_delta: int, timestamp_delta: int, rec: Rec) -> bytes:
    body = bytearray()
    body += b"\x00"  # attributes (unused)
    body += zigzag_varint(timestamp_delta)
    body += zigzag_varint(offset_delta)
    body += _bytes_field(rec.key)
    body += _bytes_field(rec.value)
    body += zigzag_varint(len(rec.headers))
    for hk, hv in rec.headers:
        hkb = hk.encode()
        body += zigzag_varint(len(hkb)) + hkb
        body += _bytes_field(hv)
    return zigzag_varint(len(body)) + bytes(body)


def encode_batch(
    records: list[Rec],
    base_offset: int = 0,
    attributes: int = 0,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    crc_override: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Encode an uncompressed v2 record batch.

    crc_override: store this CRC instead of the correct one (corrupt batch).
    max_timestamp: the header's max timestamp instead of the records' largest
    (-1, as some older producers leave it, or a lie); the CRC covers it.
    """
    assert records, "a batch needs at least one record"
    first_ts = records[0].timestamp
    max_ts = max(r.timestamp for r in records) if max_timestamp is None else max_timestamp
    recs = b"".join(
        encode_record(i, r.timestamp - first_ts, r) for i, r in enumerate(records)
    )
    # everything covered by the CRC: attributes .. end
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(records) - 1,  # lastOffsetDelta
            first_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        + recs
    )
    crc = crc32c(after_crc) if crc_override is None else crc_override
    # batchLength counts from partitionLeaderEpoch to the end
    batch_length = 4 + 1 + 4 + len(after_crc)
    return (
        struct.pack(">qiibI", base_offset, batch_length, partition_leader_epoch, 2, crc)
        + after_crc
    )


def with_records_section(batch: bytes, records: bytes, codec: int) -> bytes:
    """`batch` with its records section replaced by `records` (already in
    `codec`), the codec bits, the length and the CRC set to match."""
    attributes = (struct.unpack_from(">h", batch, 21)[0] & ~7) | codec
    after_crc = struct.pack(">h", attributes) + batch[23:61] + records
    length = 4 + 1 + 4 + len(after_crc)
    return batch[:8] + struct.pack(">i", length) + batch[12:17] + struct.pack(">I", crc32c(after_crc)) + after_crc


@dataclass
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int


BATCH_HEADER_SIZE = 61


def parse_batch_header(buf: bytes, pos: int = 0) -> BatchHeader:
    fields = struct.unpack_from(">qiibIhiqqqhii", buf, pos)
    return BatchHeader(*fields)


def decode_batches(data: bytes) -> list[Rec]:
    """Decode a concatenation of uncompressed v2 batches (as returned by Fetch).

    A trailing partial batch (allowed in Fetch responses) is ignored. Verifies
    each batch's CRC.
    """
    out: list[Rec] = []
    pos = 0
    while pos + 12 <= len(data):
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + batch_length
        if end > len(data):
            break  # partial batch at the end
        h = parse_batch_header(data, pos)
        assert h.magic == 2, f"unexpected magic {h.magic}"
        crc_ok = crc32c(data[pos + 21 : end]) == h.crc
        assert crc_ok, f"CRC mismatch in batch at offset {base_offset}"
        assert h.attributes & 0x07 == 0, "decode_batches only handles uncompressed"
        log_append = bool(h.attributes & 0x08)
        rpos = pos + BATCH_HEADER_SIZE
        for _ in range(h.record_count):
            length, rpos = read_zigzag_varint(data, rpos)
            rend = rpos + length
            rpos += 1  # attributes
            ts_delta, rpos = read_zigzag_varint(data, rpos)
            off_delta, rpos = read_zigzag_varint(data, rpos)
            klen, rpos = read_zigzag_varint(data, rpos)
            key = None if klen < 0 else bytes(data[rpos : rpos + klen])
            rpos += max(klen, 0)
            vlen, rpos = read_zigzag_varint(data, rpos)
            value = None if vlen < 0 else bytes(data[rpos : rpos + vlen])
            rpos += max(vlen, 0)
            nh, rpos = read_zigzag_varint(data, rpos)
            headers = []
            for _ in range(nh):
                hkl, rpos = read_zigzag_varint(data, rpos)
                hk = bytes(data[rpos : rpos + hkl]).decode()
                rpos += hkl
                hvl, rpos = read_zigzag_varint(data, rpos)
                hv = None if hvl < 0 else bytes(data[rpos : rpos + hvl])
                rpos += max(hvl, 0)
                headers.append((hk, hv))
            assert rpos == rend, "record length mismatch"
            ts = h.max_timestamp if log_append else h.first_timestamp + ts_delta
            out.append(Rec(key, value, ts, headers, base_offset + off_delta))
        pos = end
    return out


# --------------------------------------------------------------------------
# Primitive encoders
# --------------------------------------------------------------------------


def kstring(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def kbytes(b: bytes | None) -> bytes:
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + b


def request_header_v1(api_key: int, api_version: int, correlation_id: int, client_id: str | None) -> bytes:
    return struct.pack(">hhi", api_key, api_version, correlation_id) + kstring(client_id)


def compact_string(s: str) -> bytes:
    b = s.encode()
    n = len(b) + 1
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + b


def api_versions_future_request(correlation_id: int, version: int, client_id: str = "strata-e2e-raw") -> bytes:
    """A complete framed ApiVersions request of a (future) flexible version, as
    a newer client would send it: request header v2 (client_id as a classic
    string, then empty tagged fields) and a v3-style body."""
    payload = (request_header_v1(API_API_VERSIONS, version, correlation_id, client_id) + b"\x00"
               + compact_string("strata-e2e") + compact_string("1.0") + b"\x00")
    return struct.pack(">i", len(payload)) + payload


class Reader:
    def __init__(self, buf: bytes):
        self.buf = buf
        self.pos = 0

    def _u(self, fmt: str):
        v = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def i8(self):
        return self._u(">b")

    def i16(self):
        return self._u(">h")

    def i32(self):
        return self._u(">i")

    def i64(self):
        return self._u(">q")

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        s = self.buf[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def bytes_(self):
        n = self.i32()
        if n < 0:
            return None
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return bytes(b)

    def array(self, fn):
        n = self.i32()
        if n < 0:
            return None
        return [fn(self) for _ in range(n)]

    def done(self) -> bool:
        return self.pos == len(self.buf)


# --------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------

API_PRODUCE = 0
API_FETCH = 1
API_API_VERSIONS = 18


def produce_v3_body(acks: int, timeout_ms: int, topic_data: dict[str, dict[int, bytes]],
                    transactional_id: str | None = None) -> bytes:
    body = kstring(transactional_id) + struct.pack(">hi", acks, timeout_ms)
    body += struct.pack(">i", len(topic_data))
    for topic, parts in topic_data.items():
        body += kstring(topic) + struct.pack(">i", len(parts))
        for p, records in parts.items():
            body += struct.pack(">i", p) + kbytes(records)
    return body


@dataclass
class ProducePartitionResult:
    partition: int
    error_code: int
    base_offset: int
    log_append_time: int


@dataclass
class ProduceV8PartitionResult:
    partition: int
    error_code: int
    base_offset: int
    log_append_time: int
    log_start_offset: int
    record_errors: list[tuple[int, str | None]]
    error_message: str | None


def _parse_produce_response(body: bytes, part, version: int) -> dict:
    """topics [name, partitions [part(...)]], throttle_time_ms: the layout
    of ProduceResponse v1-v8; `part` reads one partition's fields."""
    r = Reader(body)
    out = {}

    def topic(rr: Reader):
        name = rr.string()
        for pr in rr.array(part):
            out[(name, pr.partition)] = pr

    r.array(topic)
    r.i32()  # throttle_time_ms
    assert r.done(), f"trailing bytes in ProduceResponse v{version}"
    return out


def parse_produce_v8_response(body: bytes) -> dict[tuple[str, int], ProduceV8PartitionResult]:
    """ProduceResponse v8 (non-flexible): v3's fields, log_start_offset,
    record_errors [(batch_index, message)] and error_message."""
    def part(rr: Reader):
        index, code, base, lat, lso = rr.i32(), rr.i16(), rr.i64(), rr.i64(), rr.i64()
        errors = rr.array(lambda e: (e.i32(), e.string()))
        return ProduceV8PartitionResult(index, code, base, lat, lso, errors, rr.string())

    return _parse_produce_response(body, part, 8)


def parse_produce_v3_response(body: bytes) -> dict[tuple[str, int], ProducePartitionResult]:
    return _parse_produce_response(
        body, lambda rr: ProducePartitionResult(rr.i32(), rr.i16(), rr.i64(), rr.i64()), 3)


def fetch_v4_body(max_wait_ms: int, min_bytes: int, max_bytes: int,
                  partitions: dict[str, dict[int, tuple[int, int]]],
                  isolation_level: int = 0) -> bytes:
    """partitions: topic -> {partition: (fetch_offset, partition_max_bytes)}"""
    body = struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, isolation_level)
    body += struct.pack(">i", len(partitions))
    for topic, parts in partitions.items():
        body += kstring(topic) + struct.pack(">i", len(parts))
        for p, (off, pmax) in parts.items():
            body += struct.pack(">iqi", p, off, pmax)
    return body


@dataclass
class FetchPartitionResult:
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    records: bytes | None


def parse_fetch_v4_response(body: bytes) -> dict[tuple[str, int], FetchPartitionResult]:
    r = Reader(body)
    r.i32()  # throttle_time_ms
    out = {}

    def aborted(rr: Reader):
        return (rr.i64(), rr.i64())

    def part(rr: Reader):
        p = rr.i32()
        err = rr.i16()
        hw = rr.i64()
        lso = rr.i64()
        rr.array(aborted)
        recs = rr.bytes_()
        return FetchPartitionResult(p, err, hw, lso, recs)

    def topic(rr: Reader):
        name = rr.string()
        for pr in rr.array(part):
            out[(name, pr.partition)] = pr

    r.array(topic)
    assert r.done(), "trailing bytes in FetchResponse v4"
    return out


API_METADATA = 3


def metadata_v4_body(topics: list[str] | None, allow_auto_topic_creation: bool) -> bytes:
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(kstring(t) for t in topics)
    return body + struct.pack(">b", 1 if allow_auto_topic_creation else 0)


@dataclass
class MetadataTopic:
    error_code: int
    name: str
    is_internal: bool
    partitions: dict[int, tuple[int, int, list[int], list[int]]]  # p -> (error, leader, replicas, isr)


def parse_metadata_v4_response(body: bytes) -> tuple[list[tuple[int, str, int]], int, dict[str, MetadataTopic]]:
    """Returns (brokers [(id, host, port)], controller_id, topics by name)."""
    r = Reader(body)
    r.i32()  # throttle
    brokers = r.array(lambda rr: (rr.i32(), rr.string(), rr.i32(), rr.string())[:3])
    r.string()  # cluster id
    controller = r.i32()

    def part(rr: Reader):
        err = rr.i16()
        idx = rr.i32()
        leader = rr.i32()
        reps = rr.array(lambda x: x.i32())
        isr = rr.array(lambda x: x.i32())
        return idx, (err, leader, reps, isr)

    def topic(rr: Reader):
        err = rr.i16()
        name = rr.string()
        internal = bool(rr.i8())
        parts = dict(rr.array(part))
        return MetadataTopic(err, name, internal, parts)

    topics = {t.name: t for t in r.array(topic)}
    assert r.done(), "trailing bytes in MetadataResponse v4"
    return brokers, controller, topics


def parse_api_versions_v0_response(body: bytes) -> tuple[int, dict[int, tuple[int, int]]]:
    r = Reader(body)
    err = r.i16()
    versions = {}
    for k, lo, hi in r.array(lambda rr: (rr.i16(), rr.i16(), rr.i16())):
        versions[k] = (lo, hi)
    return err, versions


# --------------------------------------------------------------------------
# Connection
# --------------------------------------------------------------------------


class ConnectionClosed(Exception):
    pass


class KafkaConn:
    """A blocking, one-request-at-a-time raw Kafka connection."""

    def __init__(self, host: str, port: int, timeout: float = 15.0, client_id: str = "strata-e2e-raw"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.corr = 0

    @classmethod
    def to(cls, bootstrap: str, **kw) -> "KafkaConn":
        host, port = bootstrap.rsplit(":", 1)
        return cls(host, int(port), **kw)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def send_request(self, api_key: int, api_version: int, body: bytes, flexible: bool = False) -> int:
        """Sends a request with header v1, or v2 (empty tagged fields) when
        `flexible`; returns its correlation id."""
        self.corr += 1
        header = request_header_v1(api_key, api_version, self.corr, self.client_id)
        payload = header + (b"\x00" if flexible else b"") + body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        return self.corr

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(buf)}/{n} bytes")
            buf += chunk
        return bytes(buf)

    def recv_response(self, expect_corr: int) -> bytes:
        """Read one response (header v0) and return its body."""
        (size,) = struct.unpack(">i", self._recv_exact(4))
        payload = self._recv_exact(size)
        (corr,) = struct.unpack_from(">i", payload, 0)
        assert corr == expect_corr, f"correlation id {corr} != expected {expect_corr}"
        return payload[4:]

    def request(self, api_key: int, api_version: int, body: bytes, flexible: bool = False) -> bytes:
        return self.recv_response(self.send_request(api_key, api_version, body, flexible))

    # convenience wrappers ------------------------------------------------
    def api_versions(self, version: int = 0) -> tuple[int, dict[int, tuple[int, int]]]:
        return parse_api_versions_v0_response(self.request(API_API_VERSIONS, version, b""))

    def produce_v3(self, topic: str, partition: int, records: bytes, acks: int = -1,
                   timeout_ms: int = 30000) -> ProducePartitionResult:
        body = produce_v3_body(acks, timeout_ms, {topic: {partition: records}})
        res = parse_produce_v3_response(self.request(API_PRODUCE, 3, body))
        return res[(topic, partition)]

    def produce_v8(self, topic: str, partition: int, records: bytes, acks: int = -1,
                   timeout_ms: int = 30000) -> ProduceV8PartitionResult:
        """Produce v8 (same request body as v3) and its partition's result,
        with record_errors and error_message."""
        body = produce_v3_body(acks, timeout_ms, {topic: {partition: records}})
        return parse_produce_v8_response(self.request(API_PRODUCE, 8, body))[(topic, partition)]

    def metadata_v4(self, topics: list[str] | None, allow_auto_topic_creation: bool):
        return parse_metadata_v4_response(
            self.request(API_METADATA, 4, metadata_v4_body(topics, allow_auto_topic_creation)))

    def fetch_v4(self, topic: str, partition: int, offset: int, max_wait_ms: int = 500,
                 min_bytes: int = 1, max_bytes: int = 1 << 20) -> FetchPartitionResult:
        body = fetch_v4_body(max_wait_ms, min_bytes, max_bytes, {topic: {partition: (offset, max_bytes)}})
        res = parse_fetch_v4_response(self.request(API_FETCH, 4, body))
        return res[(topic, partition)]

    def wait_closed(self, timeout: float = 10.0) -> str | None:
        """Wait until the peer closes the connection.

        Returns None if it closed (EOF or reset) within `timeout`, otherwise a
        description of what happened instead.
        """
        deadline = time.monotonic() + timeout
        received = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return f"still open after {timeout}s (received {len(received)} bytes: {received[:64]!r})"
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                return None
            except socket.timeout:
                continue
            if not chunk:
                return None
            received += chunk
