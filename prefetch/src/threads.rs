//! Thread priority of the historical read path's threads (the prefetch
//! runtime and the cache's disk writer): they run nicer than the request
//! workers, so a catch-up yields the CPU to producers and tail readers.

/// Makes the calling thread `nice` steps nicer (Linux threads have a
/// niceness each). Failure only costs the priority, so it is logged.
pub fn lower_thread_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscalls on the calling thread, no memory involved.
        let r = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, nice)
        };
        if r != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "cannot lower the prefetch threads' priority");
        }
    }
}
