//! The layouts agree with the codec (every version of every request), the
//! walk refuses what would make the codec over-allocate, and a decode the
//! walk lets through allocates no more than the bound says.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, RequestKind,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::messages::{self, REQUESTS};
use super::sample::{sample, Rng};
use super::schema::{Message, Type};
use super::*;

/// Counts what the current thread allocates while armed.
struct Counting;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.with(|a| a.get()) {
            ALLOCATED.with(|n| n.set(n.get() + layout.size()));
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARMED.with(|a| a.get()) {
            ALLOCATED.with(|n| n.set(n.get() + new_size));
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes allocated (not net of frees) while `f` runs on this thread.
fn allocated_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    ALLOCATED.with(|n| n.set(0));
    ARMED.with(|a| a.set(true));
    let out = f();
    ARMED.with(|a| a.set(false));
    (out, ALLOCATED.with(|n| n.get()))
}

fn versions(api: i16, m: &Message) -> impl Iterator<Item = i16> {
    let codec = ApiKey::try_from(api).expect("known key").valid_versions();
    let (lo, hi) = (m.valid.0.max(codec.min), m.valid.1.min(codec.max));
    lo..=hi
}

fn decode_request(api: i16, version: i16, body: &[u8]) -> anyhow::Result<(RequestKind, usize)> {
    let mut b = Bytes::copy_from_slice(body);
    let key = ApiKey::try_from(api).expect("known key");
    let r = RequestKind::decode(key, &mut b, version)?;
    Ok((r, body.len() - b.len()))
}

#[test]
fn every_request_layout_matches_the_codec() {
    let (mut checked, mut failures) = (0, Vec::new());
    for &(api, m) in REQUESTS {
        for version in versions(api, m) {
            let mut rng = Rng::new(api as u64 * 1000 + version as u64);
            for i in 0..24 {
                let body = sample(m, version, &mut rng);
                if let Err(e) = round_trip(api, version, &body) {
                    failures.push(format!("{} v{version} sample {i}: {e}", m.name));
                    break;
                }
                checked += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 2000, "only {checked} samples");
}

/// The walk and the codec read `body` the same way, and the codec writes
/// back exactly what it read.
fn round_trip(api: i16, version: i16, body: &[u8]) -> Result<(), String> {
    let w = check_request(api, version, body).map_err(|e| format!("walk: {e}"))?;
    if w.consumed != body.len() {
        return Err(format!("walk read {} of {} bytes", w.consumed, body.len()));
    }
    let (r, used) = decode_request(api, version, body).map_err(|e| format!("codec: {e:#}"))?;
    if used != body.len() {
        return Err(format!("codec read {used} of {} bytes", body.len()));
    }
    let mut again = BytesMut::new();
    r.encode(&mut again, version)
        .map_err(|e| format!("re-encode: {e:#}"))?;
    if again[..] != body[..] {
        return Err(format!(
            "re-encoded differs:\n {:?}\n {:?}",
            &again[..],
            body
        ));
    }
    Ok(())
}

#[test]
fn consumer_protocol_layouts_match_the_codec() {
    for version in 0..=3 {
        let mut rng = Rng::new(version as u64);
        for _ in 0..50 {
            let body = sample(&messages::CONSUMER_PROTOCOL_SUBSCRIPTION, version, &mut rng);
            assert_eq!(
                check_subscription(version, &body).unwrap().consumed,
                body.len()
            );
            let mut b = Bytes::from(body.clone());
            let s = ConsumerProtocolSubscription::decode(&mut b, version).unwrap();
            let mut again = BytesMut::new();
            s.encode(&mut again, version).unwrap();
            assert_eq!(&again[..], &body[..]);

            let body = sample(&messages::CONSUMER_PROTOCOL_ASSIGNMENT, version, &mut rng);
            assert_eq!(
                check_assignment(version, &body).unwrap().consumed,
                body.len()
            );
            let mut b = Bytes::from(body.clone());
            let a = ConsumerProtocolAssignment::decode(&mut b, version).unwrap();
            let mut again = BytesMut::new();
            a.encode(&mut again, version).unwrap();
            assert_eq!(&again[..], &body[..]);
        }
    }
}

/// The fewest bytes an encoding of `ty` takes.
fn min_wire(ty: &Type, version: i16, flexible: bool) -> usize {
    match ty {
        Type::Bool | Type::I8 => 1,
        Type::I16 | Type::U16 => 2,
        Type::I32 => 4,
        Type::I64 | Type::F64 => 8,
        Type::Uuid => 16,
        Type::Str if flexible => 1,
        Type::Str => 2,
        Type::Bytes | Type::Records | Type::Array(..) if flexible => 1,
        Type::Bytes | Type::Records | Type::Array(..) => 4,
        Type::OptStruct(n, _) if n.contains(version) => 1,
        Type::Struct(fields) | Type::OptStruct(_, fields) => {
            let inner: usize = fields
                .iter()
                .filter(|f| f.in_order(version))
                .map(|f| min_wire(&f.ty, version, flexible))
                .sum();
            inner + flexible as usize
        }
    }
}

fn worst_ratio(ty: &Type, version: i16, flexible: bool, worst: &mut (f64, String), path: &str) {
    match ty {
        Type::Array(size, elem) => {
            let wire = min_wire(elem, version, flexible).max(1);
            let ratio = *size as f64 / wire as f64;
            if ratio > worst.0 {
                *worst = (ratio, format!("{path} v{version}"));
            }
            worst_ratio(elem, version, flexible, worst, path);
        }
        Type::Struct(fields) | Type::OptStruct(_, fields) => {
            for f in fields.iter().filter(|f| f.versions.contains(version)) {
                worst_ratio(
                    &f.ty,
                    version,
                    flexible,
                    worst,
                    &format!("{path}.{}", f.name),
                );
            }
        }
        _ => {}
    }
}

/// Without the cost limit, what the walk alone (every element takes at
/// least its minimal encoding) would let a request cost per byte.
#[test]
fn layouts_alone_bound_the_cost_per_byte() {
    let mut worst = (0.0, String::new());
    let all = REQUESTS.iter().map(|(_, m)| *m).chain([
        &messages::CONSUMER_PROTOCOL_SUBSCRIPTION,
        &messages::CONSUMER_PROTOCOL_ASSIGNMENT,
    ]);
    for m in all {
        for v in m.valid.0..=m.valid.1.min(30) {
            let flexible = v >= m.flexible_from;
            worst_ratio(&Type::Struct(m.fields), v, flexible, &mut worst, m.name);
        }
    }
    eprintln!(
        "worst decoded bytes per wire byte: {:.1} ({})",
        worst.0, worst.1
    );
    assert!(
        worst.0 <= 64.0,
        "{} decodes {:.1} bytes per wire byte",
        worst.1,
        worst.0
    );
}

#[test]
fn requests_dense_in_tiny_elements_are_refused_by_cost() {
    // OffsetFetch v8: 10,000 groups named "g" with null topic lists.
    let mut body = vec![];
    body.extend_from_slice(&[0x91, 0x4e]); // compact count: 10_001 = 0x91 0x4e
    for _ in 0..10_000 {
        body.extend_from_slice(&[2, b'g', 0, 0]);
    }
    body.extend_from_slice(&[0, 0]); // require_stable, tagged fields
    let e = check_request(9, 8, &body).unwrap_err();
    assert!(matches!(e, BoundsError::TooCostly { .. }), "{e}");
}

/// The request that aborted the broker: Metadata v1 claiming 2^31-1 topics.
#[test]
fn metadata_claiming_two_billion_topics_is_refused() {
    let body = 0x7fff_ffffi32.to_be_bytes();
    let e = check_request(3, 1, &body).unwrap_err();
    assert!(
        matches!(
            e,
            BoundsError::LengthExceedsFrame {
                field: "Topics",
                len: 0x7fff_ffff,
                ..
            }
        ),
        "{e}"
    );
    // Compact lengths too (v9+: unsigned varint 2^32-1).
    let e = check_request(3, 9, &[0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0]).unwrap_err();
    assert!(matches!(e, BoundsError::LengthExceedsFrame { .. }), "{e}");
}

#[test]
fn negative_and_truncated_lengths_are_refused() {
    // A DeleteTopics v1 array of -2 names.
    let e = check_request(20, 1, &(-2i32).to_be_bytes()).unwrap_err();
    assert!(
        matches!(e, BoundsError::NegativeLength { len: -2, .. }),
        "{e}"
    );
    // A FindCoordinator v0 key of 10 bytes with 3 there.
    let e = check_request(10, 0, &[0, 10, b'a', b'b', b'c']).unwrap_err();
    assert!(
        matches!(e, BoundsError::LengthExceedsFrame { field: "Key", .. }),
        "{e}"
    );
    // Heartbeat v0 cut inside its generation id.
    let e = check_request(12, 0, &[0, 1, b'g', 0, 0]).unwrap_err();
    assert!(matches!(e, BoundsError::Truncated { .. }), "{e}");
}

/// Mutated encodings: whatever the walk lets through, the codec decodes
/// within the bound the walk promised.
#[test]
fn what_the_walk_accepts_decodes_within_its_bound() {
    let mut rng = Rng::new(7);
    let (mut accepted, mut refused) = (0, 0);
    for &(api, m) in REQUESTS {
        for version in versions(api, m) {
            for _ in 0..6 {
                let body = sample(m, version, &mut rng);
                for _ in 0..8 {
                    let mut b = body.clone();
                    mutate(&mut b, &mut rng);
                    match check_request(api, version, &b) {
                        Ok(w) => {
                            accepted += 1;
                            let (_, bytes) = allocated_by(|| decode_request(api, version, &b));
                            let bound = w.decode_cost + b.len() + 4096;
                            assert!(
                                bytes <= bound.max(COST_SLACK * 4),
                                "{} v{version}: decode allocated {bytes} bytes, bound {bound}",
                                m.name
                            );
                        }
                        Err(_) => refused += 1,
                    }
                }
            }
        }
    }
    eprintln!("mutations accepted {accepted}, refused {refused}");
    assert!(accepted > 100 && refused > 100);
}

fn mutate(b: &mut Vec<u8>, rng: &mut Rng) {
    if b.is_empty() {
        b.extend_from_slice(&[0xff; 4]);
        return;
    }
    match rng.below(4) {
        0 => {
            let at = rng.below(b.len() as u64) as usize;
            b[at] = [0xff, 0x7f, 0x80, 0x00][rng.below(4) as usize];
        }
        1 => {
            let at = rng.below(b.len() as u64) as usize;
            for x in b.iter_mut().skip(at).take(4) {
                *x = 0x7f;
            }
        }
        2 => {
            let n = rng.below(b.len() as u64) as usize;
            b.truncate(n);
        }
        _ => {
            let at = rng.below(b.len() as u64) as usize;
            b[at] ^= 1 << rng.below(8);
        }
    }
}
