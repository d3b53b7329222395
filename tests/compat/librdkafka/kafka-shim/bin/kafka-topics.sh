#!/usr/bin/env bash
# Stand-in for Apache Kafka's bin/kafka-topics.sh, for the few librdkafka
# tests that shell out to it (test_kafka_topics() in librdkafka's test.c:
# 0045, 0052, 0077). run.py points KAFKA_PATH here. It speaks the Kafka
# protocol through confluent-kafka's AdminClient (kafka_topics.py); no part of
# Apache Kafka is used. Any other bin/ script (kafka-acls.sh, ...) is absent,
# so the tests needing one fail as without KAFKA_PATH.
exec "${STRATA_RDKAFKA_PYTHON:-python3}" "$(dirname "$0")/../kafka_topics.py" "$@"
