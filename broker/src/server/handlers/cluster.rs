//! ApiVersions, DescribeCluster and FindCoordinator: what a client asks
//! before anything else. A single broker is its own controller and
//! coordinator.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::{s, NO_AUTHORIZED_OPERATIONS};
use crate::server::versions::SUPPORTED;
use crate::server::Broker;

pub fn api_versions(error_code: i16) -> ApiVersionsResponse {
    let mut r = ApiVersionsResponse::default();
    r.error_code = error_code;
    r.api_keys = SUPPORTED
        .iter()
        .map(|(k, lo, hi)| {
            let mut v = ApiVersion::default();
            v.api_key = *k as i16;
            v.min_version = *lo;
            v.max_version = *hi;
            v
        })
        .collect();
    r
}

pub async fn describe_cluster(
    req: DescribeClusterRequest,
    _version: i16,
    b: &Broker,
) -> DescribeClusterResponse {
    let mut r = DescribeClusterResponse::default();
    // endpoint_type 1 = brokers; 2 (controllers) is not something a
    // single combined node exposes separately.
    if req.endpoint_type != 1 {
        r.error_code = ResponseError::UnsupportedEndpointType.code();
        r.error_message = Some(s("only the brokers endpoint type (1) is supported"));
        return r;
    }
    r.cluster_id = b.cluster_id();
    r.controller_id = BrokerId(b.controller_id());
    r.endpoint_type = 1;
    r.cluster_authorized_operations = NO_AUTHORIZED_OPERATIONS;
    r.brokers = b
        .live_brokers()
        .into_iter()
        .map(|reg| {
            let mut broker = DescribeClusterBroker::default();
            broker.broker_id = BrokerId(reg.node_id);
            broker.host = s(reg.host);
            broker.port = reg.port;
            broker.rack = reg.rack.map(s);
            broker
        })
        .collect();
    r
}

pub async fn find_coordinator(
    req: FindCoordinatorRequest,
    version: i16,
    b: &Broker,
) -> FindCoordinatorResponse {
    let mut r = FindCoordinatorResponse::default();
    // A single broker coordinates everything; in a cluster, until the
    // coordinators follow their internal partitions' leaders (issue 18,
    // step 4), the controller does.
    let coordinator = b.coordinator();
    let (error, why) = match req.key_type {
        0 | 1 if coordinator.is_none() => (
            ResponseError::CoordinatorNotAvailable.code(),
            "no controller is elected yet",
        ),
        0 | 1 => (0, ""),
        // v6 (KIP-932): as Kafka 3.9 with share groups off.
        2 => (
            ResponseError::InvalidRequest.code(),
            "share groups (coordinator key type 2, KIP-932) are not supported",
        ),
        _ => (
            ResponseError::InvalidRequest.code(),
            "unknown coordinator key type",
        ),
    };
    if version >= 4 {
        r.coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let mut c = Coordinator::default();
                c.key = key;
                c.error_code = error;
                if let (0, Some(node)) = (error, &coordinator) {
                    c.node_id = BrokerId(node.node_id);
                    c.host = s(node.host.clone());
                    c.port = node.port;
                } else {
                    c.node_id = BrokerId(-1);
                    c.port = -1;
                    c.error_message = Some(s(why));
                }
                c
            })
            .collect();
    } else {
        r.error_code = error;
        if let (0, Some(node)) = (error, &coordinator) {
            r.node_id = BrokerId(node.node_id);
            r.host = s(node.host.clone());
            r.port = node.port;
        } else {
            r.node_id = BrokerId(-1);
            r.port = -1;
            if version >= 1 {
                r.error_message = Some(s(why));
            }
        }
    }
    r
}
