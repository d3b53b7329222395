//! The process's open-file limit: raised to its hard maximum at start
//! (every partition keeps its active segment open, every client a socket),
//! and read back to refuse partition counts the broker could not keep open.
//! Owns no files itself.

/// File descriptors kept out of the partitions' share: client connections,
/// older segments, indexes being rebuilt, the bucket's HTTP connections.
pub const RESERVED_FDS: u64 = 1024;

/// Raises the soft `RLIMIT_NOFILE` to the hard one; returns the soft limit
/// now in force (None where the limit cannot be read).
pub fn raise_to_hard() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    Some(lim.rlim_cur as u64)
}

/// The soft `RLIMIT_NOFILE` in force (None where it cannot be read).
pub fn soft() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: as above.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim.rlim_cur as u64)
}

/// How many partitions this broker can hold open: one active segment each
/// within the limit, less [`RESERVED_FDS`]. `u64::MAX` where unknown.
pub fn partition_capacity() -> u64 {
    soft().map_or(u64::MAX, |n| n.saturating_sub(RESERVED_FDS))
}
