#!/usr/bin/env python3
"""Captures fuzz seeds from real clients.

Starts a broker (STRATA_BIN, default target/release/strata) advertising a
recording proxy's port, drives it with confluent-kafka (librdkafka) and
kafka-python through a produce / group consume / commit / admin scenario,
and writes:

  seeds/request/        each distinct (API, version) request frame the
                        clients sent (after the size), up to 3 of each
  seeds/record_batch/   record batches as stored (every codec)
  seeds/stored_files/   index, time index and producer snapshot files,
                        and the partition manifests in the bucket

    .venv/bin/python broker/fuzz/capture_seeds.py
"""
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import kutil  # noqa: E402
from strata_broker import free_port, port_accepts  # noqa: E402

SEEDS = HERE / "seeds"
frames: dict[tuple[int, int], list[bytes]] = {}
lock = threading.Lock()


def pump(src, dst, record):
    buf = b""
    try:
        while True:
            chunk = src.recv(65536)
            if not chunk:
                break
            dst.sendall(chunk)
            if not record:
                continue
            buf += chunk
            while len(buf) >= 4:
                (n,) = struct.unpack(">i", buf[:4])
                if len(buf) < 4 + n:
                    break
                f, buf = buf[4:4 + n], buf[4 + n:]
                key, ver = struct.unpack(">hh", f[:4])
                with lock:
                    seen = frames.setdefault((key, ver), [])
                    if len(seen) < 3 and f not in seen:
                        seen.append(f)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def proxy(listen_port, target_port):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(64)
    while True:
        c, _ = srv.accept()
        u = socket.create_connection(("127.0.0.1", target_port))
        threading.Thread(target=pump, args=(c, u, True), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, False), daemon=True).start()


def scenario(bootstrap):
    adm = kutil.admin(bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("seed"), 3, config={"retention.ms": "86400000"})
    now = int(time.time() * 1000)
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        kutil.produce(bootstrap, topic, [{"key": f"k{i}".encode(), "value": os.urandom(50) * 3,
                                          "headers": [("h", b"v")], "timestamp": now + i}
                                         for i in range(20)],
                      **{"compression.type": codec, "enable.idempotence": True})
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": kutil.unique("seed-g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline = 0, time.time() + 30
    while got < 100 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.offsets_for_times([TopicPartition(topic, 0, now + 5)], timeout=10)
    c.close()
    kutil.offsets_for_times(bootstrap, topic, 0, [now + 3])
    from confluent_kafka.admin import ConfigResource, NewPartitions
    adm.describe_configs([ConfigResource("topic", topic)])[ConfigResource("topic", topic)].result()
    adm.create_partitions([NewPartitions(topic, 4)])[topic].result()
    adm.list_consumer_groups().result()
    try:
        import kafka
        # kafka-python reads gzip only without extra libraries: a topic of its own.
        topic = kutil.create_topic(adm, kutil.unique("seed-kp"), 2)
        kp = kafka.KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip")
        for i in range(10):
            kp.send(topic, key=b"kp", value=b"kafka-python %d" % i)
        kp.flush()
        kp.close()
        kc = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=kutil.unique("kp"),
                                 auto_offset_reset="earliest", consumer_timeout_ms=4000)
        for _ in kc:
            pass
        kc.commit()
        kc.close()
        ka = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
        ka.list_consumer_groups()
        ka.describe_configs([kafka.admin.ConfigResource(kafka.admin.ConfigResourceType.TOPIC, topic)])
        ka.close()
    except ImportError:
        pass
    return topic


def write(kind, name, data):
    d = SEEDS / kind
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def main():
    binary = os.environ.get("STRATA_BIN", str(ROOT / "target" / "release" / "strata"))
    os.environ.setdefault("STRATA_BIN", binary)
    tmp = Path(tempfile.mkdtemp(prefix="strata-seeds-"))
    bport, pport, hport = free_port(), free_port(), free_port()
    threading.Thread(target=proxy, args=(pport, bport), daemon=True).start()
    cmd = [binary, "broker", "--data-dir", str(tmp / "data"), "--listen", f"127.0.0.1:{bport}",
           "--http-listen", f"127.0.0.1:{hport}", "--advertised-listener", f"127.0.0.1:{pport}",
           "--set", "log.segment.bytes=4096", "--set", "remote.log.manager.task.interval.ms=200",
           "--set", "log.local.retention.ms=1000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while not port_accepts("127.0.0.1", bport) and time.time() < deadline:
            time.sleep(0.05)
        scenario(f"127.0.0.1:{pport}")
        time.sleep(2)  # let tiering upload a few segments
    finally:
        proc.terminate()
        proc.wait(30)
    for kind in ("request", "record_batch", "stored_files"):
        shutil.rmtree(SEEDS / kind, ignore_errors=True)
    for (key, ver), fs in sorted(frames.items()):
        for i, f in enumerate(fs):
            write("request", f"api{key}_v{ver}_{i}", f)
    batches = 0
    for log in sorted((tmp / "data").rglob("*.log")):
        data = log.read_bytes()
        pos = 0
        while pos + 12 <= len(data) and batches < 60:
            (n,) = struct.unpack(">i", data[pos + 8:pos + 12])
            b = data[pos:pos + 12 + n]
            attrs = struct.unpack(">h", b[21:23])[0] if len(b) > 23 else 0
            name = f"codec{attrs & 7}_{hashlib.sha1(b).hexdigest()[:12]}"
            write("record_batch", name, b)
            batches += 1
            pos += 12 + n
    files = 0
    for pat in ("*.index", "*.timeindex", "*.snapshot", "*.json"):
        for p in sorted(tmp.rglob(pat))[:4]:
            if p.stat().st_size:
                write("stored_files", f"{p.suffix[1:]}_{hashlib.sha1(p.read_bytes()).hexdigest()[:12]}",
                      p.read_bytes())
                files += 1
    print(f"{sum(len(v) for v in frames.values())} request frames over {len(frames)} API versions, "
          f"{batches} batches, {files} stored files")
    shutil.rmtree(tmp, ignore_errors=True)


main()
