//! `TransactionIndex`: a segment's `.txnindex` file, the transactions
//! aborted by a marker in that segment (entries in Kafka's layout,
//! `strata_format::txn_index`). Read committed fetches collect from it the
//! aborted transactions a consumer must skip.
//!
//! The file exists only once a segment holds an abort marker; its entries
//! are also kept in memory (one per abort). It owns the file and never
//! decides what was aborted: the producer state does, and the partition
//! log rebuilds entries from the log after a crash.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use strata_common::durable_file::write_atomically;

pub(crate) const TXN_INDEX_SUFFIX: &str = ".txnindex";
pub use strata_format::txn_index::{decode_entries, encode_entries, AbortedTxn};

#[derive(Debug)]
pub struct TransactionIndex {
    path: PathBuf,
    entries: Vec<AbortedTxn>,
}

impl TransactionIndex {
    /// The index at `path`, empty if the file does not exist. A file that
    /// cannot be read is reported and treated as empty: the partition log
    /// rebuilds entries above its producer-state snapshot from the log.
    pub fn open(path: PathBuf) -> Self {
        let entries = match fs::read(&path) {
            Ok(b) => decode_entries(&b),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "cannot read a transaction index");
                Vec::new()
            }
        };
        TransactionIndex { path, entries }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Appends an entry (not fsynced: the segment's seal syncs it, and
    /// recovery rebuilds what a crash took).
    pub fn append(&mut self, t: AbortedTxn) -> io::Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        f.write_all(&t.encode())?;
        self.entries.push(t);
        Ok(())
    }

    /// Makes the file durable, if there is one.
    pub fn sync(&self) -> io::Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        OpenOptions::new()
            .append(true)
            .open(&self.path)?
            .sync_data()
    }

    /// Drops the entries whose marker is at or above `offset` (a log
    /// truncated there, or entries about to be rebuilt from the log).
    pub(crate) fn truncate_from(&mut self, offset: i64) -> io::Result<()> {
        let before = self.entries.len();
        self.entries.retain(|e| e.last_offset < offset);
        if self.entries.len() == before {
            return Ok(());
        }
        self.rewrite()
    }

    fn rewrite(&self) -> io::Result<()> {
        if self.entries.is_empty() {
            return match fs::remove_file(&self.path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        write_atomically(&self.path, &encode_entries(&self.entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pid: i64, first: i64, last: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: last + 1,
        }
    }

    #[test]
    fn entries_survive_reopen_truncate_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let mut idx = TransactionIndex::open(path.clone());
        assert!(idx.entries().is_empty());
        idx.sync().unwrap();
        assert!(!path.exists(), "no file without an abort");
        idx.append(t(1, 0, 5)).unwrap();
        idx.append(t(2, 3, 9)).unwrap();
        idx.sync().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 68);
        // A torn entry at the end is ignored.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[0, 0, 1, 2, 3]).unwrap();
        let mut idx = TransactionIndex::open(path.clone());
        assert_eq!(idx.entries(), &[t(1, 0, 5), t(2, 3, 9)]);
        idx.truncate_from(9).unwrap();
        assert_eq!(
            TransactionIndex::open(path.clone()).entries(),
            &[t(1, 0, 5)]
        );
        idx.truncate_from(0).unwrap();
        assert!(!path.exists());
    }
}
