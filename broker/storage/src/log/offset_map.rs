//! The cleaner's [`OffsetMap`] (key hash → the key's latest offset in the
//! dirty section, bounded by `log.cleaner.dedupe.buffer.size`) and its
//! [`Throttle`] (`log.cleaner.io.max.bytes.per.second`). Memory and pacing
//! only: no files, no log.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// Memory one key costs in the offset map (hash, offset, table overhead).
pub(crate) const BYTES_PER_KEY: u64 = 32;

/// Key hash → latest offset, bounded in entries. 128-bit hashes, as Kafka's
/// MD5: a collision would make the cleaner drop a live key's value.
pub struct OffsetMap {
    entries: HashMap<u128, i64>,
    capacity: usize,
}

impl OffsetMap {
    pub fn with_memory(bytes: u64) -> Self {
        OffsetMap {
            entries: HashMap::new(),
            capacity: (bytes / BYTES_PER_KEY).max(1) as usize,
        }
    }

    fn hash(key: &[u8]) -> u128 {
        let mut a = std::collections::hash_map::DefaultHasher::new();
        0u8.hash(&mut a);
        key.hash(&mut a);
        let mut b = std::collections::hash_map::DefaultHasher::new();
        1u8.hash(&mut b);
        key.hash(&mut b);
        ((a.finish() as u128) << 64) | b.finish() as u128
    }

    /// Records `offset` for `key`; false when the map is full and `key` is
    /// new (it is not recorded).
    pub(super) fn put(&mut self, key: &[u8], offset: i64) -> bool {
        let h = Self::hash(key);
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&h) {
            return false;
        }
        self.entries.insert(h, offset);
        true
    }

    pub(super) fn get(&self, key: &[u8]) -> Option<i64> {
        self.entries.get(&Self::hash(key)).copied()
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }
}

/// Paces a pass to `log.cleaner.io.max.bytes.per.second`.
pub struct Throttle {
    bytes_per_second: f64,
    started: Instant,
    bytes: f64,
}

impl Throttle {
    pub fn new(bytes_per_second: f64) -> Self {
        Throttle {
            bytes_per_second,
            started: Instant::now(),
            bytes: 0.0,
        }
    }

    pub(super) fn account(&mut self, bytes: usize) {
        self.bytes += bytes as f64;
        let due = Duration::from_secs_f64((self.bytes / self.bytes_per_second).min(3600.0));
        let elapsed = self.started.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }
}
