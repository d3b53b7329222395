//! Where things live in the bucket (`docs/catalog.md`):
//!
//! ```text
//! <prefix>/topics/<topic>/<topic-id>/<partition>/manifest/<version, 20 digits>.json
//! <prefix>/topics/<topic>/<topic-id>/<partition>/segments/<base offset, 20 digits>-<writer epoch>.<log|index|timeindex|snapshot>
//! ```
//!
//! The topic id keeps a re-created topic of the same name apart from the
//! old one's leftovers.

use object_store::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionPath {
    pub prefix: String,
    pub topic: String,
    pub topic_id: String,
    pub partition: i32,
}

impl PartitionPath {
    pub fn new(prefix: &str, topic: &str, topic_id: &str, partition: i32) -> Self {
        PartitionPath {
            prefix: prefix.trim_matches('/').to_string(),
            topic: topic.to_string(),
            topic_id: topic_id.to_string(),
            partition,
        }
    }

    fn root(&self) -> String {
        format!(
            "{}/{}",
            topic_data_root(&self.prefix, &self.topic, &self.topic_id),
            self.partition
        )
    }

    /// Where the partition's segment objects live.
    pub fn segments_dir(&self) -> Path {
        Path::from(format!("{}/segments", self.root()))
    }

    pub fn manifest_dir(&self) -> Path {
        Path::from(format!("{}/manifest", self.root()))
    }

    pub fn manifest(&self, version: u64) -> Path {
        Path::from(format!("{}/manifest/{version:020}.json", self.root()))
    }

    /// Parses a manifest object's version from its key.
    pub fn manifest_version(key: &Path) -> Option<u64> {
        key.filename()?.strip_suffix(".json")?.parse().ok()
    }

    /// Key of one file of a tiered segment (`kind`: log, index, timeindex, snapshot).
    pub fn segment_object(&self, base_offset: i64, writer_epoch: u64, kind: &str) -> Path {
        Path::from(format!(
            "{}/segments/{base_offset:020}-{writer_epoch}.{kind}",
            self.root()
        ))
    }
}

impl PartitionPath {
    /// Key of one file of a segment the cleaner rewrote: `tag` tells it
    /// from the original and from other rewrites of the same segment.
    pub fn cleaned_segment_object(
        &self,
        base_offset: i64,
        writer_epoch: u64,
        tag: &str,
        kind: &str,
    ) -> Path {
        Path::from(format!(
            "{}/segments/{base_offset:020}-{writer_epoch}-{tag}.{kind}",
            self.root()
        ))
    }
}

fn prefixed(prefix: &str, rest: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        rest.to_string()
    } else {
        format!("{prefix}/{rest}")
    }
}

/// Every object of one incarnation of a topic (all partitions).
pub fn topic_data_root(prefix: &str, topic: &str, topic_id: &str) -> String {
    prefixed(prefix, &format!("topics/{topic}/{topic_id}"))
}

/// `<prefix>/metadata/topics/<topic>.json`: a topic's name, id, partition
/// count and config overrides.
pub fn topic_metadata(prefix: &str, topic: &str) -> Path {
    Path::from(prefixed(prefix, &format!("metadata/topics/{topic}.json")))
}

pub fn topic_metadata_dir(prefix: &str) -> Path {
    Path::from(prefixed(prefix, "metadata/topics"))
}

/// `<prefix>/metadata/cluster.json`: the cluster id the bucket belongs to.
pub fn cluster_metadata(prefix: &str) -> Path {
    Path::from(prefixed(prefix, "metadata/cluster.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let p = PartitionPath::new("/cluster-a/", "orders", "abc", 3);
        assert_eq!(
            p.manifest(7).as_ref(),
            "cluster-a/topics/orders/abc/3/manifest/00000000000000000007.json"
        );
        assert_eq!(PartitionPath::manifest_version(&p.manifest(42)), Some(42));
        assert_eq!(
            p.segment_object(100, 2, "log").as_ref(),
            "cluster-a/topics/orders/abc/3/segments/00000000000000000100-2.log"
        );
        assert_eq!(
            PartitionPath::new("", "t", "i", 0).manifest_dir().as_ref(),
            "topics/t/i/0/manifest"
        );
        assert_eq!(
            p.segments_dir().as_ref(),
            "cluster-a/topics/orders/abc/3/segments"
        );
        assert_eq!(
            topic_metadata("/cluster-a", "orders").as_ref(),
            "cluster-a/metadata/topics/orders.json"
        );
        assert_eq!(cluster_metadata("").as_ref(), "metadata/cluster.json");
    }
}
