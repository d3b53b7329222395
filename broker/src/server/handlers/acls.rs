//! DescribeAcls, CreateAcls and DeleteAcls: the cluster's ACL bindings
//! (`strata_cluster::acl_store`), with Kafka's `AclApis` checks and
//! answers. Without an authorizer each answers SECURITY_DISABLED; with
//! one, DescribeAcls needs DESCRIBE on the cluster and the other two
//! ALTER, or every result carries CLUSTER_AUTHORIZATION_FAILED.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use strata_cluster::acl_store::CreateError;
use strata_security::acl::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclError,
    AclOperation, AclPermissionType, PatternType, PatternTypeFilter, ResourcePattern,
    ResourcePatternFilter, ResourceType,
};

use super::s;
use crate::server::authz::Caller;
use crate::server::Broker;

const NO_AUTHORIZER: &str = "No Authorizer is configured.";
const NOT_AUTHORIZED: &str = "Cluster authorization failed.";

/// What a request may not do, or None to go on.
fn refusal(caller: &Caller, op: AclOperation) -> Option<(ResponseError, &'static str)> {
    if !caller.is_checked() {
        return Some((ResponseError::SecurityDisabled, NO_AUTHORIZER));
    }
    if !caller.may_on_cluster(op) {
        return Some((ResponseError::ClusterAuthorizationFailed, NOT_AUTHORIZED));
    }
    None
}

fn filter(
    resource_type: i8,
    name: Option<&StrBytes>,
    pattern_type: i8,
    principal: Option<&StrBytes>,
    host: Option<&StrBytes>,
    operation: i8,
    permission: i8,
) -> Result<AclBindingFilter, AclError> {
    Ok(AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: ResourceType::filter_from_code(resource_type)?,
            name: name.map(|n| n.to_string()),
            pattern_type: PatternTypeFilter::from_code(pattern_type)?,
        },
        entry: AccessControlEntryFilter {
            principal: principal.map(|p| p.to_string()),
            host: host.map(|h| h.to_string()),
            operation: AclOperation::filter_from_code(operation)?,
            permission: AclPermissionType::filter_from_code(permission)?,
        },
    })
}

fn binding(c: &AclCreation) -> Result<AclBinding, AclError> {
    Ok(AclBinding::new(
        ResourcePattern::new(
            ResourceType::binding_from_code(c.resource_type)?,
            c.resource_name.to_string(),
            PatternType::binding_from_code(c.resource_pattern_type)?,
        ),
        AccessControlEntry::new(
            c.principal.to_string(),
            c.host.to_string(),
            AclOperation::binding_from_code(c.operation)?,
            AclPermissionType::binding_from_code(c.permission_type)?,
        ),
    ))
}

pub async fn describe(
    r: DescribeAclsRequest,
    _version: i16,
    _b: &Broker,
    caller: &Caller,
) -> DescribeAclsResponse {
    let mut resp = DescribeAclsResponse::default();
    if let Some((error, message)) = refusal(caller, AclOperation::Describe) {
        resp.error_code = error.code();
        resp.error_message = Some(s(if error == ResponseError::SecurityDisabled {
            "No Authorizer is configured on the broker"
        } else {
            message
        }));
        return resp;
    }
    let f = match filter(
        r.resource_type_filter,
        r.resource_name_filter.as_ref(),
        r.pattern_type_filter,
        r.principal_filter.as_ref(),
        r.host_filter.as_ref(),
        r.operation,
        r.permission_type,
    ) {
        Ok(f) => f,
        Err(e) => {
            resp.error_code = ResponseError::InvalidRequest.code();
            resp.error_message = Some(s(e.to_string()));
            return resp;
        }
    };
    let Some(az) = caller.authorizer() else {
        return resp;
    };
    // Grouped by pattern, as Kafka's `DescribeAclsResponse.aclsResources`.
    let mut by_pattern: BTreeMap<ResourcePattern, Vec<AccessControlEntry>> = BTreeMap::new();
    for b in az.acls().matching(&f) {
        by_pattern.entry(b.pattern).or_default().push(b.entry);
    }
    resp.resources = by_pattern
        .into_iter()
        .map(|(pattern, entries)| {
            let mut out = DescribeAclsResource::default();
            out.resource_type = pattern.resource_type.code();
            out.resource_name = s(pattern.name);
            out.pattern_type = pattern.pattern_type.code();
            out.acls = entries
                .into_iter()
                .map(|e| {
                    let mut d = AclDescription::default();
                    d.principal = s(e.principal);
                    d.host = s(e.host);
                    d.operation = e.operation.code();
                    d.permission_type = e.permission.code();
                    d
                })
                .collect();
            out
        })
        .collect();
    resp
}

fn creation_result(error: ResponseError, message: impl Into<String>) -> AclCreationResult {
    let mut out = AclCreationResult::default();
    out.error_code = error.code();
    out.error_message = Some(s(message));
    out
}

pub async fn create(
    r: CreateAclsRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> CreateAclsResponse {
    let mut resp = CreateAclsResponse::default();
    if let Some((error, message)) = refusal(caller, AclOperation::Alter) {
        resp.results = r
            .creations
            .iter()
            .map(|_| creation_result(error, message))
            .collect();
        return resp;
    }
    let parsed: Vec<Result<AclBinding, AclError>> = r.creations.iter().map(binding).collect();
    let valid: Vec<AclBinding> = parsed.iter().filter_map(|p| p.clone().ok()).collect();
    let mut stored = match b.acls.create(&valid).await {
        Ok(results) => results.into_iter(),
        Err(e) => {
            tracing::warn!(error = %e, "CreateAcls: the cluster store refused the change");
            let failed = creation_result(
                ResponseError::UnknownServerError,
                format!("the ACLs could not be stored: {e}"),
            );
            resp.results = r.creations.iter().map(|_| failed.clone()).collect();
            return resp;
        }
    };
    resp.results = parsed
        .iter()
        .map(|p| match p {
            Err(e) => creation_result(ResponseError::InvalidRequest, e.to_string()),
            Ok(binding) => match stored.next() {
                Some(Ok(())) => {
                    tracing::info!(target: "strata::authorizer", acl = %binding, "ACL created");
                    AclCreationResult::default()
                }
                Some(Err(CreateError::Invalid(e))) => {
                    creation_result(ResponseError::InvalidRequest, e.to_string())
                }
                Some(Err(e @ CreateError::Full)) => {
                    creation_result(ResponseError::PolicyViolation, e.to_string())
                }
                None => creation_result(ResponseError::UnknownServerError, "no result"),
            },
        })
        .collect();
    resp
}

fn filter_result(error: ResponseError, message: impl Into<String>) -> DeleteAclsFilterResult {
    let mut out = DeleteAclsFilterResult::default();
    out.error_code = error.code();
    out.error_message = Some(s(message));
    out
}

fn parse_delete_filter(f: &DeleteAclsFilter) -> Result<AclBindingFilter, AclError> {
    filter(
        f.resource_type_filter,
        f.resource_name_filter.as_ref(),
        f.pattern_type_filter,
        f.principal_filter.as_ref(),
        f.host_filter.as_ref(),
        f.operation,
        f.permission_type,
    )
}

pub async fn delete(
    r: DeleteAclsRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> DeleteAclsResponse {
    let mut resp = DeleteAclsResponse::default();
    if let Some((error, message)) = refusal(caller, AclOperation::Alter) {
        resp.filter_results = r
            .filters
            .iter()
            .map(|_| filter_result(error, message))
            .collect();
        return resp;
    }
    let parsed: Vec<Result<AclBindingFilter, AclError>> =
        r.filters.iter().map(parse_delete_filter).collect();
    let valid: Vec<AclBindingFilter> = parsed.iter().filter_map(|p| p.clone().ok()).collect();
    let deleted = match b.acls.delete(&valid).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "DeleteAcls: the cluster store refused the change");
            let failed = filter_result(
                ResponseError::UnknownServerError,
                format!("the ACLs could not be stored: {e}"),
            );
            resp.filter_results = r.filters.iter().map(|_| failed.clone()).collect();
            return resp;
        }
    };
    let mut deleted = deleted.into_iter();
    resp.filter_results = parsed
        .iter()
        .map(|p| match p {
            Err(e) => filter_result(ResponseError::InvalidRequest, e.to_string()),
            Ok(_) => {
                let mut out = DeleteAclsFilterResult::default();
                out.matching_acls = deleted
                    .next()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|binding| {
                        tracing::info!(target: "strata::authorizer", acl = %binding, "ACL deleted");
                        let mut m = DeleteAclsMatchingAcl::default();
                        m.resource_type = binding.pattern.resource_type.code();
                        m.resource_name = s(binding.pattern.name);
                        m.pattern_type = binding.pattern.pattern_type.code();
                        m.principal = s(binding.entry.principal);
                        m.host = s(binding.entry.host);
                        m.operation = binding.entry.operation.code();
                        m.permission_type = binding.entry.permission.code();
                        m
                    })
                    .collect();
                out
            }
        })
        .collect();
    resp
}
