//! DescribeLogDirs (`kafka-log-dirs.sh`, `Admin.describeLogDirs`,
//! `Admin.describeReplicaLogDirs`, and so `kafka-reassign-partitions.sh`):
//! the broker's one log directory (its data dir), with the local size of
//! each partition it hosts, leader or follower, and (v4) the file system's
//! total and usable bytes. Strata never moves a replica between
//! directories, so no partition has a future replica (offset lag 0).

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::*;

use super::s;
use crate::server::Broker;

pub async fn handle(
    req: DescribeLogDirsRequest,
    _version: i16,
    b: &Broker,
) -> DescribeLogDirsResponse {
    let mut r = DescribeLogDirsResponse::default();
    // None: every partition; a list: those of it this broker hosts.
    let wanted: Option<Vec<(String, Vec<i32>)>> = req.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.topic.0.to_string(), t.partitions))
            .collect()
    });
    let view = b.replicas.log_dirs(wanted.as_deref());
    let mut dir = DescribeLogDirsResult::default();
    dir.log_dir = s(view.dir.display().to_string());
    let (total, usable) = file_system_bytes(&view.dir).unwrap_or((-1, -1));
    dir.total_bytes = total;
    dir.usable_bytes = usable;
    for (name, partitions) in view.topics {
        let mut out = DescribeLogDirsTopic::default();
        out.name = TopicName(s(name));
        for (partition, size) in partitions {
            let mut p = DescribeLogDirsPartition::default();
            p.partition_index = partition;
            p.partition_size = size as i64;
            p.offset_lag = 0;
            p.is_future_key = false;
            out.partitions.push(p);
        }
        dir.topics.push(out);
    }
    r.results.push(dir);
    r
}

/// The file system's total and usable (available to unprivileged users)
/// bytes under `dir`, as Kafka reports them (v4).
fn file_system_bytes(dir: &std::path::Path) -> Option<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs reads the NUL-terminated path and writes only the
    // zero-initialised struct passed to it.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    let unit = st.f_frsize as i64;
    Some((
        (st.f_blocks as i64).saturating_mul(unit),
        (st.f_bavail as i64).saturating_mul(unit),
    ))
}
