use super::*;
use crate::batch::{testing, validate};
use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

fn policy(now_ms: i64) -> CleanPolicy {
    CleanPolicy {
        now_ms,
        delete_retention_ms: 1_000,
        max_inflated_bytes: 1 << 30,
        max_batch_bytes: 1 << 20,
    }
}

/// Ten records, keys k0..k9, values v0..v9 except k3 and k7 (tombstones),
/// with two headers each, from producer 42.
fn batch(c: Compression) -> Bytes {
    let records: Vec<Record> = (0..10)
        .map(|i| {
            let mut headers = IndexMap::new();
            headers.insert(
                StrBytes::from_static_str("h1"),
                Some(Bytes::from(format!("a{i}"))),
            );
            headers.insert(StrBytes::from_static_str("h2"), None);
            Record {
                transactional: false,
                control: false,
                partition_leader_epoch: 0,
                producer_id: 42,
                producer_epoch: 3,
                timestamp_type: TimestampType::Creation,
                offset: 100 + i,
                sequence: 7 + i as i32,
                timestamp: 1_000_000 + 10 * i,
                key: Some(Bytes::from(format!("k{i}"))),
                value: (i != 3 && i != 7).then(|| Bytes::from(format!("v{i}"))),
                headers,
                delete_horizon: false,
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: c,
        },
    )
    .unwrap();
    buf.freeze()
}

fn decoded(b: &[u8]) -> Vec<Record> {
    let mut buf = Bytes::copy_from_slice(b);
    RecordBatchDecoder::decode(&mut buf).unwrap().records
}

fn rewritten(c: Cleaned) -> Vec<u8> {
    match c {
        Cleaned::Rewritten(b) => b,
        other => panic!("not rewritten: {other:?}"),
    }
}

#[test]
fn a_batch_with_nothing_to_drop_and_no_tombstones_is_kept_as_is() {
    let b = testing::batch_with(5, 10, 1_000, Compression::Zstd);
    assert_eq!(
        clean_batch(&b, &policy(0), false, |_| true).unwrap(),
        Cleaned::Unchanged
    );
}

#[test]
fn superseded_records_go_and_the_rest_keep_everything_in_every_codec() {
    for c in CODECS {
        let b = batch(c);
        let before = decoded(&b);
        // Keep the even offsets.
        let out = rewritten(clean_batch(&b, &policy(0), false, |r| r.offset % 2 == 0).unwrap());
        let h = validate(&out).expect("valid batch, CRC included");
        let old = BatchHeader::parse(&b).unwrap();
        assert_eq!(
            h.attributes & 0x07,
            old.attributes & 0x07,
            "{c:?}: same codec"
        );
        assert_eq!(
            (
                h.base_offset,
                h.last_offset_delta,
                h.producer_id,
                h.producer_epoch,
                h.base_sequence
            ),
            (old.base_offset, old.last_offset_delta, 42, 3, 7),
            "{c:?}: offsets and producer state kept"
        );
        assert_eq!(h.record_count, 5);
        let after = decoded(&out);
        let want: Vec<&Record> = before.iter().filter(|r| r.offset % 2 == 0).collect();
        assert_eq!(after.len(), want.len());
        for (a, w) in after.iter().zip(want) {
            assert_eq!(
                (a.offset, a.timestamp, &a.key, &a.value, &a.headers),
                (w.offset, w.timestamp, &w.key, &w.value, &w.headers),
                "{c:?}"
            );
        }
        // Max timestamp: the largest retained (offset 108).
        assert_eq!(h.max_timestamp, 1_000_080);
    }
}

#[test]
fn tombstones_get_a_delete_horizon_then_go_after_it() {
    for c in CODECS {
        let b = batch(c);
        let now = 5_000_000;
        let first = rewritten(clean_batch(&b, &policy(now), false, |_| true).unwrap());
        let h = validate(&first).unwrap();
        assert_eq!(delete_horizon(&h), Some(now + 1_000), "{c:?}");
        // Timestamps are unchanged for readers: base (the horizon) + delta.
        let ts: Vec<i64> = decoded(&first).iter().map(|r| r.timestamp).collect();
        assert_eq!(ts, (0..10).map(|i| 1_000_000 + 10 * i).collect::<Vec<_>>());
        // Before the horizon: kept as it is now.
        assert_eq!(
            clean_batch(&first, &policy(now + 999), false, |_| true).unwrap(),
            Cleaned::Unchanged
        );
        // At the horizon: the two tombstones go.
        let second = rewritten(clean_batch(&first, &policy(now + 1_000), false, |_| true).unwrap());
        let recs = decoded(&second);
        assert_eq!(recs.len(), 8);
        assert!(recs.iter().all(|r| r.value.is_some()));
        assert!(!recs.iter().any(|r| r.offset == 103 || r.offset == 107));
    }
}

#[test]
fn an_emptied_batch_is_removed_or_kept_as_a_header_for_its_producer() {
    let b = batch(Compression::Lz4);
    assert_eq!(
        clean_batch(&b, &policy(0), false, |_| false).unwrap(),
        Cleaned::Removed
    );
    let empty = rewritten(clean_batch(&b, &policy(0), true, |_| false).unwrap());
    let h = validate(&empty).expect("an empty stored batch is valid");
    let old = BatchHeader::parse(&b).unwrap();
    assert_eq!(empty.len(), HEADER_LEN);
    assert_eq!(
        (
            h.record_count,
            h.base_offset,
            h.last_offset(),
            h.producer_id,
            h.base_sequence
        ),
        (0, 100, 109, 42, 7)
    );
    assert_eq!(h.max_timestamp, old.max_timestamp);
    assert_eq!(h.attributes & 0x07, 0);
    let mut n = 0;
    for_each_record(&empty, &policy(0), |_| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn for_each_record_sees_keys_offsets_and_tombstones() {
    for c in CODECS {
        let b = batch(c);
        let mut seen = Vec::new();
        for_each_record(&b, &policy(0), |r| {
            seen.push((r.offset, r.key.map(|k| k.to_vec()), r.is_tombstone));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 10);
        assert_eq!(seen[3], (103, Some(b"k3".to_vec()), true));
        assert_eq!(seen[4], (104, Some(b"k4".to_vec()), false));
    }
}

#[test]
fn a_bomb_is_bounded() {
    let b = testing::batch_with(100, 10_000, 0, Compression::Zstd);
    let mut p = policy(0);
    p.max_inflated_bytes = 50_000;
    let e = for_each_record(&b, &p, |_| Ok(())).unwrap_err();
    assert!(
        matches!(e, CleanError::Scan(ScanError::InflatesBeyond(50_000))),
        "{e:?}"
    );
}
