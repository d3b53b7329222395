// The Java client's driver for tests/compat/test_compat_sasl_ssl.py: Apache
// Kafka's kafka-clients (the jars of local-stack/kafka, Kafka 4.4.0) over
// SASL_SSL, configured from a properties file with Kafka's own settings
// (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*).
//
//   java -cp CLASSES:LIBS/* SaslSslClient produce     CLIENT.properties TOPIC        < key<TAB>value lines
//   java -cp CLASSES:LIBS/* SaslSslClient consume     CLIENT.properties TOPIC GROUP COUNT
//   java -cp CLASSES:LIBS/* SaslSslClient bad-produce CLIENT.properties TOPIC
//
// Results go to stdout as tab-separated lines (keys and values hold no tabs):
//   ack  PARTITION OFFSET KEY VALUE     (produce, in send order)
//   rec  PARTITION OFFSET KEY VALUE     (consume, in delivery order)
//   committed PARTITION OFFSET          (consume: what commitSync committed)
//   refused   EXCEPTION-CHAIN MESSAGE   (bad-produce: the send failed)
//   delivered PARTITION OFFSET          (bad-produce: the send succeeded)
//   version   KAFKA-CLIENTS-VERSION
// The clients' own log goes to stderr. Exit code 0 unless the driver itself
// failed (a deadline, an unexpected exception).
import java.io.BufferedReader;
import java.io.FileReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SaslSslClient {
    static final long DEADLINE_MS = 45_000;

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("version")) {
            Properties v = new Properties();
            try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
                if (in != null) v.load(in);
            }
            System.out.println("version\t" + v.getProperty("version", "unknown"));
            return;
        }
        if (args.length < 3) {
            throw new IllegalArgumentException("usage: MODE CLIENT.properties TOPIC [GROUP COUNT]");
        }
        Properties props = new Properties();
        try (FileReader r = new FileReader(args[1], StandardCharsets.UTF_8)) {
            props.load(r);
        }
        switch (args[0]) {
            case "produce" -> produce(props, args[2]);
            case "consume" -> consume(props, args[2], args[3], Integer.parseInt(args[4]));
            case "bad-produce" -> badProduce(props, args[2]);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static KafkaProducer<String, String> producer(Properties base) {
        Properties p = new Properties();
        p.putAll(base);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "strata-compat-java-sasl");
        p.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    // Every stdin line key<TAB>value sent keyed (the default partitioner:
    // murmur2 of the key), then each acknowledgement in send order.
    static void produce(Properties props, String topic) throws Exception {
        List<String[]> lines = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                if (!line.isEmpty()) lines.add(line.split("\t", 2));
            }
        }
        try (KafkaProducer<String, String> p = producer(props)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (String[] kv : lines) acks.add(p.send(new ProducerRecord<>(topic, kv[0], kv[1])));
            p.flush();
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < acks.size(); i++) {
                RecordMetadata md = acks.get(i).get(30, TimeUnit.SECONDS);
                out.append("ack\t").append(md.partition()).append('\t').append(md.offset()).append('\t')
                   .append(lines.get(i)[0]).append('\t').append(lines.get(i)[1]).append('\n');
            }
            System.out.print(out);
        }
    }

    // A group member (subscribe) from the start: reads `count` records,
    // commits exactly what it processed (commitSync), leaves (close).
    static void consume(Properties props, String topic, String group, int count) {
        Properties c = new Properties();
        c.putAll(props);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "strata-compat-java-sasl");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(count));
        c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<String, String> consumer =
                 new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
            int got = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (got < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("group member got " + got + " of " + count + " records in "
                                                    + DEADLINE_MS + " ms");
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    if (got == count) break;   // fetched but not processed: not committed
                    got++;
                    out.append("rec\t").append(r.partition()).append('\t').append(r.offset()).append('\t')
                       .append(r.key()).append('\t').append(r.value()).append('\n');
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
            }
            consumer.commitSync(next, Duration.ofSeconds(30));
            Map<Integer, Long> sorted = new TreeMap<>();
            next.forEach((tp, om) -> sorted.put(tp.partition(), om.offset()));
            sorted.forEach((partition, offset) ->
                out.append("committed\t").append(partition).append('\t').append(offset).append('\n'));
        }
        System.out.print(out);
    }

    // One record with these (wrong) credentials: what the send reports.
    static void badProduce(Properties props, String topic) throws Exception {
        Properties p = new Properties();
        p.putAll(props);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (KafkaProducer<String, String> producer = producer(p)) {
            try {
                RecordMetadata md = producer.send(new ProducerRecord<>(topic, "refused", "refused"))
                                            .get(30, TimeUnit.SECONDS);
                System.out.println("delivered\t" + md.partition() + "\t" + md.offset());
            } catch (ExecutionException | org.apache.kafka.common.KafkaException e) {
                Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                StringBuilder chain = new StringBuilder(t.getClass().getName());
                for (Throwable c = t.getCause(); c != null; c = c.getCause()) {
                    chain.append(" <- ").append(c.getClass().getName());
                }
                System.out.println("refused\t" + chain + "\t" + String.valueOf(t.getMessage()).replace('\t', ' ')
                                   .replace('\n', ' '));
            }
        }
    }
}
