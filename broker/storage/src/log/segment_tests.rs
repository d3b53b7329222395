//! Unit tests of `segment`.

use super::*;
use crate::log::batch::testing;

const SETTINGS: SegmentSettings = SegmentSettings {
    index_interval_bytes: 256,
    max_index_bytes: 1 << 20,
};

/// Writes `n` batches of 3 records each; returns the segment and the
/// position where each batch starts.
fn fill(dir: &Path, n: usize) -> (LogSegment, Vec<u64>) {
    let mut seg = LogSegment::create(dir, 100, SETTINGS).unwrap();
    let mut positions = Vec::new();
    let mut next = 100;
    for i in 0..n {
        let mut b = testing::batch(3, 50, 1_000 + i as i64 * 10).to_vec();
        batch::set_base_offset(&mut b, next);
        let h = batch::validate(&b).unwrap();
        positions.push(seg.size());
        seg.append(&b, &h, 0).unwrap();
        next = h.next_offset();
    }
    (seg, positions)
}

#[test]
fn append_then_reopen_clean() {
    let dir = tempfile::tempdir().unwrap();
    let (mut seg, positions) = fill(dir.path(), 20);
    seg.seal().unwrap();
    assert_eq!(seg.next_offset(), 160);
    assert!(!seg.offset_index().is_empty());
    let (reopened, report) = LogSegment::open(dir.path(), 100, SETTINGS, false).unwrap();
    assert_eq!(report, RecoveryReport::default());
    assert_eq!(reopened.next_offset(), 160);
    assert_eq!(reopened.size(), seg.size());
    assert_eq!(reopened.max_timestamp(), 1_000 + 19 * 10 + 2);
    // Every offset is found at the batch that holds it.
    let slice = reopened.slice().unwrap();
    for (i, pos) in positions.iter().enumerate() {
        for k in 0..3 {
            let off = 100 + (i * 3 + k) as i64;
            let (p, h) = slice
                .seek(reopened.position_hint(off), off)
                .unwrap()
                .unwrap();
            assert_eq!(p, *pos);
            assert_eq!(h.base_offset, 100 + (i * 3) as i64);
        }
    }
}

#[test]
fn torn_write_at_every_byte_of_last_batch_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let (seg, positions) = fill(dir.path(), 5);
    let full = seg.size();
    let last_start = *positions.last().unwrap();
    let log_path = seg.log_path();
    let original = fs::read(&log_path).unwrap();
    drop(seg);
    for cut in last_start..full {
        fs::write(&log_path, &original[..cut as usize]).unwrap();
        let (rec, report) = LogSegment::open(dir.path(), 100, SETTINGS, true).unwrap();
        assert_eq!(rec.size(), last_start, "cut at {cut}");
        assert_eq!(rec.next_offset(), 112, "cut at {cut}");
        assert_eq!(report.valid_batches, 4);
        assert_eq!(report.truncated_bytes, cut - last_start);
        assert_eq!(fs::metadata(&log_path).unwrap().len(), last_start);
    }
    // Uncut file recovers whole.
    fs::write(&log_path, &original).unwrap();
    let (rec, report) = LogSegment::open(dir.path(), 100, SETTINGS, true).unwrap();
    assert_eq!(rec.next_offset(), 115);
    assert_eq!(report.truncated_bytes, 0);
}

#[test]
fn corrupt_byte_in_last_batch_truncates_it() {
    let dir = tempfile::tempdir().unwrap();
    let (seg, positions) = fill(dir.path(), 4);
    let last_start = *positions.last().unwrap() as usize;
    let log_path = seg.log_path();
    let original = fs::read(&log_path).unwrap();
    drop(seg);
    for at in (last_start + 21)..original.len() {
        let mut bytes = original.clone();
        bytes[at] ^= 0xff;
        fs::write(&log_path, &bytes).unwrap();
        let (rec, report) = LogSegment::open(dir.path(), 100, SETTINGS, true).unwrap();
        assert_eq!(rec.size(), last_start as u64, "flip at {at}");
        assert!(report.stopped_by.is_some());
    }
}

#[test]
fn zero_filled_tail_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let (seg, _) = fill(dir.path(), 3);
    let size = seg.size();
    let log_path = seg.log_path();
    drop(seg);
    let mut bytes = fs::read(&log_path).unwrap();
    bytes.extend(std::iter::repeat_n(0u8, 4096));
    fs::write(&log_path, &bytes).unwrap();
    let (rec, _) = LogSegment::open(dir.path(), 100, SETTINGS, false).unwrap();
    assert_eq!(rec.size(), size);
    assert_eq!(rec.next_offset(), 109);
}

#[test]
fn missing_or_corrupt_index_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut seg, _) = fill(dir.path(), 30);
    seg.seal().unwrap();
    let expected: Vec<_> = seg.offset_index().entries().to_vec();
    let expected_time: Vec<_> = seg.time_index().entries().to_vec();
    let (_, idx, tidx) = LogSegment::paths(dir.path(), 100);
    drop(seg);
    fs::remove_file(&idx).unwrap();
    fs::write(&tidx, [1u8, 2, 3]).unwrap();
    let (rec, _) = LogSegment::open(dir.path(), 100, SETTINGS, false).unwrap();
    assert_eq!(rec.offset_index().entries(), &expected[..]);
    // The rebuilt time index holds the periodic entries; the final
    // entry that sealing adds comes back when the segment is sealed again.
    assert!(expected_time.starts_with(rec.time_index().entries()));
    assert_eq!(rec.next_offset(), 190);
    assert_eq!(rec.max_timestamp(), 1_000 + 29 * 10 + 2);
}

#[test]
fn timestamp_lookup_finds_first_batch_at_or_after() {
    let dir = tempfile::tempdir().unwrap();
    let (seg, positions) = fill(dir.path(), 30);
    let slice = seg.slice().unwrap();
    for i in 0..30usize {
        let ts = 1_000 + i as i64 * 10;
        let (p, h) = slice
            .seek_timestamp(seg.position_for_timestamp(ts), ts)
            .unwrap()
            .unwrap();
        assert_eq!(p, positions[i], "ts {ts}");
        assert_eq!(h.base_offset, 100 + (i * 3) as i64);
    }
    assert!(slice
        .seek_timestamp(seg.position_for_timestamp(5_000), 5_000)
        .unwrap()
        .is_none());
}
