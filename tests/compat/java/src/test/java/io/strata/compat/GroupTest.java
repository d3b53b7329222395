// Consumer group tests of the Java client compatibility suite: a group of
// three with CooperativeStickyAssignor, a member that leaves (close), a
// member that dies (child JVM, SIGKILL; survivors take over after the
// session timeout), and static membership (group.instance.id: a member that
// restarts within the session timeout gets its partitions back without a
// rebalance of the others). Every member commits synchronously after each
// poll; every test checks that nothing was lost and nothing committed was
// delivered twice.
package io.strata.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GroupTest {
    static final int PARTITIONS = 6;
    static final Duration WAIT = Duration.ofSeconds(30);
    Admin admin;

    @BeforeAll
    void setUp() {
        admin = Kit.admin();
    }

    @AfterAll
    void tearDown() {
        admin.close();
    }

    /** One consumed record: partition, offset, which member. */
    record Got(int partition, long offset, String member) {}

    /** A group member polling in its own thread, committing synchronously after every poll. */
    static final class Member implements AutoCloseable {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final ConcurrentLinkedQueue<Got> got;
        final AtomicReference<Set<Integer>> assignment = new AtomicReference<>(Set.of());
        final AtomicInteger assignedCalls = new AtomicInteger();
        final AtomicInteger lostCalls = new AtomicInteger();
        final AtomicInteger generation = new AtomicInteger(-1);
        final AtomicLong polls = new AtomicLong();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        volatile boolean stop;
        final Thread thread;

        Member(String name, String group, String topic, String instanceId, ConcurrentLinkedQueue<Got> got) {
            this.name = name;
            this.got = got;
            Properties p = Kit.consumerProps(group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-member-" + name);
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
            if (instanceId != null) p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
            consumer = new KafkaConsumer<>(p);
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    assignedCalls.incrementAndGet();
                    assignment.set(consumer.assignment().stream().map(TopicPartition::partition).collect(Collectors.toSet()));
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> parts) {
                    lostCalls.incrementAndGet();
                }
            });
            thread = new Thread(this::loop, "member-" + name);
            thread.start();
        }

        void loop() {
            try {
                while (!stop) {
                    ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(100));
                    Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                    for (ConsumerRecord<String, String> r : recs) {
                        got.add(new Got(r.partition(), r.offset(), name));
                        offs.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    if (!offs.isEmpty()) consumer.commitSync(offs);
                    assignment.set(consumer.assignment().stream().map(TopicPartition::partition).collect(Collectors.toSet()));
                    generation.set(consumer.groupMetadata().generationId());
                    polls.incrementAndGet();
                }
            } catch (Throwable t) {
                error.set(t);
            }
        }

        Set<Integer> assigned() {
            return assignment.get();
        }

        void check() {
            if (error.get() != null) throw new AssertionError("member " + name + " failed: " + error.get(), error.get());
        }

        /** Waits until this member completed a poll that started after now. */
        void waitPolls(int n) {
            long target = polls.get() + n;
            Kit.waitUntil(WAIT, () -> "member " + name + " polling", () -> {
                check();
                return polls.get() >= target;
            });
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            thread.join(WAIT.toMillis());
            consumer.close(Duration.ofSeconds(10));
            check();
        }
    }

    static void produce(String topic, int from, int count) throws Exception {
        try (KafkaProducer<String, String> pr = Kit.producer()) {
            for (int i = from; i < from + count; i++) pr.send(new ProducerRecord<>(topic, i % PARTITIONS, "k" + i, "v" + i));
            pr.flush();
        }
    }

    /** Every (partition, offset) consumed at most once and, with `complete`, every offset below `end` consumed. */
    static void assertExactlyOnce(Collection<Got> got, Map<Integer, Long> end) {
        Map<String, List<Got>> byPos = new HashMap<>();
        for (Got g : got) byPos.computeIfAbsent(g.partition + "@" + g.offset, k -> new ArrayList<>()).add(g);
        List<String> dup = byPos.entrySet().stream().filter(e -> e.getValue().size() > 1)
                .map(e -> e.getKey() + " by " + e.getValue().stream().map(Got::member).collect(Collectors.toList()))
                .sorted().limit(10).collect(Collectors.toList());
        assertTrue(dup.isEmpty(), "records delivered twice although every member commits after each poll: " + dup);
        List<String> missing = new ArrayList<>();
        end.forEach((p, e) -> {
            for (long o = 0; o < e; o++) if (!byPos.containsKey(p + "@" + o)) missing.add(p + "@" + o);
        });
        assertTrue(missing.isEmpty(), "records never delivered: " + missing.size() + ", first " + missing.subList(0, Math.min(10, missing.size())));
    }

    static Map<Integer, Long> endOffsets(String topic, long perPartition) {
        Map<Integer, Long> m = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) m.put(p, perPartition);
        return m;
    }

    void waitConsumed(ConcurrentLinkedQueue<Got> got, int n, List<Member> members) {
        Kit.waitUntil(WAIT, () -> "members consumed " + n + " records (have " + got.size() + ")", () -> {
            members.forEach(Member::check);
            return got.size() >= n;
        });
    }

    /** Waits until the members' assignments are disjoint, cover every partition, and each has `each`. */
    void waitBalanced(List<Member> members, int each) {
        Kit.waitUntil(WAIT, () -> "balanced assignment, " + each + " partitions each: "
                + members.stream().map(m -> m.name + "=" + new TreeSet<>(m.assigned())).collect(Collectors.joining(" ")), () -> {
            members.forEach(Member::check);
            Set<Integer> all = new HashSet<>();
            int total = 0;
            for (Member m : members) {
                if (m.assigned().size() != each) return false;
                all.addAll(m.assigned());
                total += m.assigned().size();
            }
            return all.size() == PARTITIONS && total == PARTITIONS;
        });
    }

    Map<TopicPartition, Long> committed(String group) {
        Map<TopicPartition, Long> out = new HashMap<>();
        Kit.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).forEach((tp, om) -> out.put(tp, om.offset()));
        return out;
    }

    void waitCommittedEnd(String group, String topic, long perPartition) {
        Map<TopicPartition, Long> want = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) want.put(new TopicPartition(topic, p), perPartition);
        Kit.waitUntil(WAIT, () -> "group " + group + " committed " + want + ", has " + committed(group), () -> want.equals(committed(group)));
    }

    @SuppressWarnings("deprecation")   // ConsumerGroupDescription.state(): the one accessor both 3.9 and 4.x have
    ConsumerGroupDescription describe(String group) {
        return Kit.get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
    }

    @Test
    @SuppressWarnings("deprecation")
    void cooperativeStickyGroupOfThree() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-coop"), PARTITIONS);
        String group = Kit.name("java-coop");
        produce(topic, 0, 300);
        ConcurrentLinkedQueue<Got> got = new ConcurrentLinkedQueue<>();
        try (Member a = new Member("a", group, topic, null, got)) {
            waitBalanced(List.of(a), 6);
            try (Member b = new Member("b", group, topic, null, got)) {
                waitBalanced(List.of(a, b), 3);
                Set<Integer> aBefore = new HashSet<>(a.assigned());
                Set<Integer> bBefore = new HashSet<>(b.assigned());
                try (Member c = new Member("c", group, topic, null, got)) {
                    List<Member> all = List.of(a, b, c);
                    waitBalanced(all, 2);
                    // sticky: the third member's partitions come from the others; nobody gets a partition it lacked
                    assertTrue(aBefore.containsAll(a.assigned()), "a kept a subset of its partitions: " + aBefore + " -> " + a.assigned());
                    assertTrue(bBefore.containsAll(b.assigned()), "b kept a subset of its partitions: " + bBefore + " -> " + b.assigned());
                    waitConsumed(got, 300, all);
                    produce(topic, 300, 120);
                    waitConsumed(got, 420, all);
                    waitCommittedEnd(group, topic, 70);
                    ConsumerGroupDescription d = describe(group);
                    assertEquals(ConsumerGroupState.STABLE, d.state(), "group state");
                    assertEquals("cooperative-sticky", d.partitionAssignor(), "partition assignor");
                    assertEquals(3, d.members().size(), "members");
                    Set<Set<Integer>> described = new HashSet<>();
                    for (MemberDescription m : d.members()) {
                        described.add(m.assignment().topicPartitions().stream().map(TopicPartition::partition).collect(Collectors.toSet()));
                    }
                    assertEquals(Set.of(a.assigned(), b.assigned(), c.assigned()), described, "assignments described by the broker");
                    for (Member m : all) assertEquals(0, m.lostCalls.get(), "onPartitionsLost of " + m.name);
                    // each record went to the member owning its partition at the end
                    for (Got g : got) {
                        if (g.offset >= 50) {
                            Member owner = all.stream().filter(m -> m.assigned().contains(g.partition)).findFirst().orElseThrow();
                            assertEquals(owner.name, g.member, "late record " + g.partition + "@" + g.offset + " consumed by its owner");
                        }
                    }
                }
            }
        }
        assertExactlyOnce(got, endOffsets(topic, 70));
    }

    @Test
    void memberLeaves() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-leave"), PARTITIONS);
        String group = Kit.name("java-leave");
        ConcurrentLinkedQueue<Got> got = new ConcurrentLinkedQueue<>();
        try (Member a = new Member("a", group, topic, null, got);
             Member b = new Member("b", group, topic, null, got)) {
            Member c = new Member("c", group, topic, null, got);
            waitBalanced(List.of(a, b, c), 2);
            produce(topic, 0, 120);
            waitConsumed(got, 120, List.of(a, b, c));
            waitCommittedEnd(group, topic, 20);
            assertEquals(40, got.stream().filter(g -> g.member.equals("c")).count(), "records consumed by c before it left");
            Set<Integer> cHad = new HashSet<>(c.assigned());
            c.close();   // LeaveGroup: the others rebalance at once, no session timeout
            long t0 = System.nanoTime();
            waitBalanced(List.of(a, b), 3);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < Kit.SESSION_MS, "partitions of the member that left moved in " + ms + " ms; a LeaveGroup must not wait for the session timeout");
            Set<Integer> ab = new HashSet<>(a.assigned());
            ab.addAll(b.assigned());
            assertTrue(ab.containsAll(cHad), "c's partitions " + cHad + " moved to a and b");
            produce(topic, 120, 120);
            waitConsumed(got, 240, List.of(a, b));
            assertEquals(2, describe(group).members().size(), "members after one left");
            waitCommittedEnd(group, topic, 40);
        }
        assertExactlyOnce(got, endOffsets(topic, 40));
        for (Got g : got) {
            if (g.offset >= 20) assertTrue(!g.member.equals("c"), "record after the leave consumed by the closed member: " + g);
        }
    }

    @Test
    void memberKilled() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-kill"), PARTITIONS);
        String group = Kit.name("java-kill");
        ConcurrentLinkedQueue<Got> got = new ConcurrentLinkedQueue<>();
        try (Member a = new Member("a", group, topic, null, got);
             Member b = new Member("b", group, topic, null, got);
             Kit.ChildJvm child = new Kit.ChildJvm("member-kill", "member", group, topic)) {
            Kit.waitUntil(WAIT, () -> "child member in the group with 2 partitions, a=" + a.assigned() + " b=" + b.assigned()
                    + "\n" + child.diagnostics(), () -> {
                a.check();
                b.check();
                List<String> l = child.lines();
                String last = null;
                for (String s : l) if (s.startsWith("ASSIGNED ")) last = s;
                return last != null && last.substring(9).split(",").length == 2 && a.assigned().size() == 2 && b.assigned().size() == 2;
            });
            Set<Integer> childParts = new HashSet<>(PARTITIONS);
            for (int p = 0; p < PARTITIONS; p++) childParts.add(p);
            childParts.removeAll(a.assigned());
            childParts.removeAll(b.assigned());
            assertEquals(2, childParts.size(), "the child owns the two partitions a and b lack");
            produce(topic, 0, 120);
            waitCommittedEnd(group, topic, 20);   // everything so far processed and committed, by all three
            for (String s : child.lines()) {
                if (s.startsWith("REC ")) {
                    String[] f = s.split(" ");
                    got.add(new Got(Integer.parseInt(f[1]), Long.parseLong(f[2]), "child"));
                }
            }
            assertEquals(40, got.stream().filter(g -> g.member.equals("child")).count(), "records consumed by the child before the kill");
            child.kill9();
            long t0 = System.nanoTime();
            int mark = got.size();
            Map<TopicPartition, Long> committedAtKill = committed(group);
            produce(topic, 120, 120);
            // the survivors get the dead member's partitions once its session expires
            waitBalanced(List.of(a, b), 3);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            waitConsumed(got, 240, List.of(a, b));
            waitCommittedEnd(group, topic, 40);
            // the dead member's partitions resume exactly at its committed offsets
            List<Got> after = got.stream().skip(mark).collect(Collectors.toList());
            for (int p : childParts) {
                long first = after.stream().filter(g -> g.partition == p).mapToLong(Got::offset).min().orElse(-1);
                assertEquals(committedAtKill.get(new TopicPartition(topic, p)).longValue(), first,
                        "survivors resume partition " + p + " at the dead member's committed offset");
            }
            assertEquals(2, describe(group).members().size(), "members after the kill (partitions moved after " + ms + " ms)");
        }
        assertExactlyOnce(got, endOffsets(topic, 40));
    }

    @Test
    void staticMemberRestart() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-static"), PARTITIONS);
        String group = Kit.name("java-static");
        ConcurrentLinkedQueue<Got> got = new ConcurrentLinkedQueue<>();
        try (Member a = new Member("a", group, topic, "static-a", got);
             Member b = new Member("b", group, topic, "static-b", got)) {
            Member c = new Member("c", group, topic, "static-c", got);
            waitBalanced(List.of(a, b, c), 2);
            produce(topic, 0, 120);
            waitConsumed(got, 120, List.of(a, b, c));
            waitCommittedEnd(group, topic, 20);
            a.waitPolls(2);
            b.waitPolls(2);
            int genA = a.generation.get(), genB = b.generation.get();
            int callsA = a.assignedCalls.get(), callsB = b.assignedCalls.get();
            Set<Integer> cHad = new HashSet<>(c.assigned());
            Set<Integer> aHad = new HashSet<>(a.assigned()), bHad = new HashSet<>(b.assigned());
            c.close();   // a static member sends no LeaveGroup: the group keeps its partitions for the session timeout
            long t0 = System.nanoTime();
            try (Member c2 = new Member("c2", group, topic, "static-c", got)) {
                Kit.waitUntil(WAIT, () -> "restarted static member assigned " + cHad + ", has " + c2.assigned(),
                        () -> {
                            c2.check();
                            return c2.assigned().equals(cHad);
                        });
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms < Kit.SESSION_MS, "restarted static member got its partitions back in " + ms + " ms, within the session timeout");
                // several heartbeat intervals of the others (500 ms each) pass, then nothing may have changed for them
                produce(topic, 120, 120);
                waitConsumed(got, 240, List.of(a, b, c2));
                long until = System.nanoTime() + 4 * 500_000_000L;
                Kit.waitUntil(WAIT, () -> "four heartbeat intervals", () -> System.nanoTime() > until);
                a.waitPolls(1);
                b.waitPolls(1);
                assertEquals(genA, a.generation.get(), "generation of a: a static member's restart must not rebalance the others");
                assertEquals(genB, b.generation.get(), "generation of b: a static member's restart must not rebalance the others");
                assertEquals(callsA, a.assignedCalls.get(), "rebalances seen by a");
                assertEquals(callsB, b.assignedCalls.get(), "rebalances seen by b");
                assertEquals(aHad, a.assigned(), "a's partitions unchanged");
                assertEquals(bHad, b.assigned(), "b's partitions unchanged");
                ConsumerGroupDescription d = describe(group);
                Set<String> ids = d.members().stream().map(m -> m.groupInstanceId().orElse("<none>")).collect(Collectors.toSet());
                assertEquals(Set.of("static-a", "static-b", "static-c"), ids, "group.instance.ids described");
                waitCommittedEnd(group, topic, 40);
            }
        }
        assertExactlyOnce(got, endOffsets(topic, 40));
        if (got.stream().noneMatch(g -> g.member.equals("c2"))) fail("the restarted static member consumed nothing");
    }
}
