//! Fetch from the closest replica (KIP-392): which replica a consumer
//! that names its rack (`client.rack`, Fetch v11+) should read a
//! partition from, as the leader decides it, and the counters that show
//! how much consumer traffic followers took (docs/follower-fetching.md).
//!
//! The rule is Kafka's `RackAwareReplicaSelector`: among the leader and
//! the in-sync followers that are live, not shutting down, fetched from
//! the leader lately and already hold the fetch offset, those in the
//! client's rack; the leader if it is one of them, else the most
//! caught-up follower. (The recent fetch is Strata's addition: a follower
//! that died is no longer named from the moment it stops fetching, not
//! only once its lease expires, so a consumer is not sent back to it.) No rack, no match, or
//! `replica.selector.class` set to Kafka's `LeaderSelector`: the leader.
//!
//! Pure decisions and counters: it never reads a log or the network.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Record bytes this broker served to consumers as a follower.
pub(crate) static FOLLOWER_READ_BYTES: AtomicU64 = AtomicU64::new(0);
/// Fetch answers in which this leader sent a consumer to another replica.
pub(crate) static PREFERRED_REPLICA_REDIRECTS: AtomicU64 = AtomicU64::new(0);

pub fn note_follower_read(bytes: usize) {
    FOLLOWER_READ_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
}

pub fn note_redirect() {
    PREFERRED_REPLICA_REDIRECTS.fetch_add(1, Ordering::Relaxed);
}

/// How the leader picks the replica a consumer reads from (a setting,
/// parsed with the others).
pub use strata_common::config::settings::ReplicaSelector;

/// One replica as the leader sees it.
#[derive(Debug, Clone)]
pub struct ReplicaView<'a> {
    pub id: i32,
    pub rack: Option<&'a str>,
    /// The replica's log end as the leader knows it (the leader: its own;
    /// a follower: its last fetch offset, -1 if it has not fetched since
    /// this leadership began).
    pub end: i64,
    /// How long ago the follower last fetched from the leader (None: not
    /// since this leadership began; the leader: None, unused).
    pub last_fetch_age: Option<Duration>,
    /// The log start the follower last sent (-1: unknown).
    pub log_start: i64,
}

/// What the leader knows when a consumer fetches `fetch_offset`.
#[derive(Debug)]
pub struct Selection<'a> {
    pub leader: ReplicaView<'a>,
    /// Every follower in the replica list, in its order.
    pub followers: Vec<ReplicaView<'a>>,
    pub isr: &'a [i32],
    /// Live brokers that are not in a controlled shutdown.
    pub serving: &'a BTreeSet<i32>,
    pub client_rack: &'a str,
    pub fetch_offset: i64,
    /// A follower that has not fetched for longer is not chosen.
    pub max_fetch_age: Duration,
    /// The log has a part in the bucket: a follower serves below its own
    /// log start from there, so its log start does not matter.
    pub tiered: bool,
}

/// The replica the consumer should read from instead of the leader, if
/// any (None: keep reading from the leader).
pub fn preferred_read_replica(selector: ReplicaSelector, s: &Selection<'_>) -> Option<i32> {
    if selector == ReplicaSelector::Leader || s.client_rack.is_empty() {
        return None;
    }
    if s.leader.rack == Some(s.client_rack) {
        return None;
    }
    // Most caught up first; on a tie the earlier in the replica list.
    let mut best: Option<&ReplicaView<'_>> = None;
    for f in &s.followers {
        let eligible = f.rack == Some(s.client_rack)
            && s.isr.contains(&f.id)
            && s.serving.contains(&f.id)
            && f.end >= s.fetch_offset
            && f.end >= 0
            && f.last_fetch_age.is_some_and(|age| age <= s.max_fetch_age)
            // Its retention may have removed what the consumer asks for
            // (the leader's has not, or the fetch would be out of range).
            && (s.tiered || f.log_start <= s.fetch_offset);
        if eligible && best.is_none_or(|b| f.end > b.end) {
            best = Some(f);
        }
    }
    best.map(|f| f.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: i32, rack: &str, end: i64) -> ReplicaView<'_> {
        ReplicaView {
            id,
            rack: (!rack.is_empty()).then_some(rack),
            end,
            last_fetch_age: Some(Duration::from_millis(100)),
            log_start: 0,
        }
    }

    fn pick(client_rack: &str, fetch_offset: i64, isr: &[i32], serving: &[i32]) -> Option<i32> {
        let serving: BTreeSet<i32> = serving.iter().copied().collect();
        let s = Selection {
            leader: view(1, "a", 100),
            followers: vec![view(2, "b", 90), view(3, "b", 95), view(4, "c", 100)],
            isr,
            serving: &serving,
            client_rack,
            fetch_offset,
            max_fetch_age: Duration::from_secs(1),
            tiered: false,
        };
        preferred_read_replica(ReplicaSelector::RackAware, &s)
    }

    #[test]
    fn a_client_in_the_leaders_rack_or_without_one_reads_from_the_leader() {
        assert_eq!(pick("a", 0, &[1, 2, 3, 4], &[1, 2, 3, 4]), None);
        assert_eq!(pick("", 0, &[1, 2, 3, 4], &[1, 2, 3, 4]), None);
        assert_eq!(pick("z", 0, &[1, 2, 3, 4], &[1, 2, 3, 4]), None);
    }

    #[test]
    fn the_most_caught_up_in_sync_follower_of_the_clients_rack_is_chosen() {
        assert_eq!(pick("b", 0, &[1, 2, 3, 4], &[1, 2, 3, 4]), Some(3));
        assert_eq!(pick("c", 0, &[1, 2, 3, 4], &[1, 2, 3, 4]), Some(4));
        // Out of the ISR, gone, or shutting down: not a candidate.
        assert_eq!(pick("b", 0, &[1, 2, 4], &[1, 2, 3, 4]), Some(2));
        assert_eq!(pick("b", 0, &[1, 2, 3, 4], &[1, 2, 4]), Some(2));
        assert_eq!(pick("c", 0, &[1, 2, 3], &[1, 2, 3, 4]), None);
    }

    #[test]
    fn a_follower_that_lacks_the_fetch_offset_is_not_chosen() {
        assert_eq!(pick("b", 93, &[1, 2, 3, 4], &[1, 2, 3, 4]), Some(3));
        assert_eq!(pick("b", 96, &[1, 2, 3, 4], &[1, 2, 3, 4]), None);
    }

    #[test]
    fn a_follower_whose_retention_removed_the_offset_is_not_chosen_unless_tiered() {
        let serving: BTreeSet<i32> = [1, 2, 3].into_iter().collect();
        let mut s = Selection {
            leader: view(1, "a", 100),
            followers: vec![view(2, "b", 100), view(3, "b", 100)],
            isr: &[1, 2, 3],
            serving: &serving,
            client_rack: "b",
            fetch_offset: 10,
            max_fetch_age: Duration::from_secs(1),
            tiered: false,
        };
        s.followers[0].log_start = 50;
        assert_eq!(
            preferred_read_replica(ReplicaSelector::RackAware, &s),
            Some(3)
        );
        s.followers[1].log_start = 11;
        assert_eq!(preferred_read_replica(ReplicaSelector::RackAware, &s), None);
        // Below its hot tail a follower of a tiered topic reads the bucket.
        s.tiered = true;
        assert_eq!(
            preferred_read_replica(ReplicaSelector::RackAware, &s),
            Some(2)
        );
    }

    #[test]
    fn a_follower_that_stopped_fetching_is_not_chosen() {
        let serving: BTreeSet<i32> = [1, 2, 3].into_iter().collect();
        let mut s = Selection {
            leader: view(1, "a", 10),
            followers: vec![view(2, "b", 10), view(3, "b", 9)],
            isr: &[1, 2, 3],
            serving: &serving,
            client_rack: "b",
            fetch_offset: 0,
            max_fetch_age: Duration::from_secs(1),
            tiered: false,
        };
        s.followers[0].last_fetch_age = Some(Duration::from_secs(5));
        assert_eq!(
            preferred_read_replica(ReplicaSelector::RackAware, &s),
            Some(3)
        );
        s.followers[1].last_fetch_age = None;
        assert_eq!(preferred_read_replica(ReplicaSelector::RackAware, &s), None);
    }

    #[test]
    fn the_leader_selector_never_redirects() {
        let serving: BTreeSet<i32> = [1, 2].into_iter().collect();
        let s = Selection {
            leader: view(1, "a", 10),
            followers: vec![view(2, "b", 10)],
            isr: &[1, 2],
            serving: &serving,
            client_rack: "b",
            fetch_offset: 0,
            max_fetch_age: Duration::from_secs(1),
            tiered: false,
        };
        assert_eq!(preferred_read_replica(ReplicaSelector::Leader, &s), None);
        assert_eq!(
            preferred_read_replica(ReplicaSelector::RackAware, &s),
            Some(2)
        );
    }
}
