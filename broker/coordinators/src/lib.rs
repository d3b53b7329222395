//! `strata-coordinators`: Kafka's group coordinator (`group`: the classic
//! protocol's membership, rebalances, offsets and lag, over
//! `__consumer_offsets`) and transaction coordinator (`txn`: transactional
//! ids, their state machine, markers and KIP-890 verification, over
//! `__transaction_state`), and what keeps both on the leaders of their
//! partitions (`leadership`).
//!
//! Time comes from the clock each is given. They stand on the local log
//! (`strata-storage`), the cluster's leadership and inter-broker client
//! (`strata-cluster`) and the consumer protocol (`strata-protocol`); the
//! Kafka server and the bucket are above them.

pub mod group;
pub mod leadership;
pub mod txn;
