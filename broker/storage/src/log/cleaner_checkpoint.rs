//! The cleaner's state on disk, read when a partition opens: the
//! `cleaner-offset-checkpoint` file (how far compaction has gone, so a
//! restart tells its gaps from damage) and the `cleaner.tmp/` directory a
//! pass writes in. Knows nothing of the log itself (`cleaner.rs` runs
//! passes).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub(crate) const CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
pub const TMP_DIR: &str = "cleaner.tmp";

/// Where the cleaner is in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanerCheckpoint {
    /// Offsets below this were rewritten by a pass (or were about to be
    /// when the broker stopped): gaps there are compaction's.
    pub cleaned_through: i64,
    /// The first offset no pass has put into its map yet.
    pub first_dirty: i64,
}

impl CleanerCheckpoint {
    pub fn load(dir: &Path) -> CleanerCheckpoint {
        let Ok(text) = fs::read_to_string(dir.join(CHECKPOINT_FILE)) else {
            return CleanerCheckpoint::default();
        };
        let mut lines = text.lines();
        if lines.next() != Some("0") {
            return CleanerCheckpoint::default();
        }
        let nums: Vec<i64> = lines
            .next()
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        match nums.as_slice() {
            [c, d] => CleanerCheckpoint {
                cleaned_through: *c,
                first_dirty: *d,
            },
            _ => CleanerCheckpoint::default(),
        }
    }

    pub fn store(&self, dir: &Path) -> io::Result<()> {
        strata_common::durable_file::write_atomically(
            &dir.join(CHECKPOINT_FILE),
            format!("0\n{} {}\n", self.cleaned_through, self.first_dirty).as_bytes(),
        )
    }
}

/// Leftovers of a pass a crash interrupted: removed, and the caller
/// recovers every segment.
pub fn interrupted_pass(dir: &Path) -> bool {
    let tmp: PathBuf = dir.join(TMP_DIR);
    if tmp.exists() {
        let _ = fs::remove_dir_all(&tmp);
        return true;
    }
    false
}
