//! Bounds on what decoding a client's bytes may cost, checked before the
//! codec sees them.
//!
//! The codec (`kafka-protocol`) sizes each array from the count on the wire
//! before it decodes a single element, so a 20-byte request claiming 2^31
//! topics makes it ask for ~150 GB and the process aborts (an allocation
//! failure is not a panic). This module walks a request body along its
//! layout (`messages.rs`) and refuses it unless every length and count fits
//! in the bytes that remain, and the memory the decode will allocate stays
//! under [`MAX_COST_PER_BYTE`] times the frame. The same check guards the
//! consumer protocol's subscription and assignment, which the group
//! coordinator decodes from JoinGroup and SyncGroup payloads.
//!
//! It owns no decoding and must never interpret a value: it only measures.

mod messages;
mod schema;
mod walk;

#[cfg(test)]
mod tests;

pub use walk::{BoundsError, Walked};

/// Decoding may allocate at most this many bytes per byte of the message
/// (plus [`COST_SLACK`]). Requests real clients send decode to 1-6 times
/// their size; the layouts' worst case, a request made of nothing but
/// one-character names and null arrays, would reach 40 without this limit.
pub(crate) const MAX_COST_PER_BYTE: usize = 16;
/// Allowance for small messages whose decode has a fixed overhead.
pub(crate) const COST_SLACK: usize = 4096;

/// Checks a request body (after its header) of API `api_key` at `version`.
/// An API without a known layout passes: nothing will decode it.
pub fn check_request(api_key: i16, version: i16, body: &[u8]) -> Result<Walked, BoundsError> {
    match messages::request(api_key) {
        Some(m) => checked(m, version, body),
        None => Ok(Walked {
            consumed: 0,
            decode_cost: 0,
        }),
    }
}

/// The versions of API `api_key` whose request layout is known, lowest
/// and highest; a request at another version is refused before it is
/// decoded. None for an API without a layout.
pub fn request_layout_versions(api_key: i16) -> Option<(i16, i16)> {
    messages::request(api_key).map(|m| (m.valid.0, m.valid.1))
}

/// Checks a `ConsumerProtocolSubscription` body (after its version).
pub(crate) fn check_subscription(version: i16, body: &[u8]) -> Result<Walked, BoundsError> {
    checked(&messages::CONSUMER_PROTOCOL_SUBSCRIPTION, version, body)
}

/// Checks a `ConsumerProtocolAssignment` body (after its version).
pub fn check_assignment(version: i16, body: &[u8]) -> Result<Walked, BoundsError> {
    checked(&messages::CONSUMER_PROTOCOL_ASSIGNMENT, version, body)
}

fn checked(m: &schema::Message, version: i16, body: &[u8]) -> Result<Walked, BoundsError> {
    let w = walk::walk(m, version, body)?;
    let limit = body.len().saturating_mul(MAX_COST_PER_BYTE) + COST_SLACK;
    if w.decode_cost > limit {
        return Err(BoundsError::TooCostly {
            cost: w.decode_cost,
            limit,
            frame: body.len(),
        });
    }
    Ok(w)
}

#[cfg(any(test, feature = "fuzzing"))]
pub mod sample;
