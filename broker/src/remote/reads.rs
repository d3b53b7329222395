//! One partition's reads below the local log start, from the object store:
//! a fetch's batches and the timestamp lookups of ListOffsets. Only
//! [`super::remote_log_reader`], the history read's entry point, calls them.

use bytes::Bytes;
use strata_catalog::ManifestView;
use strata_catalog::PartitionManifest;
use strata_prefetch::{PrefetchError, PriorityClass, ReadRequest, StreamKey};

use super::TieredStorage;
use crate::log::segment::first_record_in_batch;

/// What the bucket holds for a fetch offset.
#[derive(Debug)]
pub enum RemoteRead {
    /// Batches from the remote segment holding the offset (possibly empty
    /// when the first batch exceeds the limit and `min_one` is off).
    Records(Bytes),
    /// No remote segment holds the offset or anything after it below the
    /// local log (a gap left while remote storage was off).
    NotRemote,
}

/// Who is reading, for read-ahead streams and priority classes.
#[derive(Debug, Clone)]
pub struct Reader {
    /// Consumer group, or the client id when the group is unknown.
    pub name: String,
    pub class: PriorityClass,
}

impl TieredStorage {
    pub(super) async fn read(
        &self,
        rp: &ManifestView,
        reader: &Reader,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<RemoteRead, PrefetchError> {
        self.read_planned(rp.current(), rp, reader, offset, max_bytes, min_one)
            .await
    }

    /// [`Self::read`] from the manifest `m` the read was planned with.
    pub(super) async fn read_planned(
        &self,
        m: std::sync::Arc<PartitionManifest>,
        rp: &ManifestView,
        reader: &Reader,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<RemoteRead, PrefetchError> {
        match self
            .read_in(&m, rp, reader, offset, max_bytes, min_one)
            .await
        {
            Err(e) if e.not_found_key().is_some() => {
                // Compaction replaced the segment since this read was
                // planned (its old objects go after file.delete.delay.ms):
                // read again from the manifest that replaced it, if the
                // offset is still there (retention's removals are not).
                let now = rp.current();
                if now.version != m.version && offset >= now.log_start_offset {
                    return self
                        .read_in(&now, rp, reader, offset, max_bytes, min_one)
                        .await;
                }
                Err(e)
            }
            r => r,
        }
    }

    pub(super) async fn read_in(
        &self,
        m: &PartitionManifest,
        rp: &ManifestView,
        reader: &Reader,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<RemoteRead, PrefetchError> {
        let mut offset = offset.max(m.log_start_offset);
        let mut i = m.segments.partition_point(|s| s.last_offset < offset);
        while i < m.segments.len() {
            let req = ReadRequest {
                stream: StreamKey {
                    reader: reader.name.clone(),
                    topic: rp.topic.clone(),
                    partition: rp.partition,
                },
                class: reader.class,
                // Read-ahead may continue into the following segments.
                segments: m.segments[i..].iter().take(8).cloned().collect(),
                offset,
                max_bytes,
                min_one,
            };
            let records = self.prefetcher.read(req).await?;
            if !records.is_empty() || !min_one {
                return Ok(RemoteRead::Records(records));
            }
            // Compaction removed the segment's records from `offset` on:
            // the next segment holds what comes after.
            offset = m.segments[i].next_offset();
            i += 1;
        }
        Ok(RemoteRead::NotRemote)
    }

    /// The first record at or after `timestamp` if it lies in a remote
    /// segment below `local_start`: (offset, timestamp).
    pub(super) async fn offset_for_timestamp(
        &self,
        rp: &ManifestView,
        timestamp: i64,
        local_start: i64,
    ) -> Result<Option<(i64, i64)>, PrefetchError> {
        let m = rp.current();
        let Some(first) = m.segment_for_timestamp(timestamp) else {
            return Ok(None);
        };
        let from = m
            .segments
            .partition_point(|s| s.base_offset < first.base_offset);
        // Timestamps are not monotonic (CreateTime): a segment may hold
        // nothing at or after `timestamp` though an earlier one's maximum
        // is larger; a later segment then has the answer.
        for seg in &m.segments[from..] {
            if seg.base_offset >= local_start {
                return Ok(None);
            }
            if seg.max_timestamp < timestamp {
                continue;
            }
            let Some((_, batch)) = self
                .prefetcher
                .batch_at_timestamp(seg.clone(), timestamp)
                .await?
            else {
                continue;
            };
            return Ok(first_record_in_batch(batch, i64::MAX, |t| t >= timestamp)
                .filter(|(o, _)| *o >= m.log_start_offset));
        }
        Ok(None)
    }

    /// The record with the largest timestamp among remote segments below
    /// `local_start`, if it is larger than `than`.
    pub(super) async fn max_timestamp_offset(
        &self,
        rp: &ManifestView,
        local_start: i64,
        than: i64,
    ) -> Result<Option<(i64, i64)>, PrefetchError> {
        let m = rp.current();
        let Some(seg) = m
            .segments
            .iter()
            .filter(|s| s.base_offset < local_start && s.max_timestamp > than)
            .max_by_key(|s| (s.max_timestamp, std::cmp::Reverse(s.base_offset)))
        else {
            return Ok(None);
        };
        let target = seg.max_timestamp;
        let Some((_, batch)) = self
            .prefetcher
            .batch_at_timestamp(seg.clone(), target)
            .await?
        else {
            return Ok(None);
        };
        Ok(first_record_in_batch(batch, i64::MAX, |t| t == target))
    }
}
