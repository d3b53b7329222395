// Shared helpers of the Java client compatibility suite (tests/compat/java):
// the broker address, client configs, topic creation, polling with a
// deadline, reading a topic back independently, and child JVMs (Child.java)
// that the tests can SIGKILL.
package io.strata.compat;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class Kit {
    private Kit() {}

    /** Session timeout of every group member in the suite (the broker's default minimum). */
    public static final int SESSION_MS = 6000;

    public static String bootstrap() {
        String bs = System.getProperty("strata.bootstrap");
        if (bs == null || bs.isEmpty()) bs = System.getenv("STRATA_BOOTSTRAP");
        if (bs == null || bs.isEmpty()) bs = "127.0.0.1:9092";
        return bs;
    }

    /** The kafka-clients version on the classpath (read from its jar; AppInfoParser moved package in 4.x). */
    public static String clientVersion() {
        try (java.io.InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("kafka-clients version not found", e);
        }
    }

    public static int clientMajor() {
        return Integer.parseInt(clientVersion().split("\\.")[0]);
    }

    /** A topic/group name unique to this run (the broker may be shared when run by hand). */
    public static String name(String base) {
        return base + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    public static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "java-compat-admin");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        return Admin.create(p);
    }

    public static Properties producerProps() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "java-compat-producer");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    public static KafkaProducer<String, String> producer() {
        return new KafkaProducer<>(producerProps());
    }

    public static Properties consumerProps(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-consumer");
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, SESSION_MS);
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return p;
    }

    public static KafkaConsumer<String, String> consumer(String group) {
        return new KafkaConsumer<>(consumerProps(group));
    }

    /** A reader outside any group, for reading back independently. */
    public static KafkaConsumer<byte[], byte[]> rawReader(String isolation) {
        Properties p = consumerProps(null);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-reader");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    public static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) {
        try {
            return f.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) throw (RuntimeException) c;
            throw new RuntimeException(c);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Creates a topic and waits until every partition has a leader in Metadata. */
    public static String createTopic(Admin admin, String name, int partitions, Map<String, String> configs) {
        NewTopic t = new NewTopic(name, partitions, (short) 1);
        if (configs != null) t.configs(configs);
        get(admin.createTopics(List.of(t)).all());
        waitUntil(Duration.ofSeconds(20), () -> "topic " + name + " has " + partitions + " partitions with leaders", () -> {
            try {
                TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
                return d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null);
            } catch (Exception e) {
                return false;
            }
        });
        return name;
    }

    public static String createTopic(Admin admin, String name, int partitions) {
        return createTopic(admin, name, partitions, null);
    }

    public static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < n; i++) tps.add(new TopicPartition(topic, i));
        return tps;
    }

    /** Polls `cond` every 50 ms until it holds; fails with `what` after `timeout`. */
    public static void waitUntil(Duration timeout, Supplier<String> what, BooleanSupplier cond) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) fail("timed out after " + timeout.toMillis() + " ms waiting for: " + what.get());
            sleepQuietly(50);
        }
    }

    static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RuntimeException(e);
        }
    }

    /**
     * Reads the given partitions from the beginning to their end offsets (the last
     * stable offsets under read_committed) at the time of the call, by assignment (no group).
     */
    public static List<ConsumerRecord<byte[], byte[]>> readAll(Collection<TopicPartition> tps, String isolation) {
        try (KafkaConsumer<byte[], byte[]> c = rawReader(isolation)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) if (c.position(tp) < end.get(tp)) done = false;
                if (done) return out;
                if (System.nanoTime() > deadline) {
                    Map<TopicPartition, Long> pos = new HashMap<>();
                    for (TopicPartition tp : tps) pos.put(tp, c.position(tp));
                    fail("reading back timed out: positions " + pos + " end offsets " + end + " after " + out.size() + " records");
                }
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
    }

    public static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    // ------------------------------------------------------------------ child JVMs

    /** A child JVM running Child.main with the test classpath; its stdout lines are collected. */
    public static final class ChildJvm implements AutoCloseable {
        public final Process proc;
        public final String label;
        private final List<String> lines = new ArrayList<>();
        private final Path stderr;

        public ChildJvm(String label, String... args) throws IOException {
            this.label = label;
            String cp = System.getProperty("surefire.test.class.path");
            if (cp == null || cp.isEmpty()) cp = System.getProperty("java.class.path");
            Path dir = Paths.get(System.getProperty("strata.child.logdir", "target")).toAbsolutePath();
            dir.toFile().mkdirs();
            this.stderr = dir.resolve("child-" + label + ".stderr");
            List<String> cmd = new ArrayList<>();
            cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
            cmd.add("-Xmx256m");
            cmd.add("-XX:TieredStopAtLevel=1");
            cmd.add("-Xshare:auto");
            cmd.add("-Dstrata.bootstrap=" + bootstrap());
            cmd.add("-Dorg.slf4j.simpleLogger.logFile=" + dir.resolve("child-" + label + ".log"));
            cmd.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
            cmd.add("-cp");
            cmd.add(cp);
            cmd.add(Child.class.getName());
            for (String a : args) cmd.add(a);
            ProcessBuilder pb = new ProcessBuilder(cmd);
            pb.redirectError(ProcessBuilder.Redirect.appendTo(stderr.toFile()));
            this.proc = pb.start();
            Thread t = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        synchronized (lines) {
                            lines.add(line);
                            lines.notifyAll();
                        }
                    }
                } catch (IOException ignored) {
                    // the process was killed
                }
            }, "child-" + label + "-stdout");
            t.setDaemon(true);
            t.start();
        }

        public List<String> lines() {
            synchronized (lines) {
                return new ArrayList<>(lines);
            }
        }

        /** Waits for a stdout line matching `p`; fails (with the child's stderr tail) if it exits or times out. */
        public String waitForLine(Duration timeout, String what, Predicate<String> p) {
            long deadline = System.nanoTime() + timeout.toNanos();
            int seen = 0;
            while (true) {
                List<String> now = lines();
                for (int i = seen; i < now.size(); i++) if (p.test(now.get(i))) return now.get(i);
                seen = now.size();
                if (!proc.isAlive() && lines().size() == seen) {
                    fail("child " + label + " exited with " + proc.exitValue() + " before: " + what + "\n" + diagnostics());
                }
                if (System.nanoTime() > deadline) fail("timed out waiting for child " + label + ": " + what + "\n" + diagnostics());
                synchronized (lines) {
                    if (lines.size() == seen) {
                        try {
                            lines.wait(100);
                        } catch (InterruptedException e) {
                            throw new RuntimeException(e);
                        }
                    }
                }
            }
        }

        /** SIGKILL (Process.destroyForcibly sends SIGKILL on Unix) and wait for the exit. */
        public void kill9() throws InterruptedException {
            proc.destroyForcibly();
            if (!proc.waitFor(10, TimeUnit.SECONDS)) fail("child " + label + " survived SIGKILL");
        }

        public int waitExit(Duration timeout) throws InterruptedException {
            if (!proc.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                fail("child " + label + " did not finish within " + timeout.toMillis() + " ms\n" + diagnostics());
            }
            return proc.exitValue();
        }

        public String diagnostics() {
            List<String> l = lines();
            String out = String.join("\n", l.subList(Math.max(0, l.size() - 20), l.size()));
            String err = "";
            try {
                err = java.nio.file.Files.readString(stderr);
                if (err.length() > 4000) err = err.substring(err.length() - 4000);
            } catch (IOException ignored) {
                // no stderr
            }
            return "--- child " + label + " stdout tail ---\n" + out + "\n--- stderr tail ---\n" + err;
        }

        @Override
        public void close() throws InterruptedException {
            if (proc.isAlive()) kill9();
        }
    }
}
