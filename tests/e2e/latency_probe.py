#!/usr/bin/env python3
"""A produce / tail-read latency probe in a process of its own, so that what
the test process does (proxies, catch-up readers) cannot delay it.

    latency_probe.py BOOTSTRAP TOPIC SEED TS0 RATE OUT

Produces data-set records (tierutil.DataSet(SEED, TS0, 400, 600)) 0, 1, ...
to partition 0 at RATE/s with an idempotent acks=all producer and reads them
back at the tail, until SIGTERM; then flushes, reads the rest and writes OUT
as JSON: {"produced": n, "errors": [...], "samples": [[send_epoch_s,
produce_ms, tail_ms], ...]} (tail_ms null if never read)."""

import json
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

import tierutil as tu


def main():
    bootstrap, topic, seed, ts0, rate, out = sys.argv[1:7]
    rate = int(rate)
    ds = tu.DataSet(seed=int(seed), ts0=int(ts0), min_size=400, max_size=600)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 2, "message.timeout.ms": 900_000})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{topic}", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, 0, 0)])
    sent: list[float] = []      # monotonic send time by index
    wall: list[float] = []
    produce_ms: dict[int, float] = {}
    tail_ms: dict[int, float] = {}
    errors: list[str] = []
    read_done = threading.Event()

    def cb(err, msg):
        i = int(msg.key()[1:])
        if err is not None:
            errors.append(f"{i}: {err}")
        elif msg.offset() != i:
            errors.append(f"record {i} at offset {msg.offset()}")
        else:
            produce_ms[i] = (time.monotonic() - sent[i]) * 1e3

    def read():
        deadline = None
        while True:
            if stop.is_set() and deadline is None:
                deadline = time.monotonic() + 120
            if deadline is not None and (len(tail_ms) >= len(sent) or time.monotonic() > deadline):
                break
            m = c.poll(0.1)
            if m is None or m.error():
                continue
            i = int(m.key()[1:])
            if i < len(sent) and i not in tail_ms:
                tail_ms[i] = (time.monotonic() - sent[i]) * 1e3
        read_done.set()

    threading.Thread(target=read, daemon=True).start()
    t0 = time.monotonic()
    while not stop.is_set():
        while len(sent) < int((time.monotonic() - t0) * rate):
            i = len(sent)
            sent.append(time.monotonic())
            wall.append(time.time())
            p.produce(topic, key=ds.key(i), value=ds.value(i), partition=0, timestamp=ds.timestamp(i),
                      on_delivery=cb)
        p.poll(0.002)
    left = p.flush(600)
    read_done.wait(200)
    c.close()
    json.dump({"produced": len(sent), "unflushed": left, "errors": errors[:50],
               "samples": [[wall[i], produce_ms.get(i), tail_ms.get(i)] for i in range(len(sent))]},
              open(out, "w"))


main()
