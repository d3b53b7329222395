//! DescribeAcls, CreateAcls and DeleteAcls version 0 (Kafka 3.9 accepts
//! them; Kafka 4 and the codec crate do not): version 1 without the
//! pattern type, which is LITERAL, in requests and responses. Decoded
//! here, handled by `handlers::acls` as version 1, and answered in
//! version 0's layout.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};

use super::codec::{LegacyDecodeError, Reader, Writer};
use super::LegacyError;
use crate::server::authz::Caller;
use crate::server::handlers::{acls, s};
use crate::server::Broker;

/// Kafka's PatternType.LITERAL: what version 0 means.
const LITERAL: i8 = 3;
/// The least bytes of a version 0 filter or creation: two codes, three
/// strings' lengths and two more codes.
const MIN_ENTRY_BYTES: usize = 1 + 2 + 2 + 2 + 1 + 1;

/// A version 0 filter: type, name, principal, host, operation, permission.
type Filter = (i8, Option<String>, Option<String>, Option<String>, i8, i8);

fn filter(r: &mut Reader<'_>) -> Result<Filter, LegacyDecodeError> {
    Ok((
        r.i8("resource type")?,
        r.nullable_string("resource name")?,
        r.nullable_string("principal")?,
        r.nullable_string("host")?,
        r.i8("operation")?,
        r.i8("permission type")?,
    ))
}

pub async fn describe(body: &[u8], b: &Broker, caller: &Caller) -> Result<Writer, LegacyError> {
    let mut r = Reader::new(body);
    let (resource_type, name, principal, host, operation, permission) = filter(&mut r)?;
    r.finish()?;
    let mut req = DescribeAclsRequest::default();
    req.resource_type_filter = resource_type;
    req.resource_name_filter = name.map(s);
    req.pattern_type_filter = LITERAL;
    req.principal_filter = principal.map(s);
    req.host_filter = host.map(s);
    req.operation = operation;
    req.permission_type = permission;
    let resp = acls::describe(req, 1, b, caller).await;
    let mut w = Writer::default();
    w.i32(resp.throttle_time_ms)
        .i16(resp.error_code)
        .nullable_string(resp.error_message.as_deref());
    w.array_len(resp.resources.len());
    for res in &resp.resources {
        w.i8(res.resource_type).string(&res.resource_name);
        w.array_len(res.acls.len());
        for a in &res.acls {
            w.string(&a.principal)
                .string(&a.host)
                .i8(a.operation)
                .i8(a.permission_type);
        }
    }
    Ok(w)
}

pub async fn create(body: &[u8], b: &Broker, caller: &Caller) -> Result<Writer, LegacyError> {
    let mut r = Reader::new(body);
    let creations = r.elements("creations", MIN_ENTRY_BYTES, |r| {
        let mut c = AclCreation::default();
        c.resource_type = r.i8("resource type")?;
        c.resource_name = s(r.string("resource name")?);
        c.resource_pattern_type = LITERAL;
        c.principal = s(r.string("principal")?);
        c.host = s(r.string("host")?);
        c.operation = r.i8("operation")?;
        c.permission_type = r.i8("permission type")?;
        Ok(c)
    })?;
    r.finish()?;
    let mut req = CreateAclsRequest::default();
    req.creations = creations;
    let resp = acls::create(req, 1, b, caller).await;
    // Version 0's response is version 1's.
    let mut w = Writer::default();
    w.i32(resp.throttle_time_ms);
    w.array_len(resp.results.len());
    for res in &resp.results {
        w.i16(res.error_code)
            .nullable_string(res.error_message.as_deref());
    }
    Ok(w)
}

pub async fn delete(body: &[u8], b: &Broker, caller: &Caller) -> Result<Writer, LegacyError> {
    let mut r = Reader::new(body);
    let filters = r.elements("filters", MIN_ENTRY_BYTES, |r| {
        let (resource_type, name, principal, host, operation, permission) = filter(r)?;
        let mut f = DeleteAclsFilter::default();
        f.resource_type_filter = resource_type;
        f.resource_name_filter = name.map(s);
        f.pattern_type_filter = LITERAL;
        f.principal_filter = principal.map(s);
        f.host_filter = host.map(s);
        f.operation = operation;
        f.permission_type = permission;
        Ok(f)
    })?;
    r.finish()?;
    let mut req = DeleteAclsRequest::default();
    req.filters = filters;
    let resp = acls::delete(req, 1, b, caller).await;
    let mut w = Writer::default();
    w.i32(resp.throttle_time_ms);
    w.array_len(resp.filter_results.len());
    for f in &resp.filter_results {
        w.i16(f.error_code)
            .nullable_string(f.error_message.as_deref());
        w.array_len(f.matching_acls.len());
        for m in &f.matching_acls {
            w.i16(m.error_code)
                .nullable_string(m.error_message.as_deref())
                .i8(m.resource_type)
                .string(&m.resource_name)
                .string(&m.principal)
                .string(&m.host)
                .i8(m.operation)
                .i8(m.permission_type);
        }
    }
    Ok(w)
}
