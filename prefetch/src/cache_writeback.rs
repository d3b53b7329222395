//! Steady writeback of the chunk cache's disk tier.
//!
//! foyer writes cache blocks with buffered I/O, so what it writes sits dirty
//! in the page cache until the kernel's flusher takes it: after
//! `vm.dirty_expire_centisecs` (30 s by default), all at once. On a disk the
//! log shares, the log's `fdatasync`s then queue behind hundreds of MiB of
//! cache data: a buffered writer at the cache's default 32 MiB/s stalled a
//! 6-file append+fdatasync probe for up to 805 ms on the benchmark machine;
//! with this pass every 100 ms the worst was 18–72 ms
//! (`benches/fsync_floor.py`, `docs/history-isolation.md`).
//!
//! This module owns one thread that, every `interval`, asks the kernel to
//! *start* writing back each cache file's dirty pages
//! (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so the cache's writes reach
//! the disk in small pieces as they are made. It never waits for that
//! writeback to finish and never makes anything durable (a cache needs no
//! durability; the log's own fsyncs are untouched). It only opens files in
//! the cache directory, read-only.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// The running writeback thread; stops (and is joined) when dropped,
/// without waiting out its interval.
#[derive(Debug)]
pub struct CacheWriteback {
    /// Dropping it wakes the thread and ends it.
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl CacheWriteback {
    /// Starts the writeback of the files under `dir` every `interval`.
    /// `nice`: the thread's niceness (that of the prefetch threads).
    pub fn start(dir: &Path, interval: Duration, nice: i32) -> std::io::Result<CacheWriteback> {
        let (stop, stopped) = mpsc::channel::<()>();
        let dir = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("strata-cache-wb".into())
            .spawn(move || {
                crate::threads::lower_thread_priority(nice);
                let mut files = HashMap::new();
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    write_back_pass(&dir, &mut files);
                }
            })?;
        Ok(CacheWriteback {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for CacheWriteback {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One pass: starts the writeback of every regular file under `dir`. Open
/// files are kept in `files` between passes (foyer creates its files when
/// the cache is built); a file gone from the directory is closed. Failures
/// only cost the steadiness: a file whose writeback fails is logged and
/// dropped from `files`.
pub fn write_back_pass(dir: &Path, files: &mut HashMap<PathBuf, File>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut present = HashSet::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        present.insert(path.clone());
        if files.contains_key(&path) {
            continue;
        }
        match File::open(&path) {
            Ok(f) => {
                files.insert(path, f);
            }
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "cache writeback: cannot open")
            }
        }
    }
    files.retain(|path, f| match present.contains(path).then(|| start_writeback(f)) {
        None => false,
        Some(Ok(())) => true,
        Some(Err(e)) => {
            tracing::warn!(path = %path.display(), error = %e, "cache writeback: sync_file_range failed; leaving this file to the kernel's flusher");
            false
        }
    });
}

#[cfg(target_os = "linux")]
fn start_writeback(f: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor; offset 0 and length 0 mean the whole
    // file; SYNC_FILE_RANGE_WRITE only queues writeback of dirty pages.
    let r = unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_f: &File) -> std::io::Result<()> {
    Ok(()) // left to the platform's flusher
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// Pages of `f` dirty or under writeback, from `cachestat(2)` (Linux
    /// 6.5+); `None` where the kernel lacks it.
    fn dirty_pages(f: &File) -> Option<u64> {
        #[repr(C)]
        #[derive(Default)]
        struct Range {
            off: u64,
            len: u64,
        }
        #[repr(C)]
        #[derive(Default)]
        struct Stat {
            cache: u64,
            dirty: u64,
            writeback: u64,
            evicted: u64,
            recently_evicted: u64,
        }
        let (range, mut stat) = (Range::default(), Stat::default());
        // SAFETY: both structs are laid out as the kernel's and outlive the call.
        let r = unsafe {
            libc::syscall(
                451, // SYS_cachestat, the same on every architecture
                f.as_raw_fd(),
                &range as *const Range,
                &mut stat as *mut Stat,
                0u32,
            )
        };
        (r == 0).then_some(stat.dirty + stat.writeback)
    }

    /// Without a pass, written pages stay dirty (the flusher waits 30 s);
    /// after one, the kernel has written them within a few seconds.
    #[test]
    fn a_pass_sends_dirty_cache_pages_to_disk() {
        // on disk: a tmpfs /tmp keeps no dirty pages
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
        let dir = tempfile::tempdir_in(&target)
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let path = dir.path().join("foyer-storage-00000000");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![7u8; 4 << 20]).unwrap();
        let Some(before) = dirty_pages(&f) else {
            eprintln!("cachestat(2) unavailable: nothing to check");
            return;
        };
        // tmpfs keeps no dirty pages: the check means nothing there
        if before == 0 {
            eprintln!(
                "{} keeps no dirty pages: nothing to check",
                dir.path().display()
            );
            return;
        }
        let mut files = HashMap::new();
        write_back_pass(dir.path(), &mut files);
        assert_eq!(files.len(), 1, "the cache file was found");
        let mut left = u64::MAX;
        for _ in 0..100 {
            left = dirty_pages(&f).unwrap();
            if left == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // the kernel's own flusher would leave them for 30 s
        assert_eq!(left, 0, "dirty pages left 5 s after a writeback pass");
    }

    /// Dropping it ends the thread at once, not after its interval.
    #[test]
    fn stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let wb = CacheWriteback::start(dir.path(), Duration::from_secs(600), 0).unwrap();
        let t = std::time::Instant::now();
        drop(wb);
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "drop waited {:?}",
            t.elapsed()
        );
    }

    /// A file removed from the directory is closed at the next pass.
    #[test]
    fn forgets_files_that_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"x").unwrap();
        std::fs::write(&b, b"y").unwrap();
        let mut files = HashMap::new();
        write_back_pass(dir.path(), &mut files);
        assert_eq!(files.len(), 2);
        std::fs::remove_file(&a).unwrap();
        write_back_pass(dir.path(), &mut files);
        assert_eq!(files.keys().collect::<Vec<_>>(), vec![&b]);
    }
}
