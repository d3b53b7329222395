// Transaction admin API tests of the Java client compatibility suite, on a
// hanging transaction: a child JVM producer begins a transaction, sends to
// a partition and is SIGKILLed (Child.java "hang-txn"). describeProducers,
// describeTransactions and listTransactions see it open; abortTransaction
// (WriteTxnMarkers from the admin client) ends it on the partition, after
// which the last stable offset reaches the high watermark. Ordered: the
// abort runs last.
package io.strata.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class AdminTransactionsTest {
    Admin admin;
    String topic;
    TopicPartition tp;
    String txid;

    @BeforeAll
    void setUp() throws Exception {
        admin = Kit.admin();
        topic = Kit.createTopic(admin, Kit.name("java-hanging"), 1);
        tp = new TopicPartition(topic, 0);
        txid = Kit.name("java-hanging-txn");
        try (Kit.ChildJvm child = new Kit.ChildJvm("hang-txn", "hang-txn", txid, topic)) {
            child.waitForLine(Duration.ofSeconds(40), "transaction open", l -> l.equals("OPEN"));
            child.kill9();
        }
    }

    @AfterAll
    void tearDown() {
        admin.close();
    }

    ProducerState openProducer() {
        List<ProducerState> ps = Kit.get(admin.describeProducers(List.of(tp)).partitionResult(tp)).activeProducers();
        assertEquals(1, ps.size(), "one producer on " + tp + ": " + ps);
        return ps.get(0);
    }

    long lastStableOffset() {
        try (KafkaConsumer<byte[], byte[]> c = Kit.rawReader("read_committed")) {
            return c.endOffsets(List.of(tp)).get(tp);
        }
    }

    @Test
    @Order(1)
    void describeProducers() {
        ProducerState p = openProducer();
        assertTrue(p.producerId() >= 0, "producer id " + p);
        assertTrue(p.producerEpoch() >= 0, "producer epoch " + p);
        assertEquals(4, p.lastSequence(), "last sequence after 5 records " + p);
        assertEquals(java.util.OptionalLong.of(0), p.currentTransactionStartOffset(), "open transaction starts at offset 0: " + p);
        assertEquals(0, lastStableOffset(), "last stable offset held at the open transaction's start");
    }

    @Test
    @Order(2)
    void describeTransactions() {
        TransactionDescription d = Kit.get(admin.describeTransactions(List.of(txid)).description(txid));
        assertEquals(TransactionState.ONGOING, d.state(), "state of the killed producer's transaction");
        assertEquals(Set.of(tp), d.topicPartitions(), "partitions in the transaction");
        assertEquals(120_000, d.transactionTimeoutMs(), "transaction timeout");
        assertEquals(openProducer().producerId(), d.producerId(), "producer id matches describeProducers");
        assertEquals(openProducer().producerEpoch(), d.producerEpoch(), "producer epoch matches describeProducers");
        assertTrue(d.transactionStartTimeMs().isPresent(), "transaction start time");
    }

    @Test
    @Order(3)
    void listTransactions() {
        Collection<TransactionListing> all = Kit.get(admin.listTransactions().all());
        TransactionListing l = all.stream().filter(t -> t.transactionalId().equals(txid)).findFirst()
                .orElseThrow(() -> new AssertionError(txid + " not in listTransactions(): " + all));
        assertEquals(TransactionState.ONGOING, l.state(), "listed state");
        assertEquals(openProducer().producerId(), l.producerId(), "listed producer id");
        Collection<TransactionListing> ongoing = Kit.get(admin.listTransactions(
                new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING))).all());
        assertTrue(ongoing.stream().anyMatch(t -> t.transactionalId().equals(txid)), "listed with state filter ONGOING");
        Collection<TransactionListing> committing = Kit.get(admin.listTransactions(
                new ListTransactionsOptions().filterStates(List.of(TransactionState.PREPARE_COMMIT))).all());
        assertFalse(committing.stream().anyMatch(t -> t.transactionalId().equals(txid)), "not listed with state filter PREPARE_COMMIT");
        Collection<TransactionListing> byPid = Kit.get(admin.listTransactions(
                new ListTransactionsOptions().filterProducerIds(List.of(l.producerId()))).all());
        assertEquals(List.of(txid), byPid.stream().map(TransactionListing::transactionalId).toList(), "filter by producer id");
    }

    @Test
    @Order(4)
    void abortTransaction() {
        ProducerState p = openProducer();
        Kit.get(admin.abortTransaction(new AbortTransactionSpec(tp, p.producerId(), (short) p.producerEpoch(),
                p.coordinatorEpoch().orElse(0))).all());   // -1 (none yet) -> 0, as kafka-transactions.sh does
        Kit.waitUntil(Duration.ofSeconds(20), () -> "open transaction gone from describeProducers: " + openProducer(),
                () -> openProducer().currentTransactionStartOffset().isEmpty());
        // 5 records + the abort marker; the last stable offset reaches the high watermark
        assertEquals(6, lastStableOffset(), "last stable offset after the abort");
        assertEquals(0, Kit.readAll(List.of(tp), "read_committed").size(), "aborted records invisible to read_committed");
        assertEquals(5, Kit.readAll(List.of(tp), "read_uncommitted").size(), "aborted records still in the log (read_uncommitted)");
    }
}
