//! `LeaderEpochCache`: a partition's leader epochs and the offset each
//! began at (Kafka's `LeaderEpochFileCache`), kept in the partition
//! directory as `leader-epoch-checkpoint` in Kafka's text format (a
//! version line `0`, a count line, then `epoch start_offset` lines),
//! written atomically. It answers OffsetsForLeaderEpoch — where did epoch
//! E end? — which is how a follower finds the point where its log and a
//! new leader's diverge, and is truncated with the log.
//!
//! Pure bookkeeping: it never reads or writes the log itself.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use strata_common::durable_file::write_atomically;

pub(crate) const CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

/// One epoch and the first offset written in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// Kafka's answer for an epoch this log knows nothing about.
pub(crate) const UNDEFINED: (i32, i64) = (-1, -1);

#[derive(Debug)]
pub(crate) struct LeaderEpochCache {
    path: PathBuf,
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// Reads `dir`'s checkpoint (none: empty). An unreadable file is an
    /// error: the caller decides (Kafka rebuilds it from the batches).
    pub fn open(dir: &Path) -> io::Result<LeaderEpochCache> {
        let path = dir.join(CHECKPOINT_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let entries = if text.is_empty() {
            Vec::new()
        } else {
            parse(&text).map_err(|why| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {why}", path.display()),
                )
            })?
        };
        Ok(LeaderEpochCache { path, entries })
    }

    /// An empty cache at `dir` (its file is written at the first entry).
    pub fn empty(dir: &Path) -> LeaderEpochCache {
        LeaderEpochCache {
            path: dir.join(CHECKPOINT_FILE),
            entries: Vec::new(),
        }
    }

    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub(crate) fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset` (a batch of a newer
    /// epoch was appended there). Older or equal epochs change nothing;
    /// an entry whose start is not below the new one is dropped (it
    /// covered no record).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> io::Result<()> {
        if epoch < 0 || self.latest_epoch().is_some_and(|e| e >= epoch) {
            return Ok(());
        }
        self.entries.retain(|e| e.start_offset < start_offset);
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        self.flush()
    }

    /// Where `requested` ended in this log whose end is `log_end_offset`,
    /// Kafka's `endOffsetFor`: the latest epoch ends at the log end; an
    /// older one at the start of the first epoch after it, reported as the
    /// largest epoch at or below it (the requested one itself when the log
    /// holds none below); an epoch above the latest, or any epoch of an
    /// empty cache, is `UNDEFINED`.
    pub(crate) fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> (i32, i64) {
        let Some(last) = self.entries.last() else {
            return UNDEFINED;
        };
        if requested < 0 || requested > last.epoch {
            return UNDEFINED;
        }
        if requested == last.epoch {
            return (requested, log_end_offset);
        }
        // The first epoch above the requested one exists: the last does.
        let i = self.entries.partition_point(|e| e.epoch <= requested);
        let end = self.entries[i].start_offset;
        match i {
            0 => (requested, end),
            _ => (self.entries[i - 1].epoch, end),
        }
    }

    /// The log was truncated to end at `end_offset`: epochs that start at
    /// or above it go.
    pub(crate) fn truncate_from_end(&mut self, end_offset: i64) -> io::Result<()> {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        if self.entries.len() != before {
            self.flush()?;
        }
        Ok(())
    }

    /// The log now starts at `start_offset`: epochs wholly below it go,
    /// and the one containing it starts there.
    pub(crate) fn truncate_from_start(&mut self, start_offset: i64) -> io::Result<()> {
        let keep_from = self
            .entries
            .partition_point(|e| e.start_offset <= start_offset)
            .saturating_sub(1);
        if keep_from == 0
            && self
                .entries
                .first()
                .is_none_or(|e| e.start_offset >= start_offset)
        {
            return Ok(());
        }
        self.entries.drain(..keep_from);
        if let Some(first) = self.entries.first_mut() {
            first.start_offset = first.start_offset.max(start_offset);
        }
        self.flush()
    }

    fn flush(&self) -> io::Result<()> {
        let mut text = format!("0\n{}\n", self.entries.len());
        for e in &self.entries {
            text.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        write_atomically(&self.path, text.as_bytes())
    }
}

/// Opens a partition's epoch cache. A missing or unreadable one for a log
/// that holds records starts at epoch 0 from the log start: every batch
/// Strata wrote before epochs moved carries 0.
pub(crate) fn open_for_log(dir: &Path, log_start: i64, log_end: i64) -> LeaderEpochCache {
    let mut cache = match LeaderEpochCache::open(dir) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "unreadable leader epoch checkpoint; starting again from epoch 0");
            let _ = std::fs::remove_file(dir.join(CHECKPOINT_FILE));
            LeaderEpochCache::open(dir).unwrap_or_else(|_| LeaderEpochCache::empty(dir))
        }
    };
    // The checkpoint is written when an epoch's first batch is appended,
    // before that batch is durable: after a crash it may name epochs that
    // start past the recovered end. (An epoch seeded from the bucket is
    // recorded at the offset before the log start, and stays.)
    if let Err(e) = cache.truncate_from_end(log_end.max(log_start)) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot write the leader epoch checkpoint");
    }
    if cache.latest_epoch().is_none() && log_end > log_start {
        if let Err(e) = cache.assign(0, log_start) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot write the leader epoch checkpoint");
        }
    }
    cache
}

fn parse(text: &str) -> Result<Vec<EpochEntry>, String> {
    let mut lines = text.lines();
    if lines.next() != Some("0") {
        return Err("unsupported leader epoch checkpoint version".into());
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("missing entry count")?;
    let mut out: Vec<EpochEntry> = Vec::with_capacity(count.min(text.len() / 4));
    for line in lines.take(count) {
        let (e, o) = line.trim().split_once(' ').ok_or("malformed entry")?;
        let entry = EpochEntry {
            epoch: e.parse().map_err(|_| "malformed epoch")?,
            start_offset: o.parse().map_err(|_| "malformed offset")?,
        };
        if out
            .last()
            .is_some_and(|p| p.epoch >= entry.epoch || p.start_offset > entry.start_offset)
        {
            return Err("entries out of order".into());
        }
        out.push(entry);
    }
    if out.len() != count {
        return Err("fewer entries than the count says".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> (tempfile::TempDir, LeaderEpochCache) {
        let dir = tempfile::tempdir().unwrap();
        let mut c = LeaderEpochCache::open(dir.path()).unwrap();
        for (e, o) in entries {
            c.assign(*e, *o).unwrap();
        }
        (dir, c)
    }

    #[test]
    fn end_offsets_follow_kafkas_rules() {
        let (_d, c) = cache(&[(0, 0), (2, 10), (5, 30)]);
        assert_eq!(c.end_offset_for(5, 42), (5, 42));
        assert_eq!(c.end_offset_for(7, 42), UNDEFINED);
        // Epoch 2 ended where 5 began; 3 and 4 never happened here.
        assert_eq!(c.end_offset_for(2, 42), (2, 30));
        assert_eq!(c.end_offset_for(4, 42), (2, 30));
        assert_eq!(c.end_offset_for(1, 42), (0, 10));
        assert_eq!(c.end_offset_for(0, 42), (0, 10));
        let (_d2, empty) = cache(&[]);
        assert_eq!(empty.end_offset_for(3, 42), UNDEFINED);
        // Below the first epoch: the requested epoch ended where the log's
        // first epoch began.
        let (_d3, late) = cache(&[(4, 100)]);
        assert_eq!(late.end_offset_for(2, 142), (2, 100));
    }

    #[test]
    fn stale_epochs_are_ignored_and_empty_epochs_replaced() {
        let (_d, mut c) = cache(&[(1, 0), (3, 5)]);
        c.assign(2, 9).unwrap();
        c.assign(3, 9).unwrap();
        assert_eq!(c.latest_epoch(), Some(3));
        // Epoch 4 began where 3 began: 3 covered nothing and goes.
        c.assign(4, 5).unwrap();
        let v: Vec<_> = c
            .entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect();
        assert_eq!(v, [(1, 0), (4, 5)]);
    }

    #[test]
    fn truncation_and_a_restart_keep_it_consistent() {
        let (dir, mut c) = cache(&[(0, 0), (2, 10), (5, 30)]);
        c.truncate_from_end(30).unwrap();
        assert_eq!(c.latest_epoch(), Some(2));
        c.truncate_from_start(12).unwrap();
        let v: Vec<_> = c
            .entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect();
        assert_eq!(v, [(2, 12)]);
        let again = LeaderEpochCache::open(dir.path()).unwrap();
        assert_eq!(again.entries(), c.entries());
    }

    #[test]
    fn an_empty_log_keeps_the_epoch_seeded_below_its_start() {
        // A replica started at the bucket's end (or a restored partition)
        // holds the last tiered batch's epoch at the offset before its
        // start: it survives a restart before any append...
        let (dir, _c) = cache(&[(4, 99)]);
        let again = open_for_log(dir.path(), 100, 100);
        assert_eq!(again.latest_epoch(), Some(4));
        // ...while an epoch of a batch never made durable goes.
        let (dir, _c) = cache(&[(4, 99), (5, 100)]);
        assert_eq!(open_for_log(dir.path(), 100, 100).latest_epoch(), Some(4));
    }

    #[test]
    fn damaged_files_are_errors() {
        for bad in ["1\n0\n", "0\n2\n0 0\n", "0\n2\n3 5\n1 9\n", "0\n1\nx 1\n"] {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join(CHECKPOINT_FILE), bad).unwrap();
            assert!(LeaderEpochCache::open(dir.path()).is_err(), "{bad:?}");
        }
    }
}
