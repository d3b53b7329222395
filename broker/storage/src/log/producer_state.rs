//! Per-partition state of idempotent and transactional producers: for each
//! producer id, its epoch, the last five batches it wrote (sequence range and
//! offsets) and the first offset of its open transaction, so a retried batch
//! is recognised and answered with its original offset, a gap is refused, an
//! older epoch is fenced, and the first unstable offset (what bounds the last
//! stable offset) is known — Kafka's `ProducerStateManager`.
//!
//! The state is derived from batch headers, so recovery can always rebuild
//! it by scanning the log; snapshots (`<offset>.snapshot`, written when a
//! segment is sealed and at shutdown) bound that scan; [`rebuild_producer_state`]
//! does that scan when a partition is opened.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::batch::BatchHeader;
use super::control::{decode_marker, Marker, MarkerType};
use super::segment::LogSegment;
use super::txn_index::AbortedTxn;
use strata_common::durable_file::write_atomically;

/// Batches remembered per producer (Kafka's `max.in.flight` limit for
/// idempotence is 5).
pub(crate) const BATCHES_PER_PRODUCER: usize = 5;
const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Version 2 added each producer's open transaction and coordinator epoch.
const SNAPSHOT_VERSION: u16 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMeta {
    pub first_seq: i32,
    pub last_seq: i32,
    pub base_offset: i64,
    pub last_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerEntry {
    pub epoch: i16,
    pub batches: VecDeque<BatchMeta>,
    pub last_timestamp: i64,
    /// First offset of the producer's open transaction in this partition.
    pub current_txn_first_offset: Option<i64>,
    /// Epoch of the coordinator that wrote the producer's last marker.
    pub coordinator_epoch: i32,
}

impl ProducerEntry {
    fn new(epoch: i16) -> Self {
        ProducerEntry {
            epoch,
            batches: VecDeque::new(),
            last_timestamp: -1,
            current_txn_first_offset: None,
            coordinator_epoch: -1,
        }
    }
}

/// One producer as DescribeProducers reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub last_sequence: i32,
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    /// First offset of its open transaction here (-1: none).
    pub current_txn_start_offset: i64,
}

/// A transaction that a marker ended in this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub aborted: bool,
}

/// Why an idempotent batch is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceError {
    /// A batch from an epoch older than the producer's current one.
    InvalidProducerEpoch { current: i16, got: i16 },
    /// The batch does not follow the last one written.
    OutOfOrder { expected: i32, got: i32 },
    /// No state for this producer and the batch does not start a sequence.
    UnknownProducerId,
    /// A non-transactional batch from a producer with an open transaction.
    InvalidTxnState,
    /// A transactional batch that opens the producer's transaction here
    /// without a current verification (KIP-890): INVALID_TXN_STATE.
    NotInTransaction,
    /// A marker from a transaction coordinator older than the one that
    /// wrote this producer's last marker (a deposed coordinator).
    CoordinatorFenced { current: i32, got: i32 },
}

/// What the check decided for one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Not an idempotent batch, or the next batch in sequence: append it.
    Append,
    /// Already written: answer with the original offsets, append nothing.
    Duplicate(BatchMeta),
}

fn last_seq_of(h: &BatchHeader) -> i32 {
    // Sequences wrap at i32::MAX like Kafka's.
    ((h.base_sequence as i64 + h.last_offset_delta as i64) % (i32::MAX as i64 + 1)) as i32
}

fn next_seq(s: i32) -> i32 {
    if s == i32::MAX {
        0
    } else {
        s + 1
    }
}

#[derive(Debug, Default, Clone)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
    /// Open transactions: first offset -> producer id.
    ongoing: BTreeMap<i64, i64>,
    /// KIP-890 verification guards: producers whose first transactional
    /// write here is being checked with the transaction coordinator. A
    /// marker for the producer removes its guard, so a verification that
    /// raced the end of its transaction cannot open a new one here (Kafka's
    /// `VerificationStateEntry`). At most one per producer id, dropped by
    /// the append that opens the transaction or by a marker; a guard whose
    /// verification failed stays until then (it admits only appends whose
    /// own verification succeeded). Not part of the durable state.
    verifying: HashMap<i64, VerificationGuard>,
}

/// Equal when the durable state is: verification guards are transient.
impl PartialEq for ProducerStateManager {
    fn eq(&self, other: &Self) -> bool {
        self.producers == other.producers && self.ongoing == other.ongoing
    }
}

impl Eq for ProducerStateManager {}

/// One producer's pending verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VerificationGuard {
    /// Unique per verification (an ABA-proof token).
    pub token: u64,
    pub epoch: i16,
}

impl ProducerStateManager {
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn max_producer_id(&self) -> Option<i64> {
        self.producers.keys().copied().max()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Each producer's last batch's last offset: the batch compaction must
    /// keep (even emptied) so the producer's last sequence survives.
    pub(crate) fn last_batch_offsets(&self) -> HashMap<i64, i64> {
        self.producers
            .iter()
            .filter_map(|(pid, e)| e.batches.back().map(|b| (*pid, b.last_offset)))
            .collect()
    }

    pub fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    /// Whether `producer_id` has a transaction open here at `epoch`: its
    /// later transactional batches need no verification.
    pub(crate) fn has_ongoing_txn(&self, producer_id: i64, epoch: i16) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|e| e.epoch == epoch && e.current_txn_first_offset.is_some())
    }

    /// The guard of a verification for `producer_id` at `epoch`: the one
    /// already pending (a retry, or a request on another connection,
    /// shares it, as Kafka's `VerificationStateEntry`), else `fresh`.
    pub(crate) fn begin_verification(&mut self, producer_id: i64, fresh: VerificationGuard) -> u64 {
        let g = self
            .verifying
            .entry(producer_id)
            .and_modify(|g| {
                if g.epoch != fresh.epoch {
                    *g = fresh;
                }
            })
            .or_insert(fresh);
        g.token
    }

    /// Kafka's check before a producer's transactional batch: either its
    /// transaction is already open here, or the batch carries the guard of
    /// a verification no marker has overtaken.
    pub(crate) fn check_verified(
        &self,
        h: &BatchHeader,
        token: Option<u64>,
    ) -> Result<(), SequenceError> {
        if h.producer_id < 0
            || !h.is_transactional()
            || self.has_ongoing_txn(h.producer_id, h.producer_epoch)
        {
            return Ok(());
        }
        match (self.verifying.get(&h.producer_id), token) {
            (Some(g), Some(t)) if g.token == t && g.epoch == h.producer_epoch => Ok(()),
            _ => Err(SequenceError::NotInTransaction),
        }
    }

    /// Checks an incoming batch (offsets not yet assigned).
    pub fn check(&self, h: &BatchHeader) -> Result<SequenceCheck, SequenceError> {
        if h.producer_id < 0 {
            return Ok(SequenceCheck::Append);
        }
        // No state for this producer (new, or its state expired or was
        // removed with the log's head): as Kafka's ProducerStateManager
        // (KIP-360), its first batch is taken at any sequence.
        let Some(entry) = self.producers.get(&h.producer_id) else {
            return Ok(SequenceCheck::Append);
        };
        if h.producer_epoch < entry.epoch {
            return Err(SequenceError::InvalidProducerEpoch {
                current: entry.epoch,
                got: h.producer_epoch,
            });
        }
        if !h.is_transactional() && entry.current_txn_first_offset.is_some() {
            return Err(SequenceError::InvalidTxnState);
        }
        if h.producer_epoch > entry.epoch {
            // A new epoch restarts the sequence.
            return if h.base_sequence == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(SequenceError::OutOfOrder {
                    expected: 0,
                    got: h.base_sequence,
                })
            };
        }
        let last = last_seq_of(h);
        if let Some(dup) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == h.base_sequence && b.last_seq == last)
        {
            return Ok(SequenceCheck::Duplicate(*dup));
        }
        let expected = entry
            .batches
            .back()
            .map(|b| next_seq(b.last_seq))
            .unwrap_or(0);
        if h.base_sequence != expected {
            return Err(SequenceError::OutOfOrder {
                expected,
                got: h.base_sequence,
            });
        }
        Ok(SequenceCheck::Append)
    }

    /// Records a batch as written (its header carries the assigned offsets).
    pub fn update(&mut self, h: &BatchHeader) {
        if h.producer_id < 0 {
            return;
        }
        let entry = self
            .producers
            .entry(h.producer_id)
            .or_insert_with(|| ProducerEntry::new(h.producer_epoch));
        if h.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(h.base_offset);
            self.ongoing.insert(h.base_offset, h.producer_id);
            // The transaction is open here now: its guard has done its job.
            self.verifying.remove(&h.producer_id);
        }
        if h.producer_epoch != entry.epoch {
            entry.epoch = h.producer_epoch;
            entry.batches.clear();
        }
        if entry.batches.len() == BATCHES_PER_PRODUCER {
            entry.batches.pop_front();
        }
        entry.batches.push_back(BatchMeta {
            first_seq: h.base_sequence,
            last_seq: last_seq_of(h),
            base_offset: h.base_offset,
            last_offset: h.last_offset(),
        });
        entry.last_timestamp = entry.last_timestamp.max(h.max_timestamp);
    }

    /// Records a coordinator's transactional batch: it opens the
    /// producer's transaction here; sequences are not tracked.
    pub(crate) fn track_txn(&mut self, h: &BatchHeader) {
        if h.producer_id < 0 || !h.is_transactional() {
            return;
        }
        let entry = self
            .producers
            .entry(h.producer_id)
            .or_insert_with(|| ProducerEntry::new(h.producer_epoch));
        entry.epoch = entry.epoch.max(h.producer_epoch);
        entry.last_timestamp = entry.last_timestamp.max(h.max_timestamp);
        if entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(h.base_offset);
            self.ongoing.insert(h.base_offset, h.producer_id);
        }
    }

    /// Checks a marker about to be written: a coordinator with an epoch
    /// older than the producer's is fenced.
    pub(crate) fn check_marker(&self, producer_id: i64, epoch: i16) -> Result<(), SequenceError> {
        match self.producers.get(&producer_id) {
            Some(e) if e.epoch > epoch => Err(SequenceError::InvalidProducerEpoch {
                current: e.epoch,
                got: epoch,
            }),
            _ => Ok(()),
        }
    }

    /// Checks a marker's coordinator epoch: a coordinator older than the
    /// one that wrote the producer's last marker is fenced (Kafka's
    /// TRANSACTION_COORDINATOR_FENCED).
    pub(crate) fn check_coordinator_epoch(
        &self,
        producer_id: i64,
        coordinator_epoch: i32,
    ) -> Result<(), SequenceError> {
        match self.producers.get(&producer_id) {
            Some(e) if e.coordinator_epoch > coordinator_epoch => {
                Err(SequenceError::CoordinatorFenced {
                    current: e.coordinator_epoch,
                    got: coordinator_epoch,
                })
            }
            _ => Ok(()),
        }
    }

    /// Records a written marker (`h` carries its offset); returns the
    /// transaction it ended, if the producer had one open here.
    pub fn complete_txn(&mut self, h: &BatchHeader, marker: Marker) -> Option<CompletedTxn> {
        let entry = self
            .producers
            .entry(h.producer_id)
            .or_insert_with(|| ProducerEntry::new(h.producer_epoch));
        if h.producer_epoch > entry.epoch {
            entry.epoch = h.producer_epoch;
            entry.batches.clear();
        }
        entry.coordinator_epoch = marker.coordinator_epoch;
        entry.last_timestamp = entry.last_timestamp.max(h.max_timestamp);
        // A verification that began before this marker is stale.
        self.verifying.remove(&h.producer_id);
        let first_offset = entry.current_txn_first_offset.take()?;
        self.ongoing.remove(&first_offset);
        Some(CompletedTxn {
            producer_id: h.producer_id,
            first_offset,
            last_offset: h.base_offset,
            aborted: marker.kind == MarkerType::Abort,
        })
    }

    /// Forgets every open transaction (a log restored from the bucket
    /// alone, whose markers were lost).
    pub(crate) fn forget_open_transactions(&mut self) {
        for e in self.producers.values_mut() {
            e.current_txn_first_offset = None;
        }
        self.ongoing.clear();
        self.verifying.clear();
    }

    /// The first offset of the oldest open transaction: the last stable
    /// offset cannot pass it.
    pub(crate) fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    /// DescribeProducers' view: every producer with state here.
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        let mut out: Vec<_> = self
            .producers
            .iter()
            .map(|(pid, e)| ActiveProducer {
                producer_id: *pid,
                producer_epoch: e.epoch,
                last_sequence: e.batches.back().map_or(-1, |b| b.last_seq),
                last_timestamp: e.last_timestamp,
                coordinator_epoch: e.coordinator_epoch,
                current_txn_start_offset: e.current_txn_first_offset.unwrap_or(-1),
            })
            .collect();
        out.sort_by_key(|p| p.producer_id);
        out
    }

    /// Open transactions in this partition.
    pub(crate) fn ongoing_count(&self) -> usize {
        self.ongoing.len()
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.producers.len() * 64);
        out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
        out.extend_from_slice(&(self.producers.len() as u32).to_be_bytes());
        let mut ids: Vec<_> = self.producers.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let e = &self.producers[&id];
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&e.epoch.to_be_bytes());
            out.extend_from_slice(&e.last_timestamp.to_be_bytes());
            out.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
            out.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
            out.push(e.batches.len() as u8);
            for b in &e.batches {
                out.extend_from_slice(&b.first_seq.to_be_bytes());
                out.extend_from_slice(&b.last_seq.to_be_bytes());
                out.extend_from_slice(&b.base_offset.to_be_bytes());
                out.extend_from_slice(&b.last_offset.to_be_bytes());
            }
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < 10 {
            return None;
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32c::crc32c(body) != u32::from_be_bytes(crc.try_into().ok()?) {
            return None;
        }
        let mut r = Reader { b: body, pos: 0 };
        let version = r.u16()?;
        if !(1..=SNAPSHOT_VERSION).contains(&version) {
            return None;
        }
        let n = r.u32()? as usize;
        let mut producers = HashMap::with_capacity(n.min(1 << 16));
        let mut ongoing = BTreeMap::new();
        for _ in 0..n {
            let id = r.i64()?;
            let epoch = r.u16()? as i16;
            let last_timestamp = r.i64()?;
            let (txn_first, coordinator_epoch) = if version >= 2 {
                (r.i64()?, r.u32()? as i32)
            } else {
                (-1, -1)
            };
            let current_txn_first_offset = (txn_first >= 0).then_some(txn_first);
            if let Some(first) = current_txn_first_offset {
                ongoing.insert(first, id);
            }
            let count = r.u8()? as usize;
            let mut batches = VecDeque::with_capacity(count);
            for _ in 0..count {
                batches.push_back(BatchMeta {
                    first_seq: r.u32()? as i32,
                    last_seq: r.u32()? as i32,
                    base_offset: r.i64()?,
                    last_offset: r.i64()?,
                });
            }
            producers.insert(
                id,
                ProducerEntry {
                    epoch,
                    batches,
                    last_timestamp,
                    current_txn_first_offset,
                    coordinator_epoch,
                },
            );
        }
        Some(ProducerStateManager {
            producers,
            ongoing,
            verifying: HashMap::new(),
        })
    }

    /// Writes `<offset>.snapshot` (state after every batch below `offset`).
    /// As in Kafka, a snapshot lives as long as the segment it ends: each
    /// sealed segment is uploaded with its snapshot, and deleting segments
    /// deletes the snapshots below the new log start
    /// ([`Self::delete_snapshots_below`]).
    pub(crate) fn write_snapshot(&self, dir: &Path, offset: i64) -> io::Result<()> {
        write_atomically(&snapshot_path(dir, offset), &self.encode())
    }

    /// Deletes snapshots of offsets below `offset` (segments gone).
    pub(crate) fn delete_snapshots_below(dir: &Path, offset: i64) -> io::Result<usize> {
        let mut n = 0;
        for old in list_snapshots(dir)?.into_iter().filter(|o| *o < offset) {
            if fs::remove_file(snapshot_path(dir, old)).is_ok() {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Loads the newest valid snapshot at or below `max_offset`, deleting
    /// snapshots above it (they describe a log that was truncated).
    pub(crate) fn load_snapshot(dir: &Path, max_offset: i64) -> io::Result<Option<(i64, Self)>> {
        let mut all = list_snapshots(dir)?;
        all.sort_unstable();
        for off in all.iter().rev() {
            if *off > max_offset {
                let _ = fs::remove_file(snapshot_path(dir, *off));
                continue;
            }
            if let Some(state) = fs::read(snapshot_path(dir, *off))
                .ok()
                .and_then(|b| Self::decode(&b))
            {
                return Ok(Some((*off, state)));
            }
            tracing::warn!(dir = %dir.display(), offset = off, "ignoring corrupt producer state snapshot");
        }
        Ok(None)
    }
}

/// Producer state after every batch below `leo`: the newest snapshot at or
/// below it, plus the batch headers written after it. The transaction
/// indexes of the segments scanned are rebuilt from their abort markers
/// (what a crash left in them above the snapshot is dropped first).
pub(crate) fn rebuild_producer_state(
    dir: &Path,
    segments: &mut BTreeMap<i64, LogSegment>,
    leo: i64,
) -> io::Result<ProducerStateManager> {
    let first = segments.keys().next().copied().unwrap_or(0);
    let (from, mut state) = match ProducerStateManager::load_snapshot(dir, leo)? {
        Some((off, s)) if off >= first => (off, s),
        _ => (first, ProducerStateManager::default()),
    };
    let mut scanned = 0usize;
    let floor = segments
        .range(..=from)
        .next_back()
        .map(|(b, _)| *b)
        .unwrap_or(first);
    for seg in segments.range_mut(floor..).map(|(_, s)| s) {
        seg.txn_index_mut().truncate_from(from)?;
        let slice = seg.slice()?;
        let mut pos = if seg.base_offset() <= from {
            seg.position_hint(from)
        } else {
            0
        };
        while let Some(h) = slice.header_at(pos)? {
            if h.base_offset >= from {
                if h.is_control() {
                    let bytes = slice.read(pos, h.size)?;
                    if let Some(done) = decode_marker(&h, &bytes)
                        .and_then(|m| state.complete_txn(&h, m))
                        .filter(|t| t.aborted)
                    {
                        let lso = state.first_unstable_offset().unwrap_or(h.next_offset());
                        seg.txn_index_mut().append(AbortedTxn {
                            producer_id: done.producer_id,
                            first_offset: done.first_offset,
                            last_offset: done.last_offset,
                            last_stable_offset: lso.min(h.next_offset()),
                        })?;
                    }
                } else {
                    state.update(&h);
                }
                scanned += 1;
            }
            pos += h.size as u64;
        }
    }
    if scanned > 0 || !state.is_empty() {
        tracing::debug!(dir = %dir.display(), snapshot_offset = from, scanned, producers = state.len(), "rebuilt producer state");
    }
    Ok(state)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let s = self.b.get(self.pos..self.pos + N)?;
        self.pos += N;
        s.try_into().ok()
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|a| a[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take::<2>().map(u16::from_be_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take::<4>().map(u32::from_be_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take::<8>().map(i64::from_be_bytes)
    }
}

pub(crate) fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!(
        "{}{SNAPSHOT_SUFFIX}",
        super::segment::file_stem(offset)
    ))
}

fn list_snapshots(dir: &Path) -> io::Result<Vec<i64>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let name = e?.file_name();
        if let Some(stem) = name.to_string_lossy().strip_suffix(SNAPSHOT_SUFFIX) {
            if let Ok(o) = stem.parse() {
                out.push(o);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(pid: i64, epoch: i16, seq: i32, count: i32, base: i64) -> BatchHeader {
        BatchHeader {
            base_offset: base,
            size: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 1,
            max_timestamp: 1,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            record_count: count,
        }
    }

    #[test]
    fn sequence_rules() {
        let mut s = ProducerStateManager::default();
        // Unknown producer: any first sequence, as Kafka (KIP-360).
        assert_eq!(s.check(&hdr(7, 0, 3, 1, 0)), Ok(SequenceCheck::Append));
        assert_eq!(s.check(&hdr(7, 0, 0, 2, 0)), Ok(SequenceCheck::Append));
        s.update(&hdr(7, 0, 0, 2, 10));
        // Retry of the same batch: duplicate with its original offsets.
        match s.check(&hdr(7, 0, 0, 2, 0)) {
            Ok(SequenceCheck::Duplicate(m)) => assert_eq!((m.base_offset, m.last_offset), (10, 11)),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            s.check(&hdr(7, 0, 3, 1, 0)),
            Err(SequenceError::OutOfOrder {
                expected: 2,
                got: 3
            })
        );
        assert_eq!(s.check(&hdr(7, 0, 2, 1, 0)), Ok(SequenceCheck::Append));
        // A new epoch restarts at 0; the old epoch is then fenced.
        assert_eq!(s.check(&hdr(7, 1, 0, 1, 0)), Ok(SequenceCheck::Append));
        s.update(&hdr(7, 1, 0, 1, 20));
        assert!(matches!(
            s.check(&hdr(7, 0, 2, 1, 0)),
            Err(SequenceError::InvalidProducerEpoch { .. })
        ));
        // Only the last five batches are remembered.
        for i in 1..=6 {
            s.update(&hdr(7, 1, i, 1, 20 + i as i64));
        }
        assert_eq!(s.get(7).unwrap().batches.len(), BATCHES_PER_PRODUCER);
        assert_eq!(
            s.check(&hdr(7, 1, 1, 1, 0)),
            Err(SequenceError::OutOfOrder {
                expected: 7,
                got: 1
            })
        );
        // Sequences wrap.
        let mut w = ProducerStateManager::default();
        w.update(&hdr(9, 0, 0, 1, 0));
        w.producers
            .get_mut(&9)
            .unwrap()
            .batches
            .back_mut()
            .unwrap()
            .last_seq = i32::MAX - 1;
        assert_eq!(
            w.check(&hdr(9, 0, i32::MAX, 2, 0)),
            Ok(SequenceCheck::Append)
        );
        w.update(&hdr(9, 0, i32::MAX, 2, 5));
        assert_eq!(w.check(&hdr(9, 0, 1, 1, 0)), Ok(SequenceCheck::Append));
    }

    #[test]
    fn snapshots_roundtrip_and_prune() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = ProducerStateManager::default();
        s.update(&hdr(1, 2, 0, 3, 0));
        s.update(&hdr(5, 0, 0, 1, 3));
        for off in [4, 8, 12] {
            s.write_snapshot(dir.path(), off).unwrap();
        }
        assert_eq!(list_snapshots(dir.path()).unwrap().len(), 3);
        assert_eq!(
            ProducerStateManager::delete_snapshots_below(dir.path(), 8).unwrap(),
            1
        );
        assert_eq!(list_snapshots(dir.path()).unwrap().len(), 2);
        let (off, loaded) = ProducerStateManager::load_snapshot(dir.path(), 100)
            .unwrap()
            .unwrap();
        assert_eq!((off, &loaded), (12, &s));
        // A snapshot past the log end is dropped.
        let (off, _) = ProducerStateManager::load_snapshot(dir.path(), 10)
            .unwrap()
            .unwrap();
        assert_eq!(off, 8);
        // Corruption is detected.
        std::fs::write(snapshot_path(dir.path(), 8), b"garbage-garbage").unwrap();
        assert!(ProducerStateManager::load_snapshot(dir.path(), 10)
            .unwrap()
            .is_none());
    }
}
