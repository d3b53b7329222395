// Transaction tests of the Java client compatibility suite: commit/abort
// visibility under read_committed, and an exactly-once consume-transform-
// produce loop (sendOffsetsToTransaction with consumer.groupMetadata())
// running as a child JVM (Child.java "ctp") that is SIGKILLed mid-transaction
// and restarted with the same transactional.id: every input's transformed
// record is read exactly once under read_committed.
package io.strata.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TransactionsTest {
    Admin admin;

    @BeforeAll
    void setUp() {
        admin = Kit.admin();
    }

    @AfterAll
    void tearDown() {
        admin.close();
    }

    @Test
    void commitAndAbortVisibility() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-txn"), 2);
        Properties p = Kit.producerProps();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, Kit.name("java-txn"));
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            pr.initTransactions();
            pr.beginTransaction();
            for (int i = 0; i < 10; i++) pr.send(new ProducerRecord<>(topic, i % 2, "k", "committed-" + i));
            pr.commitTransaction();
            pr.beginTransaction();
            for (int i = 0; i < 10; i++) pr.send(new ProducerRecord<>(topic, i % 2, "k", "aborted-" + i));
            pr.flush();
            pr.abortTransaction();
            pr.beginTransaction();
            for (int i = 10; i < 14; i++) pr.send(new ProducerRecord<>(topic, i % 2, "k", "committed-" + i));
            pr.commitTransaction();
        }
        List<TopicPartition> tps = Kit.partitions(topic, 2);
        List<String> committed = Kit.readAll(tps, "read_committed").stream().map(r -> Kit.str(r.value())).sorted().collect(Collectors.toList());
        List<String> want = new java.util.ArrayList<>();
        for (int i = 0; i < 14; i++) want.add("committed-" + i);
        want.sort(null);
        assertEquals(want, committed, "read_committed sees the committed transactions only");
        long aborted = Kit.readAll(tps, "read_uncommitted").stream().filter(r -> Kit.str(r.value()).startsWith("aborted-")).count();
        assertEquals(10, aborted, "read_uncommitted sees the aborted records too");
    }

    @Test
    void consumeTransformProduceKilled() throws Exception {
        final int n = 300;
        String in = Kit.createTopic(admin, Kit.name("java-ctp-in"), 3);
        String out = Kit.createTopic(admin, Kit.name("java-ctp-out"), 3);
        String group = Kit.name("java-ctp");
        String txid = Kit.name("java-ctp-txn");
        try (KafkaProducer<String, String> pr = Kit.producer()) {
            for (int i = 0; i < n; i++) pr.send(new ProducerRecord<>(in, i % 3, "k" + i, "in-" + i));
            pr.flush();
        }
        int hungBatch;
        try (Kit.ChildJvm first = new Kit.ChildJvm("ctp-1", "ctp", group, in, out, txid, "4")) {
            String line = first.waitForLine(Duration.ofSeconds(60), "the loop hanging mid-transaction at batch 4", l -> l.startsWith("HANG "));
            hungBatch = Integer.parseInt(line.split(" ")[2]);
            assertTrue(first.lines().stream().filter(l -> l.startsWith("COMMITTED ")).count() == 3, "three batches committed before the hang");
            first.kill9();   // SIGKILL with records and offsets sent in an open transaction
        }
        try (Kit.ChildJvm second = new Kit.ChildJvm("ctp-2", "ctp", group, in, out, txid, "-1")) {
            second.waitForLine(Duration.ofSeconds(90), "the restarted loop finishing the input", l -> l.startsWith("DONE "));
            assertEquals(0, second.waitExit(Duration.ofSeconds(30)), "restarted loop exit code\n" + second.diagnostics());
        }
        List<TopicPartition> outParts = Kit.partitions(out, 3);
        List<ConsumerRecord<byte[], byte[]>> got = Kit.readAll(outParts, "read_committed");
        Map<String, Integer> count = new TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> r : got) count.merge(Kit.str(r.value()), 1, Integer::sum);
        Map<String, Integer> dup = count.entrySet().stream().filter(e -> e.getValue() != 1)
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        assertTrue(dup.isEmpty(), "outputs read more than once under read_committed: " + dup);
        for (int i = 0; i < n; i++) assertTrue(count.containsKey("T(in-" + i + ")"), "output of in-" + i + " missing");
        assertEquals(n, got.size(), "exactly one output per input under read_committed");
        long all = Kit.readAll(outParts, "read_uncommitted").size();
        assertTrue(all >= n + 1, "the killed transaction's " + hungBatch + " records stay in the log as aborted (read_uncommitted sees "
                + all + ")");
        Map<TopicPartition, Long> committed = new HashMap<>();
        Kit.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).forEach((tp, om) -> committed.put(tp, om.offset()));
        Map<TopicPartition, Long> want = new HashMap<>();
        for (TopicPartition tp : Kit.partitions(in, 3)) want.put(tp, (long) n / 3);
        assertEquals(want, committed, "group offsets committed through the transactions");
    }

    /**
     * A second producer with the same transactional.id fences the first: the first's
     * commit fails with ProducerFencedException and its records stay invisible to
     * read_committed; the second's transaction commits.
     */
    @Test
    void transactionalFencing() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-fence"), 1);
        String txid = Kit.name("java-fence");
        Properties p = Kit.producerProps();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid);
        KafkaProducer<String, String> zombie = new KafkaProducer<>(p);
        try {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, 0, "k", "zombie")).get();
            try (KafkaProducer<String, String> fresh = new KafkaProducer<>(p)) {
                fresh.initTransactions();   // bumps the epoch, aborts the zombie's open transaction
                org.apache.kafka.common.KafkaException e = org.junit.jupiter.api.Assertions.assertThrows(
                        org.apache.kafka.common.KafkaException.class, zombie::commitTransaction, "the fenced producer's commit");
                Throwable c = e instanceof org.apache.kafka.common.errors.ProducerFencedException ? e : e.getCause();
                org.junit.jupiter.api.Assertions.assertInstanceOf(org.apache.kafka.common.errors.ProducerFencedException.class, c,
                        "Kafka fences the older epoch: " + e);
                fresh.beginTransaction();
                fresh.send(new ProducerRecord<>(topic, 0, "k", "fresh"));
                fresh.commitTransaction();
            }
        } finally {
            zombie.close(Duration.ZERO);
        }
        List<String> got = Kit.readAll(List.of(new TopicPartition(topic, 0)), "read_committed").stream()
                .map(r -> Kit.str(r.value())).collect(Collectors.toList());
        assertEquals(List.of("fresh"), got, "read_committed after the fencing");
    }
}
