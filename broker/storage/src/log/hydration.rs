//! Whether a replica's log holds everything this replica ever
//! acknowledged: "hydrated" (docs/quorum-acks.md). A log opened from disk
//! is (a follower fsyncs before its fetch acknowledges), and so is the log
//! of a partition created while this process was registered (it never
//! acknowledged anything before). A log that lost records is not: created
//! empty for a partition this broker held before (a replaced disk), restored
//! at the bucket's end, or emptied to restart at it. Until it caught up
//! with a leader it abstains from quorum elections, and named leader it
//! hands the partition over (`replication::isr::step_down_state`).
//!
//! The state survives restarts as a marker file in the partition's
//! directory, written (and the directory fsynced) before the log is
//! emptied and removed once it caught up: a restart in between still
//! knows the log is incomplete. A marker left behind by a failed removal
//! only errs on the safe side.
//!
//! It owns the marker and the flag; it never moves offsets.

use std::fs;

use super::partition_log::{fsync_dir, LogError, PartitionLog, UNHYDRATED_MARKER};

impl PartitionLog {
    /// The log holds what this replica acknowledged before (see the module
    /// doc).
    pub fn hydrated(&self) -> bool {
        self.ends().hydrated
    }

    /// The log is about to hold less than this replica acknowledged: the
    /// marker is on disk (its directory fsynced) before this returns. The
    /// file is written under the ends' lock, as it is removed, so a
    /// removal in flight cannot take a newer marker with it (both are
    /// rare: once per emptied log).
    pub(super) fn mark_unhydrated(&self) -> Result<(), LogError> {
        let mut st = self.ends();
        st.hydrated = false;
        st.unhydrated_marker = true;
        fs::write(self.dir().join(UNHYDRATED_MARKER), b"")?;
        fsync_dir(self.dir())?;
        Ok(())
    }

    /// Opened from disk: hydrated unless the marker says otherwise.
    pub(super) fn load_hydration(&self) {
        let marker = self.dir().join(UNHYDRATED_MARKER).exists();
        let mut st = self.ends();
        st.hydrated = !marker;
        st.unhydrated_marker = marker;
    }

    /// The whole log is fsynced and a leader's: the partition above saw
    /// that it caught up with its leader (`Partition::caught_up_with_leader`).
    /// From here on it holds what it acknowledged. Nothing if it already
    /// did, or if its end is not durable yet.
    pub(crate) fn mark_hydrated_if_durable(&self) {
        let end = self.log_end_offset();
        {
            let mut st = self.ends();
            if st.hydrated || st.durable_end < end {
                return;
            }
            st.hydrated = true;
        }
        self.settle_hydration_marker();
    }

    /// The log holds what this replica acknowledged: it led, or caught up
    /// with a leader holding a batch of the leader's epoch
    /// (`Partition::set_leader_high_watermark`).
    pub(crate) fn mark_hydrated(&self) {
        self.ends().hydrated = true;
        self.settle_hydration_marker();
    }

    /// Removes the marker once the log is hydrated (once; under the
    /// ends' lock, see [`Self::mark_unhydrated`]).
    pub(super) fn settle_hydration_marker(&self) {
        let mut st = self.ends();
        if !(st.hydrated && st.unhydrated_marker) {
            return;
        }
        st.unhydrated_marker = false;
        let removed = match fs::remove_file(self.dir().join(UNHYDRATED_MARKER)) {
            Ok(()) => fsync_dir(self.dir()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        drop(st);
        if let Err(e) = removed {
            tracing::warn!(topic = %self.topic(), partition = self.partition(), error = %e,
                "cannot remove the unhydrated marker; a restart will wait to catch up again");
        }
    }
}
