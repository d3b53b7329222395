// Producer tests of the Java client compatibility suite: idempotent acks=all
// producing with every codec, headers, explicit timestamps and the default
// partitioner for keyed records; everything read back by an independent
// reader (assign, no group) and compared field by field.
package io.strata.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ProducerTest {
    static final int PARTITIONS = 7;   // not a power of two: a wrong modulus shows
    static final int RECORDS = 200;
    Admin admin;

    @BeforeAll
    void setUp() {
        admin = Kit.admin();
    }

    @AfterAll
    void tearDown() {
        admin.close();
    }

    static int expectedPartition(String key) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % PARTITIONS;
    }

    /** Produces RECORDS keyed records with headers and CreateTime timestamps, reads them back, compares. */
    void produceAndVerify(String codec) throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-produce-" + codec), PARTITIONS);
        Properties p = Kit.producerProps();
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        long base = System.currentTimeMillis() - 3_600_000L;   // an hour ago: not the broker's clock
        List<ProducerRecord<String, String>> sent = new ArrayList<>();
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            for (int i = 0; i < RECORDS; i++) {
                String key = "key-" + (i % 37);
                String value = codec + "-value-" + i + "-" + "x".repeat(i % 50);   // compressible
                List<Header> headers = List.of(
                        new RecordHeader("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8)),
                        new RecordHeader("codec", codec.getBytes(StandardCharsets.UTF_8)),
                        new RecordHeader("empty", new byte[0]));
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, null, base + i * 10L, key, value, headers);
                sent.add(r);
                acks.add(pr.send(r));
            }
            pr.flush();
        }
        Map<String, ProducerRecord<String, String>> byPosition = new HashMap<>();
        Map<Integer, Long> lastOffset = new HashMap<>();
        for (int i = 0; i < RECORDS; i++) {
            RecordMetadata md = acks.get(i).get(30, TimeUnit.SECONDS);
            ProducerRecord<String, String> r = sent.get(i);
            assertEquals(expectedPartition(r.key()), md.partition(),
                    "record " + i + " key " + r.key() + ": default partitioner must use murmur2(key) % partitions");
            assertEquals(r.timestamp().longValue(), md.timestamp(), "acknowledged timestamp of record " + i + " (CreateTime)");
            Long prev = lastOffset.put(md.partition(), md.offset());
            assertTrue(prev == null || md.offset() > prev, "offsets in send order within partition " + md.partition());
            byPosition.put(md.partition() + "@" + md.offset(), r);
        }
        List<ConsumerRecord<byte[], byte[]>> got = Kit.readAll(Kit.partitions(topic, PARTITIONS), "read_uncommitted");
        assertEquals(RECORDS, got.size(), "records read back");
        for (ConsumerRecord<byte[], byte[]> c : got) {
            ProducerRecord<String, String> r = byPosition.get(c.partition() + "@" + c.offset());
            assertNotNull(r, "read back a record no ack pointed at: " + c.partition() + "@" + c.offset());
            assertEquals(r.key(), Kit.str(c.key()), "key at " + c.partition() + "@" + c.offset());
            assertEquals(r.value(), Kit.str(c.value()), "value at " + c.partition() + "@" + c.offset());
            assertEquals(r.timestamp().longValue(), c.timestamp(), "timestamp at " + c.partition() + "@" + c.offset());
            assertEquals(TimestampType.CREATE_TIME, c.timestampType(), "timestamp type");
            Header[] want = r.headers().toArray();
            Header[] have = c.headers().toArray();
            assertEquals(want.length, have.length, "header count at " + c.partition() + "@" + c.offset());
            for (int h = 0; h < want.length; h++) {
                assertEquals(want[h].key(), have[h].key(), "header key");
                assertArrayEquals(want[h].value(), have[h].value(), "header " + want[h].key() + " value");
            }
            assertEquals(expectedPartition(r.key()), c.partition(), "stored in the key's partition");
        }
    }

    @Test
    void produceNone() throws Exception {
        produceAndVerify("none");
    }

    @Test
    void produceGzip() throws Exception {
        produceAndVerify("gzip");
    }

    @Test
    void produceSnappy() throws Exception {
        produceAndVerify("snappy");
    }

    @Test
    void produceLz4() throws Exception {
        produceAndVerify("lz4");
    }

    @Test
    void produceZstd() throws Exception {
        produceAndVerify("zstd");
    }

    /**
     * The idempotent producer's state as the broker keeps it (DescribeProducers):
     * one producer id on the partition with last sequence = records - 1, and
     * a second producer instance gets a different producer id.
     */
    @Test
    void idempotentProducerState() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-idempotent"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        for (int round = 0; round < 2; round++) {
            try (KafkaProducer<String, String> pr = Kit.producer()) {
                for (int i = 0; i < 30; i++) pr.send(new ProducerRecord<>(topic, 0, "k", "v" + i));
                pr.flush();
            }
        }
        List<ProducerState> ps = Kit.get(admin.describeProducers(List.of(tp)).partitionResult(tp)).activeProducers();
        assertEquals(2, ps.size(), "two idempotent producers on the partition: " + ps);
        assertTrue(ps.get(0).producerId() != ps.get(1).producerId(), "distinct producer ids: " + ps);
        for (ProducerState s : ps) {
            assertTrue(s.producerId() >= 0, "producer id " + s);
            assertEquals(29, s.lastSequence(), "last sequence after 30 records: " + s);
            assertTrue(s.currentTransactionStartOffset().isEmpty(), "not transactional: " + s);
        }
        assertEquals(60, Kit.readAll(List.of(tp), "read_uncommitted").size(), "records stored exactly once");
    }

    /** A record above the topic's max.message.bytes is refused by the broker: RecordTooLargeException (MESSAGE_TOO_LARGE). */
    @Test
    void recordTooLarge() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-too-large"), 1, Map.of("max.message.bytes", "10000"));
        Properties p = Kit.producerProps();
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 1_000_000);   // the client lets it through; the broker must refuse
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
                    java.util.concurrent.ExecutionException.class,
                    () -> pr.send(new ProducerRecord<>(topic, 0, "k", "x".repeat(20_000))).get(30, TimeUnit.SECONDS),
                    "a 20 kB record on a topic with max.message.bytes=10000");
            org.junit.jupiter.api.Assertions.assertInstanceOf(org.apache.kafka.common.errors.RecordTooLargeException.class, e.getCause(),
                    "Kafka answers MESSAGE_TOO_LARGE");
            RecordMetadata ok = pr.send(new ProducerRecord<>(topic, 0, "k", "x".repeat(5_000))).get(30, TimeUnit.SECONDS);
            assertEquals(0, ok.offset(), "a record within the limit is stored at offset 0 (nothing of the refused one was)");
        }
        assertEquals(1, Kit.readAll(List.of(new TopicPartition(topic, 0)), "read_uncommitted").size(), "records stored");
    }
}
