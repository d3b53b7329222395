//! The shared cache of segment chunks: `foyer`'s hybrid cache (memory, and
//! local disk when configured), keyed by (object, chunk index). Segment
//! objects never change under a key (keys carry base offset and writer
//! epoch), so entries never need invalidation. Concurrent requests for the
//! same chunk share one GET (foyer merges them).

use std::path::Path;

use bytes::Bytes;
use foyer::{
    BlockEngineConfig, Code, DeviceBuilder, FsDeviceBuilder, HybridCache, HybridCacheBuilder,
    Throttle,
};

use crate::error::PrefetchError;

/// One chunk of one segment object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChunkKey {
    pub object: String,
    pub index: u64,
}

impl Code for ChunkKey {
    fn encode(&self, writer: &mut impl std::io::Write) -> foyer::Result<()> {
        self.object.encode(writer)?;
        self.index.encode(writer)
    }
    fn decode(reader: &mut impl std::io::Read) -> foyer::Result<Self> {
        Ok(ChunkKey {
            object: String::decode(reader)?,
            index: u64::decode(reader)?,
        })
    }
    fn estimated_size(&self) -> usize {
        self.object.estimated_size() + 8
    }
}

pub type ChunkCache = HybridCache<ChunkKey, Bytes>;

/// Builds the cache: `memory_bytes` of memory, plus `disk_bytes` under
/// `dir` (if both are set).
pub async fn build(
    memory_bytes: usize,
    disk_bytes: usize,
    disk_write_bytes_per_sec: usize,
    dir: Option<&Path>,
) -> Result<ChunkCache, PrefetchError> {
    let builder = HybridCacheBuilder::new()
        .with_name("strata-remote-chunks")
        .memory(memory_bytes.max(1))
        // One shard: foyer splits the capacity evenly among its shards, and
        // with entries of several MiB a hashed shard overflows (evicting
        // read-ahead before it is read) while others sit empty. A few hundred
        // cache operations per second need no lock sharding.
        .with_shards(1)
        // LRU: what a reader consumed is older than the read-ahead in front
        // of it, so consumed chunks go first.
        .with_eviction_config(foyer::LruConfig::default())
        .with_weighter(|k: &ChunkKey, v: &Bytes| k.object.len() + v.len())
        .storage();
    let cache = match dir {
        Some(dir) if disk_bytes > 0 => {
            std::fs::create_dir_all(dir).map_err(|source| PrefetchError::CacheDir {
                dir: dir.to_path_buf(),
                source,
            })?;
            // foyer's block engine turns away (drops) chunks while writes run
            // above the device's write throughput.
            let device = FsDeviceBuilder::new(dir)
                .with_capacity(disk_bytes)
                .with_throttle(Throttle::new().with_write_throughput(disk_write_bytes_per_sec))
                .build()
                .map_err(PrefetchError::Cache)?;
            builder
                .with_engine_config(BlockEngineConfig::new(device))
                .build()
                .await
        }
        _ => builder.build().await,
    };
    cache.map_err(PrefetchError::Cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks pushed out of a small memory tier are read back intact from
    /// the disk tier.
    #[tokio::test]
    async fn chunks_evicted_from_memory_come_back_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let chunk = 256 * 1024;
        let cache = build(chunk * 2, 64 << 20, 0, Some(dir.path()))
            .await
            .unwrap();
        let value = |i: u64| {
            Bytes::from(
                (0..chunk)
                    .map(|b| (b as u64 * 31 + i) as u8)
                    .collect::<Vec<u8>>(),
            )
        };
        for i in 0..16 {
            cache.insert(
                ChunkKey {
                    object: "topics/t/0/seg".into(),
                    index: i,
                },
                value(i),
            );
        }
        // Memory holds two chunks: the other fourteen can only come from
        // disk. foyer writes in the background, so wait for each.
        for i in 0..16 {
            let key = ChunkKey {
                object: "topics/t/0/seg".into(),
                index: i,
            };
            let mut got = None;
            for _ in 0..200 {
                if let Ok(Some(e)) = cache.get(&key).await {
                    got = Some(e.value().clone());
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            let got = got.unwrap_or_else(|| panic!("chunk {i} lost"));
            assert_eq!(got, value(i), "chunk {i} differs");
        }
        cache.close().await.unwrap();
    }
}
