"""Compressed batches (gzip, snappy, lz4, zstd) round-trip unchanged, and are
stored compressed (the broker keeps the producer's batches)."""

import os

import pytest

import kutil


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_codec_roundtrip(broker, admin, topic_name, codec):
    kutil.create_topic(admin, topic_name, 2)
    records = []
    for i in range(2000):
        if i % 10 == 0:
            value = os.urandom(200)  # incompressible ones mixed in
        else:
            value = (f"record-{i}-" + "abcdefgh" * 600).encode()
        records.append({"key": f"k{i % 13}".encode(), "value": value, "partition": i % 2,
                        "headers": [("codec", codec.encode())]})
    raw_bytes = sum(len(r["value"]) for r in records)
    dels = kutil.produce(broker.bootstrap, topic_name, records,
                         **{"compression.type": codec, "linger.ms": 20, "batch.num.messages": 500})
    res = kutil.consume(broker.bootstrap, topic_name, [0, 1], expected=len(records))
    assert not res.errors, [e.str() for e in res.errors]
    got = {(m.partition, m.offset): m for m in res.messages}
    assert len(got) == len(records)
    for d in dels:
        m = got[(d.partition, d.offset)]
        r = records[d.index]
        assert (m.key, m.value, m.headers) == (r["key"], r["value"], r["headers"]), f"record {d.index}"

    stored = sum(sum(kutil.segment_sizes(broker, topic_name, p).values()) for p in (0, 1))
    assert 0 < stored < raw_bytes / 4, \
        f"{codec}: {stored} bytes on disk for {raw_bytes} bytes of compressible payload: not stored compressed?"
