//! One module per family of Kafka APIs. Handlers never fail the connection:
//! every problem becomes a Kafka error code (and message where the version
//! has one) in the response.

pub mod acls;
pub mod cluster;
pub mod configs;
pub mod delete_records;
pub mod elect_leaders;
pub mod fetch;
pub mod groups;
pub mod leader_epoch;
pub mod list_offsets;
pub mod log_dirs;
pub mod metadata;
pub mod produce;
pub mod producer;
pub mod reassignments;
pub mod sasl;
pub mod scram_users;
pub mod topics;
pub mod txn;
pub mod txn_admin;

use kafka_protocol::protocol::StrBytes;

pub(crate) fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

/// One partition's offset commit, from OffsetCommit's or TxnOffsetCommit's
/// fields (a missing metadata string is an empty one).
pub(crate) fn offset_commit(
    topic: &str,
    partition: i32,
    offset: i64,
    leader_epoch: i32,
    metadata: Option<StrBytes>,
) -> crate::group::OffsetCommit {
    crate::group::OffsetCommit {
        topic: topic.to_string(),
        partition,
        offset,
        leader_epoch,
        metadata: metadata.map(|m| m.to_string()).unwrap_or_default(),
    }
}

/// Kafka's "authorized operations not requested" sentinel.
pub(crate) const NO_AUTHORIZED_OPERATIONS: i32 = i32::MIN;

/// The `name = value` pairs of a request's config entries; entries without
/// a value are left out (as Kafka reads CreateTopics and AlterConfigs).
pub(crate) fn values_set<'a, N, V>(
    entries: impl Iterator<Item = (&'a N, Option<&'a V>)>,
) -> std::collections::BTreeMap<String, String>
where
    N: std::fmt::Display + 'a,
    V: std::fmt::Display + 'a,
{
    entries
        .filter_map(|(name, value)| value.map(|v| (name.to_string(), v.to_string())))
        .collect()
}
