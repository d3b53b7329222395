//! A partition's replication state: whether this broker leads it or
//! follows, at which leader epoch, the in-sync replicas, how far each
//! follower has durably copied the log, and the bound on the high
//! watermark that follows from them (docs/replication.md,
//! docs/durability.md).
//!
//! The high watermark is the durable prefix every in-sync replica holds:
//! on a leader the minimum of its own flushed end and each in-sync
//! follower's fetch offset (a follower fetches from its fsynced end); on a
//! follower the minimum of its flushed end and the leader's high watermark.
//! The log owns its flushed end and the high watermark (`log/ends.rs`);
//! this state gives it the other term, the bound. A single broker leads
//! every partition with itself as the only in-sync replica: no bound, so
//! its high watermark is its flushed end, as before.
//!
//! This file holds the state and the bound's rule; the partition's
//! methods that change it are in `replicas.rs`. It never talks to the
//! network or the cluster store (the replication module feeds it and
//! writes ISR changes).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::ack_latency::AckLatency;
use crate::log::partition_log::UNBOUNDED;

/// How far one follower has copied the leader's log.
#[derive(Debug, Clone, Copy)]
pub struct FollowerProgress {
    /// The follower's durable end: the offset of its last fetch (-1: it
    /// has not fetched since this leadership began).
    pub end: i64,
    pub last_fetch: Option<Instant>,
    /// When the follower last had everything the leader had (Kafka's
    /// `lastCaughtUpTimeMs`): what `replica.lag.time.max.ms` is measured
    /// from. An in-sync follower starts caught up when leadership begins.
    pub last_caught_up: Option<Instant>,
    /// The leader's log end at the previous fetch.
    pub(super) leader_end_at_last_fetch: i64,
    /// The log start the follower sent with its last fetch (-1: unknown):
    /// a consumer is not sent to a follower that no longer has its offset.
    pub log_start: i64,
}

impl FollowerProgress {
    pub(super) fn unknown(caught_up: Option<Instant>) -> Self {
        FollowerProgress {
            end: -1,
            last_fetch: None,
            last_caught_up: caught_up,
            leader_end_at_last_fetch: -1,
            log_start: -1,
        }
    }
}

/// A follower's addition to the ISR not yet seen in the store: written at
/// this store revision (`IN_FLIGHT` while the write is under way).
pub(super) const IN_FLIGHT: i64 = i64::MAX;

#[derive(Debug)]
pub(super) enum Role {
    /// This broker appends, stamping `epoch` (-1: a single broker, which
    /// stamps the log's own epoch). `isr` holds every in-sync replica but
    /// this one (empty: the leader alone); `pending` the followers whose
    /// addition is being written (counted already, as Kafka's maximal
    /// ISR).
    Leader {
        epoch: i32,
        isr: BTreeSet<i32>,
        pending: BTreeMap<i32, i64>,
        followers: HashMap<i32, FollowerProgress>,
        /// Each follower's fetch-to-ack latency (the slow-follower rule).
        acks: AckLatency,
        /// A quorum topic's k (`min.insync.replicas`): the high watermark
        /// is the k-th greatest end in the ISR, not the least
        /// (docs/quorum-acks.md). None: Kafka's rule.
        quorum: Option<usize>,
        /// A quorum topic's ISR removals not yet seen in the store
        /// (written at this revision, `IN_FLIGHT` while under way): the
        /// high watermark counts the ISR without them already.
        removing: BTreeMap<i32, i64>,
    },
    /// This broker copies `leader`'s log at `epoch` (leader -1: not known
    /// yet, e.g. at start in a cluster).
    Follower {
        leader: i32,
        epoch: i32,
        leader_high_watermark: i64,
    },
}

#[derive(Debug)]
pub(super) struct ReplicaState {
    pub(super) role: Role,
    /// This broker's node id (-1 until the cluster layer sets a role).
    pub(super) me: i32,
    /// ISR shrinks and expands this broker wrote as leader (a metric to
    /// alarm on: flapping is the first sign of a bad disk or network).
    pub(super) isr_shrinks: u64,
    pub(super) isr_expands: u64,
    /// Of the shrinks, followers taken out for their ack latency.
    pub(super) slow_evictions: u64,
    /// The cluster leader epoch this process last led the partition at,
    /// with that epoch's start offset (a quorum topic's report).
    pub(super) led: Option<(i32, i64)>,
}

impl ReplicaState {
    /// A single broker's partition: it leads, alone.
    pub(super) fn new() -> Self {
        ReplicaState {
            role: Role::Leader {
                epoch: -1,
                isr: BTreeSet::new(),
                pending: BTreeMap::new(),
                followers: HashMap::new(),
                acks: AckLatency::default(),
                quorum: None,
                removing: BTreeMap::new(),
            },
            me: -1,
            isr_shrinks: 0,
            isr_expands: 0,
            slow_evictions: 0,
            led: None,
        }
    }

    /// How far this state lets the high watermark go, the log's durable
    /// end aside (the log takes the least of the two; `current` is the
    /// high watermark now).
    pub(super) fn high_watermark_bound(&self, current: i64) -> i64 {
        match &self.role {
            Role::Leader {
                isr,
                pending,
                followers,
                quorum,
                removing,
                ..
            } => {
                // An in-sync follower that has not fetched since this
                // broker took over holds the high watermark where it is.
                let end_of = |id: &i32| {
                    followers
                        .get(id)
                        .filter(|f| f.end >= 0)
                        .map_or(current, |f| f.end)
                };
                match quorum {
                    // The k-th greatest end, this leader's among them and
                    // never past it (it is one of the k, so a restart of
                    // it loses nothing acknowledged), over every ISR the
                    // store may end up with while changes are under way
                    // (with or without the removals, with or without the
                    // additions), taking the least. With the leader's own
                    // end d among the ends, the k-th greatest capped at d
                    // is the (k-1)-th greatest of the followers' capped at
                    // d: that (k-1)-th greatest is the bound.
                    Some(k) => {
                        let base: Vec<i32> = isr.iter().copied().collect();
                        let mut least = UNBOUNDED;
                        for with_removals in [false, true] {
                            for with_additions in [false, true] {
                                let mut ends: Vec<i64> = base
                                    .iter()
                                    .filter(|id| !(with_removals && removing.contains_key(id)))
                                    .chain(pending.keys().filter(|_| with_additions))
                                    .map(end_of)
                                    .collect();
                                let others = (*k).max(1) - 1;
                                if others == 0 || ends.is_empty() {
                                    continue;
                                }
                                ends.sort_unstable_by(|a, b| b.cmp(a));
                                least = least.min(ends[others.min(ends.len()) - 1]);
                            }
                        }
                        least
                    }
                    None => isr
                        .iter()
                        .chain(pending.keys())
                        .map(end_of)
                        .fold(UNBOUNDED, i64::min),
                }
            }
            Role::Follower {
                leader_high_watermark,
                ..
            } => *leader_high_watermark,
        }
    }
}

/// What a leader changes in its ISR now (see [`super::Partition::isr_review`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IsrReview {
    /// In-sync followers that have not caught up within the lag limit.
    pub out_of_sync: Vec<i32>,
    /// Live followers outside the ISR that hold everything up to the high
    /// watermark and the current epoch's start; already counted toward
    /// the high watermark (pending) when this is returned.
    pub caught_up: Vec<i32>,
    /// Of `out_of_sync`, those taken out for their ack latency (with their
    /// p99), not for lag.
    pub slow: Vec<(i32, Duration)>,
}
