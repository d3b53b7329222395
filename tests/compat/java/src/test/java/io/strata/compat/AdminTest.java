// Admin client tests of the Java client compatibility suite: topics
// (create/list/describe/delete, createPartitions), configs (describe,
// incremental alter incl. local.retention.ms, legacy alter on 3.x),
// describeCluster, consumer groups (list/describe/delete, offsets list/alter/
// delete, removeMembersFromConsumerGroup), listOffsets, deleteRecords, partition reassignments and leader election on a
// single broker. Expected answers are Apache Kafka's (error classes named in
// each assertion). Transactions admin APIs: AdminTransactionsTest.
package io.strata.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsResult;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdminTest {
    Admin admin;
    Node node;

    @BeforeAll
    void setUp() {
        admin = Kit.admin();
        Collection<Node> nodes = Kit.get(admin.describeCluster().nodes());
        node = nodes.iterator().next();
    }

    @AfterAll
    void tearDown() {
        admin.close();
    }

    /** The cause of a failed admin future, asserted to be of type `want`. */
    static <T extends Throwable> T failsWith(Class<T> want, org.apache.kafka.common.KafkaFuture<?> f, String what) {
        RuntimeException e = assertThrows(RuntimeException.class, () -> Kit.get(f), what + ": expected " + want.getSimpleName());
        Throwable c = e;
        if (!want.isInstance(c) && c.getCause() != null) c = c.getCause();
        assertInstanceOf(want, c, what + ": Kafka answers " + want.getSimpleName() + ", got " + e);
        return want.cast(c);
    }

    void produce(String topic, int partition, int n) throws Exception {
        try (KafkaProducer<String, String> pr = Kit.producer()) {
            for (int i = 0; i < n; i++) pr.send(new ProducerRecord<>(topic, partition, "k" + i, "v" + i));
            pr.flush();
        }
    }

    Map<String, ConfigEntry> topicConfig(String topic) {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = Kit.get(admin.describeConfigs(List.of(r)).all()).get(r);
        return c.entries().stream().collect(Collectors.toMap(ConfigEntry::name, e -> e));
    }

    // ------------------------------------------------------------------ topics

    @Test
    void topicsCreateListDescribeDelete() throws Exception {
        String topic = Kit.name("java-admin-topic");
        Kit.get(admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all());
        Kit.waitUntil(Duration.ofSeconds(20), () -> topic + " listed", () -> Kit.get(admin.listTopics().names()).contains(topic));
        TopicDescription d = Kit.get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
        assertEquals(3, d.partitions().size(), "partitions");
        assertFalse(d.isInternal(), "internal");
        assertNotNull(d.topicId(), "topic id");
        assertFalse(d.topicId().toString().equals("AAAAAAAAAAAAAAAAAAAAAA"), "topic id is not the zero uuid");
        for (TopicPartitionInfo p : d.partitions()) {
            assertEquals(node.id(), p.leader().id(), "leader of " + p.partition());
            assertEquals(List.of(node.id()), p.replicas().stream().map(Node::id).collect(Collectors.toList()), "replicas");
            assertEquals(List.of(node.id()), p.isr().stream().map(Node::id).collect(Collectors.toList()), "isr");
        }
        failsWith(TopicExistsException.class, admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all(), "create an existing topic");
        String v = Kit.name("java-admin-validate");
        Kit.get(admin.createTopics(List.of(new NewTopic(v, 2, (short) 1)), new CreateTopicsOptions().validateOnly(true)).all());
        assertFalse(Kit.get(admin.listTopics().names()).contains(v), "validateOnly must not create the topic");
        failsWith(InvalidPartitionsException.class, admin.createTopics(List.of(new NewTopic(Kit.name("java-admin-zero"), 0, (short) 1))).all(),
                "create with 0 partitions");
        Kit.get(admin.deleteTopics(List.of(topic)).all());
        Kit.waitUntil(Duration.ofSeconds(20), () -> topic + " gone from listTopics", () -> !Kit.get(admin.listTopics().names()).contains(topic));
        failsWith(UnknownTopicOrPartitionException.class, admin.describeTopics(List.of(topic)).allTopicNames(), "describe a deleted topic");
        failsWith(UnknownTopicOrPartitionException.class, admin.deleteTopics(List.of(topic)).all(), "delete a deleted topic");
    }

    /** CreateTopics requests Kafka refuses, each with its own error. */
    @Test
    void createTopicsInvalid() {
        failsWith(org.apache.kafka.common.errors.InvalidTopicException.class,
                admin.createTopics(List.of(new NewTopic("bad/name", 1, (short) 1))).all(), "topic name with '/'");
        failsWith(org.apache.kafka.common.errors.InvalidTopicException.class,
                admin.createTopics(List.of(new NewTopic("x".repeat(250), 1, (short) 1))).all(), "topic name of 250 characters");
        failsWith(org.apache.kafka.common.errors.InvalidReplicationFactorException.class,
                admin.createTopics(List.of(new NewTopic(Kit.name("java-admin-rf3"), 1, (short) 3))).all(), "replication factor 3 on one broker");
        failsWith(InvalidConfigurationException.class,
                admin.createTopics(List.of(new NewTopic(Kit.name("java-admin-badcfg"), 1, (short) 1)
                        .configs(Map.of("retention.ms", "soon")))).all(), "retention.ms=soon");
        failsWith(InvalidConfigurationException.class,
                admin.createTopics(List.of(new NewTopic(Kit.name("java-admin-unknowncfg"), 1, (short) 1)
                        .configs(Map.of("no.such.config", "1")))).all(), "an unknown topic config");
    }

    @Test
    void createPartitions() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-parts"), 2);
        Kit.get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
        Kit.waitUntil(Duration.ofSeconds(20), () -> topic + " has 5 partitions",
                () -> Kit.get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic).partitions().size() == 5);
        produce(topic, 4, 3);
        assertEquals(3, Kit.readAll(List.of(new TopicPartition(topic, 4)), "read_uncommitted").size(), "records in the new partition 4");
        failsWith(InvalidPartitionsException.class, admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all(),
                "decrease the partition count");
        failsWith(InvalidPartitionsException.class, admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all(),
                "the same partition count");
        failsWith(UnknownTopicOrPartitionException.class,
                admin.createPartitions(Map.of(Kit.name("java-admin-nope"), NewPartitions.increaseTo(5))).all(), "unknown topic");
    }

    // ------------------------------------------------------------------ configs

    @Test
    void describeConfigs() {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-cfg"), 1, Map.of("retention.ms", "7200000", "max.message.bytes", "200000"));
        Map<String, ConfigEntry> c = topicConfig(topic);
        assertEquals("7200000", c.get("retention.ms").value(), "retention.ms set at creation");
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.ms").source(), "source of a topic override");
        assertEquals("200000", c.get("max.message.bytes").value(), "max.message.bytes set at creation");
        assertNotNull(c.get("cleanup.policy"), "cleanup.policy listed with its default");
        assertEquals("delete", c.get("cleanup.policy").value(), "cleanup.policy default");
        assertTrue(c.get("cleanup.policy").isDefault(), "cleanup.policy isDefault");
        assertEquals(ConfigEntry.ConfigType.LONG, c.get("retention.ms").type(), "type of retention.ms");
        assertEquals(ConfigEntry.ConfigType.LIST, c.get("cleanup.policy").type(), "type of cleanup.policy");
        assertEquals(ConfigEntry.ConfigType.INT, c.get("max.message.bytes").type(), "type of max.message.bytes");
        assertNotNull(c.get("segment.bytes"), "segment.bytes listed");
        ConfigResource br = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(node.id()));
        Config b = Kit.get(admin.describeConfigs(List.of(br)).all()).get(br);
        assertNotNull(b.get("num.partitions"), "broker config num.partitions listed");
        assertNotNull(b.get("log.retention.hours"), "broker config log.retention.hours listed");
        failsWith(UnknownTopicOrPartitionException.class,
                admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, Kit.name("java-admin-nope")))).all(),
                "describeConfigs of an unknown topic");
    }

    @Test
    void incrementalAlterConfigs() {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-iac"), 1);
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Kit.get(admin.incrementalAlterConfigs(Map.of(r, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("local.retention.ms", "600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("segment.ms", "86400000"), AlterConfigOp.OpType.SET)))).all());
        Map<String, ConfigEntry> c = topicConfig(topic);
        assertEquals("3600000", c.get("retention.ms").value(), "retention.ms after SET");
        assertEquals("600000", c.get("local.retention.ms").value(), "local.retention.ms after SET");
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("local.retention.ms").source(), "local.retention.ms source");
        assertEquals("86400000", c.get("segment.ms").value(), "segment.ms after SET");
        // DELETE returns a setting to its default; APPEND adds to a list setting
        Kit.get(admin.incrementalAlterConfigs(Map.of(r, List.of(
                new AlterConfigOp(new ConfigEntry("segment.ms", ""), AlterConfigOp.OpType.DELETE),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND)))).all());
        c = topicConfig(topic);
        assertEquals("604800000", c.get("segment.ms").value(), "segment.ms back to its default after DELETE");
        assertTrue(c.get("segment.ms").isDefault(), "segment.ms isDefault after DELETE");
        assertEquals("delete,compact", c.get("cleanup.policy").value(), "cleanup.policy after APPEND compact");
        assertEquals("600000", c.get("local.retention.ms").value(), "local.retention.ms untouched by other ops");
        // validateOnly changes nothing; an invalid value is InvalidConfigurationException
        Kit.get(admin.incrementalAlterConfigs(Map.of(r, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET))),
                new org.apache.kafka.clients.admin.AlterConfigsOptions().validateOnly(true)).all());
        assertEquals("3600000", topicConfig(topic).get("retention.ms").value(), "validateOnly must not change retention.ms");
        failsWith(InvalidConfigurationException.class, admin.incrementalAlterConfigs(Map.of(r, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "not-a-number"), AlterConfigOp.OpType.SET)))).all(),
                "retention.ms=not-a-number");
    }

    /**
     * Admin.alterConfigs (the legacy AlterConfigs API, which replaces a resource's whole
     * set of dynamic configs; deprecated since 2.3 by KIP-339) was removed from the Java client in 4.0: with a 4.x
     * client this test is reported as skipped with that reason and the wrapper
     * (test_compat_java.py) expects exactly that; with 3.x it runs, through reflection
     * so the same sources compile against both versions.
     */
    @Test
    void legacyAlterConfigs() throws Exception {
        Method m;
        try {
            m = Admin.class.getMethod("alterConfigs", Map.class);
        } catch (NoSuchMethodException e) {
            assertTrue(Kit.clientMajor() >= 4, "Admin.alterConfigs missing from client " + Kit.clientVersion());
            Assumptions.abort("Admin.alterConfigs (legacy AlterConfigs) does not exist in kafka-clients " + Kit.clientVersion()
                    + " (removed in 4.0); tested with 3.9.2");
            return;
        }
        String topic = Kit.createTopic(admin, Kit.name("java-admin-legacy"), 1, Map.of("segment.ms", "86400000"));
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config cfg = new Config(List.of(new ConfigEntry("retention.ms", "5400000"), new ConfigEntry("max.message.bytes", "300000")));
        AlterConfigsResult res;
        try {
            res = (AlterConfigsResult) m.invoke(admin, Map.of(r, cfg));
        } catch (InvocationTargetException e) {
            throw (Exception) e.getCause();
        }
        Kit.get(res.all());
        Map<String, ConfigEntry> c = topicConfig(topic);
        assertEquals("5400000", c.get("retention.ms").value(), "retention.ms after legacy alterConfigs");
        assertEquals("300000", c.get("max.message.bytes").value(), "max.message.bytes after legacy alterConfigs");
        // the legacy API replaces the whole set: segment.ms (not in the request) returns to its default
        assertEquals("604800000", c.get("segment.ms").value(), "segment.ms reset by the legacy (replace-all) alterConfigs");
        assertTrue(c.get("segment.ms").isDefault(), "segment.ms isDefault after legacy alterConfigs");
    }

    // ------------------------------------------------------------------ cluster

    @Test
    void describeCluster() {
        DescribeClusterResult r = admin.describeCluster();
        String id = Kit.get(r.clusterId());
        assertNotNull(id, "cluster id");
        assertFalse(id.isEmpty(), "cluster id");
        Collection<Node> nodes = Kit.get(r.nodes());
        assertEquals(1, nodes.size(), "one broker");
        Node n = nodes.iterator().next();
        String[] bs = Kit.bootstrap().split(":");
        assertEquals(bs[0], n.host(), "advertised host");
        assertEquals(Integer.parseInt(bs[1]), n.port(), "advertised port");
        Node controller = Kit.get(r.controller());
        assertNotNull(controller, "controller");
        assertEquals(n.id(), controller.id(), "the only broker is the controller clients see");
        assertEquals(id, Kit.get(admin.describeCluster().clusterId()), "cluster id stable");
    }

    // ------------------------------------------------------------------ groups

    @SuppressWarnings("deprecation")   // state(): the one accessor both 3.9 and 4.x have
    Optional<ConsumerGroupState> listedState(String group) {
        for (ConsumerGroupListing l : Kit.get(admin.listConsumerGroups().all())) {
            if (l.groupId().equals(group)) return Optional.of(l.state().orElse(ConsumerGroupState.UNKNOWN));
        }
        return Optional.empty();
    }

    @SuppressWarnings("deprecation")
    ConsumerGroupState describedState(String group) {
        return Kit.get(admin.describeConsumerGroups(List.of(group)).all()).get(group).state();
    }

    /** A group with committed offsets and no members (assign + commitSync). */
    void emptyGroupWithOffsets(String group, Map<TopicPartition, Long> offsets) {
        try (KafkaConsumer<String, String> c = Kit.consumer(group)) {
            c.assign(offsets.keySet());
            Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
            offsets.forEach((tp, o) -> m.put(tp, new OffsetAndMetadata(o)));
            c.commitSync(m);
        }
    }

    KafkaConsumer<String, String> liveMember(String group, String topic) {
        Properties p = Kit.consumerProps(group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-compat-live-member");
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        c.subscribe(List.of(topic));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (c.assignment().isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "live member never got an assignment");
            c.poll(Duration.ofMillis(100));
        }
        return c;
    }

    @Test
    @SuppressWarnings("deprecation")
    void consumerGroupsListDescribeDelete() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-groups"), 2);
        produce(topic, 0, 10);
        String empty = Kit.name("java-admin-empty");
        emptyGroupWithOffsets(empty, Map.of(new TopicPartition(topic, 0), 4L));
        assertEquals(Optional.of(ConsumerGroupState.EMPTY), listedState(empty), "listed state of a group with offsets and no members");
        ConsumerGroupDescription ed = Kit.get(admin.describeConsumerGroups(List.of(empty)).all()).get(empty);
        assertEquals(ConsumerGroupState.EMPTY, ed.state(), "described state");
        assertEquals(0, ed.members().size(), "members");
        String live = Kit.name("java-admin-live");
        try (KafkaConsumer<String, String> c = liveMember(live, topic)) {
            Kit.waitUntil(Duration.ofSeconds(20), () -> "live group Stable", () -> describedState(live) == ConsumerGroupState.STABLE);
            assertEquals(Optional.of(ConsumerGroupState.STABLE), listedState(live), "listed state of a live group");
            ConsumerGroupDescription d = Kit.get(admin.describeConsumerGroups(List.of(live)).all()).get(live);
            assertFalse(d.isSimpleConsumerGroup(), "a subscribing group is not simple");
            assertEquals(1, d.members().size(), "members");
            MemberDescription m = d.members().iterator().next();
            assertEquals("java-compat-live-member", m.clientId(), "member client id");
            assertTrue(m.host().contains("127.0.0.1"), "member host " + m.host());
            assertEquals(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)), m.assignment().topicPartitions(), "member assignment");
            assertEquals(node.id(), d.coordinator().id(), "coordinator");
            failsWith(GroupNotEmptyException.class, admin.deleteConsumerGroups(List.of(live)).all(), "delete a group with a live member");
        }
        Kit.waitUntil(Duration.ofSeconds(20), () -> "group Empty after its member closed", () -> describedState(live) == ConsumerGroupState.EMPTY);
        Kit.get(admin.deleteConsumerGroups(List.of(live, empty)).all());
        assertEquals(Optional.empty(), listedState(live), "deleted group listed");
        assertEquals(Optional.empty(), listedState(empty), "deleted group listed");
        assertTrue(Kit.get(admin.listConsumerGroupOffsets(empty).partitionsToOffsetAndMetadata()).isEmpty(), "offsets of a deleted group");
        failsWith(GroupIdNotFoundException.class, admin.deleteConsumerGroups(List.of(Kit.name("java-admin-never"))).all(),
                "delete a group that never existed");
    }

    @Test
    void consumerGroupOffsets() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-offsets"), 3);
        for (int p = 0; p < 3; p++) produce(topic, p, 10);
        TopicPartition t0 = new TopicPartition(topic, 0), t1 = new TopicPartition(topic, 1), t2 = new TopicPartition(topic, 2);
        String group = Kit.name("java-admin-offsets");
        emptyGroupWithOffsets(group, Map.of(t0, 3L, t1, 5L));
        Map<TopicPartition, OffsetAndMetadata> all = Kit.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        assertEquals(Map.of(t0, 3L, t1, 5L), all.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset())),
                "listConsumerGroupOffsets");
        // a spec naming partitions: the uncommitted one is absent or null (Kafka answers offset -1 -> null)
        Map<TopicPartition, OffsetAndMetadata> some = Kit.get(admin.listConsumerGroupOffsets(
                Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(t1, t2)))).partitionsToOffsetAndMetadata(group));
        assertEquals(5L, some.get(t1).offset(), "t1 via spec");
        assertTrue(some.get(t2) == null, "t2 never committed: " + some.get(t2));
        assertFalse(some.containsKey(t0) && some.get(t0) != null, "t0 not asked for");
        // alter on an Empty group
        Kit.get(admin.alterConsumerGroupOffsets(group, Map.of(t0, new OffsetAndMetadata(7, "altered"), t2, new OffsetAndMetadata(9))).all());
        all = Kit.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        assertEquals(7L, all.get(t0).offset(), "t0 after alter");
        assertEquals("altered", all.get(t0).metadata(), "t0 metadata after alter");
        assertEquals(5L, all.get(t1).offset(), "t1 untouched by alter");
        assertEquals(9L, all.get(t2).offset(), "t2 after alter");
        // a consumer of the group starts where the admin put it
        try (KafkaConsumer<String, String> c = Kit.consumer(group)) {
            c.assign(List.of(t0));
            assertEquals(7L, c.position(t0), "position from the altered offset");
        }
        // delete one partition's offset
        Kit.get(admin.deleteConsumerGroupOffsets(group, Set.of(t1)).all());
        all = Kit.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        assertTrue(all.get(t1) == null, "t1 offset deleted: " + all);
        assertEquals(7L, all.get(t0).offset(), "t0 kept");
        // with a live member subscribed to the topic: alter is UnknownMemberIdException, delete is GroupSubscribedToTopicException
        try (KafkaConsumer<String, String> c = liveMember(group, topic)) {
            failsWith(UnknownMemberIdException.class,
                    admin.alterConsumerGroupOffsets(group, Map.of(t0, new OffsetAndMetadata(1))).all(), "alter offsets of a live group");
            failsWith(GroupSubscribedToTopicException.class,
                    admin.deleteConsumerGroupOffsets(group, Set.of(t0)).all(), "delete offsets of a topic the live group subscribes to");
        }
        assertEquals(7L, Kit.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).get(t0).offset(),
                "t0 unchanged by the refused alter/delete");
    }

    /** Admin.removeMembersFromConsumerGroup (LeaveGroup v3+ by group.instance.id) of a static member that closed. */
    @Test
    @SuppressWarnings("deprecation")
    void removeMembersFromConsumerGroup() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-remove"), 2);
        String group = Kit.name("java-admin-remove");
        Properties p = Kit.consumerProps(group);
        p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-remove-1");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (c.assignment().isEmpty()) {
                assertTrue(System.nanoTime() < deadline, "static member never got an assignment");
                c.poll(Duration.ofMillis(100));
            }
        }   // a static member's close sends no LeaveGroup: it stays a member until its session times out
        ConsumerGroupDescription d = Kit.get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
        assertEquals(1, d.members().size(), "the closed static member is still in the group: " + d);
        assertEquals(Optional.of("static-remove-1"), d.members().iterator().next().groupInstanceId(), "its group.instance.id");
        MemberToRemove known = new MemberToRemove("static-remove-1");
        Kit.get(admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions(List.of(known))).all());
        Kit.waitUntil(Duration.ofSeconds(Kit.SESSION_MS / 2000), () -> "group Empty after the member was removed (well before the session timeout)",
                () -> describedState(group) == ConsumerGroupState.EMPTY);
        assertEquals(0, Kit.get(admin.describeConsumerGroups(List.of(group)).all()).get(group).members().size(), "members after removal");
        MemberToRemove unknown = new MemberToRemove("static-remove-nobody");
        failsWith(UnknownMemberIdException.class,
                admin.removeMembersFromConsumerGroup(group, new RemoveMembersFromConsumerGroupOptions(List.of(unknown))).memberResult(unknown),
                "remove an unknown group.instance.id");
    }

    /** Admin.listOffsets (ListOffsets): earliest, latest, by timestamp, max timestamp. */
    @Test
    void listOffsets() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-listoffsets"), 2);
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        long base = System.currentTimeMillis() - 1_000_000L;
        try (KafkaProducer<String, String> pr = Kit.producer()) {
            for (int i = 0; i < 10; i++) {
                long ts = i == 5 ? base + 100_000 : base + i * 1000L;   // the largest timestamp in the middle
                pr.send(new ProducerRecord<>(topic, 0, ts, "k", "v" + i)).get();
            }
        }
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> r;
        r = Kit.get(admin.listOffsets(Map.of(p0, OffsetSpec.earliest(), p1, OffsetSpec.earliest())).all());
        assertEquals(0, r.get(p0).offset(), "earliest p0");
        assertEquals(0, r.get(p1).offset(), "earliest of an empty partition");
        r = Kit.get(admin.listOffsets(Map.of(p0, OffsetSpec.latest(), p1, OffsetSpec.latest())).all());
        assertEquals(10, r.get(p0).offset(), "latest p0");
        assertEquals(0, r.get(p1).offset(), "latest of an empty partition");
        r = Kit.get(admin.listOffsets(Map.of(p0, OffsetSpec.forTimestamp(base + 3000))).all());
        assertEquals(3, r.get(p0).offset(), "offset for an exact timestamp");
        assertEquals(base + 3000, r.get(p0).timestamp(), "its timestamp");
        r = Kit.get(admin.listOffsets(Map.of(p0, OffsetSpec.forTimestamp(base + 5500))).all());
        assertEquals(5, r.get(p0).offset(), "first offset with a timestamp at or after the target (timestamps not monotonic)");
        assertEquals(base + 100_000, r.get(p0).timestamp(), "its timestamp");
        r = Kit.get(admin.listOffsets(Map.of(p0, OffsetSpec.forTimestamp(base + 200_000))).all());
        assertEquals(-1, r.get(p0).offset(), "no record at or after the timestamp: offset -1");
        r = Kit.get(admin.listOffsets(Map.of(p0, OffsetSpec.maxTimestamp())).all());
        assertEquals(5, r.get(p0).offset(), "offset of the max timestamp (KIP-734)");
        assertEquals(base + 100_000, r.get(p0).timestamp(), "max timestamp");
    }

    // ------------------------------------------------------------------ records

    @Test
    void deleteRecords() throws Exception {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-delrec"), 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        produce(topic, 0, 100);
        String group = Kit.name("java-admin-delrec");
        emptyGroupWithOffsets(group, Map.of(tp, 10L));
        DeletedRecords dr = Kit.get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(40))).lowWatermarks().get(tp));
        assertEquals(40, dr.lowWatermark(), "low watermark after deleteRecords(before 40)");
        try (KafkaConsumer<byte[], byte[]> c = Kit.rawReader("read_uncommitted")) {
            assertEquals(Map.of(tp, 40L), c.beginningOffsets(List.of(tp)), "log start offset");
            assertEquals(Map.of(tp, 100L), c.endOffsets(List.of(tp)), "end offset unchanged");
        }
        List<ConsumerRecord<byte[], byte[]>> rest = Kit.readAll(List.of(tp), "read_uncommitted");
        assertEquals(60, rest.size(), "records left");
        assertEquals(40, rest.get(0).offset(), "first offset left");
        // a consumer at a deleted offset: auto.offset.reset=earliest resets to the new start
        try (KafkaConsumer<String, String> c = Kit.consumer(group)) {
            c.assign(List.of(tp));
            List<ConsumerRecord<String, String>> got = new java.util.ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (got.isEmpty()) {
                assertTrue(System.nanoTime() < deadline, "no records after the committed offset 10 was deleted");
                c.poll(Duration.ofMillis(100)).forEach(got::add);
            }
            assertEquals(40, got.get(0).offset(), "committed offset 10 is below the low watermark: reset to earliest = 40");
        }
        // auto.offset.reset=none: OffsetOutOfRangeException
        Properties p = Kit.consumerProps(null);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.assign(List.of(tp));
            c.seek(tp, 10);
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            OffsetOutOfRangeException e = null;
            while (e == null) {
                assertTrue(System.nanoTime() < deadline, "no OffsetOutOfRangeException for a deleted offset with auto.offset.reset=none");
                try {
                    c.poll(Duration.ofMillis(100));
                } catch (OffsetOutOfRangeException x) {
                    e = x;
                }
            }
            assertEquals(Map.of(tp, 10L), e.offsetOutOfRangePartitions(), "out-of-range partition and offset");
        }
        // deleting up to the high watermark is allowed; beyond it is OffsetOutOfRangeException
        failsWith(org.apache.kafka.common.errors.OffsetOutOfRangeException.class,
                admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(101))).lowWatermarks().get(tp), "deleteRecords beyond the end");
        assertEquals(100, Kit.get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(100))).lowWatermarks().get(tp)).lowWatermark(),
                "deleteRecords up to the high watermark");
        assertEquals(0, Kit.readAll(List.of(tp), "read_uncommitted").size(), "nothing left");
    }

    // ------------------------------------------------------------------ replicas

    @Test
    void partitionReassignments() {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-reassign"), 2);
        TopicPartition tp = new TopicPartition(topic, 0);
        // a no-op reassignment to the same single replica completes at once
        Kit.get(admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(node.id()))))).all());
        Kit.waitUntil(Duration.ofSeconds(20), () -> "no reassignment in progress",
                () -> Kit.get(admin.listPartitionReassignments().reassignments()).isEmpty());
        Map<TopicPartition, PartitionReassignment> r = Kit.get(admin.listPartitionReassignments(Set.of(tp)).reassignments());
        assertTrue(r.isEmpty(), "listPartitionReassignments of " + tp + ": " + r);
        TopicDescription d = Kit.get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
        assertEquals(List.of(node.id()), d.partitions().get(0).replicas().stream().map(Node::id).collect(Collectors.toList()), "replicas unchanged");
        // cancelling when none is in progress: NoReassignmentInProgressException
        failsWith(NoReassignmentInProgressException.class,
                admin.alterPartitionReassignments(Map.of(tp, Optional.empty())).all(), "cancel a reassignment that is not in progress");
        // a replica on a broker that does not exist: InvalidReplicaAssignmentException
        failsWith(InvalidReplicaAssignmentException.class,
                admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(node.id() + 1000))))).all(),
                "reassign to a broker that does not exist");
        failsWith(UnknownTopicOrPartitionException.class,
                admin.alterPartitionReassignments(Map.of(new TopicPartition(topic, 7),
                        Optional.of(new NewPartitionReassignment(List.of(node.id()))))).all(), "reassign a partition that does not exist");
    }

    @Test
    void electLeaders() {
        String topic = Kit.createTopic(admin, Kit.name("java-admin-elect"), 2);
        TopicPartition tp = new TopicPartition(topic, 0);
        for (ElectionType type : List.of(ElectionType.PREFERRED, ElectionType.UNCLEAN)) {
            Map<TopicPartition, Optional<Throwable>> r = Kit.get(admin.electLeaders(type, Set.of(tp)).partitions());
            assertTrue(r.containsKey(tp), type + " election result for " + tp + ": " + r);
            assertTrue(r.get(tp).isPresent(), type + " election on the preferred, live leader: Kafka answers ELECTION_NOT_NEEDED");
            assertInstanceOf(ElectionNotNeededException.class, r.get(tp).get(), type + " election on the preferred, live leader");
        }
        Map<TopicPartition, Optional<Throwable>> r = Kit.get(admin.electLeaders(ElectionType.PREFERRED,
                Set.of(new TopicPartition(topic, 9))).partitions());
        assertInstanceOf(UnknownTopicOrPartitionException.class, r.get(new TopicPartition(topic, 9)).orElse(null),
                "preferred election of a partition that does not exist");
        // leader unchanged
        TopicDescription d = Kit.get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
        assertEquals(node.id(), d.partitions().get(0).leader().id(), "leader after the elections");
    }
}
