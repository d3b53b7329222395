//! `ManifestView`: the one in-memory view of a partition's catalog, shared
//! by the side that writes the catalog (the tiering manager publishes every
//! manifest it reads or commits) and the sides that read it (the historical
//! read path, ListOffsets, DeleteRecords), as Redpanda's uploader and
//! cloud-storage reader share one manifest. It is a `tokio::sync::watch`:
//! readers take the current manifest without a lock held across their
//! work, or wait for the next one. It does no I/O.

use std::sync::Arc;

use tokio::sync::watch;

use crate::manifest::PartitionManifest;

#[derive(Debug)]
pub struct ManifestView {
    pub topic: String,
    pub partition: i32,
    current: watch::Sender<Arc<PartitionManifest>>,
}

impl ManifestView {
    /// A view of `topic`-`partition` holding `manifest` (an empty one
    /// until the catalog has been read).
    pub fn new(topic: &str, partition: i32, manifest: PartitionManifest) -> Self {
        ManifestView {
            topic: topic.to_string(),
            partition,
            current: watch::Sender::new(Arc::new(manifest)),
        }
    }

    /// The manifest as last published.
    pub fn current(&self) -> Arc<PartitionManifest> {
        self.current.borrow().clone()
    }

    /// Publishes what the catalog now holds (its writer, after a read or a
    /// commit). A manifest equal to the current one wakes no receiver.
    pub fn publish(&self, manifest: &PartitionManifest) {
        self.current.send_if_modified(|now| {
            if **now == *manifest {
                return false;
            }
            *now = Arc::new(manifest.clone());
            true
        });
    }

    /// A receiver that sees each published change (`changed().await`).
    pub fn subscribe(&self) -> watch::Receiver<Arc<PartitionManifest>> {
        self.current.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_see_what_the_writer_publishes_and_only_changes_wake_them() {
        let view = ManifestView::new("t", 0, PartitionManifest::empty());
        let mut rx = view.subscribe();
        assert!(view.current().segments.is_empty());
        let mut m = PartitionManifest::empty();
        view.publish(&m);
        assert!(!rx.has_changed().unwrap(), "the same manifest wakes no one");
        m.log_start_offset = 7;
        view.publish(&m);
        assert!(rx.has_changed().unwrap());
        assert_eq!(rx.borrow_and_update().log_start_offset, 7);
        assert_eq!(view.current().log_start_offset, 7);
    }
}
