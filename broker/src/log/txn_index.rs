//! `TransactionIndex`: a segment's `.txnindex`, the transactions aborted by
//! a marker in that segment, in Kafka's layout (34-byte entries: version 0,
//! producer id, first offset, last offset — the abort marker's — and the
//! last stable offset once it was written). Read committed fetches collect
//! from it the aborted transactions a consumer must skip.
//!
//! The file exists only once a segment holds an abort marker; its entries
//! are also kept in memory (one per abort). It owns the file format and
//! never decides what was aborted: the producer state does, and the
//! partition log rebuilds entries from the log after a crash.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::durable_file::write_atomically;

pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
const ENTRY_LEN: usize = 34;
const VERSION: i16 = 0;

/// One aborted transaction of one producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of its abort marker.
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        b[0..2].copy_from_slice(&VERSION.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Self> {
        let i64_at = |at: usize| b.get(at..at + 8)?.try_into().ok().map(i64::from_be_bytes);
        if i16::from_be_bytes(b.get(0..2)?.try_into().ok()?) != VERSION {
            return None;
        }
        Some(AbortedTxn {
            producer_id: i64_at(2)?,
            first_offset: i64_at(10)?,
            last_offset: i64_at(18)?,
            last_stable_offset: i64_at(26)?,
        })
    }

    /// Overlaps the offsets `[from, upper)` (Kafka's rule for a fetch).
    pub fn overlaps(&self, from: i64, upper: i64) -> bool {
        self.last_offset >= from && self.first_offset < upper
    }
}

/// Entries of a `.txnindex` file's bytes; a torn last entry is ignored.
pub fn decode_entries(bytes: &[u8]) -> Vec<AbortedTxn> {
    bytes
        .chunks_exact(ENTRY_LEN)
        .map_while(AbortedTxn::decode)
        .collect()
}

/// Bytes of a `.txnindex` file holding `entries`.
pub fn encode_entries(entries: &[AbortedTxn]) -> Vec<u8> {
    entries.iter().flat_map(|e| e.encode()).collect()
}

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
    pub fn truncate_from(&mut self, offset: i64) -> io::Result<()> {
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

    #[test]
    fn kafka_layout_and_overlap_rule() {
        let e = t(0x0102, 7, 20);
        let b = e.encode();
        assert_eq!(&b[0..2], &[0, 0]);
        assert_eq!(i64::from_be_bytes(b[2..10].try_into().unwrap()), 0x0102);
        assert_eq!(i64::from_be_bytes(b[26..34].try_into().unwrap()), 21);
        assert_eq!(decode_entries(&b), vec![e]);
        assert!(e.overlaps(20, 21));
        assert!(e.overlaps(0, 8));
        assert!(!e.overlaps(21, 100));
        assert!(!e.overlaps(0, 7));
    }
}
