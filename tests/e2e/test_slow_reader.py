"""A client that pipelines fetches and never reads its socket cannot make
the broker hold more than the connection's response budget (64 MiB,
`docs/reliability.md`)."""

import os
import socket
import struct
import time

import kutil
import wire


def test_pipelined_fetches_never_read_hold_bounded_memory(broker_factory):
    b = broker_factory({"num.partitions": 1, "remote.log.storage.system.enable": "false"})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("slow"), 1, config={"max.message.bytes": str(2 << 20)})
    with wire.KafkaConn.to(b.bootstrap) as c:
        for i in range(48):
            batch = wire.encode_batch([wire.Rec(None, os.urandom(1 << 20), int(time.time() * 1000))])
            assert c.produce_v3(topic, 0, batch).error_code == 0
    base = b.rss_kib("VmRSS")
    host, port = b.bootstrap.rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.connect((host, int(port)))
    body = wire.fetch_v4_body(100, 1, 50 << 20, {topic: {0: (0, 50 << 20)}})
    for corr in range(1, 41):
        payload = wire.request_header_v1(wire.API_FETCH, 4, corr, "slow") + body
        s.sendall(struct.pack(">i", len(payload)) + payload)
    # 40 fetches of ~48 MiB each would be ~1.9 GiB if all were answered.
    peak = base
    for _ in range(30):
        time.sleep(0.1)
        peak = max(peak, b.rss_kib("VmRSS"))
    grew_mib = (peak - base) // 1024
    with wire.KafkaConn.to(b.bootstrap) as bystander:
        assert bystander.api_versions()[0] == 0
        f = bystander.fetch_v4(topic, 0, 47, max_wait_ms=100)
        assert f.error_code == 0 and f.high_watermark == 48
    s.close()
    assert b.alive()
    assert grew_mib < 64 + 48, f"broker RSS grew by {grew_mib} MiB for a client that does not read"
    print(f"\nRSS growth with 40 unread 48 MiB fetches: {grew_mib} MiB")
