"""The data disk fills: produce gets KAFKA_STORAGE_ERROR (56) and the broker
logs why, stays up and serves reads; when space is freed, writes resume.
No torn batch is ever acknowledged or served.

The data directory is a 24 MiB tmpfs mounted for the test (root only)."""

import os
import struct
import subprocess
import time

import pytest

import kutil
import wire

KAFKA_STORAGE_ERROR = 56


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root (CI runs as root)")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _free(path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_disk_full_refuses_writes_keeps_reads_and_recovers(broker_factory, small_disk):
    b = broker_factory({"num.partitions": 1, "remote.log.storage.system.enable": "false"},
                       data_dir=small_disk / "data")
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("full"), 1,
                               config={"segment.bytes": str(4 << 20), "max.message.bytes": str(1 << 20)})
    # Leave about 3 MiB free.
    filler = small_disk / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, _free(small_disk) - (3 << 20)))
    acked: list[bytes] = []
    errors: list[int] = []
    mark = b.log_size()
    with wire.KafkaConn.to(b.bootstrap) as c:
        for i in range(40):
            value = b"%06d" % i + os.urandom(200_000)
            r = c.produce_v3(topic, 0, wire.encode_batch([wire.Rec(None, value, int(time.time() * 1000))]))
            if r.error_code == 0:
                assert r.base_offset == len(acked), f"batch {i}: base offset {r.base_offset}"
                acked.append(value)
            else:
                errors.append(r.error_code)
    assert errors, f"the disk never filled ({len(acked)} batches acknowledged)"
    assert set(errors) == {KAFKA_STORAGE_ERROR}, f"errors other than KAFKA_STORAGE_ERROR: {set(errors)}"
    assert acked, "nothing was acknowledged before the disk filled"
    assert b.alive(), f"broker died when the disk filled; log:\n{b.log_tail(start=mark)}"
    log = b.log_text(start=mark)
    assert "No space left on device" in log, f"no log line says why appends fail:\n{log[-3000:]}"

    # Reads still served: exactly the acknowledged batches, CRCs intact.
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, len(acked))
    res = kutil.consume(b.bootstrap, topic, [0], expected=len(acked), **{"check.crcs": True})
    assert not res.errors, [e.str() for e in res.errors]
    assert [m.value for m in res.messages] == acked

    # Space freed: writes resume where they stopped.
    filler.unlink()
    with wire.KafkaConn.to(b.bootstrap) as c:
        for i in range(5):
            value = b"after%02d" % i + os.urandom(100_000)
            r = c.produce_v3(topic, 0, wire.encode_batch([wire.Rec(None, value, int(time.time() * 1000))]))
            assert r.error_code == 0, f"write after freeing space: error {r.error_code}"
            acked.append(value)
    res = kutil.consume(b.bootstrap, topic, [0], expected=len(acked), **{"check.crcs": True})
    assert not res.errors, [e.str() for e in res.errors]
    assert [m.value for m in res.messages] == acked

    # And a restart recovers the same log (nothing torn left on disk).
    b.kill9()
    b.start()
    res = kutil.consume(b.bootstrap, topic, [0], expected=len(acked), **{"check.crcs": True})
    assert [m.value for m in res.messages] == acked
