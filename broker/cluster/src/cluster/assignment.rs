//! Replica assignment for new partitions, after Kafka's
//! `assignReplicasToBrokers`: first replicas round-robin over the brokers
//! from a random start, followers at a shift that changes every full round
//! (so the replicas of one broker's partitions spread over the others),
//! and with racks, brokers taken rack by rack and every partition's
//! replicas on distinct racks while there are racks left.
//! Pure functions; no I/O.

use std::collections::{BTreeMap, BTreeSet};

/// A broker to assign to: its node id and rack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub node_id: i32,
    pub rack: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignmentError {
    #[error("Replication factor: {rf} larger than available brokers: {brokers}.")]
    TooFewBrokers { rf: i32, brokers: usize },
    #[error("Replication factor must be larger than 0, got {0}.")]
    BadReplicationFactor(i32),
    #[error("Number of partitions must be larger than 0, got {0}.")]
    BadPartitions(i32),
}

/// Orders brokers rack by rack (a1, b1, c1, a2, b2, ...), racks and the
/// brokers within a rack sorted; brokers without a rack form one more rack.
fn rack_alternated(brokers: &[Candidate]) -> Vec<Candidate> {
    let mut by_rack: BTreeMap<Option<&str>, Vec<&Candidate>> = BTreeMap::new();
    for b in brokers {
        by_rack.entry(b.rack.as_deref()).or_default().push(b);
    }
    for v in by_rack.values_mut() {
        v.sort_by_key(|b| b.node_id);
    }
    let longest = by_rack.values().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(brokers.len());
    for i in 0..longest {
        for v in by_rack.values() {
            if let Some(b) = v.get(i) {
                out.push((*b).clone());
            }
        }
    }
    out
}

fn replica_index(first: usize, shift: usize, j: usize, n: usize) -> usize {
    (first + 1 + (shift + j) % (n - 1)) % n
}

/// Replicas for `partitions` partitions that exist on broker `me` alone
/// (a copy it publishes): it leads each, followed by up to `rf - 1` of
/// `others` in rotation.
pub(crate) fn led_by(me: i32, others: &[i32], partitions: i32, rf: usize) -> Vec<Vec<i32>> {
    (0..partitions.max(0) as usize)
        .map(|p| {
            let mut r = vec![me];
            for i in 0..rf.saturating_sub(1).min(others.len()) {
                r.push(others[(p + i) % others.len()]);
            }
            r
        })
        .collect()
}

/// Replicas for partitions `first_partition..first_partition + count`, the
/// first of each list its preferred leader. `seed` picks the start and the
/// shift (Kafka draws them at random; tests pass a fixed one).
pub fn assign(
    brokers: &[Candidate],
    first_partition: i32,
    count: i32,
    rf: i32,
    seed: u64,
) -> Result<Vec<Vec<i32>>, AssignmentError> {
    if count <= 0 {
        return Err(AssignmentError::BadPartitions(count));
    }
    if rf <= 0 {
        return Err(AssignmentError::BadReplicationFactor(rf));
    }
    if rf as usize > brokers.len() {
        return Err(AssignmentError::TooFewBrokers {
            rf,
            brokers: brokers.len(),
        });
    }
    let list = rack_alternated(brokers);
    let n = list.len();
    let racks: BTreeSet<Option<&str>> = list.iter().map(|b| b.rack.as_deref()).collect();
    let start = (seed % n as u64) as usize;
    let mut shift = ((seed >> 32) % n as u64) as usize;
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let p = first_partition as usize + i;
        if p > 0 && p.is_multiple_of(n) {
            shift += 1;
        }
        let first = (p + start) % n;
        let mut chosen = vec![first];
        if n > 1 {
            let order: Vec<usize> = (0..n - 1)
                .map(|j| replica_index(first, shift, j, n))
                .collect();
            // First pass: racks not used yet; second: anything not chosen.
            for pass in 0..2 {
                for &c in &order {
                    if chosen.len() == rf as usize {
                        break;
                    }
                    if chosen.contains(&c) {
                        continue;
                    }
                    let used: BTreeSet<Option<&str>> =
                        chosen.iter().map(|&k| list[k].rack.as_deref()).collect();
                    let rack_free = !used.contains(&list[c].rack.as_deref());
                    if pass == 1 || rack_free || used.len() == racks.len() {
                        chosen.push(c);
                    }
                }
            }
        }
        out.push(chosen.into_iter().map(|k| list[k].node_id).collect());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(spec: &[(i32, Option<&str>)]) -> Vec<Candidate> {
        spec.iter()
            .map(|(id, r)| Candidate {
                node_id: *id,
                rack: r.map(str::to_string),
            })
            .collect()
    }

    #[test]
    fn leaders_spread_evenly_and_replicas_are_distinct() {
        let b = brokers(&[(1, None), (2, None), (3, None)]);
        for seed in [0u64, 7, 1 << 33, u64::MAX] {
            let a = assign(&b, 0, 6, 3, seed).unwrap();
            assert_eq!(a.len(), 6);
            let mut leaders = BTreeMap::new();
            for r in &a {
                assert_eq!(r.iter().collect::<BTreeSet<_>>().len(), 3, "{r:?}");
                *leaders.entry(r[0]).or_insert(0) += 1;
            }
            assert_eq!(leaders.values().collect::<Vec<_>>(), [&2, &2, &2]);
        }
    }

    #[test]
    fn replicas_go_to_distinct_racks() {
        let b = brokers(&[
            (1, Some("a")),
            (2, Some("a")),
            (3, Some("b")),
            (4, Some("b")),
            (5, Some("c")),
            (6, Some("c")),
        ]);
        let rack = |id: i32| b.iter().find(|c| c.node_id == id).unwrap().rack.clone();
        for seed in 0..20u64 {
            for r in assign(&b, 0, 12, 3, seed * 0x1_0000_0001).unwrap() {
                let racks: BTreeSet<_> = r.iter().map(|&id| rack(id)).collect();
                assert_eq!(racks.len(), 3, "{r:?}");
            }
        }
        // Fewer racks than replicas: racks repeat only when they must.
        for r in assign(&b[..4], 0, 8, 3, 5).unwrap() {
            let racks: BTreeSet<_> = r.iter().map(|&id| rack(id)).collect();
            assert_eq!(racks.len(), 2, "{r:?}");
        }
    }

    #[test]
    fn impossible_requests_are_refused() {
        let b = brokers(&[(1, None)]);
        assert_eq!(
            assign(&b, 0, 1, 2, 0),
            Err(AssignmentError::TooFewBrokers { rf: 2, brokers: 1 })
        );
        assert!(assign(&b, 0, 0, 1, 0).is_err());
        assert!(assign(&b, 0, 1, 0, 0).is_err());
        assert_eq!(assign(&b, 0, 3, 1, 9).unwrap(), vec![vec![1]; 3]);
    }

    #[test]
    fn a_published_copy_is_led_by_its_holder_followed_in_turn() {
        assert_eq!(
            led_by(1, &[2, 3], 3, 3),
            vec![vec![1, 2, 3], vec![1, 3, 2], vec![1, 2, 3]]
        );
        assert_eq!(led_by(1, &[2, 3], 2, 2), vec![vec![1, 2], vec![1, 3]]);
        assert_eq!(led_by(1, &[], 2, 3), vec![vec![1], vec![1]]);
    }
}
