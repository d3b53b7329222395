//! ApiVersions, DescribeCluster and FindCoordinator: what a client asks
//! before anything else. A single broker is its own controller and
//! coordinator; in a cluster the leader of a key's internal partition
//! coordinates it.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use strata_security::acl::{AclOperation, ResourceType, CLUSTER_NAME};

use super::metadata::ALL_CLUSTER_OPERATIONS;
use super::{s, NO_AUTHORIZED_OPERATIONS};
use crate::cluster::records::BrokerRegistration;
use crate::server::authz::Caller;
use crate::server::versions::SUPPORTED;
use crate::server::Broker;
use crate::topic_name::{OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};

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

/// KIP-511: the client software name and version (ApiVersions v3+) must
/// match Kafka's `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
pub fn valid_client_software(r: &ApiVersionsRequest) -> bool {
    valid_software_field(&r.client_software_name)
        && valid_software_field(&r.client_software_version)
}

fn valid_software_field(v: &str) -> bool {
    let b = v.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
        }
        _ => false,
    }
}

#[cfg(test)]
mod software_tests {
    use super::valid_software_field as ok;

    #[test]
    fn kip_511_client_software_pattern() {
        for good in ["a", "apache-kafka-java", "4.4.0", "librdkafka", "v1.2-rc.3"] {
            assert!(ok(good), "{good}");
        }
        for bad in ["", "bad name!", "-lead", "trail.", "a_b", "x y"] {
            assert!(!ok(bad), "{bad}");
        }
    }
}

pub async fn describe_cluster(
    req: DescribeClusterRequest,
    _version: i16,
    b: &Broker,
    listener: &str,
    caller: &Caller,
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
    // Anyone may read the broker list (Kafka's AuthHelper); the KIP-430
    // field, asked for, needs DESCRIBE on the cluster (0 without it).
    r.cluster_authorized_operations = if !req.include_cluster_authorized_operations {
        NO_AUTHORIZED_OPERATIONS
    } else if caller.may(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        caller.operations(ResourceType::Cluster, CLUSTER_NAME, ALL_CLUSTER_OPERATIONS)
    } else {
        0
    };
    r.brokers = b
        .live_brokers_on(listener)
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
    listener: &str,
    caller: &Caller,
) -> FindCoordinatorResponse {
    let mut r = FindCoordinatorResponse::default();
    // The coordinator of a key is the leader of its internal partition
    // (docs/coordinators.md). With an authorizer, as Kafka, the key needs
    // DESCRIBE first: a group GROUP_AUTHORIZATION_FAILED, a transactional
    // id TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
    let lookup = |key: &str| -> Result<BrokerRegistration, (i16, String)> {
        let denied =
            |e: ResponseError, what: &str| (e.code(), format!("{what} authorization failed."));
        let topic = match req.key_type {
            0 if !caller.may(AclOperation::Describe, ResourceType::Group, key) => {
                return Err(denied(ResponseError::GroupAuthorizationFailed, "Group"))
            }
            1 if !caller.may(AclOperation::Describe, ResourceType::TransactionalId, key) => {
                return Err(denied(
                    ResponseError::TransactionalIdAuthorizationFailed,
                    "Transactional Id",
                ))
            }
            0 => OFFSETS_TOPIC,
            1 => TRANSACTION_STATE_TOPIC,
            // v6 (KIP-932): as Kafka 3.9 with share groups off.
            2 => {
                return Err((
                    ResponseError::InvalidRequest.code(),
                    "share groups (coordinator key type 2, KIP-932) are not supported".into(),
                ))
            }
            _ => {
                return Err((
                    ResponseError::InvalidRequest.code(),
                    "unknown coordinator key type".into(),
                ))
            }
        };
        b.coordinator_for(topic, key)
            .map_err(|why| (ResponseError::CoordinatorNotAvailable.code(), why))
    };
    if version >= 4 {
        r.coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let mut c = Coordinator::default();
                match lookup(&key) {
                    Ok(node) => {
                        let (host, port) = b.address_on(&node, listener);
                        c.node_id = BrokerId(node.node_id);
                        c.host = s(host);
                        c.port = port;
                    }
                    Err((code, why)) => {
                        c.error_code = code;
                        c.node_id = BrokerId(-1);
                        c.port = -1;
                        c.error_message = Some(s(why));
                    }
                }
                c.key = key;
                c
            })
            .collect();
    } else {
        match lookup(&req.key) {
            Ok(node) => {
                let (host, port) = b.address_on(&node, listener);
                r.node_id = BrokerId(node.node_id);
                r.host = s(host);
                r.port = port;
            }
            Err((code, why)) => {
                r.error_code = code;
                r.node_id = BrokerId(-1);
                r.port = -1;
                if version >= 1 {
                    r.error_message = Some(s(why));
                }
            }
        }
    }
    r
}
