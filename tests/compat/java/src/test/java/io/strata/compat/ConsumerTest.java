// Consumer tests of the Java client compatibility suite that need no group
// rebalancing: assign + seek by offset, seek by time (offsetsForTimes),
// commitSync and commitAsync with the committed offsets read back through
// the consumer (committed()) and through the admin client.
package io.strata.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConsumerTest {
    static final int PER_PARTITION = 50;
    Admin admin;
    String topic;
    long base;

    @BeforeAll
    void setUp() throws Exception {
        admin = Kit.admin();
        topic = Kit.createTopic(admin, Kit.name("java-consumer"), 3);
        base = System.currentTimeMillis() - 600_000L;
        // partition p, record i: timestamp base + i*100 (+p), value "p-i"
        try (KafkaProducer<String, String> pr = Kit.producer()) {
            for (int i = 0; i < PER_PARTITION; i++) {
                for (int p = 0; p < 3; p++) {
                    pr.send(new ProducerRecord<>(topic, p, base + i * 100L + p, "k" + i, p + "-" + i)).get();
                }
            }
        }
    }

    @AfterAll
    void tearDown() {
        admin.close();
    }

    static List<ConsumerRecord<String, String>> pollN(KafkaConsumer<String, String> c, int n) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (out.size() < n) {
            assertTrue(System.nanoTime() < deadline, "timed out: " + out.size() + " of " + n + " records");
            c.poll(Duration.ofMillis(100)).forEach(out::add);
        }
        return out;
    }

    @Test
    void assignSeekOffset() {
        TopicPartition tp = new TopicPartition(topic, 1);
        try (KafkaConsumer<String, String> c = Kit.consumer(null)) {
            c.assign(List.of(tp));
            assertEquals(Map.of(tp, 0L), c.beginningOffsets(List.of(tp)), "beginning offset");
            assertEquals(Map.of(tp, (long) PER_PARTITION), c.endOffsets(List.of(tp)), "end offset");
            c.seek(tp, 17);
            List<ConsumerRecord<String, String>> got = pollN(c, 5);
            for (int i = 0; i < 5; i++) {
                assertEquals(17 + i, got.get(i).offset(), "offset after seek(17)");
                assertEquals("1-" + (17 + i), got.get(i).value(), "value after seek(17)");
            }
            c.seek(tp, 3);   // backwards
            assertEquals(3, c.position(tp), "position after seek back");
            assertEquals("1-3", pollN(c, 1).get(0).value(), "value after seek back to 3");
            c.seekToEnd(List.of(tp));
            assertEquals(PER_PARTITION, c.position(tp), "position after seekToEnd");
            assertTrue(c.poll(Duration.ofMillis(300)).isEmpty(), "nothing after the end");
            c.seekToBeginning(List.of(tp));
            assertEquals(0, c.position(tp), "position after seekToBeginning");
        }
    }

    @Test
    void seekByTime() {
        List<TopicPartition> tps = Kit.partitions(topic, 3);
        try (KafkaConsumer<String, String> c = Kit.consumer(null)) {
            c.assign(tps);
            // before everything, exactly at record 10, between records 20 and 21, after everything
            long[] ts = {base - 5000, base + 10 * 100L, base + 20 * 100L + 50, base + PER_PARTITION * 100L + 1000};
            for (long t : ts) {
                Map<TopicPartition, Long> q = new HashMap<>();
                for (TopicPartition tp : tps) q.put(tp, t);
                Map<TopicPartition, OffsetAndTimestamp> r = c.offsetsForTimes(q);
                for (TopicPartition tp : tps) {
                    int p = tp.partition();
                    // first record with timestamp >= t: base + i*100 + p >= t
                    long want = -1;
                    for (int i = 0; i < PER_PARTITION; i++) {
                        if (base + i * 100L + p >= t) {
                            want = i;
                            break;
                        }
                    }
                    OffsetAndTimestamp o = r.get(tp);
                    if (want < 0) {
                        assertNull(o, "offsetsForTimes(" + t + ") after the last record of " + tp);
                    } else {
                        assertNotNull(o, "offsetsForTimes(" + t + ") of " + tp);
                        assertEquals(want, o.offset(), "offset for time " + t + " on " + tp);
                        assertEquals(base + want * 100L + p, o.timestamp(), "timestamp for time " + t + " on " + tp);
                    }
                }
            }
            // seek to the offset for a time and read from there
            TopicPartition tp2 = new TopicPartition(topic, 2);
            c.assign(List.of(tp2));
            OffsetAndTimestamp o = c.offsetsForTimes(Map.of(tp2, base + 33 * 100L)).get(tp2);
            c.seek(tp2, o.offset());
            ConsumerRecord<String, String> first = pollN(c, 1).get(0);
            assertEquals("2-33", first.value(), "first record at/after the time");
            assertEquals(base + 33 * 100L + 2, first.timestamp(), "its timestamp");
        }
    }

    Map<TopicPartition, Long> consumeSome(KafkaConsumer<String, String> c, int n) {
        Map<TopicPartition, Long> next = new HashMap<>();
        for (ConsumerRecord<String, String> r : pollN(c, n)) {
            next.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
        }
        return next;
    }

    static Map<TopicPartition, Long> adminCommitted(Admin admin, String group) {
        Map<TopicPartition, Long> out = new HashMap<>();
        Kit.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata())
                .forEach((tp, om) -> out.put(tp, om.offset()));
        return out;
    }

    @Test
    void commitSync() {
        String group = Kit.name("java-commit-sync");
        List<TopicPartition> tps = Kit.partitions(topic, 3);
        try (KafkaConsumer<String, String> c = Kit.consumer(group)) {
            c.assign(tps);
            Map<TopicPartition, Long> next = consumeSome(c, 40);
            // commit explicit offsets with metadata, then position-based commit
            Map<TopicPartition, OffsetAndMetadata> explicit = new HashMap<>();
            next.forEach((tp, o) -> explicit.put(tp, new OffsetAndMetadata(o, "meta-" + tp.partition())));
            c.commitSync(explicit);
            Map<TopicPartition, OffsetAndMetadata> got = c.committed(new HashSet<>(tps));
            for (TopicPartition tp : tps) {
                if (next.containsKey(tp)) {
                    assertEquals(next.get(tp), got.get(tp).offset(), "committed() offset of " + tp);
                    assertEquals("meta-" + tp.partition(), got.get(tp).metadata(), "committed() metadata of " + tp);
                } else {
                    assertNull(got.get(tp), "nothing committed for " + tp);
                }
            }
            assertEquals(next, adminCommitted(admin, group), "committed offsets read back by the admin client");
            // consume to the end, commitSync() commits the positions
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                assertTrue(System.nanoTime() < deadline, "reading to the end timed out");
                c.poll(Duration.ofMillis(100));
            }
            c.commitSync();
        }
        Map<TopicPartition, Long> end = new HashMap<>();
        for (TopicPartition tp : tps) end.put(tp, (long) PER_PARTITION);
        assertEquals(end, adminCommitted(admin, group), "commitSync() committed the positions");
        // a new consumer of the group (assign) starts at the committed offsets
        try (KafkaConsumer<String, String> c = Kit.consumer(group)) {
            c.assign(tps);
            for (TopicPartition tp : tps) assertEquals(PER_PARTITION, c.position(tp), "position of a new consumer on " + tp);
        }
    }

    @Test
    void commitAsync() throws Exception {
        String group = Kit.name("java-commit-async");
        List<TopicPartition> tps = Kit.partitions(topic, 3);
        try (KafkaConsumer<String, String> c = Kit.consumer(group)) {
            c.assign(tps);
            Map<TopicPartition, Long> next = consumeSome(c, 25);
            Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
            next.forEach((tp, o) -> offs.put(tp, new OffsetAndMetadata(o)));
            CompletableFuture<Map<TopicPartition, OffsetAndMetadata>> done = new CompletableFuture<>();
            c.commitAsync(offs, (committed, err) -> {
                if (err != null) done.completeExceptionally(err);
                else done.complete(committed);
            });
            // the callback runs inside poll (or commitSync/close)
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!done.isDone()) {
                assertTrue(System.nanoTime() < deadline, "commitAsync callback never ran");
                c.poll(Duration.ofMillis(50));
            }
            assertEquals(offs, done.get(1, TimeUnit.SECONDS), "offsets in the commitAsync callback");
            Map<TopicPartition, OffsetAndMetadata> got = c.committed(new HashSet<>(next.keySet()));
            next.forEach((tp, o) -> assertEquals(o, got.get(tp).offset(), "committed() after commitAsync, " + tp));
            assertEquals(next, adminCommitted(admin, group), "admin read-back after commitAsync");
            // commitAsync() without offsets commits the consumed positions
            Map<TopicPartition, Long> pos = new HashMap<>();
            for (TopicPartition tp : tps) pos.put(tp, c.position(tp));
            CompletableFuture<Void> done2 = new CompletableFuture<>();
            c.commitAsync((committed, err) -> {
                if (err != null) done2.completeExceptionally(err);
                else done2.complete(null);
            });
            c.commitSync(Map.of());   // flushes pending async commits and runs their callbacks
            done2.get(20, TimeUnit.SECONDS);
            Set<TopicPartition> all = new HashSet<>(tps);
            Map<TopicPartition, OffsetAndMetadata> got2 = c.committed(all);
            for (TopicPartition tp : tps) {
                assertNotNull(got2.get(tp), "committed() for " + tp + " after commitAsync()");
                assertEquals(pos.get(tp), got2.get(tp).offset(), "commitAsync() committed the position of " + tp);
            }
        }
    }
}
