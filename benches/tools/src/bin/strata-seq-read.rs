//! The sequential baseline of the catch-up benchmark:
//! `strata-seq-read URL CHUNK_BYTES [PARALLEL]` reads every `.log` object
//! under the object store URL (`s3://bucket/prefix`, AWS settings from the
//! environment, as the broker takes them), in key order, in ranged GETs of
//! CHUNK_BYTES, and prints `bytes seconds MB/s`. With PARALLEL 1 (the
//! default) one GET at a time: what a reader without read-ahead or
//! parallelism gets. With more, the server's own ceiling on this machine.

use std::time::Instant;

use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::ObjectStoreExt;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 && args.len() != 4 {
        anyhow::bail!("usage: strata-seq-read OBJECT_STORE_URL CHUNK_BYTES [PARALLEL]");
    }
    let parallel: usize = args.get(3).map(|p| p.parse()).transpose()?.unwrap_or(1);
    let bucket = strata_catalog::bucket::open(&args[1]).map_err(anyhow::Error::msg)?;
    let chunk: u64 = args[2].parse()?;
    let prefix = (!bucket.prefix.is_empty()).then(|| Path::from(bucket.prefix.as_str()));
    let mut objects: Vec<_> = bucket
        .store
        .list(prefix.as_ref())
        .try_collect::<Vec<_>>()
        .await?
        .into_iter()
        .filter(|m| m.location.as_ref().ends_with(".log"))
        .collect();
    objects.sort_by(|a, b| a.location.cmp(&b.location));
    let ranges: Vec<_> = objects
        .iter()
        .flat_map(|o| {
            (0..o.size)
                .step_by(chunk as usize)
                .map(move |pos| (o.location.clone(), pos..(pos + chunk).min(o.size)))
        })
        .collect();
    let started = Instant::now();
    let store = bucket.store.clone();
    let sizes: Vec<u64> = futures_util::stream::iter(ranges)
        .map(|(key, range)| {
            let store = store.clone();
            async move { store.get_range(&key, range).await.map(|b| b.len() as u64) }
        })
        .buffered(parallel.max(1))
        .try_collect()
        .await?;
    let total: u64 = sizes.iter().sum();
    let secs = started.elapsed().as_secs_f64();
    println!("{total} {secs:.3} {:.1}", total as f64 / secs / 1e6);
    Ok(())
}
