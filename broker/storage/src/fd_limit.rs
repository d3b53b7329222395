//! The process's open-file limit: raised to its hard maximum at start and
//! shared out. Each partition keeps its active segment open; sealed segments
//! share the bounded [`crate::log::file_pool`]; the rest is kept for client
//! sockets, the bucket's HTTP connections and indexes being rebuilt. The
//! partition share is read back to refuse partition counts the broker could
//! not keep open. Owns no files itself.

/// Descriptors kept out of the partitions' and the pool's share, at most:
/// client connections, the bucket's connections, files opened briefly.
pub(crate) const RESERVED_FDS: u64 = 1024;

/// The reserve for a limit: [`RESERVED_FDS`], or a quarter of a small limit.
pub fn reserved(limit: u64) -> u64 {
    RESERVED_FDS.min(limit / 4)
}

/// The sealed-segment pool's size for a limit when the config leaves
/// `log.segment.open.files.max` at 0.
pub(crate) fn default_pool(limit: u64) -> u64 {
    (crate::log::file_pool::DEFAULT_CAPACITY as u64).min(limit / 8)
}

/// Sizes the process's sealed-segment pool from `log.segment.open.files.max`
/// (0: [`default_pool`] of the current limit). Returns the size in force, or
/// why the setting cannot work under the current limit.
pub fn configure_pool(configured: i64) -> Result<usize, String> {
    let limit = soft();
    let size = match (configured, limit) {
        (c, _) if c > 0 => c as u64,
        (_, Some(n)) => default_pool(n),
        (_, None) => crate::log::file_pool::DEFAULT_CAPACITY as u64,
    };
    if let Some(n) = limit {
        let most = n.saturating_sub(reserved(n)) / 2;
        if size > most.max(1) {
            return Err(format!(
                "log.segment.open.files.max={size} leaves no room for active segments within the \
                 file descriptor limit (ulimit -n {n}): at most {most} fit; lower it or raise the limit"
            ));
        }
    }
    let size = size.clamp(1, usize::MAX as u64) as usize;
    crate::log::file_pool::global().set_capacity(size);
    Ok(size)
}

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
/// within the limit, less the reserve and the sealed-segment pool.
/// `u64::MAX` where the limit is unknown.
pub fn partition_capacity() -> u64 {
    soft().map_or(u64::MAX, |n| {
        let pool = crate::log::file_pool::global().capacity() as u64;
        n.saturating_sub(reserved(n)).saturating_sub(pool)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_limits_still_leave_room_for_partitions() {
        assert_eq!(reserved(1024), 256);
        assert_eq!(default_pool(1024), 128);
        assert_eq!(reserved(1 << 20), RESERVED_FDS);
        assert_eq!(default_pool(1 << 20), 4096);
    }
}
