//! Who may do what: the broker's authorizer (`authorizer.class.name`)
//! asked about one request's caller, as Kafka's `AuthHelper` asks it.
//!
//! Without an authorizer every check allows, as in Kafka. With one, the
//! APIs whose checks are built (`checks_itself`) ask per resource, with
//! Kafka's operations and error codes (docs/authorization-checks.md);
//! every other API is served to `super.users` only and closes the
//! connection of anyone else (`gate`), so an API whose checks are not
//! built yet is closed rather than open. Denials are logged as Kafka's
//! authorizer logs them, at INFO.

use kafka_protocol::messages::ApiKey;
use strata_security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use strata_security::authorizer::{Authorizer, Requester};
use strata_security::principal::KafkaPrincipal;

use super::Broker;

/// The APIs that make their own checks (or need none: the ones served
/// before authentication): Produce, Fetch, ListOffsets, Metadata,
/// FindCoordinator, DescribeCluster, InitProducerId, the consumer group
/// APIs, the ACL and the SCRAM user APIs.
pub fn checks_itself(api: ApiKey) -> bool {
    matches!(
        api,
        ApiKey::ApiVersions
            | ApiKey::SaslHandshake
            | ApiKey::SaslAuthenticate
            | ApiKey::Metadata
            | ApiKey::Produce
            | ApiKey::Fetch
            | ApiKey::ListOffsets
            | ApiKey::InitProducerId
            | ApiKey::FindCoordinator
            | ApiKey::DescribeCluster
            | ApiKey::JoinGroup
            | ApiKey::SyncGroup
            | ApiKey::Heartbeat
            | ApiKey::LeaveGroup
            | ApiKey::OffsetCommit
            | ApiKey::OffsetFetch
            | ApiKey::OffsetDelete
            | ApiKey::DescribeGroups
            | ApiKey::ListGroups
            | ApiKey::DeleteGroups
            | ApiKey::DescribeAcls
            | ApiKey::CreateAcls
            | ApiKey::DeleteAcls
            | ApiKey::DescribeUserScramCredentials
            | ApiKey::AlterUserScramCredentials
    )
}

/// With an authorizer, a request to an API whose checks are not built
/// is refused unless a super user sent it: `Err(the principal)`.
pub fn gate(api: ApiKey, principal: &KafkaPrincipal, broker: &Broker) -> Result<(), String> {
    let Some(az) = &broker.authorizer else {
        return Ok(());
    };
    if checks_itself(api) {
        return Ok(());
    }
    let principal = principal.to_string();
    if az.is_super_user(&principal) {
        return Ok(());
    }
    Err(principal)
}

/// One request's caller and the authorizer of the moment.
pub struct Caller {
    /// None: no authorizer, everything is allowed.
    checks: Option<(Authorizer, Requester)>,
}

impl Caller {
    /// A request's caller: its principal and the client's address.
    pub fn of(principal: &KafkaPrincipal, host: &str, broker: &Broker) -> Caller {
        Caller {
            checks: broker
                .authorizer()
                .map(|az| (az, Requester::new(principal.clone(), host))),
        }
    }

    /// A caller no authorizer checks (unit tests of handlers).
    #[cfg(test)]
    pub fn unchecked() -> Caller {
        Caller { checks: None }
    }

    /// Whether an authorizer decides (false: everything is allowed).
    pub fn is_checked(&self) -> bool {
        self.checks.is_some()
    }

    /// May the caller do `op` on the resource? A refusal is logged.
    pub fn may(&self, op: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        self.decide(op, resource_type, name, true)
    }

    /// The same, without logging a refusal (Kafka's `logIfDenied=false`:
    /// a check whose refusal is expected, as an all-topics Metadata's).
    pub fn may_quietly(&self, op: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        self.decide(op, resource_type, name, false)
    }

    /// May the caller do `op` on some resource of the type (Kafka's
    /// `authorizeByResourceType`: an idempotent producer's WRITE on any
    /// topic)?
    pub fn may_on_any(&self, op: AclOperation, resource_type: ResourceType) -> bool {
        match &self.checks {
            Some((az, who)) => az.authorize_by_resource_type(who, op, resource_type),
            None => true,
        }
    }

    /// The KIP-430 bit field of what the caller may do on the resource
    /// (`all`, every supported operation, without an authorizer).
    pub fn operations(&self, resource_type: ResourceType, name: &str, all: i32) -> i32 {
        match &self.checks {
            Some((az, who)) => az.authorized_operations(who, resource_type, name),
            None => all,
        }
    }

    fn decide(&self, op: AclOperation, resource_type: ResourceType, name: &str, log: bool) -> bool {
        let Some((az, who)) = &self.checks else {
            return true;
        };
        let decision = az.authorize(who, op, resource_type, name);
        if !decision.allowed && log {
            tracing::info!(target: "strata::authorizer",
                principal = %who.principal, host = %who.host, operation = %op,
                resource = %format!("{resource_type}:{name}"), rule = ?decision.rule,
                "denied");
        }
        decision.allowed
    }

    /// May the caller do `op` on the cluster?
    pub fn may_on_cluster(&self, op: AclOperation) -> bool {
        self.may(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// The authorizer, when one decides.
    pub fn authorizer(&self) -> Option<&Authorizer> {
        self.checks.as_ref().map(|(az, _)| az)
    }
}
