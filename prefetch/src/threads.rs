//! Thread priority of background threads (the prefetch runtime, the
//! cache's disk writer, and the broker's log cleaner): they run nicer than
//! the request workers, so a catch-up or a cleaning pass yields the CPU to
//! producers and tail readers.

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
            tracing::debug!(error = %std::io::Error::last_os_error(), "cannot lower a background thread's priority");
        }
    }
}
