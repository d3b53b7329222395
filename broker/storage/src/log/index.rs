//! Sparse on-disk indexes of a log segment, in Kafka's file formats:
//! `.index` maps a relative offset to a file position (8-byte entries) and
//! `.timeindex` maps a timestamp to a relative offset (12-byte entries).
//!
//! Entries are kept in memory for lookups and appended to the file lazily;
//! the index is a cache of the log, so recovery may always rebuild it from
//! the `.log` file. This module never reads the log itself.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

pub use strata_format::index::{IndexEntry, OffsetPosition, TimestampOffset};

pub type OffsetIndex = SparseIndex<OffsetPosition>;
pub type TimeIndex = SparseIndex<TimestampOffset>;

/// An append-only sparse index backed by a file.
#[derive(Debug)]
pub struct SparseIndex<E: IndexEntry> {
    path: PathBuf,
    entries: Vec<E>,
    /// Number of entries already written to the file.
    persisted: usize,
    max_entries: usize,
}

impl<E: IndexEntry> SparseIndex<E> {
    /// Creates an empty index, truncating any file at `path`.
    pub fn create(path: &Path, max_bytes: usize) -> io::Result<Self> {
        File::create(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            entries: Vec::new(),
            persisted: 0,
            max_entries: (max_bytes / E::SIZE).max(1),
        })
    }

    /// Loads an index file. Returns `Ok(None)` when the file is missing or
    /// not a valid index (wrong size, keys not increasing, or an entry past
    /// `limit_key`); the caller then rebuilds it from the log.
    pub fn load(
        path: &Path,
        max_bytes: usize,
        valid: impl Fn(&E) -> bool,
    ) -> io::Result<Option<Self>> {
        let mut bytes = Vec::new();
        match File::open(path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
        if bytes.len() % E::SIZE != 0 {
            return Ok(None);
        }
        let entries: Vec<E> = bytes.chunks_exact(E::SIZE).map(E::decode).collect();
        let increasing = entries.windows(2).all(|w| w[0].key() < w[1].key());
        if !increasing || !entries.iter().all(valid) {
            return Ok(None);
        }
        let persisted = entries.len();
        Ok(Some(Self {
            path: path.to_path_buf(),
            entries,
            persisted,
            max_entries: (max_bytes / E::SIZE).max(1).max(persisted),
        }))
    }

    /// Appends an entry if its key is greater than the last one's.
    pub fn append(&mut self, entry: E) {
        if self.entries.last().is_none_or(|l| entry.key() > l.key()) {
            self.entries.push(entry);
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    pub fn last(&self) -> Option<E> {
        self.entries.last().copied()
    }

    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[E] {
        &self.entries
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The last entry whose key is `<= key`.
    pub fn floor(&self, key: i64) -> Option<E> {
        let idx = self.entries.partition_point(|e| e.key() <= key);
        if idx == 0 {
            None
        } else {
            Some(self.entries[idx - 1])
        }
    }

    /// Writes entries not yet in the file; with `sync`, fsyncs it too.
    pub fn persist(&mut self, sync: bool) -> io::Result<()> {
        if self.persisted < self.entries.len() {
            let mut buf = Vec::with_capacity((self.entries.len() - self.persisted) * E::SIZE);
            for e in &self.entries[self.persisted..] {
                e.encode(&mut buf);
            }
            let mut f = OpenOptions::new().append(true).open(&self.path)?;
            f.write_all(&buf)?;
            if sync {
                f.sync_data()?;
            }
            self.persisted = self.entries.len();
        } else if sync {
            File::open(&self.path)?.sync_data()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_lookup_and_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.index");
        let mut idx = OffsetIndex::create(&p, 1024).unwrap();
        for i in 0..10u32 {
            idx.append(OffsetPosition {
                relative_offset: i * 10,
                position: i * 100,
            });
        }
        // Non-increasing entries are ignored.
        idx.append(OffsetPosition {
            relative_offset: 5,
            position: 1,
        });
        assert_eq!(idx.len(), 10);
        assert_eq!(idx.floor(0).unwrap().position, 0);
        assert_eq!(idx.floor(15).unwrap().position, 100);
        assert_eq!(idx.floor(1_000).unwrap().position, 900);
        idx.persist(true).unwrap();
        let loaded = OffsetIndex::load(&p, 1024, |_| true).unwrap().unwrap();
        assert_eq!(loaded.entries(), idx.entries());
    }

    #[test]
    fn corrupt_files_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.timeindex");
        std::fs::write(&p, [0u8; 13]).unwrap();
        assert!(TimeIndex::load(&p, 1024, |_| true).unwrap().is_none());
        let mut bytes = Vec::new();
        TimestampOffset {
            timestamp: 10,
            relative_offset: 1,
        }
        .encode(&mut bytes);
        TimestampOffset {
            timestamp: 5,
            relative_offset: 2,
        }
        .encode(&mut bytes);
        std::fs::write(&p, &bytes).unwrap();
        assert!(TimeIndex::load(&p, 1024, |_| true).unwrap().is_none());
        assert!(TimeIndex::load(&dir.path().join("missing"), 1024, |_| true)
            .unwrap()
            .is_none());
    }

    #[test]
    fn full_after_max_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = OffsetIndex::create(&dir.path().join("i"), 16).unwrap();
        idx.append(OffsetPosition {
            relative_offset: 1,
            position: 1,
        });
        assert!(!idx.is_full());
        idx.append(OffsetPosition {
            relative_offset: 2,
            position: 2,
        });
        assert!(idx.is_full());
    }
}
