//! `TransactionCoordinator`: the requests of a transactional producer.
//! Every state change is written to `__transaction_state` and made durable
//! before it takes effect; while one is in flight, or while markers are
//! being written, other requests for the same id get
//! CONCURRENT_TRANSACTIONS and the client retries (Kafka's behaviour).
//! Errors are Kafka's codes; the handlers adapt them to old versions.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kafka_protocol::ResponseError;

use super::marker_channel::TxnMarkerChannel;
use super::records::{encode_key, TxnState, TxnValue};
use super::TRANSACTION_STATE_TOPIC;
use crate::group::records::partition_for;
use crate::group::{GroupCoordinator, OFFSETS_TOPIC};
use strata_cluster::coordinator_log::CoordinatorLog;
use strata_cluster::producer_ids::ProducerIdManager;
use strata_common::clock::SharedClock;
use strata_common::config::BrokerConfig;
use strata_storage::log_manager::LogManager;
use strata_storage::partition::CommitWait;

/// Errors are Kafka's error codes.
pub type TxnError = ResponseError;

/// Coordinator settings, under Kafka's broker setting names.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    pub max_timeout_ms: i32,
    pub abort_check_interval: Duration,
    pub id_expiration_ms: i64,
    pub expiration_check_interval: Duration,
    pub write_timeout: Duration,
}

impl TxnConfig {
    pub fn from_broker(c: &BrokerConfig) -> Self {
        let s = c.settings();
        TxnConfig {
            max_timeout_ms: s.txn.max_timeout_ms,
            abort_check_interval: s.txn.abort_timed_out_cleanup_interval,
            id_expiration_ms: s.txn.id_expiration_ms,
            expiration_check_interval: s.txn.remove_expired_cleanup_interval,
            write_timeout: s.offsets_commit_timeout,
        }
    }
}

/// One transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The producer id and epoch before the last InitProducerId bump: a
    /// retried InitProducerId (KIP-360) is recognised by them.
    pub last_producer_id: i64,
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<(String, i32)>,
    pub start_ms: i64,
    pub last_update_ms: i64,
    /// A state change is being written.
    pub pending: bool,
}

impl TxnMetadata {
    pub(super) fn value(&self) -> TxnValue {
        TxnValue {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            timeout_ms: self.timeout_ms,
            state: self.state,
            partitions: self.partitions.clone(),
            last_update_ms: self.last_update_ms,
            start_ms: self.start_ms,
        }
    }

    pub(super) fn from_value(v: TxnValue) -> Self {
        TxnMetadata {
            producer_id: v.producer_id,
            producer_epoch: v.producer_epoch,
            last_producer_id: -1,
            last_producer_epoch: -1,
            timeout_ms: v.timeout_ms,
            state: v.state,
            partitions: v.partitions,
            start_ms: v.start_ms,
            last_update_ms: v.last_update_ms,
            pending: false,
        }
    }

    fn apply(&mut self, v: &TxnValue) {
        self.producer_id = v.producer_id;
        self.producer_epoch = v.producer_epoch;
        self.timeout_ms = v.timeout_ms;
        self.state = v.state;
        self.partitions = v.partitions.clone();
        self.start_ms = v.start_ms;
        self.last_update_ms = v.last_update_ms;
    }
}

/// Why transactions were aborted, and how many committed.
#[derive(Debug, Default)]
pub struct TxnCounters {
    pub commits: AtomicU64,
    pub aborts_client: AtomicU64,
    pub aborts_timeout: AtomicU64,
    pub aborts_fencing: AtomicU64,
}

/// What caused an abort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortCause {
    Client,
    Timeout,
    /// A new InitProducerId for the id while a transaction was open.
    Fencing,
}

#[derive(Debug)]
pub struct TransactionCoordinator {
    pub(super) txns: Mutex<HashMap<String, TxnMetadata>>,
    pub(super) log: CoordinatorLog,
    pub(super) logs: Arc<LogManager>,
    pub(super) groups: Arc<GroupCoordinator>,
    pub(super) producer_ids: Arc<ProducerIdManager>,
    pub(super) cfg: TxnConfig,
    pub counters: TxnCounters,
    /// Where markers go in a cluster (unset: all local).
    pub(super) markers: std::sync::OnceLock<TxnMarkerChannel>,
    /// Transaction start and update times, timeouts, id expiry.
    pub(super) clock: SharedClock,
}

/// What InitProducerId does for an existing id.
enum InitStep {
    /// Write this state (true: the id is new).
    Write(TxnValue, bool),
    /// A retry of the request that made the current epoch.
    Retried(ProducerIdAndEpoch),
    /// Abort the open transaction first (fencing its producer).
    AbortOpen,
}

/// InitProducerId's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdAndEpoch {
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl TransactionCoordinator {
    /// Opens `__transaction_state`. No transactional id is served until
    /// the partitions this broker leads are loaded (`loading.rs`).
    pub fn open(
        logs: Arc<LogManager>,
        groups: Arc<GroupCoordinator>,
        producer_ids: Arc<ProducerIdManager>,
        broker: &BrokerConfig,
        clustered: bool,
        clock: SharedClock,
    ) -> Result<Arc<Self>, strata_storage::open_error::OpenError> {
        let log = CoordinatorLog::open(
            logs.clone(),
            TRANSACTION_STATE_TOPIC,
            broker.settings().transaction_state_log.num_partitions,
            clustered,
        )
        .map_err(|source| strata_storage::open_error::OpenError::Topic {
            topic: TRANSACTION_STATE_TOPIC.to_string(),
            source,
        })?;
        Ok(Arc::new(TransactionCoordinator {
            txns: Mutex::new(HashMap::new()),
            log,
            logs,
            groups,
            producer_ids,
            cfg: TxnConfig::from_broker(broker),
            counters: TxnCounters::default(),
            markers: std::sync::OnceLock::new(),
            clock,
        }))
    }

    /// In a cluster: markers for partitions led by other brokers go
    /// through `channel` (without one, every marker is written locally).
    pub fn route_markers(&self, channel: TxnMarkerChannel) {
        let _ = self.markers.set(channel);
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, TxnMetadata>> {
        self.txns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `value` for `id` and waits until it is committed, while
    /// this broker still coordinates the id at `coordinator_epoch` (the
    /// epoch it had when the change began: a change begun under an earlier
    /// ownership never lands in a reloaded one).
    pub(super) async fn persist(
        &self,
        id: &str,
        value: Option<&TxnValue>,
        coordinator_epoch: i32,
    ) -> Result<(), TxnError> {
        let partition = partition_for(id, self.log.partitions());
        let record = [(encode_key(id), value.map(|v| v.encode()))];
        let appended = self
            .log
            .append_at_epoch(partition, &record, None, Some(coordinator_epoch));
        let write = appended.map_err(|e| {
            tracing::warn!(transactional_id = id, error = %e, "writing transaction state failed");
            e.code()
        })?;
        match write.committed(self.cfg.write_timeout).await {
            CommitWait::Committed => Ok(()),
            CommitWait::TimedOut => Err(ResponseError::CoordinatorNotAvailable),
            CommitWait::NotLeader => Err(ResponseError::NotCoordinator),
        }
    }

    /// Makes `next` the state of `id`: written first, applied once
    /// committed. The caller has set `pending` on the id while this broker
    /// coordinated it at `coordinator_epoch`; if it no longer does (the
    /// partition was dropped, or reloaded), memory is left alone.
    pub(super) async fn transition(
        &self,
        id: &str,
        next: TxnValue,
        coordinator_epoch: i32,
    ) -> Result<(), TxnError> {
        let result = self.persist(id, Some(&next), coordinator_epoch).await;
        let mut txns = self.lock();
        if self.check_coordinator(id) != Ok(coordinator_epoch) {
            return result.and(Err(ResponseError::NotCoordinator));
        }
        if let Some(m) = txns.get_mut(id) {
            m.pending = false;
            if result.is_ok() {
                m.apply(&next);
            }
        }
        result
    }

    /// InitProducerId with a transactional id: a new producer id, or the
    /// id's next epoch, which fences every older producer of this id.
    /// `expected` is the producer id and epoch a KIP-360 client already
    /// holds (None: a fresh client).
    pub async fn init_producer_id(
        self: &Arc<Self>,
        id: &str,
        timeout_ms: i32,
        expected: Option<ProducerIdAndEpoch>,
    ) -> Result<ProducerIdAndEpoch, TxnError> {
        if id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.check_coordinator(id)?;
        if timeout_ms <= 0 || timeout_ms > self.cfg.max_timeout_ms {
            return Err(ResponseError::InvalidTransactionTimeout);
        }
        let now = self.clock.now_ms();
        let coordinator_epoch: i32;
        let step = {
            let mut txns = self.lock();
            coordinator_epoch = self.check_coordinator(id)?;
            match txns.get_mut(id) {
                None => {
                    let producer_id = self.new_producer_id()?;
                    let m = TxnMetadata {
                        producer_id,
                        producer_epoch: 0,
                        last_producer_id: -1,
                        last_producer_epoch: -1,
                        timeout_ms,
                        state: TxnState::Empty,
                        partitions: BTreeSet::new(),
                        start_ms: -1,
                        last_update_ms: now,
                        pending: true,
                    };
                    let v = m.value();
                    txns.insert(id.to_string(), m);
                    InitStep::Write(v, true)
                }
                Some(m) if m.pending || m.state.is_prepared() => {
                    return Err(ResponseError::ConcurrentTransactions)
                }
                Some(m) => {
                    // KIP-360: a client that already holds an id and epoch
                    // must hold the current one, or the one before the last
                    // bump (a retry, or a producer whose transaction the
                    // coordinator aborted with a bump).
                    let last = (m.last_producer_id, m.last_producer_epoch);
                    let got = expected.map(|e| (e.producer_id, e.producer_epoch));
                    if got.is_some_and(|g| g == last) && m.state == TxnState::Empty {
                        // A retry of the bump that answered it.
                        InitStep::Retried(ProducerIdAndEpoch {
                            producer_id: m.producer_id,
                            producer_epoch: m.producer_epoch,
                        })
                    } else if got
                        .is_some_and(|g| g != (m.producer_id, m.producer_epoch) && g != last)
                    {
                        return Err(ResponseError::ProducerFenced);
                    } else if m.state == TxnState::Ongoing {
                        InitStep::AbortOpen
                    } else {
                        Self::bump(m, got, timeout_ms, now, || self.new_producer_id())?
                    }
                }
            }
        };
        let (next, created) = match step {
            InitStep::Retried(p) => return Ok(p),
            InitStep::AbortOpen => {
                // The old producer's transaction is aborted with a bumped
                // epoch; the client retries once it is done.
                self.clone().abort(id, AbortCause::Fencing).await?;
                return Err(ResponseError::ConcurrentTransactions);
            }
            InitStep::Write(v, created) => (v, created),
        };
        match self.transition(id, next.clone(), coordinator_epoch).await {
            Ok(()) => Ok(ProducerIdAndEpoch {
                producer_id: next.producer_id,
                producer_epoch: next.producer_epoch,
            }),
            Err(e) => {
                let mut txns = self.lock();
                if created && self.check_coordinator(id) == Ok(coordinator_epoch) {
                    // A new id whose first write failed leaves nothing behind.
                    txns.remove(id);
                }
                Err(e)
            }
        }
    }

    /// The next epoch of an id with no open transaction (a new producer id
    /// once the epoch is exhausted); marks the id pending.
    /// `held`: the id and epoch the client sent (KIP-360); a retry of this
    /// request is recognised by them.
    fn bump(
        m: &mut TxnMetadata,
        held: Option<(i64, i16)>,
        timeout_ms: i32,
        now: i64,
        new_producer_id: impl FnOnce() -> Result<i64, TxnError>,
    ) -> Result<InitStep, TxnError> {
        let (producer_id, producer_epoch) = if m.producer_epoch >= i16::MAX - 1 {
            (new_producer_id()?, 0)
        } else {
            (m.producer_id, m.producer_epoch + 1)
        };
        (m.last_producer_id, m.last_producer_epoch) =
            held.unwrap_or((m.producer_id, m.producer_epoch));
        m.pending = true;
        let v = TxnValue {
            producer_id,
            producer_epoch,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            last_update_ms: now,
            start_ms: -1,
        };
        Ok(InitStep::Write(v, false))
    }

    fn new_producer_id(&self) -> Result<i64, TxnError> {
        self.producer_ids.next_id().map_err(|e| {
            tracing::error!(error = %e, "cannot reserve producer ids");
            ResponseError::CoordinatorNotAvailable
        })
    }

    /// Checks that `producer_id`/`epoch` is the current producer of `id`
    /// and no state change is in flight.
    pub(super) fn check_producer(
        m: &TxnMetadata,
        producer_id: i64,
        epoch: i16,
    ) -> Result<(), TxnError> {
        if m.producer_id != producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if m.producer_epoch != epoch {
            return Err(ResponseError::ProducerFenced);
        }
        if m.pending {
            return Err(ResponseError::ConcurrentTransactions);
        }
        Ok(())
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets
    /// partition): the transaction becomes (or stays) Ongoing with these
    /// partitions.
    pub async fn add_partitions(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<(String, i32)>,
    ) -> Result<(), TxnError> {
        let now = self.clock.now_ms();
        let (next, coordinator_epoch) = {
            let mut txns = self.lock();
            let coordinator_epoch = self.check_coordinator(id)?;
            let m = txns
                .get_mut(id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            Self::check_producer(m, producer_id, epoch)?;
            if m.state.is_prepared() {
                return Err(ResponseError::ConcurrentTransactions);
            }
            if m.state == TxnState::Ongoing && partitions.iter().all(|p| m.partitions.contains(p)) {
                return Ok(());
            }
            let mut v = m.value();
            if m.state != TxnState::Ongoing {
                v.partitions.clear();
                v.start_ms = now;
            }
            v.state = TxnState::Ongoing;
            v.partitions.extend(partitions);
            v.last_update_ms = now;
            m.pending = true;
            (v, coordinator_epoch)
        };
        self.transition(id, next, coordinator_epoch).await
    }

    /// KIP-890's verification (AddPartitionsToTxn v4+ with verify_only,
    /// asked by a partition leader before a producer's first transactional
    /// write there): which of `partitions` the open transaction of
    /// `producer_id`/`epoch` holds. Nothing changes. A whole-request error
    /// as Kafka's `handleVerifyPartitionsInTransaction`: an unknown id or
    /// another producer is INVALID_PRODUCER_ID_MAPPING, another epoch
    /// PRODUCER_FENCED, a prepared transaction CONCURRENT_TRANSACTIONS.
    pub fn verify_partitions(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<Vec<bool>, TxnError> {
        let txns = self.lock();
        self.check_coordinator(id)?;
        let m = txns
            .get(id)
            .ok_or(ResponseError::InvalidProducerIdMapping)?;
        if m.producer_id != producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if m.producer_epoch != epoch {
            return Err(ResponseError::ProducerFenced);
        }
        // A state change being written is not waited for (as Kafka's
        // `handleVerifyPartitionsInTransaction`): partitions join the
        // metadata only once persisted, and the partition's guard catches
        // a transaction that ends meanwhile.
        if m.state.is_prepared() {
            return Err(ResponseError::ConcurrentTransactions);
        }
        let ongoing = m.state == TxnState::Ongoing;
        Ok(partitions
            .iter()
            .map(|p| ongoing && m.partitions.contains(p))
            .collect())
    }

    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins
    /// the transaction.
    pub async fn add_offsets(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group_id: &str,
    ) -> Result<(), TxnError> {
        let p = self.groups.offsets_partition_of(group_id);
        self.add_partitions(id, producer_id, epoch, vec![(OFFSETS_TOPIC.to_string(), p)])
            .await
    }

    /// EndTxn: prepares the commit or abort (durable before the answer),
    /// then writes the markers in the background.
    pub async fn end_txn(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(), TxnError> {
        self.check_coordinator(id)?;
        {
            let txns = self.lock();
            let m = txns
                .get(id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            Self::check_producer(m, producer_id, epoch)?;
            match (m.state, commit) {
                (TxnState::Ongoing, _) => {}
                (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => {
                    return Ok(()); // a retry of a request that was answered
                }
                (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                    return Err(ResponseError::ConcurrentTransactions)
                }
                _ => return Err(ResponseError::InvalidTxnState),
            }
        }
        if commit {
            self.clone()
                .prepare(id, TxnState::PrepareCommit, None)
                .await
        } else {
            self.clone().abort(id, AbortCause::Client).await
        }
    }

    /// Aborts `id`'s open transaction; for anything but the client's own
    /// abort, with a bumped epoch that fences the producer.
    pub(super) async fn abort(
        self: Arc<Self>,
        id: &str,
        cause: AbortCause,
    ) -> Result<(), TxnError> {
        let bump = cause != AbortCause::Client;
        self.prepare(id, TxnState::PrepareAbort, Some((cause, bump)))
            .await
    }

    /// Writes `state` (PrepareCommit / PrepareAbort) for an Ongoing
    /// transaction, then starts writing its markers.
    async fn prepare(
        self: Arc<Self>,
        id: &str,
        state: TxnState,
        abort: Option<(AbortCause, bool)>,
    ) -> Result<(), TxnError> {
        let (next, coordinator_epoch) = {
            let mut txns = self.lock();
            let coordinator_epoch = self.check_coordinator(id)?;
            let m = txns
                .get_mut(id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            if m.pending {
                return Err(ResponseError::ConcurrentTransactions);
            }
            if m.state != TxnState::Ongoing {
                return Err(ResponseError::InvalidTxnState);
            }
            let mut v = m.value();
            v.state = state;
            v.last_update_ms = self.clock.now_ms();
            if abort.is_some_and(|(_, bump)| bump) && v.producer_epoch < i16::MAX {
                // The fenced producer may come back with the epoch it had
                // (KIP-360): it is recognised by it.
                m.last_producer_id = m.producer_id;
                m.last_producer_epoch = m.producer_epoch;
                v.producer_epoch += 1;
            }
            m.pending = true;
            (v, coordinator_epoch)
        };
        self.transition(id, next, coordinator_epoch).await?;
        let counter = match abort.map(|(c, _)| c) {
            None => &self.counters.commits,
            Some(AbortCause::Client) => &self.counters.aborts_client,
            Some(AbortCause::Timeout) => &self.counters.aborts_timeout,
            Some(AbortCause::Fencing) => &self.counters.aborts_fencing,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let me = self.clone();
        let id = id.to_string();
        tokio::spawn(async move { me.complete(&id).await });
        Ok(())
    }

    /// Open transactions, and the age of the oldest in ms (0: none).
    pub(crate) fn ongoing_summary(&self, now: i64) -> (usize, i64) {
        let txns = self.lock();
        let open = txns.values().filter(|m| m.state == TxnState::Ongoing);
        let (count, oldest) = open.fold((0, i64::MAX), |(n, o), m| (n + 1, o.min(m.start_ms)));
        (count, if count == 0 { 0 } else { (now - oldest).max(0) })
    }

    /// DescribeTransactions' view of one id.
    pub fn describe(&self, id: &str) -> Option<TxnMetadata> {
        self.lock().get(id).cloned()
    }

    /// ListTransactions: (id, producer id, state), filtered by state names
    /// and producer ids (empty filters match all) and by minimum age of
    /// the open transaction (`min_duration_ms` < 0: any).
    pub fn list(
        &self,
        states: &[String],
        producer_ids: &[i64],
        min_duration_ms: i64,
    ) -> Vec<(String, i64, TxnState)> {
        let now = self.clock.now_ms();
        let mut out: Vec<_> = self
            .lock()
            .iter()
            .filter(|(_, m)| states.is_empty() || states.iter().any(|s| s == m.state.name()))
            .filter(|(_, m)| producer_ids.is_empty() || producer_ids.contains(&m.producer_id))
            .filter(|(_, m)| {
                min_duration_ms < 0 || (m.start_ms >= 0 && now - m.start_ms >= min_duration_ms)
            })
            .map(|(id, m)| (id.clone(), m.producer_id, m.state))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

#[cfg(test)]
#[path = "coordinator_tests.rs"]
mod tests;
