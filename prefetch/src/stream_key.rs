//! `StreamKey`: who reads which partition, the unit read-ahead follows.

/// Who reads: consumer group (or client), topic, partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamKey {
    pub reader: String,
    pub topic: String,
    pub partition: i32,
}
