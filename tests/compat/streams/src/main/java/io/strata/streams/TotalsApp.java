// Owned by tests/compat/streams (issue 34, Kafka Streams part): the Kafka
// Streams application that tests/compat/test_kafka_streams.py runs as a child
// JVM against a real Strata broker, kills with SIGKILL mid-run and starts again.
//
// Topology (exactly_once_v2, one stream thread):
//   input  (key: record id, value: "ACCOUNT:AMOUNT")
//     -> selectKey(ACCOUNT)                      re-keyed: a repartition topic
//     -> groupByKey("by-account")                <app>-by-account-repartition
//     -> aggregate into RocksDB store "totals"   <app>-totals-changelog (compacted)
//        value "COUNT:SUM"
//     -> output (key: ACCOUNT, value: "COUNT:SUM")
// The driver knows every input record, so the last committed output value of
// each account must be exactly (number of its records, sum of their amounts).
//
// Usage: TotalsApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [HOT_WINDOW_MS]
// HOT_WINDOW_MS > 0 gives every internal topic local.retention.ms=HOT_WINDOW_MS
// and small segments (topic.* configs), so their sealed segments tier to the
// bucket and leave the local disk within seconds.
//
// Lines the driver parses on stdout (everything else is the client's log):
//   STATE <old> <new>
//   RESTORE_START <topic> <partition> <store> <startOffset> <endOffset>
//   RESTORE_BATCH <topic> <partition> <store> <batchEndOffset> <records>  (first batch only)
//   RESTORE_END <topic> <partition> <store> <totalRestored>
//   FATAL <exception>
package io.strata.streams;

import java.time.Duration;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

public final class TotalsApp {
    private TotalsApp() {}

    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: TotalsApp BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [HOT_WINDOW_MS]");
            System.exit(2);
        }
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], stateDir = args[4];
        long hotWindowMs = args.length > 5 ? Long.parseLong(args[5]) : 0;

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // A member killed with SIGKILL never leaves the group: the restarted
        // application gets its tasks once the old member's session expires.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 2000);
        // Consumed repartition records are purged (DeleteRecords) every 5 s,
        // not 30: a CI-sized run sees several purges.
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 5000);
        if (hotWindowMs > 0) {
            // Every internal topic (repartition and changelog): a one-second
            // hot window and segments that seal quickly (Streams' own defaults
            // for these are overridden by topic.* settings).
            p.put(StreamsConfig.topicPrefix("local.retention.ms"), Long.toString(hotWindowMs));
            p.put(StreamsConfig.topicPrefix("segment.ms"), "1000");
            p.put(StreamsConfig.topicPrefix("segment.bytes"), Integer.toString(256 * 1024));
            p.put(StreamsConfig.topicPrefix("remote.storage.enable"), "true");
        }

        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((id, v) -> v.substring(0, v.indexOf(':')))
                .mapValues(v -> Long.parseLong(v.substring(v.indexOf(':') + 1)))
                .groupByKey(Grouped.with("by-account", Serdes.String(), Serdes.Long()))
                .aggregate(
                        () -> "0:0",
                        (account, amount, agg) -> {
                            int i = agg.indexOf(':');
                            long count = Long.parseLong(agg.substring(0, i));
                            long sum = Long.parseLong(agg.substring(i + 1));
                            return (count + 1) + ":" + (sum + amount);
                        },
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("totals")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.String()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        AtomicBoolean failed = new AtomicBoolean(false);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, old) -> {
            out("STATE " + old + " " + now);
            if (now == KafkaStreams.State.ERROR) {
                failed.set(true);
            }
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        // No thread replacement: an exception that kills the stream thread
        // is a failure of the run, reported and never retried away.
        streams.setUncaughtExceptionHandler(e -> {
            out("FATAL " + e);
            e.printStackTrace(System.out);
            failed.set(true);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Set<TopicPartition> firstBatch = ConcurrentHashMap.newKeySet();
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                firstBatch.remove(tp);
                out("RESTORE_START " + tp.topic() + " " + tp.partition() + " " + store + " " + start + " " + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
                if (firstBatch.add(tp)) {
                    out("RESTORE_BATCH " + tp.topic() + " " + tp.partition() + " " + store + " " + batchEnd + " " + n);
                }
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                out("RESTORE_END " + tp.topic() + " " + tp.partition() + " " + store + " " + total);
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // SIGTERM: a clean close (commits the open transaction); exit 0
            // unless the application had failed before.
            streams.close(Duration.ofSeconds(60));
            out("EXIT " + (failed.get() ? 1 : 0));
            Runtime.getRuntime().halt(failed.get() ? 1 : 0);
        }));
        streams.start();
        done.await();
        if (failed.get()) {
            // ERROR (or a stream thread's fatal exception): close and exit 1.
            streams.close(Duration.ofSeconds(60));
            out("EXIT 1");
            Runtime.getRuntime().halt(1);
        }
        // NOT_RUNNING without a failure: only a SIGTERM gets here; the hook exits.
        Thread.sleep(Long.MAX_VALUE);
    }
}
