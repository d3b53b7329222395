"""Leaves a transaction open: a confluent-kafka transactional producer that
begins a transaction, writes COUNT records to TOPIC partition PARTITION,
flushes them, prints one JSON line and then waits to be killed (SIGKILL,
by test_kafka_tools.py) without committing or aborting.

    python open_txn.py BOOTSTRAP TOPIC PARTITION TRANSACTIONAL_ID COUNT
"""
import json
import sys
import time

from confluent_kafka import Producer

bootstrap, topic, partition, txn_id, count = sys.argv[1:6]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
              # long enough that the coordinator does not abort it during the test
              "transaction.timeout.ms": 600000})
p.init_transactions(30)
p.begin_transaction()
for i in range(int(count)):
    p.produce(topic, value=b"open-%d" % i, partition=int(partition))
assert p.flush(30) == 0
print(json.dumps({"ready": True}), flush=True)
while True:
    time.sleep(1)
