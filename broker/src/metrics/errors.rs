//! Error codes in responses, counted per API and error as Kafka's
//! `ErrorsPerSec{request, error}` does: each top-level, per-topic,
//! per-partition or per-member error code of a response counts once
//! (a Produce that fails on three partitions counts three), under Kafka's
//! error names (`NOT_LEADER_OR_FOLLOWER`). `NONE` is not counted.
//!
//! Dispatch calls [`count`] with each typed response before encoding it.
//! It reads responses, never changes one.

use std::sync::LazyLock;

use kafka_protocol::messages::*;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::requests::api_name;
pub use crate::protocol::error_names::error_name;

/// `[("api", "Produce"), ("error", "NOT_LEADER_OR_FOLLOWER")]`.
type ErrorLabels = [(&'static str, &'static str); 2];

static ERRORS: LazyLock<Family<ErrorLabels, Counter>> = LazyLock::new(Family::default);

/// The error codes a response carries, each handed to `out` (no
/// allocation on the request path).
pub trait ErrorCodes {
    fn error_codes(&self, out: &mut dyn FnMut(i16));
}

/// Counts `response`'s error codes under `api`.
pub fn count<R: ErrorCodes>(api: ApiKey, response: &R) {
    response.error_codes(&mut |c| {
        if c != 0 {
            ERRORS
                .get_or_create(&[("api", api_name(api)), ("error", error_name(c))])
                .inc();
        }
    });
}

pub fn register(registry: &mut Registry) {
    registry.register(
        "strata_request_errors",
        "Error codes in responses, per API and Kafka error name: each top-level, topic, partition or member error counts once",
        ERRORS.clone(),
    );
}

/// Responses whose only error code is their top-level `error_code`.
macro_rules! top_level {
    ($($t:ty),* $(,)?) => {$(
        impl ErrorCodes for $t {
            fn error_codes(&self, out: &mut dyn FnMut(i16)) {
                out(self.error_code);
            }
        }
    )*};
}

top_level!(
    ApiVersionsResponse,
    DescribeClusterResponse,
    ListPartitionReassignmentsResponse,
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    ListGroupsResponse,
    InitProducerIdResponse,
    AddOffsetsToTxnResponse,
    EndTxnResponse,
    ListTransactionsResponse,
    SaslHandshakeResponse,
    SaslAuthenticateResponse,
    DescribeAclsResponse,
);

/// Responses with a list of results, each with an `error_code`.
macro_rules! per_item {
    ($($t:ty => $list:ident),* $(,)?) => {$(
        impl ErrorCodes for $t {
            fn error_codes(&self, out: &mut dyn FnMut(i16)) {
                self.$list.iter().for_each(|r| out(r.error_code));
            }
        }
    )*};
}

per_item!(
    MetadataResponse => topics,
    CreateTopicsResponse => topics,
    DeleteTopicsResponse => responses,
    CreatePartitionsResponse => results,
    DescribeConfigsResponse => results,
    AlterConfigsResponse => responses,
    IncrementalAlterConfigsResponse => responses,
    DescribeGroupsResponse => groups,
    DeleteGroupsResponse => results,
    DescribeTransactionsResponse => transaction_states,
    DescribeUserScramCredentialsResponse => results,
    AlterUserScramCredentialsResponse => results,
    CreateAclsResponse => results,
    DeleteAclsResponse => filter_results,
);

impl ErrorCodes for DescribeLogDirsResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        self.results.iter().for_each(|d| out(d.error_code));
    }
}

/// Responses with topics, each with partitions, each with an `error_code`.
macro_rules! per_partition {
    ($($t:ty => $topics:ident . $partitions:ident),* $(,)?) => {$(
        impl ErrorCodes for $t {
            fn error_codes(&self, out: &mut dyn FnMut(i16)) {
                for t in &self.$topics {
                    t.$partitions.iter().for_each(|p| out(p.error_code));
                }
            }
        }
    )*};
}

per_partition!(
    ProduceResponse => responses.partition_responses,
    ListOffsetsResponse => topics.partitions,
    OffsetForLeaderEpochResponse => topics.partitions,
    OffsetCommitResponse => topics.partitions,
    TxnOffsetCommitResponse => topics.partitions,
    DescribeProducersResponse => topics.partitions,
    DeleteRecordsResponse => topics.partitions,
);

impl ErrorCodes for FetchResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        for t in &self.responses {
            t.partitions.iter().for_each(|p| out(p.error_code));
        }
    }
}

impl ErrorCodes for FindCoordinatorResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        self.coordinators.iter().for_each(|c| out(c.error_code));
    }
}

impl ErrorCodes for ElectLeadersResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        for r in &self.replica_election_results {
            r.partition_result.iter().for_each(|p| out(p.error_code));
        }
    }
}

impl ErrorCodes for AlterPartitionReassignmentsResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        for t in &self.responses {
            t.partitions.iter().for_each(|p| out(p.error_code));
        }
    }
}

impl ErrorCodes for LeaveGroupResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        self.members.iter().for_each(|m| out(m.error_code));
    }
}

impl ErrorCodes for OffsetFetchResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        for t in &self.topics {
            t.partitions.iter().for_each(|p| out(p.error_code));
        }
        for g in &self.groups {
            out(g.error_code);
            for t in &g.topics {
                t.partitions.iter().for_each(|p| out(p.error_code));
            }
        }
    }
}

impl ErrorCodes for OffsetDeleteResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        for t in &self.topics {
            t.partitions.iter().for_each(|p| out(p.error_code));
        }
    }
}

impl ErrorCodes for AddPartitionsToTxnResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        out(self.error_code);
        let topics = self.results_by_topic_v3_and_below.iter().chain(
            self.results_by_transaction
                .iter()
                .flat_map(|r| &r.topic_results),
        );
        for t in topics {
            t.results_by_partition
                .iter()
                .for_each(|p| out(p.partition_error_code));
        }
    }
}

impl ErrorCodes for WriteTxnMarkersResponse {
    fn error_codes(&self, out: &mut dyn FnMut(i16)) {
        for m in &self.markers {
            for t in &m.topics {
                t.partitions.iter().for_each(|p| out(p.error_code));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_partition_error_of_a_produce_counts_once() {
        let mut resp = ProduceResponse::default();
        let mut t = produce_response::TopicProduceResponse::default();
        for code in [0i16, 6, 6, 19] {
            let mut p = produce_response::PartitionProduceResponse::default();
            p.error_code = code;
            t.partition_responses.push(p);
        }
        resp.responses.push(t);
        let mut codes = Vec::new();
        resp.error_codes(&mut |c| codes.push(c));
        assert_eq!(codes, vec![0, 6, 6, 19]);
        count(ApiKey::Produce, &resp);
        let mut registry = Registry::default();
        register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry).unwrap();
        assert!(
            out.contains(
                "strata_request_errors_total{api=\"Produce\",error=\"NOT_LEADER_OR_FOLLOWER\"} 2"
            ),
            "{out}"
        );
        assert!(!out.contains("error=\"NONE\""), "{out}");
    }
}
