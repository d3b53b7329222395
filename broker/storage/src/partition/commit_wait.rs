//! An acks=all producer's wait: until the high watermark passes its
//! batch, while this broker still leads at the epoch it appended at
//! (docs/durability.md, docs/replication.md).

use std::time::Duration;

use super::Partition;

/// How an acks=all wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitWait {
    Committed,
    TimedOut,
    NotLeader,
}

impl Partition {
    /// [`crate::log::PartitionLog::wait_durable`] for an acks=all produce
    /// appended at leader epoch `epoch`: gives up as soon as this broker
    /// no longer leads at that epoch (the batch may have been truncated
    /// since; the client retries at the new leader, idempotence makes
    /// that safe). The deadline runs on tokio's timers.
    pub async fn wait_committed(
        &self,
        end_offset: i64,
        epoch: i32,
        timeout: Duration,
    ) -> CommitWait {
        let mut rx = self.log.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // The high watermark first, then the epoch: still leading at
            // the append's epoch afterwards means nothing was truncated in
            // between (a leadership lost and won again has a new epoch).
            let reached = *rx.borrow_and_update() >= end_offset;
            if !self.leads_at(epoch) {
                return CommitWait::NotLeader;
            }
            if reached {
                return CommitWait::Committed;
            }
            let tick = tokio::time::Instant::now() + Duration::from_millis(100);
            tokio::select! {
                r = rx.changed() => if r.is_err() { return CommitWait::TimedOut },
                _ = tokio::time::sleep_until(tick.min(deadline)) => {
                    if tokio::time::Instant::now() >= deadline {
                        let reached = *rx.borrow() >= end_offset;
                        return if !self.leads_at(epoch) {
                            CommitWait::NotLeader
                        } else if reached {
                            CommitWait::Committed
                        } else {
                            CommitWait::TimedOut
                        };
                    }
                }
            }
        }
    }
}
