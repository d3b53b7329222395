//! The bodies of the fuzz targets (`broker/fuzz`, run with `cargo fuzz`),
//! kept here so the test command replays every seed and every input that
//! once found a bug (`broker/fuzz/seeds`, `broker/fuzz/regressions`) on the
//! stable toolchain. Each takes arbitrary bytes and must neither panic nor
//! allocate beyond what the decode bounds promise.

use bytes::Bytes;

use crate::decode_bounds;
use crate::group::subscription;
use crate::log::batch::{self, BatchScanner};
use crate::log::checkpoint;
use crate::log::index::{OffsetIndex, TimeIndex};
use crate::log::producer_state::ProducerStateManager;
use crate::log::segment::first_record_in_batch;
use crate::server::dispatch::Request;
use strata_format::records as record_scan;

/// A request frame (after its size): header, bounds, then the codec.
pub fn request(data: &[u8]) {
    let Ok(req) = Request::parse(Bytes::copy_from_slice(data)) else {
        return;
    };
    let (api, version) = (req.api_key, req.version);
    if decode_bounds::check_request(api as i16, version, &req.body).is_err() {
        return;
    }
    let mut body = req.body.clone();
    let _ = kafka_protocol::messages::RequestKind::decode(api, &mut body, version);
}

/// A record batch as a producer sends it and as the log and the bucket
/// hold it: validation, the log's batch scan, and the record scan behind
/// timestamp lookups.
pub fn record_batch(data: &[u8]) {
    let _ = batch::validate(data);
    let mut scanner = BatchScanner::new(data, true);
    for _ in scanner.by_ref() {}
    let _ = record_scan::scan_records(data, |_, _| true);
    let _ = first_record_in_batch(Bytes::copy_from_slice(data), i64::MAX, |t| t >= 0);
}

/// Consumer protocol payloads inside JoinGroup and SyncGroup.
pub fn consumer_protocol(data: &[u8]) {
    let b = Bytes::copy_from_slice(data);
    let _ = subscription::topics(&b);
    let _ = subscription::assigned(&b, "t", 0);
}

/// What the broker reads back from its data directory and the bucket:
/// producer snapshots, offset checkpoints, offset and time indexes,
/// partition manifests.
pub fn stored_files(data: &[u8]) {
    let _ = ProducerStateManager::decode(data);
    let _ = serde_json::from_slice::<strata_catalog::PartitionManifest>(data);
    let dir = std::env::temp_dir().join(format!("strata-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let checkpoint = dir.join("checkpoint");
    if std::fs::write(&checkpoint, data).is_ok() {
        let _ = checkpoint::read(&checkpoint);
    }
    let path = dir.join("index");
    if std::fs::write(&path, data).is_ok() {
        if let Ok(Some(i)) = OffsetIndex::load(&path, 1 << 20, |_| true) {
            let _ = i.floor(i64::MAX / 2);
        }
        if let Ok(Some(i)) = TimeIndex::load(&path, 1 << 20, |_| true) {
            let _ = i.floor(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    /// Every seed and regression input of `target` (files under
    /// broker/fuzz/{seeds,regressions}/<target>/).
    fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut out = vec![];
        for kind in ["seeds", "regressions"] {
            let Ok(dir) = std::fs::read_dir(root.join(kind).join(target)) else {
                continue;
            };
            for e in dir.flatten() {
                if let Ok(b) = std::fs::read(e.path()) {
                    out.push((e.path(), b));
                }
            }
        }
        out
    }

    fn replay(target: &str, f: fn(&[u8]), at_least: usize) {
        let all = inputs(target);
        assert!(
            all.len() >= at_least,
            "{target}: {} inputs, expected {at_least}",
            all.len()
        );
        for (path, data) in all {
            eprintln!("{}", path.display());
            f(&data);
        }
    }

    #[test]
    fn request_inputs_replay() {
        replay("request", super::request, 20);
    }

    #[test]
    fn record_batch_inputs_replay() {
        replay("record_batch", super::record_batch, 5);
    }

    #[test]
    fn consumer_protocol_inputs_replay() {
        replay("consumer_protocol", super::consumer_protocol, 2);
    }

    #[test]
    fn stored_files_inputs_replay() {
        replay("stored_files", super::stored_files, 3);
    }
}
