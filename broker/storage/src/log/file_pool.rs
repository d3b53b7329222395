//! `SegmentFilePool`: the open file handles of sealed segments, bounded.
//!
//! A sealed segment is only read, and most sealed segments are read rarely
//! (a consumer catching up, a timestamp lookup, the uploader). Keeping one
//! descriptor per segment for the life of the broker would make the open
//! file count grow with the hot window; instead sealed segments hand their
//! handle to this pool, which keeps at most `capacity` of them, closes the
//! least recently used one when full, and reopens a segment read-only when
//! it is read again. A reader holds an `Arc<File>`, so an eviction never
//! closes a file under a read in progress: the descriptor closes when that
//! read drops it.
//!
//! Descriptors are a per-process resource, so there is one pool per
//! process ([`global`]), sized once at start from
//! `log.segment.open.files.max`. The pool never writes, truncates or
//! deletes a file; active segments keep their own handle and never enter it.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The default when the broker config leaves `log.segment.open.files.max` at 0.
pub(crate) const DEFAULT_CAPACITY: usize = 4096;

#[derive(Debug, Default)]
struct Entries {
    /// Logical clock of the last use, per path.
    open: HashMap<PathBuf, (Arc<File>, u64)>,
    /// Last-use stamp → path, oldest first.
    by_use: BTreeMap<u64, PathBuf>,
    clock: u64,
}

#[derive(Debug)]
pub(crate) struct SegmentFilePool {
    capacity: AtomicUsize,
    entries: Mutex<Entries>,
    reopened: AtomicUsize,
}

/// The process's pool.
pub fn global() -> &'static SegmentFilePool {
    static POOL: OnceLock<SegmentFilePool> = OnceLock::new();
    POOL.get_or_init(|| SegmentFilePool::new(DEFAULT_CAPACITY))
}

impl SegmentFilePool {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: AtomicUsize::new(capacity.max(1)),
            entries: Mutex::new(Entries::default()),
            reopened: AtomicUsize::new(0),
        }
    }

    /// Changes the bound; handles above it are closed at once.
    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity.max(1), Ordering::Relaxed);
        let mut e = self.lock();
        self.evict_over(&mut e, 0);
    }

    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Handles the pool holds open now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// How many times a handle had to be opened again after eviction.
    #[cfg(test)]
    pub(crate) fn reopened(&self) -> usize {
        self.reopened.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes least recently used handles until `room` more fit.
    fn evict_over(&self, e: &mut Entries, room: usize) {
        let cap = self.capacity();
        while e.open.len() + room > cap {
            let Some((_, path)) = e.by_use.pop_first() else {
                break;
            };
            e.open.remove(&path);
        }
    }

    fn touch(e: &mut Entries, path: &Path) -> Option<Arc<File>> {
        e.clock += 1;
        let stamp = e.clock;
        let (file, used) = e.open.get_mut(path)?;
        e.by_use.remove(used);
        *used = stamp;
        e.by_use.insert(stamp, path.to_path_buf());
        Some(file.clone())
    }

    /// Stores `file` for `path`, replacing a handle held for an older file
    /// of that name (a partition deleted and created again).
    fn put(&self, e: &mut Entries, path: &Path, file: Arc<File>) {
        if let Some((_, used)) = e.open.remove(path) {
            e.by_use.remove(&used);
        }
        self.evict_over(e, 1);
        e.clock += 1;
        e.open.insert(path.to_path_buf(), (file, e.clock));
        e.by_use.insert(e.clock, path.to_path_buf());
    }

    /// Hands over the handle of a segment that was just sealed (or opened
    /// at start), so the next read does not have to open it again.
    pub fn insert(&self, path: &Path, file: Arc<File>) {
        let mut e = self.lock();
        self.put(&mut e, path, file);
    }

    /// The handle of the sealed segment at `path`, opened read-only if the
    /// pool does not hold it.
    pub fn get(&self, path: &Path) -> io::Result<Arc<File>> {
        if let Some(f) = Self::touch(&mut self.lock(), path) {
            return Ok(f);
        }
        // Opened outside the lock: two readers racing open it twice and
        // the pool keeps one.
        let file = Arc::new(File::open(path)?);
        self.reopened.fetch_add(1, Ordering::Relaxed);
        let mut e = self.lock();
        if let Some(f) = Self::touch(&mut e, path) {
            return Ok(f);
        }
        self.put(&mut e, path, file.clone());
        Ok(file)
    }

    /// Drops the handle of a segment whose files are being deleted.
    pub fn forget(&self, path: &Path) {
        let mut e = self.lock();
        if let Some((_, used)) = e.open.remove(path) {
            e.by_use.remove(&used);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn files(dir: &Path, n: usize) -> Vec<PathBuf> {
        (0..n)
            .map(|i| {
                let p = dir.join(format!("{i}.log"));
                File::create(&p).unwrap().write_all(&[i as u8]).unwrap();
                p
            })
            .collect()
    }

    #[test]
    fn keeps_at_most_capacity_and_evicts_least_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 5);
        let pool = SegmentFilePool::new(3);
        for p in &paths[..3] {
            pool.get(p).unwrap();
        }
        // Use 0 again: 1 is now the oldest and goes first.
        pool.get(&paths[0]).unwrap();
        pool.get(&paths[3]).unwrap();
        assert_eq!(pool.len(), 3);
        let reopened = pool.reopened();
        pool.get(&paths[0]).unwrap();
        pool.get(&paths[2]).unwrap();
        assert_eq!(pool.reopened(), reopened, "0 and 2 stayed open");
        pool.get(&paths[1]).unwrap();
        assert_eq!(pool.reopened(), reopened + 1, "1 had been evicted");
        assert_eq!(pool.len(), 3);
    }

    #[test]
    fn an_evicted_handle_stays_usable_by_its_reader() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 2);
        let pool = SegmentFilePool::new(1);
        let held = pool.get(&paths[0]).unwrap();
        pool.get(&paths[1]).unwrap();
        let mut b = [0u8; 1];
        held.read_exact_at(&mut b, 0).unwrap();
        assert_eq!(b, [0]);
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn forget_and_shrink() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 4);
        let pool = SegmentFilePool::new(4);
        for p in &paths {
            pool.insert(p, Arc::new(File::open(p).unwrap()));
        }
        pool.forget(&paths[3]);
        assert_eq!(pool.len(), 3);
        pool.set_capacity(1);
        assert_eq!(pool.len(), 1);
        // The survivor is the most recently used.
        let r = pool.reopened();
        pool.get(&paths[2]).unwrap();
        assert_eq!(pool.reopened(), r);
        assert!(pool.get(&dir.path().join("missing.log")).is_err());
    }
}
