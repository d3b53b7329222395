//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: decode, ask
//! the configuration service (`server/config_admin.rs`, which the admin
//! HTTP API uses too) and encode its answer per resource.

use std::collections::HashSet;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::s;
use crate::server::config_admin::{self, AlterOp, DescribedConfig};
use crate::server::Broker;

pub async fn describe_configs(
    req: DescribeConfigsRequest,
    version: i16,
    b: &Broker,
) -> DescribeConfigsResponse {
    let mut r = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut out = DescribeConfigsResult::default();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name.clone();
        let wanted: Option<HashSet<String>> = res
            .configuration_keys
            .as_ref()
            .map(|k| k.iter().map(|x| x.to_string()).collect());
        match config_admin::describe(b, res.resource_type, &res.resource_name, wanted.as_ref()) {
            Ok(configs) => {
                out.configs = configs
                    .into_iter()
                    .map(|c| entry(c, version, req.include_synonyms, req.include_documentation))
                    .collect();
            }
            Err((code, message)) => {
                out.error_code = code.code();
                out.error_message = Some(s(message));
            }
        }
        r.results.push(out);
    }
    r
}

fn entry(
    c: DescribedConfig,
    version: i16,
    include_synonyms: bool,
    include_documentation: bool,
) -> DescribeConfigsResourceResult {
    let mut e = DescribeConfigsResourceResult::default();
    e.name = s(c.def.name);
    // A secret is described with no value (Kafka's PASSWORD type).
    let sensitive = c.def.kind == crate::config::ConfigType::Password;
    e.is_sensitive = sensitive;
    e.value = c.value.filter(|_| !sensitive).map(s);
    e.config_source = c.source as i8;
    e.read_only = c.read_only;
    if include_synonyms {
        e.synonyms = c
            .synonyms
            .into_iter()
            .map(|(name, value, source)| {
                let mut syn = DescribeConfigsSynonym::default();
                syn.name = s(name);
                syn.value = value.filter(|_| !sensitive).map(s);
                syn.source = source as i8;
                syn
            })
            .collect();
    }
    if version >= 3 {
        e.config_type = c.def.kind as i8;
        // Kafka: null unless asked for.
        e.documentation = include_documentation.then(|| s(c.def.doc));
    }
    e
}

/// Result of one resource of an alter request.
fn resource_result(
    resource_type: i8,
    name: StrBytes,
    outcome: Result<(), (ResponseError, String)>,
) -> (i16, Option<StrBytes>, i8, StrBytes) {
    match outcome {
        Ok(()) => (0, None, resource_type, name),
        Err((code, message)) => (code.code(), Some(s(message)), resource_type, name),
    }
}

/// Fills an alter response entry (the two alter APIs have distinct types).
macro_rules! resource_response {
    ($ty:ty, $res:expr, $outcome:expr) => {{
        let (code, message, rt, name) =
            resource_result($res.resource_type, $res.resource_name, $outcome);
        let mut out = <$ty>::default();
        out.error_code = code;
        out.error_message = message;
        out.resource_type = rt;
        out.resource_name = name;
        out
    }};
}

pub async fn alter_configs(
    req: AlterConfigsRequest,
    _version: i16,
    b: &Broker,
) -> AlterConfigsResponse {
    use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
    let mut r = AlterConfigsResponse::default();
    for res in req.resources {
        // Legacy AlterConfigs replaces the whole set of overrides.
        let given = super::values_set(res.configs.iter().map(|c| (&c.name, c.value.as_ref())));
        let outcome = config_admin::alter(
            b,
            res.resource_type,
            &res.resource_name,
            req.validate_only,
            |_| Ok(given),
        )
        .await;
        r.responses.push(resource_response!(
            AlterConfigsResourceResponse,
            res,
            outcome
        ));
    }
    r
}

pub async fn incremental_alter_configs(
    req: IncrementalAlterConfigsRequest,
    _version: i16,
    b: &Broker,
) -> IncrementalAlterConfigsResponse {
    use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
    let mut r = IncrementalAlterConfigsResponse::default();
    for res in req.resources {
        let ops: Vec<AlterOp> = res
            .configs
            .iter()
            .map(|c| AlterOp {
                name: c.name.to_string(),
                op: c.config_operation,
                value: c.value.as_ref().map(|v| v.to_string()),
            })
            .collect();
        let outcome = config_admin::alter(
            b,
            res.resource_type,
            &res.resource_name,
            req.validate_only,
            |current| config_admin::incremental(current, &ops, res.resource_type),
        )
        .await;
        r.responses.push(resource_response!(
            AlterConfigsResourceResponse,
            res,
            outcome
        ));
    }
    r
}
