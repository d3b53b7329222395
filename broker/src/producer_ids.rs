//! Producer id allocation for InitProducerId. Ids are reserved in blocks:
//! the end of the current block is persisted (`producer-id-block`) before
//! any id in it is handed out, so a restart never reuses an id. Each node
//! id owns its own range (`node.id × 2^40` onwards), so brokers of a
//! cluster never hand out the same id without asking each other (Kafka
//! asks its controller for blocks, KIP-730; a range per node needs no
//! round trip). Node 0, a single broker's default, keeps the ids it
//! always had.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::durable_file::write_atomically;

const FILE: &str = "producer-id-block";
const BLOCK: i64 = 1000;
/// Ids per node: node `n` hands out `n × SPAN ..= (n + 1) × SPAN - 1`.
const SPAN: i64 = 1 << 40;

#[derive(Debug)]
pub struct ProducerIdManager {
    path: PathBuf,
    /// The first id of this node's range; the state below is relative.
    base: i64,
    /// (next id to hand out, end of the reserved block)
    state: Mutex<(i64, i64)>,
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
            state: Mutex::new((reserved_end, reserved_end)),
        })
    }

    /// Makes sure no id at or below `id` is handed out from now on (ids
    /// found in partitions restored from the object store).
    pub fn reserve_above(&self, id: i64) -> io::Result<()> {
        // Another node's ids can never come from this one.
        if id < self.base || id >= self.base + SPAN {
            return Ok(());
        }
        let id = id - self.base;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.0 > id {
            return Ok(());
        }
        let end = (id + 1 + BLOCK).max(st.1);
        write_atomically(&self.path, end.to_string().as_bytes())?;
        *st = (id + 1, end);
        Ok(())
    }

    /// A producer id never handed out before.
    pub fn next_id(&self) -> io::Result<i64> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.0 >= st.1 {
            let end = st.1 + BLOCK;
            write_atomically(&self.path, end.to_string().as_bytes())?;
            st.1 = end;
        }
        let id = st.0;
        st.0 += 1;
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
}
