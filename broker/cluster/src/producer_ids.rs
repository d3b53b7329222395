//! Producer id allocation for InitProducerId. Ids are reserved in blocks.
//!
//! A single broker persists the end of its current block
//! (`producer-id-block`) before it hands out any id in it, so a restart
//! never reuses an id. Each node id owns its own range (`node.id × 2^40`
//! onwards); node 0, a single broker's default, keeps the ids it always
//! had.
//!
//! In a cluster the file is not enough: a broker whose disk is replaced
//! starts its range over while the partitions it replicates still carry
//! the ids it issued before (a new producer would be told its first batch
//! is out of order). There blocks come from one counter in the metadata
//! store, above every node range, as Kafka's controller hands out blocks
//! (KIP-730): `cluster/producer_id_blocks.rs` fetches the next block
//! while half of the current one is left, so InitProducerId never waits
//! on the store; without a block it is refused as retriable
//! (COORDINATOR_NOT_AVAILABLE).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::sync::Notify;

use strata_common::durable_file::write_atomically;

const FILE: &str = "producer-id-block";
/// Ids per block.
pub(crate) const BLOCK: i64 = 1000;
/// Ids per node: node `n` hands out `n × SPAN ..= (n + 1) × SPAN - 1`.
const SPAN: i64 = 1 << 40;
/// The first id of the cluster's shared counter: above every node range.
pub(crate) const SHARED_BASE: i64 = 1 << 62;
/// Shared ids are handed out below this; a larger id found in a partition
/// was made up by a client (a produce with an unknown producer id and
/// sequence 0 is accepted) and sets no floor.
pub(crate) const SHARED_LIMIT: i64 = SHARED_BASE + (1 << 61);

#[derive(Debug)]
struct State {
    /// The next id to hand out and the end of its block (relative to
    /// `base` for a single broker, absolute for shared blocks).
    next: i64,
    end: i64,
    /// Shared blocks: the next block, fetched ahead.
    queued: Option<(i64, i64)>,
    shared: bool,
    /// Shared ids below this are held by partitions or transaction state
    /// (`reserve_above`): never handed out, whatever the store's counter
    /// says (it may have been restored from an old backup).
    floor: i64,
}

#[derive(Debug)]
pub struct ProducerIdManager {
    path: PathBuf,
    /// The first id of this node's range; the state below is relative.
    base: i64,
    state: Mutex<State>,
    /// Woken when a shared block should be fetched.
    block_wanted: Notify,
}

impl ProducerIdManager {
    pub fn open(data_dir: &Path, node_id: i32) -> io::Result<Self> {
        let path = data_dir.join(FILE);
        let reserved_end = match fs::read_to_string(&path) {
            Ok(s) => s.trim().parse::<i64>().map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        Ok(ProducerIdManager {
            path,
            base: i64::from(node_id.max(0)) * SPAN,
            state: Mutex::new(State {
                next: reserved_end,
                end: reserved_end,
                queued: None,
                shared: false,
                floor: 0,
            }),
            block_wanted: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// From now on ids come only from blocks given to [`Self::add_block`]
    /// (a cluster's shared counter).
    pub(crate) fn use_shared_blocks(&self) {
        let mut st = self.state();
        let floor = st.floor;
        *st = State {
            next: 0,
            end: 0,
            queued: None,
            shared: true,
            floor,
        };
        drop(st);
        self.block_wanted.notify_one();
    }

    /// Shared blocks: whether the next block should be fetched now (none
    /// queued, and less than half of the current one left).
    pub(crate) fn wants_block(&self) -> bool {
        let st = self.state();
        let next = st.next.max(st.floor);
        st.shared && (st.queued.is_none_or(|(_, end)| end <= st.floor)) && st.end - next < BLOCK / 2
    }

    /// Shared ids below this must not be handed out (see `State::floor`).
    pub fn floor(&self) -> i64 {
        self.state().floor
    }

    /// Waits until a shared block may be wanted (check [`Self::wants_block`]).
    pub(crate) async fn block_wanted(&self) {
        self.block_wanted.notified().await
    }

    /// Shared blocks: ids `start..end` are this broker's to hand out.
    pub(crate) fn add_block(&self, start: i64, end: i64) {
        let mut st = self.state();
        if st.next >= st.end {
            st.next = start;
            st.end = end;
        } else {
            st.queued = Some((start, end));
        }
    }

    /// Makes sure no id at or below `id` is handed out from now on (ids
    /// found in partitions restored from the object store, or in
    /// transaction state). Shared ids raise the floor below which no shared
    /// id is handed out.
    pub fn reserve_above(&self, id: i64) -> io::Result<()> {
        if id >= SHARED_BASE {
            if id >= SHARED_LIMIT {
                tracing::warn!(
                    producer_id = id,
                    "ignored a producer id no broker hands out"
                );
                return Ok(());
            }
            let mut st = self.state();
            st.floor = st.floor.max(id + 1);
            let behind = st.shared && st.next < st.floor && st.floor >= st.end;
            drop(st);
            if behind {
                self.block_wanted.notify_one();
            }
            return Ok(());
        }
        // Another node's ids can never come from this one.
        if id < self.base || id >= self.base + SPAN {
            return Ok(());
        }
        let id = id - self.base;
        let mut st = self.state();
        if st.shared || st.next > id {
            return Ok(());
        }
        let end = (id + 1 + BLOCK).max(st.end);
        write_atomically(&self.path, end.to_string().as_bytes())?;
        st.next = id + 1;
        st.end = end;
        Ok(())
    }

    /// A producer id never handed out before.
    pub fn next_id(&self) -> io::Result<i64> {
        let mut st = self.state();
        if st.shared {
            if st.next < st.floor {
                st.next = st.floor.min(st.end);
            }
            while st.next >= st.end {
                match st.queued.take() {
                    Some((start, end)) => {
                        st.next = start.max(st.floor.min(end));
                        st.end = end;
                    }
                    None => {
                        drop(st);
                        self.block_wanted.notify_one();
                        return Err(io::Error::new(
                            io::ErrorKind::WouldBlock,
                            "no producer id block from the cluster metadata store yet",
                        ));
                    }
                }
            }
            let id = st.next;
            st.next += 1;
            let low = st.queued.is_none() && st.end - st.next < BLOCK / 2;
            drop(st);
            if low {
                self.block_wanted.notify_one();
            }
            return Ok(id);
        }
        if st.next >= st.end {
            let end = st.end + BLOCK;
            write_atomically(&self.path, end.to_string().as_bytes())?;
            st.end = end;
        }
        let id = st.next;
        st.next += 1;
        Ok(self.base + id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let m = ProducerIdManager::open(dir.path(), 0).unwrap();
        assert_eq!(m.next_id().unwrap(), 0);
        assert_eq!(m.next_id().unwrap(), 1);
        drop(m);
        let m = ProducerIdManager::open(dir.path(), 0).unwrap();
        assert_eq!(m.next_id().unwrap(), BLOCK);
        m.reserve_above(5_000).unwrap();
        assert_eq!(m.next_id().unwrap(), 5_001);
        m.reserve_above(10).unwrap();
        assert_eq!(m.next_id().unwrap(), 5_002);
        drop(m);
        let m = ProducerIdManager::open(dir.path(), 0).unwrap();
        assert!(m.next_id().unwrap() > 5_002);
    }

    #[test]
    fn nodes_never_share_an_id() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let one = ProducerIdManager::open(a.path(), 1).unwrap();
        let two = ProducerIdManager::open(b.path(), 2).unwrap();
        assert_eq!(one.next_id().unwrap(), SPAN);
        assert_eq!(two.next_id().unwrap(), 2 * SPAN);
        // Restored ids of another node do not move this node's counter.
        one.reserve_above(2 * SPAN + 77).unwrap();
        assert_eq!(one.next_id().unwrap(), SPAN + 1);
        one.reserve_above(SPAN + 500).unwrap();
        assert_eq!(one.next_id().unwrap(), SPAN + 501);
    }

    #[test]
    fn shared_blocks_are_used_in_order_and_fetched_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let m = ProducerIdManager::open(dir.path(), 1).unwrap();
        m.use_shared_blocks();
        assert!(m.wants_block());
        assert!(m.next_id().is_err(), "no block yet: refused, retriable");
        m.add_block(SHARED_BASE, SHARED_BASE + 4);
        assert!(m.wants_block(), "less than half a block left");
        m.add_block(SHARED_BASE + 4000, SHARED_BASE + 4004);
        assert!(!m.wants_block(), "one queued");
        let ids: Vec<i64> = (0..6).map(|_| m.next_id().unwrap()).collect();
        assert_eq!(
            ids,
            vec![
                SHARED_BASE,
                SHARED_BASE + 1,
                SHARED_BASE + 2,
                SHARED_BASE + 3,
                SHARED_BASE + 4000,
                SHARED_BASE + 4001
            ]
        );
        assert!(m.wants_block());
        // A node range's ids no longer move anything, and no file is
        // written; a shared id found in a partition is never handed out.
        m.reserve_above(SPAN + 10).unwrap();
        assert_eq!(m.next_id().unwrap(), SHARED_BASE + 4002);
        assert!(!dir.path().join(FILE).exists());
        m.reserve_above(SHARED_BASE + 4002).unwrap();
        assert_eq!(m.next_id().unwrap(), SHARED_BASE + 4003);
        m.reserve_above(SHARED_BASE + 9000).unwrap();
        assert!(m.next_id().is_err(), "the block is below the floor");
        assert_eq!(m.floor(), SHARED_BASE + 9001);
        m.add_block(SHARED_BASE + 8000, SHARED_BASE + 9500);
        assert_eq!(m.next_id().unwrap(), SHARED_BASE + 9001);
    }
}
