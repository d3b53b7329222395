//! The API versions this broker implements, advertised through ApiVersions.
//! A handler must support every version in its range; the unit test below
//! encodes each handler's response at every advertised version. Versions
//! below the codec crate's range are served by `legacy`.

use kafka_protocol::messages::ApiKey;

/// (api, min version, max version).
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 0, 11),
    (ApiKey::Fetch, 0, 17),
    (ApiKey::ListOffsets, 0, 9),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::DeleteTopics, 0, 6),
    (ApiKey::DescribeConfigs, 0, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeLogDirs, 0, 4),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 0),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 0, 9),
    (ApiKey::OffsetFetch, 0, 9),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 4),
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::WriteTxnMarkers, 0, 1),
    (ApiKey::OffsetForLeaderEpoch, 0, 4),
    (ApiKey::DescribeAcls, 0, 3),
    (ApiKey::CreateAcls, 0, 3),
    (ApiKey::DeleteAcls, 0, 3),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
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

    /// Every version the broker advertises has a request layout in
    /// `decode_bounds`: a request at a version it lacks is refused before
    /// it is decoded, so a version raised here alone closes its clients'
    /// connections.
    #[test]
    fn every_advertised_version_has_a_layout() {
        for (api, lo, hi) in SUPPORTED {
            let (first, last) = crate::decode_bounds::request_layout_versions(*api as i16)
                .unwrap_or_else(|| panic!("{api:?} has no request layout"));
            assert!(
                first <= *lo && *hi <= last,
                "{api:?} v{lo}..=v{hi} is advertised but the layout covers {first}..={last}"
            );
        }
    }

    #[test]
    fn within_codec_range_or_legacy() {
        for (api, lo, hi) in SUPPORTED {
            let v = api.valid_versions();
            assert!(*hi <= v.max, "{api:?} {lo}..{hi} above codec {v:?}");
            for version in *lo..v.min {
                assert!(
                    crate::server::legacy::is_legacy(*api, version),
                    "{api:?} v{version} is below the codec's range and not served by legacy"
                );
            }
        }
        for (api, lo, hi) in crate::server::legacy::VERSIONS {
            assert!(
                *hi < api.valid_versions().min,
                "{api:?} v{hi} is the codec's"
            );
            assert!(
                range(*api).is_some_and(|(l, _)| l <= *lo),
                "{api:?} legacy not advertised"
            );
        }
    }
}
