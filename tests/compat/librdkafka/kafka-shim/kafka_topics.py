"""The subset of kafka-topics.sh that librdkafka's tests use:

    --bootstrap-server B --create --topic T --partitions N --replication-factor R [--config K=V]...
    --bootstrap-server B --alter  --topic T --partitions N
    --bootstrap-server B --delete --topic T

through confluent-kafka's AdminClient. Exit 0 on success, 1 with the
broker's error otherwise (as kafka-topics.sh does)."""

import argparse
import sys

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic


def main() -> int:
    ap = argparse.ArgumentParser(prog="kafka-topics.sh (Strata test shim)")
    ap.add_argument("--bootstrap-server", required=True)
    op = ap.add_mutually_exclusive_group(required=True)
    op.add_argument("--create", action="store_true")
    op.add_argument("--alter", action="store_true")
    op.add_argument("--delete", action="store_true")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int)
    ap.add_argument("--replication-factor", type=int, default=-1)
    ap.add_argument("--config", action="append", default=[])
    a = ap.parse_args()

    admin = AdminClient({"bootstrap.servers": a.bootstrap_server})
    if a.create:
        configs = dict(c.split("=", 1) for c in a.config)
        fut = admin.create_topics([NewTopic(a.topic, a.partitions or -1,
                                            a.replication_factor, config=configs)],
                                  operation_timeout=30)[a.topic]
    elif a.alter:
        fut = admin.create_partitions([NewPartitions(a.topic, a.partitions)],
                                      operation_timeout=30)[a.topic]
    else:
        fut = admin.delete_topics([a.topic], operation_timeout=30)[a.topic]
    try:
        fut.result(timeout=60)
    except Exception as e:  # noqa: BLE001 - report whatever the broker said
        print(f"Error while executing topic command: {e}", file=sys.stderr)
        return 1
    print(f"{'Created' if a.create else 'Altered' if a.alter else 'Deleted'} topic {a.topic}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
