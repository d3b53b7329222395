//! The wire layout of each Kafka request, and of the consumer protocol's
//! subscription and assignment: which fields each version carries, in order,
//! and how each is encoded. Written by `gen_messages.py` from Kafka's
//! message definitions (Apache Kafka, trunk of 2024-09, which carries every
//! version Kafka 3.9 serves); do not edit by hand.

#![allow(clippy::all)]

use std::mem::size_of;

use super::schema::{Field as F, Message, Type as T, V};

const MAX: i16 = i16::MAX;

/// The layout of API `api_key`'s request body.
pub fn request(api_key: i16) -> Option<&'static Message> {
    Some(match api_key {
        0 => &PRODUCE_REQUEST,
        1 => &FETCH_REQUEST,
        2 => &LIST_OFFSETS_REQUEST,
        3 => &METADATA_REQUEST,
        8 => &OFFSET_COMMIT_REQUEST,
        9 => &OFFSET_FETCH_REQUEST,
        10 => &FIND_COORDINATOR_REQUEST,
        11 => &JOIN_GROUP_REQUEST,
        12 => &HEARTBEAT_REQUEST,
        13 => &LEAVE_GROUP_REQUEST,
        14 => &SYNC_GROUP_REQUEST,
        15 => &DESCRIBE_GROUPS_REQUEST,
        16 => &LIST_GROUPS_REQUEST,
        17 => &SASL_HANDSHAKE_REQUEST,
        18 => &API_VERSIONS_REQUEST,
        19 => &CREATE_TOPICS_REQUEST,
        20 => &DELETE_TOPICS_REQUEST,
        21 => &DELETE_RECORDS_REQUEST,
        22 => &INIT_PRODUCER_ID_REQUEST,
        23 => &OFFSET_FOR_LEADER_EPOCH_REQUEST,
        24 => &ADD_PARTITIONS_TO_TXN_REQUEST,
        25 => &ADD_OFFSETS_TO_TXN_REQUEST,
        26 => &END_TXN_REQUEST,
        27 => &WRITE_TXN_MARKERS_REQUEST,
        28 => &TXN_OFFSET_COMMIT_REQUEST,
        29 => &DESCRIBE_ACLS_REQUEST,
        30 => &CREATE_ACLS_REQUEST,
        31 => &DELETE_ACLS_REQUEST,
        32 => &DESCRIBE_CONFIGS_REQUEST,
        33 => &ALTER_CONFIGS_REQUEST,
        34 => &ALTER_REPLICA_LOG_DIRS_REQUEST,
        35 => &DESCRIBE_LOG_DIRS_REQUEST,
        36 => &SASL_AUTHENTICATE_REQUEST,
        37 => &CREATE_PARTITIONS_REQUEST,
        38 => &CREATE_DELEGATION_TOKEN_REQUEST,
        39 => &RENEW_DELEGATION_TOKEN_REQUEST,
        40 => &EXPIRE_DELEGATION_TOKEN_REQUEST,
        41 => &DESCRIBE_DELEGATION_TOKEN_REQUEST,
        42 => &DELETE_GROUPS_REQUEST,
        43 => &ELECT_LEADERS_REQUEST,
        44 => &INCREMENTAL_ALTER_CONFIGS_REQUEST,
        45 => &ALTER_PARTITION_REASSIGNMENTS_REQUEST,
        46 => &LIST_PARTITION_REASSIGNMENTS_REQUEST,
        47 => &OFFSET_DELETE_REQUEST,
        48 => &DESCRIBE_CLIENT_QUOTAS_REQUEST,
        49 => &ALTER_CLIENT_QUOTAS_REQUEST,
        50 => &DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST,
        51 => &ALTER_USER_SCRAM_CREDENTIALS_REQUEST,
        52 => &VOTE_REQUEST,
        53 => &BEGIN_QUORUM_EPOCH_REQUEST,
        54 => &END_QUORUM_EPOCH_REQUEST,
        55 => &DESCRIBE_QUORUM_REQUEST,
        56 => &ALTER_PARTITION_REQUEST,
        57 => &UPDATE_FEATURES_REQUEST,
        58 => &ENVELOPE_REQUEST,
        59 => &FETCH_SNAPSHOT_REQUEST,
        60 => &DESCRIBE_CLUSTER_REQUEST,
        61 => &DESCRIBE_PRODUCERS_REQUEST,
        62 => &BROKER_REGISTRATION_REQUEST,
        63 => &BROKER_HEARTBEAT_REQUEST,
        64 => &UNREGISTER_BROKER_REQUEST,
        65 => &DESCRIBE_TRANSACTIONS_REQUEST,
        66 => &LIST_TRANSACTIONS_REQUEST,
        67 => &ALLOCATE_PRODUCER_IDS_REQUEST,
        68 => &CONSUMER_GROUP_HEARTBEAT_REQUEST,
        69 => &CONSUMER_GROUP_DESCRIBE_REQUEST,
        70 => &CONTROLLER_REGISTRATION_REQUEST,
        71 => &GET_TELEMETRY_SUBSCRIPTIONS_REQUEST,
        72 => &PUSH_TELEMETRY_REQUEST,
        73 => &ASSIGN_REPLICAS_TO_DIRS_REQUEST,
        75 => &DESCRIBE_TOPIC_PARTITIONS_REQUEST,
        76 => &SHARE_GROUP_HEARTBEAT_REQUEST,
        77 => &SHARE_GROUP_DESCRIBE_REQUEST,
        78 => &SHARE_FETCH_REQUEST,
        79 => &SHARE_ACKNOWLEDGE_REQUEST,
        80 => &ADD_RAFT_VOTER_REQUEST,
        81 => &REMOVE_RAFT_VOTER_REQUEST,
        82 => &UPDATE_RAFT_VOTER_REQUEST,
        83 => &INITIALIZE_SHARE_GROUP_STATE_REQUEST,
        84 => &READ_SHARE_GROUP_STATE_REQUEST,
        85 => &WRITE_SHARE_GROUP_STATE_REQUEST,
        86 => &DELETE_SHARE_GROUP_STATE_REQUEST,
        87 => &READ_SHARE_GROUP_STATE_SUMMARY_REQUEST,
        _ => return None,
    })
}

/// Every request layout, by API key.
#[cfg(test)]
pub const REQUESTS: &[(i16, &Message)] = &[
    (0, &PRODUCE_REQUEST),
    (1, &FETCH_REQUEST),
    (2, &LIST_OFFSETS_REQUEST),
    (3, &METADATA_REQUEST),
    (8, &OFFSET_COMMIT_REQUEST),
    (9, &OFFSET_FETCH_REQUEST),
    (10, &FIND_COORDINATOR_REQUEST),
    (11, &JOIN_GROUP_REQUEST),
    (12, &HEARTBEAT_REQUEST),
    (13, &LEAVE_GROUP_REQUEST),
    (14, &SYNC_GROUP_REQUEST),
    (15, &DESCRIBE_GROUPS_REQUEST),
    (16, &LIST_GROUPS_REQUEST),
    (17, &SASL_HANDSHAKE_REQUEST),
    (18, &API_VERSIONS_REQUEST),
    (19, &CREATE_TOPICS_REQUEST),
    (20, &DELETE_TOPICS_REQUEST),
    (21, &DELETE_RECORDS_REQUEST),
    (22, &INIT_PRODUCER_ID_REQUEST),
    (23, &OFFSET_FOR_LEADER_EPOCH_REQUEST),
    (24, &ADD_PARTITIONS_TO_TXN_REQUEST),
    (25, &ADD_OFFSETS_TO_TXN_REQUEST),
    (26, &END_TXN_REQUEST),
    (27, &WRITE_TXN_MARKERS_REQUEST),
    (28, &TXN_OFFSET_COMMIT_REQUEST),
    (29, &DESCRIBE_ACLS_REQUEST),
    (30, &CREATE_ACLS_REQUEST),
    (31, &DELETE_ACLS_REQUEST),
    (32, &DESCRIBE_CONFIGS_REQUEST),
    (33, &ALTER_CONFIGS_REQUEST),
    (34, &ALTER_REPLICA_LOG_DIRS_REQUEST),
    (35, &DESCRIBE_LOG_DIRS_REQUEST),
    (36, &SASL_AUTHENTICATE_REQUEST),
    (37, &CREATE_PARTITIONS_REQUEST),
    (38, &CREATE_DELEGATION_TOKEN_REQUEST),
    (39, &RENEW_DELEGATION_TOKEN_REQUEST),
    (40, &EXPIRE_DELEGATION_TOKEN_REQUEST),
    (41, &DESCRIBE_DELEGATION_TOKEN_REQUEST),
    (42, &DELETE_GROUPS_REQUEST),
    (43, &ELECT_LEADERS_REQUEST),
    (44, &INCREMENTAL_ALTER_CONFIGS_REQUEST),
    (45, &ALTER_PARTITION_REASSIGNMENTS_REQUEST),
    (46, &LIST_PARTITION_REASSIGNMENTS_REQUEST),
    (47, &OFFSET_DELETE_REQUEST),
    (48, &DESCRIBE_CLIENT_QUOTAS_REQUEST),
    (49, &ALTER_CLIENT_QUOTAS_REQUEST),
    (50, &DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST),
    (51, &ALTER_USER_SCRAM_CREDENTIALS_REQUEST),
    (52, &VOTE_REQUEST),
    (53, &BEGIN_QUORUM_EPOCH_REQUEST),
    (54, &END_QUORUM_EPOCH_REQUEST),
    (55, &DESCRIBE_QUORUM_REQUEST),
    (56, &ALTER_PARTITION_REQUEST),
    (57, &UPDATE_FEATURES_REQUEST),
    (58, &ENVELOPE_REQUEST),
    (59, &FETCH_SNAPSHOT_REQUEST),
    (60, &DESCRIBE_CLUSTER_REQUEST),
    (61, &DESCRIBE_PRODUCERS_REQUEST),
    (62, &BROKER_REGISTRATION_REQUEST),
    (63, &BROKER_HEARTBEAT_REQUEST),
    (64, &UNREGISTER_BROKER_REQUEST),
    (65, &DESCRIBE_TRANSACTIONS_REQUEST),
    (66, &LIST_TRANSACTIONS_REQUEST),
    (67, &ALLOCATE_PRODUCER_IDS_REQUEST),
    (68, &CONSUMER_GROUP_HEARTBEAT_REQUEST),
    (69, &CONSUMER_GROUP_DESCRIBE_REQUEST),
    (70, &CONTROLLER_REGISTRATION_REQUEST),
    (71, &GET_TELEMETRY_SUBSCRIPTIONS_REQUEST),
    (72, &PUSH_TELEMETRY_REQUEST),
    (73, &ASSIGN_REPLICAS_TO_DIRS_REQUEST),
    (75, &DESCRIBE_TOPIC_PARTITIONS_REQUEST),
    (76, &SHARE_GROUP_HEARTBEAT_REQUEST),
    (77, &SHARE_GROUP_DESCRIBE_REQUEST),
    (78, &SHARE_FETCH_REQUEST),
    (79, &SHARE_ACKNOWLEDGE_REQUEST),
    (80, &ADD_RAFT_VOTER_REQUEST),
    (81, &REMOVE_RAFT_VOTER_REQUEST),
    (82, &UPDATE_RAFT_VOTER_REQUEST),
    (83, &INITIALIZE_SHARE_GROUP_STATE_REQUEST),
    (84, &READ_SHARE_GROUP_STATE_REQUEST),
    (85, &WRITE_SHARE_GROUP_STATE_REQUEST),
    (86, &DELETE_SHARE_GROUP_STATE_REQUEST),
    (87, &READ_SHARE_GROUP_STATE_SUMMARY_REQUEST),
];

const ADD_OFFSETS_TO_TXN_REQUEST__ADD_OFFSETS_TO_TXN_REQUEST: &[F] = &[
    F::new("TransactionalId", V(0, MAX), T::Str),
    F::new("ProducerId", V(0, MAX), T::I64),
    F::new("ProducerEpoch", V(0, MAX), T::I16),
    F::new("GroupId", V(0, MAX), T::Str),
];
pub(crate) static ADD_OFFSETS_TO_TXN_REQUEST: Message = Message {
    name: "AddOffsetsToTxnRequest",
    valid: V(0, 4),
    flexible_from: 3,
    fields: ADD_OFFSETS_TO_TXN_REQUEST__ADD_OFFSETS_TO_TXN_REQUEST,
};

const ADD_PARTITIONS_TO_TXN_REQUEST__ADD_PARTITIONS_TO_TXN_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const ADD_PARTITIONS_TO_TXN_REQUEST__ADD_PARTITIONS_TO_TXN_TRANSACTION: &[F] = &[
    F::new("TransactionalId", V(4, MAX), T::Str),
    F::new("ProducerId", V(4, MAX), T::I64),
    F::new("ProducerEpoch", V(4, MAX), T::I16),
    F::new("VerifyOnly", V(4, MAX), T::Bool),
    F::new(
        "Topics",
        V(4, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic,
            >(),
            &T::Struct(ADD_PARTITIONS_TO_TXN_REQUEST__ADD_PARTITIONS_TO_TXN_TOPIC),
        ),
    ),
];
const ADD_PARTITIONS_TO_TXN_REQUEST__ADD_PARTITIONS_TO_TXN_REQUEST: &[F] = &[
    F::new("Transactions", V(4, MAX), T::Array(size_of::<kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction>(), &T::Struct(ADD_PARTITIONS_TO_TXN_REQUEST__ADD_PARTITIONS_TO_TXN_TRANSACTION))),
    F::new("V3AndBelowTransactionalId", V(0, 3), T::Str),
    F::new("V3AndBelowProducerId", V(0, 3), T::I64),
    F::new("V3AndBelowProducerEpoch", V(0, 3), T::I16),
    F::new("V3AndBelowTopics", V(0, 3), T::Array(size_of::<kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic>(), &T::Struct(ADD_PARTITIONS_TO_TXN_REQUEST__ADD_PARTITIONS_TO_TXN_TOPIC))),
];
pub(crate) static ADD_PARTITIONS_TO_TXN_REQUEST: Message = Message {
    name: "AddPartitionsToTxnRequest",
    valid: V(0, 5),
    flexible_from: 3,
    fields: ADD_PARTITIONS_TO_TXN_REQUEST__ADD_PARTITIONS_TO_TXN_REQUEST,
};

const ADD_RAFT_VOTER_REQUEST__LISTENER: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Host", V(0, MAX), T::Str),
    F::new("Port", V(0, MAX), T::U16),
];
const ADD_RAFT_VOTER_REQUEST__ADD_RAFT_VOTER_REQUEST: &[F] = &[
    F::new("ClusterId", V(0, MAX), T::Str),
    F::new("TimeoutMs", V(0, MAX), T::I32),
    F::new("VoterId", V(0, MAX), T::I32),
    F::new("VoterDirectoryId", V(0, MAX), T::Uuid),
    F::new(
        "Listeners",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::add_raft_voter_request::Listener>(),
            &T::Struct(ADD_RAFT_VOTER_REQUEST__LISTENER),
        ),
    ),
];
pub(crate) static ADD_RAFT_VOTER_REQUEST: Message = Message {
    name: "AddRaftVoterRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: ADD_RAFT_VOTER_REQUEST__ADD_RAFT_VOTER_REQUEST,
};

const ALLOCATE_PRODUCER_IDS_REQUEST__ALLOCATE_PRODUCER_IDS_REQUEST: &[F] = &[
    F::new("BrokerId", V(0, MAX), T::I32),
    F::new("BrokerEpoch", V(0, MAX), T::I64),
];
pub(crate) static ALLOCATE_PRODUCER_IDS_REQUEST: Message = Message {
    name: "AllocateProducerIdsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: ALLOCATE_PRODUCER_IDS_REQUEST__ALLOCATE_PRODUCER_IDS_REQUEST,
};

const ALTER_CLIENT_QUOTAS_REQUEST__ENTITY_DATA: &[F] = &[
    F::new("EntityType", V(0, MAX), T::Str),
    F::new("EntityName", V(0, MAX), T::Str),
];
const ALTER_CLIENT_QUOTAS_REQUEST__OP_DATA: &[F] = &[
    F::new("Key", V(0, MAX), T::Str),
    F::new("Value", V(0, MAX), T::F64),
    F::new("Remove", V(0, MAX), T::Bool),
];
const ALTER_CLIENT_QUOTAS_REQUEST__ENTRY_DATA: &[F] = &[
    F::new(
        "Entity",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_client_quotas_request::EntityData>(),
            &T::Struct(ALTER_CLIENT_QUOTAS_REQUEST__ENTITY_DATA),
        ),
    ),
    F::new(
        "Ops",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_client_quotas_request::OpData>(),
            &T::Struct(ALTER_CLIENT_QUOTAS_REQUEST__OP_DATA),
        ),
    ),
];
const ALTER_CLIENT_QUOTAS_REQUEST__ALTER_CLIENT_QUOTAS_REQUEST: &[F] = &[
    F::new(
        "Entries",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_client_quotas_request::EntryData>(),
            &T::Struct(ALTER_CLIENT_QUOTAS_REQUEST__ENTRY_DATA),
        ),
    ),
    F::new("ValidateOnly", V(0, MAX), T::Bool),
];
pub(crate) static ALTER_CLIENT_QUOTAS_REQUEST: Message = Message {
    name: "AlterClientQuotasRequest",
    valid: V(0, 1),
    flexible_from: 1,
    fields: ALTER_CLIENT_QUOTAS_REQUEST__ALTER_CLIENT_QUOTAS_REQUEST,
};

const ALTER_CONFIGS_REQUEST__ALTERABLE_CONFIG: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Value", V(0, MAX), T::Str),
];
const ALTER_CONFIGS_REQUEST__ALTER_CONFIGS_RESOURCE: &[F] = &[
    F::new("ResourceType", V(0, MAX), T::I8),
    F::new("ResourceName", V(0, MAX), T::Str),
    F::new(
        "Configs",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_configs_request::AlterableConfig>(),
            &T::Struct(ALTER_CONFIGS_REQUEST__ALTERABLE_CONFIG),
        ),
    ),
];
const ALTER_CONFIGS_REQUEST__ALTER_CONFIGS_REQUEST: &[F] = &[
    F::new(
        "Resources",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_configs_request::AlterConfigsResource>(),
            &T::Struct(ALTER_CONFIGS_REQUEST__ALTER_CONFIGS_RESOURCE),
        ),
    ),
    F::new("ValidateOnly", V(0, MAX), T::Bool),
];
pub(crate) static ALTER_CONFIGS_REQUEST: Message = Message {
    name: "AlterConfigsRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: ALTER_CONFIGS_REQUEST__ALTER_CONFIGS_REQUEST,
};

const ALTER_PARTITION_REASSIGNMENTS_REQUEST__REASSIGNABLE_PARTITION: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("Replicas", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const ALTER_PARTITION_REASSIGNMENTS_REQUEST__REASSIGNABLE_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<kafka_protocol::messages::alter_partition_reassignments_request::ReassignablePartition>(), &T::Struct(ALTER_PARTITION_REASSIGNMENTS_REQUEST__REASSIGNABLE_PARTITION))),
];
const ALTER_PARTITION_REASSIGNMENTS_REQUEST__ALTER_PARTITION_REASSIGNMENTS_REQUEST: &[F] = &[
    F::new("TimeoutMs", V(0, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::alter_partition_reassignments_request::ReassignableTopic,
            >(),
            &T::Struct(ALTER_PARTITION_REASSIGNMENTS_REQUEST__REASSIGNABLE_TOPIC),
        ),
    ),
];
pub(crate) static ALTER_PARTITION_REASSIGNMENTS_REQUEST: Message = Message {
    name: "AlterPartitionReassignmentsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: ALTER_PARTITION_REASSIGNMENTS_REQUEST__ALTER_PARTITION_REASSIGNMENTS_REQUEST,
};

const ALTER_PARTITION_REQUEST__BROKER_STATE: &[F] = &[
    F::new("BrokerId", V(3, MAX), T::I32),
    F::new("BrokerEpoch", V(3, MAX), T::I64),
];
const ALTER_PARTITION_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("LeaderEpoch", V(0, MAX), T::I32),
    F::new("NewIsr", V(0, 2), T::Array(size_of::<i32>(), &T::I32)),
    F::new(
        "NewIsrWithEpochs",
        V(3, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_partition_request::BrokerState>(),
            &T::Struct(ALTER_PARTITION_REQUEST__BROKER_STATE),
        ),
    ),
    F::new("LeaderRecoveryState", V(1, MAX), T::I8),
    F::new("PartitionEpoch", V(0, MAX), T::I32),
];
const ALTER_PARTITION_REQUEST__TOPIC_DATA: &[F] = &[
    F::new("TopicName", V(0, 1), T::Str),
    F::new("TopicId", V(2, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_partition_request::PartitionData>(),
            &T::Struct(ALTER_PARTITION_REQUEST__PARTITION_DATA),
        ),
    ),
];
const ALTER_PARTITION_REQUEST__ALTER_PARTITION_REQUEST: &[F] = &[
    F::new("BrokerId", V(0, MAX), T::I32),
    F::new("BrokerEpoch", V(0, MAX), T::I64),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::alter_partition_request::TopicData>(),
            &T::Struct(ALTER_PARTITION_REQUEST__TOPIC_DATA),
        ),
    ),
];
pub(crate) static ALTER_PARTITION_REQUEST: Message = Message {
    name: "AlterPartitionRequest",
    valid: V(0, 3),
    flexible_from: 0,
    fields: ALTER_PARTITION_REQUEST__ALTER_PARTITION_REQUEST,
};

const ALTER_REPLICA_LOG_DIRS_REQUEST__ALTER_REPLICA_LOG_DIR_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const ALTER_REPLICA_LOG_DIRS_REQUEST__ALTER_REPLICA_LOG_DIR: &[F] = &[
    F::new("Path", V(0, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::alter_replica_log_dirs_request::AlterReplicaLogDirTopic,
            >(),
            &T::Struct(ALTER_REPLICA_LOG_DIRS_REQUEST__ALTER_REPLICA_LOG_DIR_TOPIC),
        ),
    ),
];
const ALTER_REPLICA_LOG_DIRS_REQUEST__ALTER_REPLICA_LOG_DIRS_REQUEST: &[F] = &[F::new(
    "Dirs",
    V(0, MAX),
    T::Array(
        size_of::<kafka_protocol::messages::alter_replica_log_dirs_request::AlterReplicaLogDir>(),
        &T::Struct(ALTER_REPLICA_LOG_DIRS_REQUEST__ALTER_REPLICA_LOG_DIR),
    ),
)];
pub(crate) static ALTER_REPLICA_LOG_DIRS_REQUEST: Message = Message {
    name: "AlterReplicaLogDirsRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: ALTER_REPLICA_LOG_DIRS_REQUEST__ALTER_REPLICA_LOG_DIRS_REQUEST,
};

const ALTER_USER_SCRAM_CREDENTIALS_REQUEST__SCRAM_CREDENTIAL_DELETION: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Mechanism", V(0, MAX), T::I8),
];
const ALTER_USER_SCRAM_CREDENTIALS_REQUEST__SCRAM_CREDENTIAL_UPSERTION: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Mechanism", V(0, MAX), T::I8),
    F::new("Iterations", V(0, MAX), T::I32),
    F::new("Salt", V(0, MAX), T::Bytes),
    F::new("SaltedPassword", V(0, MAX), T::Bytes),
];
const ALTER_USER_SCRAM_CREDENTIALS_REQUEST__ALTER_USER_SCRAM_CREDENTIALS_REQUEST: &[F] = &[
    F::new("Deletions", V(0, MAX), T::Array(size_of::<kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialDeletion>(), &T::Struct(ALTER_USER_SCRAM_CREDENTIALS_REQUEST__SCRAM_CREDENTIAL_DELETION))),
    F::new("Upsertions", V(0, MAX), T::Array(size_of::<kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion>(), &T::Struct(ALTER_USER_SCRAM_CREDENTIALS_REQUEST__SCRAM_CREDENTIAL_UPSERTION))),
];
pub(crate) static ALTER_USER_SCRAM_CREDENTIALS_REQUEST: Message = Message {
    name: "AlterUserScramCredentialsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: ALTER_USER_SCRAM_CREDENTIALS_REQUEST__ALTER_USER_SCRAM_CREDENTIALS_REQUEST,
};

const API_VERSIONS_REQUEST__API_VERSIONS_REQUEST: &[F] = &[
    F::new("ClientSoftwareName", V(3, MAX), T::Str),
    F::new("ClientSoftwareVersion", V(3, MAX), T::Str),
];
pub(crate) static API_VERSIONS_REQUEST: Message = Message {
    name: "ApiVersionsRequest",
    valid: V(0, 4),
    flexible_from: 3,
    fields: API_VERSIONS_REQUEST__API_VERSIONS_REQUEST,
};

const ASSIGN_REPLICAS_TO_DIRS_REQUEST__PARTITION_DATA: &[F] =
    &[F::new("PartitionIndex", V(0, MAX), T::I32)];
const ASSIGN_REPLICAS_TO_DIRS_REQUEST__TOPIC_DATA: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::assign_replicas_to_dirs_request::PartitionData>(),
            &T::Struct(ASSIGN_REPLICAS_TO_DIRS_REQUEST__PARTITION_DATA),
        ),
    ),
];
const ASSIGN_REPLICAS_TO_DIRS_REQUEST__DIRECTORY_DATA: &[F] = &[
    F::new("Id", V(0, MAX), T::Uuid),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::assign_replicas_to_dirs_request::TopicData>(),
            &T::Struct(ASSIGN_REPLICAS_TO_DIRS_REQUEST__TOPIC_DATA),
        ),
    ),
];
const ASSIGN_REPLICAS_TO_DIRS_REQUEST__ASSIGN_REPLICAS_TO_DIRS_REQUEST: &[F] = &[
    F::new("BrokerId", V(0, MAX), T::I32),
    F::new("BrokerEpoch", V(0, MAX), T::I64),
    F::new(
        "Directories",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::assign_replicas_to_dirs_request::DirectoryData>(),
            &T::Struct(ASSIGN_REPLICAS_TO_DIRS_REQUEST__DIRECTORY_DATA),
        ),
    ),
];
pub(crate) static ASSIGN_REPLICAS_TO_DIRS_REQUEST: Message = Message {
    name: "AssignReplicasToDirsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: ASSIGN_REPLICAS_TO_DIRS_REQUEST__ASSIGN_REPLICAS_TO_DIRS_REQUEST,
};

const BEGIN_QUORUM_EPOCH_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("VoterDirectoryId", V(1, MAX), T::Uuid),
    F::new("LeaderId", V(0, MAX), T::I32),
    F::new("LeaderEpoch", V(0, MAX), T::I32),
];
const BEGIN_QUORUM_EPOCH_REQUEST__TOPIC_DATA: &[F] = &[
    F::new("TopicName", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::begin_quorum_epoch_request::PartitionData>(),
            &T::Struct(BEGIN_QUORUM_EPOCH_REQUEST__PARTITION_DATA),
        ),
    ),
];
const BEGIN_QUORUM_EPOCH_REQUEST__LEADER_ENDPOINT: &[F] = &[
    F::new("Name", V(1, MAX), T::Str),
    F::new("Host", V(1, MAX), T::Str),
    F::new("Port", V(1, MAX), T::U16),
];
const BEGIN_QUORUM_EPOCH_REQUEST__BEGIN_QUORUM_EPOCH_REQUEST: &[F] = &[
    F::new("ClusterId", V(0, MAX), T::Str),
    F::new("VoterId", V(1, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::begin_quorum_epoch_request::TopicData>(),
            &T::Struct(BEGIN_QUORUM_EPOCH_REQUEST__TOPIC_DATA),
        ),
    ),
    F::new(
        "LeaderEndpoints",
        V(1, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::begin_quorum_epoch_request::LeaderEndpoint>(),
            &T::Struct(BEGIN_QUORUM_EPOCH_REQUEST__LEADER_ENDPOINT),
        ),
    ),
];
pub(crate) static BEGIN_QUORUM_EPOCH_REQUEST: Message = Message {
    name: "BeginQuorumEpochRequest",
    valid: V(0, 1),
    flexible_from: 1,
    fields: BEGIN_QUORUM_EPOCH_REQUEST__BEGIN_QUORUM_EPOCH_REQUEST,
};

const BROKER_HEARTBEAT_REQUEST__BROKER_HEARTBEAT_REQUEST: &[F] = &[
    F::new("BrokerId", V(0, MAX), T::I32),
    F::new("BrokerEpoch", V(0, MAX), T::I64),
    F::new("CurrentMetadataOffset", V(0, MAX), T::I64),
    F::new("WantFence", V(0, MAX), T::Bool),
    F::new("WantShutDown", V(0, MAX), T::Bool),
    F::tagged(
        "OfflineLogDirs",
        V(1, MAX),
        0,
        V(1, MAX),
        T::Array(size_of::<[u8; 16]>(), &T::Uuid),
    ),
];
pub(crate) static BROKER_HEARTBEAT_REQUEST: Message = Message {
    name: "BrokerHeartbeatRequest",
    valid: V(0, 1),
    flexible_from: 0,
    fields: BROKER_HEARTBEAT_REQUEST__BROKER_HEARTBEAT_REQUEST,
};

const BROKER_REGISTRATION_REQUEST__LISTENER: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Host", V(0, MAX), T::Str),
    F::new("Port", V(0, MAX), T::U16),
    F::new("SecurityProtocol", V(0, MAX), T::I16),
];
const BROKER_REGISTRATION_REQUEST__FEATURE: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("MinSupportedVersion", V(0, MAX), T::I16),
    F::new("MaxSupportedVersion", V(0, MAX), T::I16),
];
const BROKER_REGISTRATION_REQUEST__BROKER_REGISTRATION_REQUEST: &[F] = &[
    F::new("BrokerId", V(0, MAX), T::I32),
    F::new("ClusterId", V(0, MAX), T::Str),
    F::new("IncarnationId", V(0, MAX), T::Uuid),
    F::new(
        "Listeners",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::broker_registration_request::Listener>(),
            &T::Struct(BROKER_REGISTRATION_REQUEST__LISTENER),
        ),
    ),
    F::new(
        "Features",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::broker_registration_request::Feature>(),
            &T::Struct(BROKER_REGISTRATION_REQUEST__FEATURE),
        ),
    ),
    F::new("Rack", V(0, MAX), T::Str),
    F::new("IsMigratingZkBroker", V(1, MAX), T::Bool),
    F::new(
        "LogDirs",
        V(2, MAX),
        T::Array(size_of::<[u8; 16]>(), &T::Uuid),
    ),
    F::new("PreviousBrokerEpoch", V(3, MAX), T::I64),
];
pub(crate) static BROKER_REGISTRATION_REQUEST: Message = Message {
    name: "BrokerRegistrationRequest",
    valid: V(0, 4),
    flexible_from: 0,
    fields: BROKER_REGISTRATION_REQUEST__BROKER_REGISTRATION_REQUEST,
};

const CONSUMER_GROUP_DESCRIBE_REQUEST__CONSUMER_GROUP_DESCRIBE_REQUEST: &[F] = &[
    F::new(
        "GroupIds",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new("IncludeAuthorizedOperations", V(0, MAX), T::Bool),
];
pub(crate) static CONSUMER_GROUP_DESCRIBE_REQUEST: Message = Message {
    name: "ConsumerGroupDescribeRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: CONSUMER_GROUP_DESCRIBE_REQUEST__CONSUMER_GROUP_DESCRIBE_REQUEST,
};

const CONSUMER_GROUP_HEARTBEAT_REQUEST__TOPIC_PARTITIONS: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const CONSUMER_GROUP_HEARTBEAT_REQUEST__CONSUMER_GROUP_HEARTBEAT_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("MemberEpoch", V(0, MAX), T::I32),
    F::new("InstanceId", V(0, MAX), T::Str),
    F::new("RackId", V(0, MAX), T::Str),
    F::new("RebalanceTimeoutMs", V(0, MAX), T::I32),
    F::new(
        "SubscribedTopicNames",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new("SubscribedTopicRegex", V(1, MAX), T::Str),
    F::new("ServerAssignor", V(0, MAX), T::Str),
    F::new(
        "TopicPartitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions>(
            ),
            &T::Struct(CONSUMER_GROUP_HEARTBEAT_REQUEST__TOPIC_PARTITIONS),
        ),
    ),
];
pub(crate) static CONSUMER_GROUP_HEARTBEAT_REQUEST: Message = Message {
    name: "ConsumerGroupHeartbeatRequest",
    valid: V(0, 1),
    flexible_from: 0,
    fields: CONSUMER_GROUP_HEARTBEAT_REQUEST__CONSUMER_GROUP_HEARTBEAT_REQUEST,
};

const CONSUMER_PROTOCOL_ASSIGNMENT__TOPIC_PARTITION: &[F] = &[
    F::new("Topic", V(0, MAX), T::Str),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const CONSUMER_PROTOCOL_ASSIGNMENT__CONSUMER_PROTOCOL_ASSIGNMENT: &[F] = &[
    F::new(
        "AssignedPartitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::consumer_protocol_assignment::TopicPartition>(),
            &T::Struct(CONSUMER_PROTOCOL_ASSIGNMENT__TOPIC_PARTITION),
        ),
    ),
    F::new("UserData", V(0, MAX), T::Bytes),
];
pub(crate) static CONSUMER_PROTOCOL_ASSIGNMENT: Message = Message {
    name: "ConsumerProtocolAssignment",
    valid: V(0, 3),
    flexible_from: i16::MAX,
    fields: CONSUMER_PROTOCOL_ASSIGNMENT__CONSUMER_PROTOCOL_ASSIGNMENT,
};

const CONSUMER_PROTOCOL_SUBSCRIPTION__TOPIC_PARTITION: &[F] = &[
    F::new("Topic", V(1, MAX), T::Str),
    F::new("Partitions", V(1, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const CONSUMER_PROTOCOL_SUBSCRIPTION__CONSUMER_PROTOCOL_SUBSCRIPTION: &[F] = &[
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new("UserData", V(0, MAX), T::Bytes),
    F::new(
        "OwnedPartitions",
        V(1, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::consumer_protocol_subscription::TopicPartition>(),
            &T::Struct(CONSUMER_PROTOCOL_SUBSCRIPTION__TOPIC_PARTITION),
        ),
    ),
    F::new("GenerationId", V(2, MAX), T::I32),
    F::new("RackId", V(3, MAX), T::Str),
];
pub(crate) static CONSUMER_PROTOCOL_SUBSCRIPTION: Message = Message {
    name: "ConsumerProtocolSubscription",
    valid: V(0, 3),
    flexible_from: i16::MAX,
    fields: CONSUMER_PROTOCOL_SUBSCRIPTION__CONSUMER_PROTOCOL_SUBSCRIPTION,
};

const CONTROLLER_REGISTRATION_REQUEST__LISTENER: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Host", V(0, MAX), T::Str),
    F::new("Port", V(0, MAX), T::U16),
    F::new("SecurityProtocol", V(0, MAX), T::I16),
];
const CONTROLLER_REGISTRATION_REQUEST__FEATURE: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("MinSupportedVersion", V(0, MAX), T::I16),
    F::new("MaxSupportedVersion", V(0, MAX), T::I16),
];
const CONTROLLER_REGISTRATION_REQUEST__CONTROLLER_REGISTRATION_REQUEST: &[F] = &[
    F::new("ControllerId", V(0, MAX), T::I32),
    F::new("IncarnationId", V(0, MAX), T::Uuid),
    F::new("ZkMigrationReady", V(0, MAX), T::Bool),
    F::new(
        "Listeners",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::controller_registration_request::Listener>(),
            &T::Struct(CONTROLLER_REGISTRATION_REQUEST__LISTENER),
        ),
    ),
    F::new(
        "Features",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::controller_registration_request::Feature>(),
            &T::Struct(CONTROLLER_REGISTRATION_REQUEST__FEATURE),
        ),
    ),
];
pub(crate) static CONTROLLER_REGISTRATION_REQUEST: Message = Message {
    name: "ControllerRegistrationRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: CONTROLLER_REGISTRATION_REQUEST__CONTROLLER_REGISTRATION_REQUEST,
};

const CREATE_ACLS_REQUEST__ACL_CREATION: &[F] = &[
    F::new("ResourceType", V(0, MAX), T::I8),
    F::new("ResourceName", V(0, MAX), T::Str),
    F::new("ResourcePatternType", V(1, MAX), T::I8),
    F::new("Principal", V(0, MAX), T::Str),
    F::new("Host", V(0, MAX), T::Str),
    F::new("Operation", V(0, MAX), T::I8),
    F::new("PermissionType", V(0, MAX), T::I8),
];
const CREATE_ACLS_REQUEST__CREATE_ACLS_REQUEST: &[F] = &[F::new(
    "Creations",
    V(0, MAX),
    T::Array(
        size_of::<kafka_protocol::messages::create_acls_request::AclCreation>(),
        &T::Struct(CREATE_ACLS_REQUEST__ACL_CREATION),
    ),
)];
pub(crate) static CREATE_ACLS_REQUEST: Message = Message {
    name: "CreateAclsRequest",
    valid: V(0, 3),
    flexible_from: 2,
    fields: CREATE_ACLS_REQUEST__CREATE_ACLS_REQUEST,
};

const CREATE_DELEGATION_TOKEN_REQUEST__CREATABLE_RENEWERS: &[F] = &[
    F::new("PrincipalType", V(0, MAX), T::Str),
    F::new("PrincipalName", V(0, MAX), T::Str),
];
const CREATE_DELEGATION_TOKEN_REQUEST__CREATE_DELEGATION_TOKEN_REQUEST: &[F] = &[
    F::new("OwnerPrincipalType", V(3, MAX), T::Str),
    F::new("OwnerPrincipalName", V(3, MAX), T::Str),
    F::new(
        "Renewers",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::create_delegation_token_request::CreatableRenewers>(
            ),
            &T::Struct(CREATE_DELEGATION_TOKEN_REQUEST__CREATABLE_RENEWERS),
        ),
    ),
    F::new("MaxLifetimeMs", V(0, MAX), T::I64),
];
pub(crate) static CREATE_DELEGATION_TOKEN_REQUEST: Message = Message {
    name: "CreateDelegationTokenRequest",
    valid: V(0, 3),
    flexible_from: 2,
    fields: CREATE_DELEGATION_TOKEN_REQUEST__CREATE_DELEGATION_TOKEN_REQUEST,
};

const CREATE_PARTITIONS_REQUEST__CREATE_PARTITIONS_ASSIGNMENT: &[F] = &[F::new(
    "BrokerIds",
    V(0, MAX),
    T::Array(size_of::<i32>(), &T::I32),
)];
const CREATE_PARTITIONS_REQUEST__CREATE_PARTITIONS_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Count", V(0, MAX), T::I32),
    F::new(
        "Assignments",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::create_partitions_request::CreatePartitionsAssignment,
            >(),
            &T::Struct(CREATE_PARTITIONS_REQUEST__CREATE_PARTITIONS_ASSIGNMENT),
        ),
    ),
];
const CREATE_PARTITIONS_REQUEST__CREATE_PARTITIONS_REQUEST: &[F] = &[
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic>(),
            &T::Struct(CREATE_PARTITIONS_REQUEST__CREATE_PARTITIONS_TOPIC),
        ),
    ),
    F::new("TimeoutMs", V(0, MAX), T::I32),
    F::new("ValidateOnly", V(0, MAX), T::Bool),
];
pub(crate) static CREATE_PARTITIONS_REQUEST: Message = Message {
    name: "CreatePartitionsRequest",
    valid: V(0, 3),
    flexible_from: 2,
    fields: CREATE_PARTITIONS_REQUEST__CREATE_PARTITIONS_REQUEST,
};

const CREATE_TOPICS_REQUEST__CREATABLE_REPLICA_ASSIGNMENT: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("BrokerIds", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const CREATE_TOPICS_REQUEST__CREATABLE_TOPIC_CONFIG: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Value", V(0, MAX), T::Str),
];
const CREATE_TOPICS_REQUEST__CREATABLE_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("NumPartitions", V(0, MAX), T::I32),
    F::new("ReplicationFactor", V(0, MAX), T::I16),
    F::new(
        "Assignments",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::create_topics_request::CreatableReplicaAssignment>(
            ),
            &T::Struct(CREATE_TOPICS_REQUEST__CREATABLE_REPLICA_ASSIGNMENT),
        ),
    ),
    F::new(
        "Configs",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::create_topics_request::CreatableTopicConfig>(),
            &T::Struct(CREATE_TOPICS_REQUEST__CREATABLE_TOPIC_CONFIG),
        ),
    ),
];
const CREATE_TOPICS_REQUEST__CREATE_TOPICS_REQUEST: &[F] = &[
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::create_topics_request::CreatableTopic>(),
            &T::Struct(CREATE_TOPICS_REQUEST__CREATABLE_TOPIC),
        ),
    ),
    F::new("timeoutMs", V(0, MAX), T::I32),
    F::new("validateOnly", V(1, MAX), T::Bool),
];
pub(crate) static CREATE_TOPICS_REQUEST: Message = Message {
    name: "CreateTopicsRequest",
    valid: V(0, 7),
    flexible_from: 5,
    fields: CREATE_TOPICS_REQUEST__CREATE_TOPICS_REQUEST,
};

const DELETE_ACLS_REQUEST__DELETE_ACLS_FILTER: &[F] = &[
    F::new("ResourceTypeFilter", V(0, MAX), T::I8),
    F::new("ResourceNameFilter", V(0, MAX), T::Str),
    F::new("PatternTypeFilter", V(1, MAX), T::I8),
    F::new("PrincipalFilter", V(0, MAX), T::Str),
    F::new("HostFilter", V(0, MAX), T::Str),
    F::new("Operation", V(0, MAX), T::I8),
    F::new("PermissionType", V(0, MAX), T::I8),
];
const DELETE_ACLS_REQUEST__DELETE_ACLS_REQUEST: &[F] = &[F::new(
    "Filters",
    V(0, MAX),
    T::Array(
        size_of::<kafka_protocol::messages::delete_acls_request::DeleteAclsFilter>(),
        &T::Struct(DELETE_ACLS_REQUEST__DELETE_ACLS_FILTER),
    ),
)];
pub(crate) static DELETE_ACLS_REQUEST: Message = Message {
    name: "DeleteAclsRequest",
    valid: V(0, 3),
    flexible_from: 2,
    fields: DELETE_ACLS_REQUEST__DELETE_ACLS_REQUEST,
};

const DELETE_GROUPS_REQUEST__DELETE_GROUPS_REQUEST: &[F] = &[F::new(
    "GroupsNames",
    V(0, MAX),
    T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
)];
pub(crate) static DELETE_GROUPS_REQUEST: Message = Message {
    name: "DeleteGroupsRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: DELETE_GROUPS_REQUEST__DELETE_GROUPS_REQUEST,
};

const DELETE_RECORDS_REQUEST__DELETE_RECORDS_PARTITION: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("Offset", V(0, MAX), T::I64),
];
const DELETE_RECORDS_REQUEST__DELETE_RECORDS_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::delete_records_request::DeleteRecordsPartition>(),
            &T::Struct(DELETE_RECORDS_REQUEST__DELETE_RECORDS_PARTITION),
        ),
    ),
];
const DELETE_RECORDS_REQUEST__DELETE_RECORDS_REQUEST: &[F] = &[
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::delete_records_request::DeleteRecordsTopic>(),
            &T::Struct(DELETE_RECORDS_REQUEST__DELETE_RECORDS_TOPIC),
        ),
    ),
    F::new("TimeoutMs", V(0, MAX), T::I32),
];
pub(crate) static DELETE_RECORDS_REQUEST: Message = Message {
    name: "DeleteRecordsRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: DELETE_RECORDS_REQUEST__DELETE_RECORDS_REQUEST,
};

const DELETE_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA: &[F] =
    &[F::new("Partition", V(0, MAX), T::I32)];
const DELETE_SHARE_GROUP_STATE_REQUEST__DELETE_STATE_DATA: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::delete_share_group_state_request::PartitionData>(),
            &T::Struct(DELETE_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA),
        ),
    ),
];
const DELETE_SHARE_GROUP_STATE_REQUEST__DELETE_SHARE_GROUP_STATE_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::delete_share_group_state_request::DeleteStateData>(
            ),
            &T::Struct(DELETE_SHARE_GROUP_STATE_REQUEST__DELETE_STATE_DATA),
        ),
    ),
];
pub(crate) static DELETE_SHARE_GROUP_STATE_REQUEST: Message = Message {
    name: "DeleteShareGroupStateRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: DELETE_SHARE_GROUP_STATE_REQUEST__DELETE_SHARE_GROUP_STATE_REQUEST,
};

const DELETE_TOPICS_REQUEST__DELETE_TOPIC_STATE: &[F] = &[
    F::new("Name", V(6, MAX), T::Str),
    F::new("TopicId", V(6, MAX), T::Uuid),
];
const DELETE_TOPICS_REQUEST__DELETE_TOPICS_REQUEST: &[F] = &[
    F::new(
        "Topics",
        V(6, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::delete_topics_request::DeleteTopicState>(),
            &T::Struct(DELETE_TOPICS_REQUEST__DELETE_TOPIC_STATE),
        ),
    ),
    F::new(
        "TopicNames",
        V(0, 5),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new("TimeoutMs", V(0, MAX), T::I32),
];
pub(crate) static DELETE_TOPICS_REQUEST: Message = Message {
    name: "DeleteTopicsRequest",
    valid: V(0, 6),
    flexible_from: 4,
    fields: DELETE_TOPICS_REQUEST__DELETE_TOPICS_REQUEST,
};

const DESCRIBE_ACLS_REQUEST__DESCRIBE_ACLS_REQUEST: &[F] = &[
    F::new("ResourceTypeFilter", V(0, MAX), T::I8),
    F::new("ResourceNameFilter", V(0, MAX), T::Str),
    F::new("PatternTypeFilter", V(1, MAX), T::I8),
    F::new("PrincipalFilter", V(0, MAX), T::Str),
    F::new("HostFilter", V(0, MAX), T::Str),
    F::new("Operation", V(0, MAX), T::I8),
    F::new("PermissionType", V(0, MAX), T::I8),
];
pub(crate) static DESCRIBE_ACLS_REQUEST: Message = Message {
    name: "DescribeAclsRequest",
    valid: V(0, 3),
    flexible_from: 2,
    fields: DESCRIBE_ACLS_REQUEST__DESCRIBE_ACLS_REQUEST,
};

const DESCRIBE_CLIENT_QUOTAS_REQUEST__COMPONENT_DATA: &[F] = &[
    F::new("EntityType", V(0, MAX), T::Str),
    F::new("MatchType", V(0, MAX), T::I8),
    F::new("Match", V(0, MAX), T::Str),
];
const DESCRIBE_CLIENT_QUOTAS_REQUEST__DESCRIBE_CLIENT_QUOTAS_REQUEST: &[F] = &[
    F::new(
        "Components",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::describe_client_quotas_request::ComponentData>(),
            &T::Struct(DESCRIBE_CLIENT_QUOTAS_REQUEST__COMPONENT_DATA),
        ),
    ),
    F::new("Strict", V(0, MAX), T::Bool),
];
pub(crate) static DESCRIBE_CLIENT_QUOTAS_REQUEST: Message = Message {
    name: "DescribeClientQuotasRequest",
    valid: V(0, 1),
    flexible_from: 1,
    fields: DESCRIBE_CLIENT_QUOTAS_REQUEST__DESCRIBE_CLIENT_QUOTAS_REQUEST,
};

const DESCRIBE_CLUSTER_REQUEST__DESCRIBE_CLUSTER_REQUEST: &[F] = &[
    F::new("IncludeClusterAuthorizedOperations", V(0, MAX), T::Bool),
    F::new("EndpointType", V(1, MAX), T::I8),
];
pub(crate) static DESCRIBE_CLUSTER_REQUEST: Message = Message {
    name: "DescribeClusterRequest",
    valid: V(0, 1),
    flexible_from: 0,
    fields: DESCRIBE_CLUSTER_REQUEST__DESCRIBE_CLUSTER_REQUEST,
};

const DESCRIBE_CONFIGS_REQUEST__DESCRIBE_CONFIGS_RESOURCE: &[F] = &[
    F::new("ResourceType", V(0, MAX), T::I8),
    F::new("ResourceName", V(0, MAX), T::Str),
    F::new(
        "ConfigurationKeys",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
];
const DESCRIBE_CONFIGS_REQUEST__DESCRIBE_CONFIGS_REQUEST: &[F] = &[
    F::new(
        "Resources",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::describe_configs_request::DescribeConfigsResource>(
            ),
            &T::Struct(DESCRIBE_CONFIGS_REQUEST__DESCRIBE_CONFIGS_RESOURCE),
        ),
    ),
    F::new("IncludeSynonyms", V(1, MAX), T::Bool),
    F::new("IncludeDocumentation", V(3, MAX), T::Bool),
];
pub(crate) static DESCRIBE_CONFIGS_REQUEST: Message = Message {
    name: "DescribeConfigsRequest",
    valid: V(0, 4),
    flexible_from: 4,
    fields: DESCRIBE_CONFIGS_REQUEST__DESCRIBE_CONFIGS_REQUEST,
};

const DESCRIBE_DELEGATION_TOKEN_REQUEST__DESCRIBE_DELEGATION_TOKEN_OWNER: &[F] = &[
    F::new("PrincipalType", V(0, MAX), T::Str),
    F::new("PrincipalName", V(0, MAX), T::Str),
];
const DESCRIBE_DELEGATION_TOKEN_REQUEST__DESCRIBE_DELEGATION_TOKEN_REQUEST: &[F] = &[
    F::new("Owners", V(0, MAX), T::Array(size_of::<kafka_protocol::messages::describe_delegation_token_request::DescribeDelegationTokenOwner>(), &T::Struct(DESCRIBE_DELEGATION_TOKEN_REQUEST__DESCRIBE_DELEGATION_TOKEN_OWNER))),
];
pub(crate) static DESCRIBE_DELEGATION_TOKEN_REQUEST: Message = Message {
    name: "DescribeDelegationTokenRequest",
    valid: V(0, 3),
    flexible_from: 2,
    fields: DESCRIBE_DELEGATION_TOKEN_REQUEST__DESCRIBE_DELEGATION_TOKEN_REQUEST,
};

const DESCRIBE_GROUPS_REQUEST__DESCRIBE_GROUPS_REQUEST: &[F] = &[
    F::new(
        "Groups",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new("IncludeAuthorizedOperations", V(3, MAX), T::Bool),
];
pub(crate) static DESCRIBE_GROUPS_REQUEST: Message = Message {
    name: "DescribeGroupsRequest",
    valid: V(0, 6),
    flexible_from: 5,
    fields: DESCRIBE_GROUPS_REQUEST__DESCRIBE_GROUPS_REQUEST,
};

const DESCRIBE_LOG_DIRS_REQUEST__DESCRIBABLE_LOG_DIR_TOPIC: &[F] = &[
    F::new("Topic", V(0, MAX), T::Str),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const DESCRIBE_LOG_DIRS_REQUEST__DESCRIBE_LOG_DIRS_REQUEST: &[F] = &[F::new(
    "Topics",
    V(0, MAX),
    T::Array(
        size_of::<kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic>(),
        &T::Struct(DESCRIBE_LOG_DIRS_REQUEST__DESCRIBABLE_LOG_DIR_TOPIC),
    ),
)];
pub(crate) static DESCRIBE_LOG_DIRS_REQUEST: Message = Message {
    name: "DescribeLogDirsRequest",
    valid: V(0, 4),
    flexible_from: 2,
    fields: DESCRIBE_LOG_DIRS_REQUEST__DESCRIBE_LOG_DIRS_REQUEST,
};

const DESCRIBE_PRODUCERS_REQUEST__TOPIC_REQUEST: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "PartitionIndexes",
        V(0, MAX),
        T::Array(size_of::<i32>(), &T::I32),
    ),
];
const DESCRIBE_PRODUCERS_REQUEST__DESCRIBE_PRODUCERS_REQUEST: &[F] = &[F::new(
    "Topics",
    V(0, MAX),
    T::Array(
        size_of::<kafka_protocol::messages::describe_producers_request::TopicRequest>(),
        &T::Struct(DESCRIBE_PRODUCERS_REQUEST__TOPIC_REQUEST),
    ),
)];
pub(crate) static DESCRIBE_PRODUCERS_REQUEST: Message = Message {
    name: "DescribeProducersRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: DESCRIBE_PRODUCERS_REQUEST__DESCRIBE_PRODUCERS_REQUEST,
};

const DESCRIBE_QUORUM_REQUEST__PARTITION_DATA: &[F] =
    &[F::new("PartitionIndex", V(0, MAX), T::I32)];
const DESCRIBE_QUORUM_REQUEST__TOPIC_DATA: &[F] = &[
    F::new("TopicName", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::describe_quorum_request::PartitionData>(),
            &T::Struct(DESCRIBE_QUORUM_REQUEST__PARTITION_DATA),
        ),
    ),
];
const DESCRIBE_QUORUM_REQUEST__DESCRIBE_QUORUM_REQUEST: &[F] = &[F::new(
    "Topics",
    V(0, MAX),
    T::Array(
        size_of::<kafka_protocol::messages::describe_quorum_request::TopicData>(),
        &T::Struct(DESCRIBE_QUORUM_REQUEST__TOPIC_DATA),
    ),
)];
pub(crate) static DESCRIBE_QUORUM_REQUEST: Message = Message {
    name: "DescribeQuorumRequest",
    valid: V(0, 2),
    flexible_from: 0,
    fields: DESCRIBE_QUORUM_REQUEST__DESCRIBE_QUORUM_REQUEST,
};

const DESCRIBE_TOPIC_PARTITIONS_REQUEST__TOPIC_REQUEST: &[F] = &[F::new("Name", V(0, MAX), T::Str)];
const DESCRIBE_TOPIC_PARTITIONS_REQUEST__CURSOR: &[F] = &[
    F::new("TopicName", V(0, MAX), T::Str),
    F::new("PartitionIndex", V(0, MAX), T::I32),
];
const DESCRIBE_TOPIC_PARTITIONS_REQUEST__DESCRIBE_TOPIC_PARTITIONS_REQUEST: &[F] = &[
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::describe_topic_partitions_request::TopicRequest>(),
            &T::Struct(DESCRIBE_TOPIC_PARTITIONS_REQUEST__TOPIC_REQUEST),
        ),
    ),
    F::new("ResponsePartitionLimit", V(0, MAX), T::I32),
    F::new(
        "Cursor",
        V(0, MAX),
        T::OptStruct(V(0, MAX), DESCRIBE_TOPIC_PARTITIONS_REQUEST__CURSOR),
    ),
];
pub(crate) static DESCRIBE_TOPIC_PARTITIONS_REQUEST: Message = Message {
    name: "DescribeTopicPartitionsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: DESCRIBE_TOPIC_PARTITIONS_REQUEST__DESCRIBE_TOPIC_PARTITIONS_REQUEST,
};

const DESCRIBE_TRANSACTIONS_REQUEST__DESCRIBE_TRANSACTIONS_REQUEST: &[F] = &[F::new(
    "TransactionalIds",
    V(0, MAX),
    T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
)];
pub(crate) static DESCRIBE_TRANSACTIONS_REQUEST: Message = Message {
    name: "DescribeTransactionsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: DESCRIBE_TRANSACTIONS_REQUEST__DESCRIBE_TRANSACTIONS_REQUEST,
};

const DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST__USER_NAME: &[F] =
    &[F::new("Name", V(0, MAX), T::Str)];
const DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST__DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST: &[F] =
    &[F::new(
        "Users",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::describe_user_scram_credentials_request::UserName>(
            ),
            &T::Struct(DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST__USER_NAME),
        ),
    )];
pub(crate) static DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST: Message = Message {
    name: "DescribeUserScramCredentialsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST__DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST,
};

const ELECT_LEADERS_REQUEST__TOPIC_PARTITIONS: &[F] = &[
    F::new("Topic", V(0, MAX), T::Str),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const ELECT_LEADERS_REQUEST__ELECT_LEADERS_REQUEST: &[F] = &[
    F::new("ElectionType", V(1, MAX), T::I8),
    F::new(
        "TopicPartitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::elect_leaders_request::TopicPartitions>(),
            &T::Struct(ELECT_LEADERS_REQUEST__TOPIC_PARTITIONS),
        ),
    ),
    F::new("TimeoutMs", V(0, MAX), T::I32),
];
pub(crate) static ELECT_LEADERS_REQUEST: Message = Message {
    name: "ElectLeadersRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: ELECT_LEADERS_REQUEST__ELECT_LEADERS_REQUEST,
};

const END_QUORUM_EPOCH_REQUEST__REPLICA_INFO: &[F] = &[
    F::new("CandidateId", V(1, MAX), T::I32),
    F::new("CandidateDirectoryId", V(1, MAX), T::Uuid),
];
const END_QUORUM_EPOCH_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("LeaderId", V(0, MAX), T::I32),
    F::new("LeaderEpoch", V(0, MAX), T::I32),
    F::new(
        "PreferredSuccessors",
        V(0, 0),
        T::Array(size_of::<i32>(), &T::I32),
    ),
    F::new(
        "PreferredCandidates",
        V(1, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::end_quorum_epoch_request::ReplicaInfo>(),
            &T::Struct(END_QUORUM_EPOCH_REQUEST__REPLICA_INFO),
        ),
    ),
];
const END_QUORUM_EPOCH_REQUEST__TOPIC_DATA: &[F] = &[
    F::new("TopicName", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::end_quorum_epoch_request::PartitionData>(),
            &T::Struct(END_QUORUM_EPOCH_REQUEST__PARTITION_DATA),
        ),
    ),
];
const END_QUORUM_EPOCH_REQUEST__LEADER_ENDPOINT: &[F] = &[
    F::new("Name", V(1, MAX), T::Str),
    F::new("Host", V(1, MAX), T::Str),
    F::new("Port", V(1, MAX), T::U16),
];
const END_QUORUM_EPOCH_REQUEST__END_QUORUM_EPOCH_REQUEST: &[F] = &[
    F::new("ClusterId", V(0, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::end_quorum_epoch_request::TopicData>(),
            &T::Struct(END_QUORUM_EPOCH_REQUEST__TOPIC_DATA),
        ),
    ),
    F::new(
        "LeaderEndpoints",
        V(1, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::end_quorum_epoch_request::LeaderEndpoint>(),
            &T::Struct(END_QUORUM_EPOCH_REQUEST__LEADER_ENDPOINT),
        ),
    ),
];
pub(crate) static END_QUORUM_EPOCH_REQUEST: Message = Message {
    name: "EndQuorumEpochRequest",
    valid: V(0, 1),
    flexible_from: 1,
    fields: END_QUORUM_EPOCH_REQUEST__END_QUORUM_EPOCH_REQUEST,
};

const END_TXN_REQUEST__END_TXN_REQUEST: &[F] = &[
    F::new("TransactionalId", V(0, MAX), T::Str),
    F::new("ProducerId", V(0, MAX), T::I64),
    F::new("ProducerEpoch", V(0, MAX), T::I16),
    F::new("Committed", V(0, MAX), T::Bool),
];
pub(crate) static END_TXN_REQUEST: Message = Message {
    name: "EndTxnRequest",
    valid: V(0, 5),
    flexible_from: 3,
    fields: END_TXN_REQUEST__END_TXN_REQUEST,
};

const ENVELOPE_REQUEST__ENVELOPE_REQUEST: &[F] = &[
    F::new("RequestData", V(0, MAX), T::Bytes),
    F::new("RequestPrincipal", V(0, MAX), T::Bytes),
    F::new("ClientHostAddress", V(0, MAX), T::Bytes),
];
pub(crate) static ENVELOPE_REQUEST: Message = Message {
    name: "EnvelopeRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: ENVELOPE_REQUEST__ENVELOPE_REQUEST,
};

const EXPIRE_DELEGATION_TOKEN_REQUEST__EXPIRE_DELEGATION_TOKEN_REQUEST: &[F] = &[
    F::new("Hmac", V(0, MAX), T::Bytes),
    F::new("ExpiryTimePeriodMs", V(0, MAX), T::I64),
];
pub(crate) static EXPIRE_DELEGATION_TOKEN_REQUEST: Message = Message {
    name: "ExpireDelegationTokenRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: EXPIRE_DELEGATION_TOKEN_REQUEST__EXPIRE_DELEGATION_TOKEN_REQUEST,
};

const FETCH_REQUEST__REPLICA_STATE: &[F] = &[
    F::new("ReplicaId", V(15, MAX), T::I32),
    F::new("ReplicaEpoch", V(15, MAX), T::I64),
];
const FETCH_REQUEST__FETCH_PARTITION: &[F] = &[
    F::new("Partition", V(0, MAX), T::I32),
    F::new("CurrentLeaderEpoch", V(9, MAX), T::I32),
    F::new("FetchOffset", V(0, MAX), T::I64),
    F::new("LastFetchedEpoch", V(12, MAX), T::I32),
    F::new("LogStartOffset", V(5, MAX), T::I64),
    F::new("PartitionMaxBytes", V(0, MAX), T::I32),
    F::tagged("ReplicaDirectoryId", V(17, MAX), 0, V(17, MAX), T::Uuid),
];
const FETCH_REQUEST__FETCH_TOPIC: &[F] = &[
    F::new("Topic", V(0, 12), T::Str),
    F::new("TopicId", V(13, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::fetch_request::FetchPartition>(),
            &T::Struct(FETCH_REQUEST__FETCH_PARTITION),
        ),
    ),
];
const FETCH_REQUEST__FORGOTTEN_TOPIC: &[F] = &[
    F::new("Topic", V(7, 12), T::Str),
    F::new("TopicId", V(13, MAX), T::Uuid),
    F::new("Partitions", V(7, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const FETCH_REQUEST__FETCH_REQUEST: &[F] = &[
    F::tagged("ClusterId", V(12, MAX), 0, V(12, MAX), T::Str),
    F::new("ReplicaId", V(0, 14), T::I32),
    F::tagged(
        "ReplicaState",
        V(15, MAX),
        1,
        V(15, MAX),
        T::Struct(FETCH_REQUEST__REPLICA_STATE),
    ),
    F::new("MaxWaitMs", V(0, MAX), T::I32),
    F::new("MinBytes", V(0, MAX), T::I32),
    F::new("MaxBytes", V(3, MAX), T::I32),
    F::new("IsolationLevel", V(4, MAX), T::I8),
    F::new("SessionId", V(7, MAX), T::I32),
    F::new("SessionEpoch", V(7, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::fetch_request::FetchTopic>(),
            &T::Struct(FETCH_REQUEST__FETCH_TOPIC),
        ),
    ),
    F::new(
        "ForgottenTopicsData",
        V(7, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::fetch_request::ForgottenTopic>(),
            &T::Struct(FETCH_REQUEST__FORGOTTEN_TOPIC),
        ),
    ),
    F::new("RackId", V(11, MAX), T::Str),
];
pub(crate) static FETCH_REQUEST: Message = Message {
    name: "FetchRequest",
    valid: V(0, 17),
    flexible_from: 12,
    fields: FETCH_REQUEST__FETCH_REQUEST,
};

const FETCH_SNAPSHOT_REQUEST__SNAPSHOT_ID: &[F] = &[
    F::new("EndOffset", V(0, MAX), T::I64),
    F::new("Epoch", V(0, MAX), T::I32),
];
const FETCH_SNAPSHOT_REQUEST__PARTITION_SNAPSHOT: &[F] = &[
    F::new("Partition", V(0, MAX), T::I32),
    F::new("CurrentLeaderEpoch", V(0, MAX), T::I32),
    F::new(
        "SnapshotId",
        V(0, MAX),
        T::Struct(FETCH_SNAPSHOT_REQUEST__SNAPSHOT_ID),
    ),
    F::new("Position", V(0, MAX), T::I64),
    F::tagged("ReplicaDirectoryId", V(1, MAX), 0, V(1, MAX), T::Uuid),
];
const FETCH_SNAPSHOT_REQUEST__TOPIC_SNAPSHOT: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::fetch_snapshot_request::PartitionSnapshot>(),
            &T::Struct(FETCH_SNAPSHOT_REQUEST__PARTITION_SNAPSHOT),
        ),
    ),
];
const FETCH_SNAPSHOT_REQUEST__FETCH_SNAPSHOT_REQUEST: &[F] = &[
    F::tagged("ClusterId", V(0, MAX), 0, V(0, MAX), T::Str),
    F::new("ReplicaId", V(0, MAX), T::I32),
    F::new("MaxBytes", V(0, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::fetch_snapshot_request::TopicSnapshot>(),
            &T::Struct(FETCH_SNAPSHOT_REQUEST__TOPIC_SNAPSHOT),
        ),
    ),
];
pub(crate) static FETCH_SNAPSHOT_REQUEST: Message = Message {
    name: "FetchSnapshotRequest",
    valid: V(0, 1),
    flexible_from: 0,
    fields: FETCH_SNAPSHOT_REQUEST__FETCH_SNAPSHOT_REQUEST,
};

const FIND_COORDINATOR_REQUEST__FIND_COORDINATOR_REQUEST: &[F] = &[
    F::new("Key", V(0, 3), T::Str),
    F::new("KeyType", V(1, MAX), T::I8),
    F::new(
        "CoordinatorKeys",
        V(4, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
];
pub(crate) static FIND_COORDINATOR_REQUEST: Message = Message {
    name: "FindCoordinatorRequest",
    valid: V(0, 6),
    flexible_from: 3,
    fields: FIND_COORDINATOR_REQUEST__FIND_COORDINATOR_REQUEST,
};

const GET_TELEMETRY_SUBSCRIPTIONS_REQUEST__GET_TELEMETRY_SUBSCRIPTIONS_REQUEST: &[F] =
    &[F::new("ClientInstanceId", V(0, MAX), T::Uuid)];
pub(crate) static GET_TELEMETRY_SUBSCRIPTIONS_REQUEST: Message = Message {
    name: "GetTelemetrySubscriptionsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: GET_TELEMETRY_SUBSCRIPTIONS_REQUEST__GET_TELEMETRY_SUBSCRIPTIONS_REQUEST,
};

const HEARTBEAT_REQUEST__HEARTBEAT_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("GenerationId", V(0, MAX), T::I32),
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("GroupInstanceId", V(3, MAX), T::Str),
];
pub(crate) static HEARTBEAT_REQUEST: Message = Message {
    name: "HeartbeatRequest",
    valid: V(0, 4),
    flexible_from: 4,
    fields: HEARTBEAT_REQUEST__HEARTBEAT_REQUEST,
};

const INCREMENTAL_ALTER_CONFIGS_REQUEST__ALTERABLE_CONFIG: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("ConfigOperation", V(0, MAX), T::I8),
    F::new("Value", V(0, MAX), T::Str),
];
const INCREMENTAL_ALTER_CONFIGS_REQUEST__ALTER_CONFIGS_RESOURCE: &[F] = &[
    F::new("ResourceType", V(0, MAX), T::I8),
    F::new("ResourceName", V(0, MAX), T::Str),
    F::new(
        "Configs",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig>(
            ),
            &T::Struct(INCREMENTAL_ALTER_CONFIGS_REQUEST__ALTERABLE_CONFIG),
        ),
    ),
];
const INCREMENTAL_ALTER_CONFIGS_REQUEST__INCREMENTAL_ALTER_CONFIGS_REQUEST: &[F] = &[
    F::new(
        "Resources",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
            >(),
            &T::Struct(INCREMENTAL_ALTER_CONFIGS_REQUEST__ALTER_CONFIGS_RESOURCE),
        ),
    ),
    F::new("ValidateOnly", V(0, MAX), T::Bool),
];
pub(crate) static INCREMENTAL_ALTER_CONFIGS_REQUEST: Message = Message {
    name: "IncrementalAlterConfigsRequest",
    valid: V(0, 1),
    flexible_from: 1,
    fields: INCREMENTAL_ALTER_CONFIGS_REQUEST__INCREMENTAL_ALTER_CONFIGS_REQUEST,
};

const INIT_PRODUCER_ID_REQUEST__INIT_PRODUCER_ID_REQUEST: &[F] = &[
    F::new("TransactionalId", V(0, MAX), T::Str),
    F::new("TransactionTimeoutMs", V(0, MAX), T::I32),
    F::new("ProducerId", V(3, MAX), T::I64),
    F::new("ProducerEpoch", V(3, MAX), T::I16),
];
pub(crate) static INIT_PRODUCER_ID_REQUEST: Message = Message {
    name: "InitProducerIdRequest",
    valid: V(0, 5),
    flexible_from: 2,
    fields: INIT_PRODUCER_ID_REQUEST__INIT_PRODUCER_ID_REQUEST,
};

const INITIALIZE_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("Partition", V(0, MAX), T::I32),
    F::new("StateEpoch", V(0, MAX), T::I32),
    F::new("StartOffset", V(0, MAX), T::I64),
];
const INITIALIZE_SHARE_GROUP_STATE_REQUEST__INITIALIZE_STATE_DATA: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::initialize_share_group_state_request::PartitionData>(
            ),
            &T::Struct(INITIALIZE_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA),
        ),
    ),
];
const INITIALIZE_SHARE_GROUP_STATE_REQUEST__INITIALIZE_SHARE_GROUP_STATE_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::initialize_share_group_state_request::InitializeStateData,
            >(),
            &T::Struct(INITIALIZE_SHARE_GROUP_STATE_REQUEST__INITIALIZE_STATE_DATA),
        ),
    ),
];
pub(crate) static INITIALIZE_SHARE_GROUP_STATE_REQUEST: Message = Message {
    name: "InitializeShareGroupStateRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: INITIALIZE_SHARE_GROUP_STATE_REQUEST__INITIALIZE_SHARE_GROUP_STATE_REQUEST,
};

const JOIN_GROUP_REQUEST__JOIN_GROUP_REQUEST_PROTOCOL: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Metadata", V(0, MAX), T::Bytes),
];
const JOIN_GROUP_REQUEST__JOIN_GROUP_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("SessionTimeoutMs", V(0, MAX), T::I32),
    F::new("RebalanceTimeoutMs", V(1, MAX), T::I32),
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("GroupInstanceId", V(5, MAX), T::Str),
    F::new("ProtocolType", V(0, MAX), T::Str),
    F::new(
        "Protocols",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol>(),
            &T::Struct(JOIN_GROUP_REQUEST__JOIN_GROUP_REQUEST_PROTOCOL),
        ),
    ),
    F::new("Reason", V(8, MAX), T::Str),
];
pub(crate) static JOIN_GROUP_REQUEST: Message = Message {
    name: "JoinGroupRequest",
    valid: V(0, 9),
    flexible_from: 6,
    fields: JOIN_GROUP_REQUEST__JOIN_GROUP_REQUEST,
};

const LEAVE_GROUP_REQUEST__MEMBER_IDENTITY: &[F] = &[
    F::new("MemberId", V(3, MAX), T::Str),
    F::new("GroupInstanceId", V(3, MAX), T::Str),
    F::new("Reason", V(5, MAX), T::Str),
];
const LEAVE_GROUP_REQUEST__LEAVE_GROUP_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("MemberId", V(0, 2), T::Str),
    F::new(
        "Members",
        V(3, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::leave_group_request::MemberIdentity>(),
            &T::Struct(LEAVE_GROUP_REQUEST__MEMBER_IDENTITY),
        ),
    ),
];
pub(crate) static LEAVE_GROUP_REQUEST: Message = Message {
    name: "LeaveGroupRequest",
    valid: V(0, 5),
    flexible_from: 4,
    fields: LEAVE_GROUP_REQUEST__LEAVE_GROUP_REQUEST,
};

const LIST_GROUPS_REQUEST__LIST_GROUPS_REQUEST: &[F] = &[
    F::new(
        "StatesFilter",
        V(4, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new(
        "TypesFilter",
        V(5, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
];
pub(crate) static LIST_GROUPS_REQUEST: Message = Message {
    name: "ListGroupsRequest",
    valid: V(0, 5),
    flexible_from: 3,
    fields: LIST_GROUPS_REQUEST__LIST_GROUPS_REQUEST,
};

const LIST_OFFSETS_REQUEST__LIST_OFFSETS_PARTITION: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("CurrentLeaderEpoch", V(4, MAX), T::I32),
    F::new("Timestamp", V(0, MAX), T::I64),
    F::new("MaxNumOffsets", V(0, 0), T::I32),
];
const LIST_OFFSETS_REQUEST__LIST_OFFSETS_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::list_offsets_request::ListOffsetsPartition>(),
            &T::Struct(LIST_OFFSETS_REQUEST__LIST_OFFSETS_PARTITION),
        ),
    ),
];
const LIST_OFFSETS_REQUEST__LIST_OFFSETS_REQUEST: &[F] = &[
    F::new("ReplicaId", V(0, MAX), T::I32),
    F::new("IsolationLevel", V(2, MAX), T::I8),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::list_offsets_request::ListOffsetsTopic>(),
            &T::Struct(LIST_OFFSETS_REQUEST__LIST_OFFSETS_TOPIC),
        ),
    ),
    F::new("TimeoutMs", V(10, MAX), T::I32),
];
pub(crate) static LIST_OFFSETS_REQUEST: Message = Message {
    name: "ListOffsetsRequest",
    valid: V(0, 10),
    flexible_from: 6,
    fields: LIST_OFFSETS_REQUEST__LIST_OFFSETS_REQUEST,
};

const LIST_PARTITION_REASSIGNMENTS_REQUEST__LIST_PARTITION_REASSIGNMENTS_TOPICS: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "PartitionIndexes",
        V(0, MAX),
        T::Array(size_of::<i32>(), &T::I32),
    ),
];
const LIST_PARTITION_REASSIGNMENTS_REQUEST__LIST_PARTITION_REASSIGNMENTS_REQUEST: &[F] = &[
    F::new("TimeoutMs", V(0, MAX), T::I32),
    F::new("Topics", V(0, MAX), T::Array(size_of::<kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics>(), &T::Struct(LIST_PARTITION_REASSIGNMENTS_REQUEST__LIST_PARTITION_REASSIGNMENTS_TOPICS))),
];
pub(crate) static LIST_PARTITION_REASSIGNMENTS_REQUEST: Message = Message {
    name: "ListPartitionReassignmentsRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: LIST_PARTITION_REASSIGNMENTS_REQUEST__LIST_PARTITION_REASSIGNMENTS_REQUEST,
};

const LIST_TRANSACTIONS_REQUEST__LIST_TRANSACTIONS_REQUEST: &[F] = &[
    F::new(
        "StateFilters",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new(
        "ProducerIdFilters",
        V(0, MAX),
        T::Array(size_of::<i64>(), &T::I64),
    ),
    F::new("DurationFilter", V(1, MAX), T::I64),
];
pub(crate) static LIST_TRANSACTIONS_REQUEST: Message = Message {
    name: "ListTransactionsRequest",
    valid: V(0, 1),
    flexible_from: 0,
    fields: LIST_TRANSACTIONS_REQUEST__LIST_TRANSACTIONS_REQUEST,
};

const METADATA_REQUEST__METADATA_REQUEST_TOPIC: &[F] = &[
    F::new("TopicId", V(10, MAX), T::Uuid),
    F::new("Name", V(0, MAX), T::Str),
];
const METADATA_REQUEST__METADATA_REQUEST: &[F] = &[
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::metadata_request::MetadataRequestTopic>(),
            &T::Struct(METADATA_REQUEST__METADATA_REQUEST_TOPIC),
        ),
    ),
    F::new("AllowAutoTopicCreation", V(4, MAX), T::Bool),
    F::new("IncludeClusterAuthorizedOperations", V(8, 10), T::Bool),
    F::new("IncludeTopicAuthorizedOperations", V(8, MAX), T::Bool),
];
pub(crate) static METADATA_REQUEST: Message = Message {
    name: "MetadataRequest",
    valid: V(0, 12),
    flexible_from: 9,
    fields: METADATA_REQUEST__METADATA_REQUEST,
};

const OFFSET_COMMIT_REQUEST__OFFSET_COMMIT_REQUEST_PARTITION: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("CommittedOffset", V(0, MAX), T::I64),
    F::new("CommittedLeaderEpoch", V(6, MAX), T::I32),
    F::new("CommitTimestamp", V(1, 1), T::I64),
    F::new("CommittedMetadata", V(0, MAX), T::Str),
];
const OFFSET_COMMIT_REQUEST__OFFSET_COMMIT_REQUEST_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::offset_commit_request::OffsetCommitRequestPartition>(
            ),
            &T::Struct(OFFSET_COMMIT_REQUEST__OFFSET_COMMIT_REQUEST_PARTITION),
        ),
    ),
];
const OFFSET_COMMIT_REQUEST__OFFSET_COMMIT_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("GenerationIdOrMemberEpoch", V(1, MAX), T::I32),
    F::new("MemberId", V(1, MAX), T::Str),
    F::new("GroupInstanceId", V(7, MAX), T::Str),
    F::new("RetentionTimeMs", V(2, 4), T::I64),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic>(),
            &T::Struct(OFFSET_COMMIT_REQUEST__OFFSET_COMMIT_REQUEST_TOPIC),
        ),
    ),
];
pub(crate) static OFFSET_COMMIT_REQUEST: Message = Message {
    name: "OffsetCommitRequest",
    valid: V(0, 9),
    flexible_from: 8,
    fields: OFFSET_COMMIT_REQUEST__OFFSET_COMMIT_REQUEST,
};

const OFFSET_DELETE_REQUEST__OFFSET_DELETE_REQUEST_PARTITION: &[F] =
    &[F::new("PartitionIndex", V(0, MAX), T::I32)];
const OFFSET_DELETE_REQUEST__OFFSET_DELETE_REQUEST_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::offset_delete_request::OffsetDeleteRequestPartition>(
            ),
            &T::Struct(OFFSET_DELETE_REQUEST__OFFSET_DELETE_REQUEST_PARTITION),
        ),
    ),
];
const OFFSET_DELETE_REQUEST__OFFSET_DELETE_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::offset_delete_request::OffsetDeleteRequestTopic>(),
            &T::Struct(OFFSET_DELETE_REQUEST__OFFSET_DELETE_REQUEST_TOPIC),
        ),
    ),
];
pub(crate) static OFFSET_DELETE_REQUEST: Message = Message {
    name: "OffsetDeleteRequest",
    valid: V(0, 0),
    flexible_from: i16::MAX,
    fields: OFFSET_DELETE_REQUEST__OFFSET_DELETE_REQUEST,
};

const OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST_TOPIC: &[F] = &[
    F::new("Name", V(0, 7), T::Str),
    F::new(
        "PartitionIndexes",
        V(0, 7),
        T::Array(size_of::<i32>(), &T::I32),
    ),
];
const OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST_TOPICS: &[F] = &[
    F::new("Name", V(8, MAX), T::Str),
    F::new(
        "PartitionIndexes",
        V(8, MAX),
        T::Array(size_of::<i32>(), &T::I32),
    ),
];
const OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST_GROUP: &[F] = &[
    F::new("GroupId", V(8, MAX), T::Str),
    F::new("MemberId", V(9, MAX), T::Str),
    F::new("MemberEpoch", V(9, MAX), T::I32),
    F::new(
        "Topics",
        V(8, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopics>(),
            &T::Struct(OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST_TOPICS),
        ),
    ),
];
const OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST: &[F] = &[
    F::new("GroupId", V(0, 7), T::Str),
    F::new(
        "Topics",
        V(0, 7),
        T::Array(
            size_of::<kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic>(),
            &T::Struct(OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST_TOPIC),
        ),
    ),
    F::new(
        "Groups",
        V(8, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup>(),
            &T::Struct(OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST_GROUP),
        ),
    ),
    F::new("RequireStable", V(7, MAX), T::Bool),
];
pub(crate) static OFFSET_FETCH_REQUEST: Message = Message {
    name: "OffsetFetchRequest",
    valid: V(0, 9),
    flexible_from: 6,
    fields: OFFSET_FETCH_REQUEST__OFFSET_FETCH_REQUEST,
};

const OFFSET_FOR_LEADER_EPOCH_REQUEST__OFFSET_FOR_LEADER_PARTITION: &[F] = &[
    F::new("Partition", V(0, MAX), T::I32),
    F::new("CurrentLeaderEpoch", V(2, MAX), T::I32),
    F::new("LeaderEpoch", V(0, MAX), T::I32),
];
const OFFSET_FOR_LEADER_EPOCH_REQUEST__OFFSET_FOR_LEADER_TOPIC: &[F] = &[
    F::new("Topic", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderPartition,
            >(),
            &T::Struct(OFFSET_FOR_LEADER_EPOCH_REQUEST__OFFSET_FOR_LEADER_PARTITION),
        ),
    ),
];
const OFFSET_FOR_LEADER_EPOCH_REQUEST__OFFSET_FOR_LEADER_EPOCH_REQUEST: &[F] = &[
    F::new("ReplicaId", V(3, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderTopic,
            >(),
            &T::Struct(OFFSET_FOR_LEADER_EPOCH_REQUEST__OFFSET_FOR_LEADER_TOPIC),
        ),
    ),
];
pub(crate) static OFFSET_FOR_LEADER_EPOCH_REQUEST: Message = Message {
    name: "OffsetForLeaderEpochRequest",
    valid: V(0, 4),
    flexible_from: 4,
    fields: OFFSET_FOR_LEADER_EPOCH_REQUEST__OFFSET_FOR_LEADER_EPOCH_REQUEST,
};

const PRODUCE_REQUEST__PARTITION_PRODUCE_DATA: &[F] = &[
    F::new("Index", V(0, MAX), T::I32),
    F::new("Records", V(0, MAX), T::Records),
];
const PRODUCE_REQUEST__TOPIC_PRODUCE_DATA: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "PartitionData",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::produce_request::PartitionProduceData>(),
            &T::Struct(PRODUCE_REQUEST__PARTITION_PRODUCE_DATA),
        ),
    ),
];
const PRODUCE_REQUEST__PRODUCE_REQUEST: &[F] = &[
    F::new("TransactionalId", V(3, MAX), T::Str),
    F::new("Acks", V(0, MAX), T::I16),
    F::new("TimeoutMs", V(0, MAX), T::I32),
    F::new(
        "TopicData",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::produce_request::TopicProduceData>(),
            &T::Struct(PRODUCE_REQUEST__TOPIC_PRODUCE_DATA),
        ),
    ),
];
pub(crate) static PRODUCE_REQUEST: Message = Message {
    name: "ProduceRequest",
    valid: V(0, 11),
    flexible_from: 9,
    fields: PRODUCE_REQUEST__PRODUCE_REQUEST,
};

const PUSH_TELEMETRY_REQUEST__PUSH_TELEMETRY_REQUEST: &[F] = &[
    F::new("ClientInstanceId", V(0, MAX), T::Uuid),
    F::new("SubscriptionId", V(0, MAX), T::I32),
    F::new("Terminating", V(0, MAX), T::Bool),
    F::new("CompressionType", V(0, MAX), T::I8),
    F::new("Metrics", V(0, MAX), T::Bytes),
];
pub(crate) static PUSH_TELEMETRY_REQUEST: Message = Message {
    name: "PushTelemetryRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: PUSH_TELEMETRY_REQUEST__PUSH_TELEMETRY_REQUEST,
};

const READ_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("Partition", V(0, MAX), T::I32),
    F::new("LeaderEpoch", V(0, MAX), T::I32),
];
const READ_SHARE_GROUP_STATE_REQUEST__READ_STATE_DATA: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::read_share_group_state_request::PartitionData>(),
            &T::Struct(READ_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA),
        ),
    ),
];
const READ_SHARE_GROUP_STATE_REQUEST__READ_SHARE_GROUP_STATE_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::read_share_group_state_request::ReadStateData>(),
            &T::Struct(READ_SHARE_GROUP_STATE_REQUEST__READ_STATE_DATA),
        ),
    ),
];
pub(crate) static READ_SHARE_GROUP_STATE_REQUEST: Message = Message {
    name: "ReadShareGroupStateRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: READ_SHARE_GROUP_STATE_REQUEST__READ_SHARE_GROUP_STATE_REQUEST,
};

const READ_SHARE_GROUP_STATE_SUMMARY_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("Partition", V(0, MAX), T::I32),
    F::new("LeaderEpoch", V(0, MAX), T::I32),
];
const READ_SHARE_GROUP_STATE_SUMMARY_REQUEST__READ_STATE_SUMMARY_DATA: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::read_share_group_state_summary_request::PartitionData,
            >(),
            &T::Struct(READ_SHARE_GROUP_STATE_SUMMARY_REQUEST__PARTITION_DATA),
        ),
    ),
];
const READ_SHARE_GROUP_STATE_SUMMARY_REQUEST__READ_SHARE_GROUP_STATE_SUMMARY_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("Topics", V(0, MAX), T::Array(size_of::<kafka_protocol::messages::read_share_group_state_summary_request::ReadStateSummaryData>(), &T::Struct(READ_SHARE_GROUP_STATE_SUMMARY_REQUEST__READ_STATE_SUMMARY_DATA))),
];
pub(crate) static READ_SHARE_GROUP_STATE_SUMMARY_REQUEST: Message = Message {
    name: "ReadShareGroupStateSummaryRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: READ_SHARE_GROUP_STATE_SUMMARY_REQUEST__READ_SHARE_GROUP_STATE_SUMMARY_REQUEST,
};

const REMOVE_RAFT_VOTER_REQUEST__REMOVE_RAFT_VOTER_REQUEST: &[F] = &[
    F::new("ClusterId", V(0, MAX), T::Str),
    F::new("VoterId", V(0, MAX), T::I32),
    F::new("VoterDirectoryId", V(0, MAX), T::Uuid),
];
pub(crate) static REMOVE_RAFT_VOTER_REQUEST: Message = Message {
    name: "RemoveRaftVoterRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: REMOVE_RAFT_VOTER_REQUEST__REMOVE_RAFT_VOTER_REQUEST,
};

const RENEW_DELEGATION_TOKEN_REQUEST__RENEW_DELEGATION_TOKEN_REQUEST: &[F] = &[
    F::new("Hmac", V(0, MAX), T::Bytes),
    F::new("RenewPeriodMs", V(0, MAX), T::I64),
];
pub(crate) static RENEW_DELEGATION_TOKEN_REQUEST: Message = Message {
    name: "RenewDelegationTokenRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: RENEW_DELEGATION_TOKEN_REQUEST__RENEW_DELEGATION_TOKEN_REQUEST,
};

const SASL_AUTHENTICATE_REQUEST__SASL_AUTHENTICATE_REQUEST: &[F] =
    &[F::new("AuthBytes", V(0, MAX), T::Bytes)];
pub(crate) static SASL_AUTHENTICATE_REQUEST: Message = Message {
    name: "SaslAuthenticateRequest",
    valid: V(0, 2),
    flexible_from: 2,
    fields: SASL_AUTHENTICATE_REQUEST__SASL_AUTHENTICATE_REQUEST,
};

const SASL_HANDSHAKE_REQUEST__SASL_HANDSHAKE_REQUEST: &[F] =
    &[F::new("Mechanism", V(0, MAX), T::Str)];
pub(crate) static SASL_HANDSHAKE_REQUEST: Message = Message {
    name: "SaslHandshakeRequest",
    valid: V(0, 1),
    flexible_from: i16::MAX,
    fields: SASL_HANDSHAKE_REQUEST__SASL_HANDSHAKE_REQUEST,
};

const SHARE_ACKNOWLEDGE_REQUEST__ACKNOWLEDGEMENT_BATCH: &[F] = &[
    F::new("FirstOffset", V(0, MAX), T::I64),
    F::new("LastOffset", V(0, MAX), T::I64),
    F::new(
        "AcknowledgeTypes",
        V(0, MAX),
        T::Array(size_of::<i8>(), &T::I8),
    ),
];
const SHARE_ACKNOWLEDGE_REQUEST__ACKNOWLEDGE_PARTITION: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new(
        "AcknowledgementBatches",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::share_acknowledge_request::AcknowledgementBatch>(),
            &T::Struct(SHARE_ACKNOWLEDGE_REQUEST__ACKNOWLEDGEMENT_BATCH),
        ),
    ),
];
const SHARE_ACKNOWLEDGE_REQUEST__ACKNOWLEDGE_TOPIC: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::share_acknowledge_request::AcknowledgePartition>(),
            &T::Struct(SHARE_ACKNOWLEDGE_REQUEST__ACKNOWLEDGE_PARTITION),
        ),
    ),
];
const SHARE_ACKNOWLEDGE_REQUEST__SHARE_ACKNOWLEDGE_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("ShareSessionEpoch", V(0, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::share_acknowledge_request::AcknowledgeTopic>(),
            &T::Struct(SHARE_ACKNOWLEDGE_REQUEST__ACKNOWLEDGE_TOPIC),
        ),
    ),
];
pub(crate) static SHARE_ACKNOWLEDGE_REQUEST: Message = Message {
    name: "ShareAcknowledgeRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: SHARE_ACKNOWLEDGE_REQUEST__SHARE_ACKNOWLEDGE_REQUEST,
};

const SHARE_FETCH_REQUEST__ACKNOWLEDGEMENT_BATCH: &[F] = &[
    F::new("FirstOffset", V(0, MAX), T::I64),
    F::new("LastOffset", V(0, MAX), T::I64),
    F::new(
        "AcknowledgeTypes",
        V(0, MAX),
        T::Array(size_of::<i8>(), &T::I8),
    ),
];
const SHARE_FETCH_REQUEST__FETCH_PARTITION: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("PartitionMaxBytes", V(0, MAX), T::I32),
    F::new(
        "AcknowledgementBatches",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::share_fetch_request::AcknowledgementBatch>(),
            &T::Struct(SHARE_FETCH_REQUEST__ACKNOWLEDGEMENT_BATCH),
        ),
    ),
];
const SHARE_FETCH_REQUEST__FETCH_TOPIC: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::share_fetch_request::FetchPartition>(),
            &T::Struct(SHARE_FETCH_REQUEST__FETCH_PARTITION),
        ),
    ),
];
const SHARE_FETCH_REQUEST__FORGOTTEN_TOPIC: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<i32>(), &T::I32)),
];
const SHARE_FETCH_REQUEST__SHARE_FETCH_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("ShareSessionEpoch", V(0, MAX), T::I32),
    F::new("MaxWaitMs", V(0, MAX), T::I32),
    F::new("MinBytes", V(0, MAX), T::I32),
    F::new("MaxBytes", V(0, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::share_fetch_request::FetchTopic>(),
            &T::Struct(SHARE_FETCH_REQUEST__FETCH_TOPIC),
        ),
    ),
    F::new(
        "ForgottenTopicsData",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::share_fetch_request::ForgottenTopic>(),
            &T::Struct(SHARE_FETCH_REQUEST__FORGOTTEN_TOPIC),
        ),
    ),
];
pub(crate) static SHARE_FETCH_REQUEST: Message = Message {
    name: "ShareFetchRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: SHARE_FETCH_REQUEST__SHARE_FETCH_REQUEST,
};

const SHARE_GROUP_DESCRIBE_REQUEST__SHARE_GROUP_DESCRIBE_REQUEST: &[F] = &[
    F::new(
        "GroupIds",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
    F::new("IncludeAuthorizedOperations", V(0, MAX), T::Bool),
];
pub(crate) static SHARE_GROUP_DESCRIBE_REQUEST: Message = Message {
    name: "ShareGroupDescribeRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: SHARE_GROUP_DESCRIBE_REQUEST__SHARE_GROUP_DESCRIBE_REQUEST,
};

const SHARE_GROUP_HEARTBEAT_REQUEST__SHARE_GROUP_HEARTBEAT_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("MemberEpoch", V(0, MAX), T::I32),
    F::new("RackId", V(0, MAX), T::Str),
    F::new(
        "SubscribedTopicNames",
        V(0, MAX),
        T::Array(size_of::<kafka_protocol::protocol::StrBytes>(), &T::Str),
    ),
];
pub(crate) static SHARE_GROUP_HEARTBEAT_REQUEST: Message = Message {
    name: "ShareGroupHeartbeatRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: SHARE_GROUP_HEARTBEAT_REQUEST__SHARE_GROUP_HEARTBEAT_REQUEST,
};

const SYNC_GROUP_REQUEST__SYNC_GROUP_REQUEST_ASSIGNMENT: &[F] = &[
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("Assignment", V(0, MAX), T::Bytes),
];
const SYNC_GROUP_REQUEST__SYNC_GROUP_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("GenerationId", V(0, MAX), T::I32),
    F::new("MemberId", V(0, MAX), T::Str),
    F::new("GroupInstanceId", V(3, MAX), T::Str),
    F::new("ProtocolType", V(5, MAX), T::Str),
    F::new("ProtocolName", V(5, MAX), T::Str),
    F::new(
        "Assignments",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment>(),
            &T::Struct(SYNC_GROUP_REQUEST__SYNC_GROUP_REQUEST_ASSIGNMENT),
        ),
    ),
];
pub(crate) static SYNC_GROUP_REQUEST: Message = Message {
    name: "SyncGroupRequest",
    valid: V(0, 5),
    flexible_from: 4,
    fields: SYNC_GROUP_REQUEST__SYNC_GROUP_REQUEST,
};

const TXN_OFFSET_COMMIT_REQUEST__TXN_OFFSET_COMMIT_REQUEST_PARTITION: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("CommittedOffset", V(0, MAX), T::I64),
    F::new("CommittedLeaderEpoch", V(2, MAX), T::I32),
    F::new("CommittedMetadata", V(0, MAX), T::Str),
];
const TXN_OFFSET_COMMIT_REQUEST__TXN_OFFSET_COMMIT_REQUEST_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Partitions", V(0, MAX), T::Array(size_of::<kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequestPartition>(), &T::Struct(TXN_OFFSET_COMMIT_REQUEST__TXN_OFFSET_COMMIT_REQUEST_PARTITION))),
];
const TXN_OFFSET_COMMIT_REQUEST__TXN_OFFSET_COMMIT_REQUEST: &[F] = &[
    F::new("TransactionalId", V(0, MAX), T::Str),
    F::new("GroupId", V(0, MAX), T::Str),
    F::new("ProducerId", V(0, MAX), T::I64),
    F::new("ProducerEpoch", V(0, MAX), T::I16),
    F::new("GenerationId", V(3, MAX), T::I32),
    F::new("MemberId", V(3, MAX), T::Str),
    F::new("GroupInstanceId", V(3, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<
                kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequestTopic,
            >(),
            &T::Struct(TXN_OFFSET_COMMIT_REQUEST__TXN_OFFSET_COMMIT_REQUEST_TOPIC),
        ),
    ),
];
pub(crate) static TXN_OFFSET_COMMIT_REQUEST: Message = Message {
    name: "TxnOffsetCommitRequest",
    valid: V(0, 4),
    flexible_from: 3,
    fields: TXN_OFFSET_COMMIT_REQUEST__TXN_OFFSET_COMMIT_REQUEST,
};

const UNREGISTER_BROKER_REQUEST__UNREGISTER_BROKER_REQUEST: &[F] =
    &[F::new("BrokerId", V(0, MAX), T::I32)];
pub(crate) static UNREGISTER_BROKER_REQUEST: Message = Message {
    name: "UnregisterBrokerRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: UNREGISTER_BROKER_REQUEST__UNREGISTER_BROKER_REQUEST,
};

const UPDATE_FEATURES_REQUEST__FEATURE_UPDATE_KEY: &[F] = &[
    F::new("Feature", V(0, MAX), T::Str),
    F::new("MaxVersionLevel", V(0, MAX), T::I16),
    F::new("AllowDowngrade", V(0, 0), T::Bool),
    F::new("UpgradeType", V(1, MAX), T::I8),
];
const UPDATE_FEATURES_REQUEST__UPDATE_FEATURES_REQUEST: &[F] = &[
    F::new("timeoutMs", V(0, MAX), T::I32),
    F::new(
        "FeatureUpdates",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::update_features_request::FeatureUpdateKey>(),
            &T::Struct(UPDATE_FEATURES_REQUEST__FEATURE_UPDATE_KEY),
        ),
    ),
    F::new("ValidateOnly", V(1, MAX), T::Bool),
];
pub(crate) static UPDATE_FEATURES_REQUEST: Message = Message {
    name: "UpdateFeaturesRequest",
    valid: V(0, 2),
    flexible_from: 0,
    fields: UPDATE_FEATURES_REQUEST__UPDATE_FEATURES_REQUEST,
};

const UPDATE_RAFT_VOTER_REQUEST__LISTENER: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new("Host", V(0, MAX), T::Str),
    F::new("Port", V(0, MAX), T::U16),
];
const UPDATE_RAFT_VOTER_REQUEST__KRAFT_VERSION_FEATURE: &[F] = &[
    F::new("MinSupportedVersion", V(0, MAX), T::I16),
    F::new("MaxSupportedVersion", V(0, MAX), T::I16),
];
const UPDATE_RAFT_VOTER_REQUEST__UPDATE_RAFT_VOTER_REQUEST: &[F] = &[
    F::new("ClusterId", V(0, MAX), T::Str),
    F::new("CurrentLeaderEpoch", V(0, MAX), T::I32),
    F::new("VoterId", V(0, MAX), T::I32),
    F::new("VoterDirectoryId", V(0, MAX), T::Uuid),
    F::new(
        "Listeners",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::update_raft_voter_request::Listener>(),
            &T::Struct(UPDATE_RAFT_VOTER_REQUEST__LISTENER),
        ),
    ),
    F::new(
        "KRaftVersionFeature",
        V(0, MAX),
        T::Struct(UPDATE_RAFT_VOTER_REQUEST__KRAFT_VERSION_FEATURE),
    ),
];
pub(crate) static UPDATE_RAFT_VOTER_REQUEST: Message = Message {
    name: "UpdateRaftVoterRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: UPDATE_RAFT_VOTER_REQUEST__UPDATE_RAFT_VOTER_REQUEST,
};

const VOTE_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("PartitionIndex", V(0, MAX), T::I32),
    F::new("CandidateEpoch", V(0, MAX), T::I32),
    F::new("CandidateId", V(0, MAX), T::I32),
    F::new("CandidateDirectoryId", V(1, MAX), T::Uuid),
    F::new("VoterDirectoryId", V(1, MAX), T::Uuid),
    F::new("LastOffsetEpoch", V(0, MAX), T::I32),
    F::new("LastOffset", V(0, MAX), T::I64),
];
const VOTE_REQUEST__TOPIC_DATA: &[F] = &[
    F::new("TopicName", V(0, MAX), T::Str),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::vote_request::PartitionData>(),
            &T::Struct(VOTE_REQUEST__PARTITION_DATA),
        ),
    ),
];
const VOTE_REQUEST__VOTE_REQUEST: &[F] = &[
    F::new("ClusterId", V(0, MAX), T::Str),
    F::new("VoterId", V(1, MAX), T::I32),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::vote_request::TopicData>(),
            &T::Struct(VOTE_REQUEST__TOPIC_DATA),
        ),
    ),
];
pub(crate) static VOTE_REQUEST: Message = Message {
    name: "VoteRequest",
    valid: V(0, 1),
    flexible_from: 0,
    fields: VOTE_REQUEST__VOTE_REQUEST,
};

const WRITE_SHARE_GROUP_STATE_REQUEST__STATE_BATCH: &[F] = &[
    F::new("FirstOffset", V(0, MAX), T::I64),
    F::new("LastOffset", V(0, MAX), T::I64),
    F::new("DeliveryState", V(0, MAX), T::I8),
    F::new("DeliveryCount", V(0, MAX), T::I16),
];
const WRITE_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA: &[F] = &[
    F::new("Partition", V(0, MAX), T::I32),
    F::new("StateEpoch", V(0, MAX), T::I32),
    F::new("LeaderEpoch", V(0, MAX), T::I32),
    F::new("StartOffset", V(0, MAX), T::I64),
    F::new(
        "StateBatches",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::write_share_group_state_request::StateBatch>(),
            &T::Struct(WRITE_SHARE_GROUP_STATE_REQUEST__STATE_BATCH),
        ),
    ),
];
const WRITE_SHARE_GROUP_STATE_REQUEST__WRITE_STATE_DATA: &[F] = &[
    F::new("TopicId", V(0, MAX), T::Uuid),
    F::new(
        "Partitions",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::write_share_group_state_request::PartitionData>(),
            &T::Struct(WRITE_SHARE_GROUP_STATE_REQUEST__PARTITION_DATA),
        ),
    ),
];
const WRITE_SHARE_GROUP_STATE_REQUEST__WRITE_SHARE_GROUP_STATE_REQUEST: &[F] = &[
    F::new("GroupId", V(0, MAX), T::Str),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::write_share_group_state_request::WriteStateData>(),
            &T::Struct(WRITE_SHARE_GROUP_STATE_REQUEST__WRITE_STATE_DATA),
        ),
    ),
];
pub(crate) static WRITE_SHARE_GROUP_STATE_REQUEST: Message = Message {
    name: "WriteShareGroupStateRequest",
    valid: V(0, 0),
    flexible_from: 0,
    fields: WRITE_SHARE_GROUP_STATE_REQUEST__WRITE_SHARE_GROUP_STATE_REQUEST,
};

const WRITE_TXN_MARKERS_REQUEST__WRITABLE_TXN_MARKER_TOPIC: &[F] = &[
    F::new("Name", V(0, MAX), T::Str),
    F::new(
        "PartitionIndexes",
        V(0, MAX),
        T::Array(size_of::<i32>(), &T::I32),
    ),
];
const WRITE_TXN_MARKERS_REQUEST__WRITABLE_TXN_MARKER: &[F] = &[
    F::new("ProducerId", V(0, MAX), T::I64),
    F::new("ProducerEpoch", V(0, MAX), T::I16),
    F::new("TransactionResult", V(0, MAX), T::Bool),
    F::new(
        "Topics",
        V(0, MAX),
        T::Array(
            size_of::<kafka_protocol::messages::write_txn_markers_request::WritableTxnMarkerTopic>(
            ),
            &T::Struct(WRITE_TXN_MARKERS_REQUEST__WRITABLE_TXN_MARKER_TOPIC),
        ),
    ),
    F::new("CoordinatorEpoch", V(0, MAX), T::I32),
];
const WRITE_TXN_MARKERS_REQUEST__WRITE_TXN_MARKERS_REQUEST: &[F] = &[F::new(
    "Markers",
    V(0, MAX),
    T::Array(
        size_of::<kafka_protocol::messages::write_txn_markers_request::WritableTxnMarker>(),
        &T::Struct(WRITE_TXN_MARKERS_REQUEST__WRITABLE_TXN_MARKER),
    ),
)];
pub(crate) static WRITE_TXN_MARKERS_REQUEST: Message = Message {
    name: "WriteTxnMarkersRequest",
    valid: V(0, 1),
    flexible_from: 1,
    fields: WRITE_TXN_MARKERS_REQUEST__WRITE_TXN_MARKERS_REQUEST,
};
