//! The request versions Apache Kafka 3.9 accepts that the codec crate
//! (`kafka-protocol` 0.18, on Kafka 4's schemas) no longer knows: each is
//! decoded here with a bounded reader (`codec.rs`) or, where it is a newer
//! version minus a trailing field, by the crate after that field is added
//! with its default; handled by the regular handler; and answered in its own
//! layout (DescribeLogDirs v0, v1's layout, is answered as v1). One file
//! per API. What each version does is Kafka 3.9's (in
//! KRaft mode); docs/protocol.md lists them.
//!
//! This module never stores anything itself: every write goes through the
//! handler the current version uses.

pub mod acls_v0;
pub mod admin_v0;
pub mod codec;
pub mod fetch_v0_3;
pub mod list_offsets_v0;
pub mod offset_commit_v0_1;
pub mod offset_fetch_v0;
pub mod offset_for_leader_epoch_v0_1;
pub mod produce_v0_2;
pub mod write_txn_markers_v0;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;

use super::handlers;
use super::Broker;
use crate::decode_bounds as bounds;
use codec::{LegacyDecodeError, Writer};

/// (api, lowest, highest) versions served here rather than by the crate.
pub const VERSIONS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 0, 2),
    (ApiKey::Fetch, 0, 3),
    (ApiKey::ListOffsets, 0, 0),
    (ApiKey::OffsetCommit, 0, 1),
    (ApiKey::OffsetFetch, 0, 0),
    (ApiKey::CreateTopics, 0, 1),
    (ApiKey::DeleteTopics, 0, 0),
    (ApiKey::DescribeConfigs, 0, 0),
    (ApiKey::WriteTxnMarkers, 0, 0),
    (ApiKey::OffsetForLeaderEpoch, 0, 1),
    (ApiKey::DescribeLogDirs, 0, 0),
    (ApiKey::DescribeAcls, 0, 0),
    (ApiKey::CreateAcls, 0, 0),
    (ApiKey::DeleteAcls, 0, 0),
];

pub fn is_legacy(api: ApiKey, version: i16) -> bool {
    VERSIONS
        .iter()
        .any(|(k, lo, hi)| *k == api && (*lo..=*hi).contains(&version))
}

/// Why a legacy request could not be handled (the caller closes the
/// connection, as for any request that cannot be decoded).
#[derive(Debug, thiserror::Error)]
pub enum LegacyError {
    #[error(transparent)]
    Decode(#[from] LegacyDecodeError),
    #[error("refused before decoding: {0}")]
    OutOfBounds(#[source] bounds::BoundsError),
    #[error("{0}")]
    Codec(String),
    #[error("not a legacy version")]
    NotLegacy,
}

/// Decodes `body` as version `as_version` of the crate's `T`, after
/// appending `trailing` (a field the legacy version lacks, at its default),
/// under the same decode bounds as any request.
fn decode_as<T: Decodable>(
    api: ApiKey,
    body: &[u8],
    as_version: i16,
    trailing: &[u8],
) -> Result<T, LegacyError> {
    let mut patched = BytesMut::with_capacity(body.len() + trailing.len());
    patched.put_slice(body);
    patched.put_slice(trailing);
    let mut patched: Bytes = patched.freeze();
    bounds::check_request(api as i16, as_version, &patched).map_err(LegacyError::OutOfBounds)?;
    T::decode(&mut patched, as_version).map_err(|e| LegacyError::Codec(e.to_string()))
}

/// Frames a legacy response: size, response header v0 (correlation id), body.
fn frame(correlation_id: i32, w: Writer) -> BytesMut {
    let mut out = BytesMut::with_capacity(w.buf.len() + 8);
    out.put_i32((w.buf.len() + 4) as i32);
    out.put_i32(correlation_id);
    out.put_slice(&w.buf);
    out
}

/// Handles one legacy request (its body after the header);
/// `Ok(None)`: no response (acks=0 produce).
pub async fn handle(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &[u8],
    b: &Broker,
    caller: &super::authz::Caller,
) -> Result<Option<BytesMut>, LegacyError> {
    let w = match api {
        ApiKey::DescribeAcls => acls_v0::describe(body, b, caller).await?,
        ApiKey::CreateAcls => acls_v0::create(body, b, caller).await?,
        ApiKey::DeleteAcls => acls_v0::delete(body, b, caller).await?,
        ApiKey::Produce => match produce_v0_2::handle(version, body, b, caller).await? {
            Some(w) => w,
            None => return Ok(None),
        },
        ApiKey::Fetch => fetch_v0_3::handle(version, body)?,
        ApiKey::ListOffsets => list_offsets_v0::handle(body, b, caller)?,
        ApiKey::OffsetCommit => offset_commit_v0_1::handle(version, body, b, caller).await?,
        ApiKey::OffsetFetch => offset_fetch_v0::handle(body)?,
        ApiKey::OffsetForLeaderEpoch => offset_for_leader_epoch_v0_1::handle(version, body, b)?,
        ApiKey::CreateTopics => {
            // v0 lacks v1's validate_only; v1's request is v2's.
            let trailing: &[u8] = if version == 0 { &[0] } else { &[] };
            let r: CreateTopicsRequest = decode_as(api, body, 2, trailing)?;
            let resp = handlers::topics::create_topics(r, 2, b).await;
            admin_v0::create_topics_response(version, &resp)
        }
        ApiKey::DeleteTopics => {
            let r: DeleteTopicsRequest = decode_as(api, body, 1, &[])?;
            let resp = handlers::topics::delete_topics(r, 1, b).await;
            admin_v0::delete_topics_response(&resp)
        }
        ApiKey::DescribeConfigs => {
            // v0 lacks v1's include_synonyms.
            let r: DescribeConfigsRequest = decode_as(api, body, 1, &[0])?;
            let resp = handlers::configs::describe_configs(r, 1, b).await;
            admin_v0::describe_configs_response(&resp)
        }
        ApiKey::WriteTxnMarkers => write_txn_markers_v0::handle(body, b).await?,
        ApiKey::DescribeLogDirs => {
            // v0 is v1 (v1 only changed when throttling is applied).
            let r: DescribeLogDirsRequest = decode_as(api, body, 1, &[])?;
            let resp = handlers::log_dirs::handle(r, 1, b).await;
            let mut w = Writer::default();
            kafka_protocol::protocol::Encodable::encode(&resp, &mut w.buf, 1)
                .map_err(|e| LegacyError::Codec(e.to_string()))?;
            w
        }
        _ => return Err(LegacyError::NotLegacy),
    };
    Ok(Some(frame(correlation_id, w)))
}
