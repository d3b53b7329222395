// Child JVM entry point of the Java client compatibility suite: the processes
// the tests SIGKILL (Kit.ChildJvm starts them with the test classpath). Modes:
//   member GROUP TOPIC                      a consumer group member that commits after every poll
//   hang-txn TXID TOPIC                     a transactional producer that begins a txn, sends, and blocks
//   ctp GROUP IN OUT TXID HANG_AT           a consume-transform-produce loop (exactly-once); blocks
//                                           mid-transaction at batch HANG_AT (-1: never) and exits
//                                           after committing everything in IN
// Progress goes to stdout, one line per event, for the parent test to wait on.
package io.strata.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public final class Child {
    private Child() {}

    static void out(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static void blockForever() throws InterruptedException {
        while (true) Thread.sleep(60_000);
    }

    static String tps(Collection<TopicPartition> tps) {
        return tps.stream().map(tp -> Integer.toString(tp.partition())).sorted().collect(Collectors.joining(","));
    }

    public static void main(String[] args) throws Exception {
        try {
            switch (args[0]) {
                case "member": member(args[1], args[2]); break;
                case "hang-txn": hangTxn(args[1], args[2]); break;
                case "ctp": ctp(args[1], args[2], args[3], args[4], Integer.parseInt(args[5])); break;
                default: throw new IllegalArgumentException("unknown mode " + args[0]);
            }
        } catch (Throwable t) {
            out("ERROR " + t);
            t.printStackTrace();
            System.exit(3);
        }
    }

    static void member(String group, String topic) throws Exception {
        Properties p = Kit.consumerProps(group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-child-member");
        p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    out("ASSIGNED " + tps(c.assignment()));
                }
            });
            while (true) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : recs) out("REC " + r.partition() + " " + r.offset() + " " + r.value());
                if (!recs.isEmpty()) {
                    Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                    for (TopicPartition tp : recs.partitions()) {
                        List<ConsumerRecord<String, String>> l = recs.records(tp);
                        offs.put(tp, new OffsetAndMetadata(l.get(l.size() - 1).offset() + 1));
                    }
                    c.commitSync(offs);
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offs.entrySet()) {
                        out("COMMIT " + e.getKey().partition() + " " + e.getValue().offset());
                    }
                }
            }
        }
    }

    static Properties txnProducerProps(String txid) {
        Properties p = Kit.producerProps();
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "java-compat-child-txn");
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid);
        // long enough that the coordinator does not abort it during the test
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 120_000);
        return p;
    }

    static void hangTxn(String txid, String topic) throws Exception {
        KafkaProducer<String, String> pr = new KafkaProducer<>(txnProducerProps(txid));
        pr.initTransactions();
        pr.beginTransaction();
        for (int i = 0; i < 5; i++) pr.send(new ProducerRecord<>(topic, 0, "k" + i, "hanging-" + i)).get();
        pr.flush();
        out("OPEN");
        blockForever();
    }

    static void ctp(String group, String in, String outTopic, String txid, int hangAt) throws Exception {
        Properties cp = Kit.consumerProps(group);
        cp.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-child-ctp");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 25);
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(txnProducerProps(txid));
             KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            pr.initTransactions();
            out("INIT");
            List<TopicPartition> inParts = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(in)) inParts.add(new TopicPartition(in, pi.partition()));
            Map<TopicPartition, Long> end = c.endOffsets(inParts);
            c.subscribe(List.of(in));
            int batch = 0;
            long processed = 0;
            while (true) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                if (!recs.isEmpty()) {
                    batch++;
                    pr.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                    for (ConsumerRecord<String, String> r : recs) {
                        pr.send(new ProducerRecord<>(outTopic, r.key(), "T(" + r.value() + ")"));
                        offs.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    pr.sendOffsetsToTransaction(offs, c.groupMetadata());
                    if (batch == hangAt) {
                        pr.flush();
                        out("HANG " + batch + " " + recs.count());
                        blockForever();
                    }
                    pr.commitTransaction();
                    processed += recs.count();
                    out("COMMITTED " + batch + " " + processed);
                }
                if (c.assignment().size() == inParts.size()) {
                    boolean done = true;
                    for (TopicPartition tp : inParts) if (c.position(tp) < end.get(tp)) done = false;
                    if (done) {
                        out("DONE " + processed);
                        return;
                    }
                }
            }
        }
    }
}
