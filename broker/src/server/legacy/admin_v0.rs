//! CreateTopics v0–v1, DeleteTopics v0 and DescribeConfigs v0: the same
//! requests as the first version the codec crate decodes, minus a trailing
//! field (CreateTopics v0 lacks `validate_only`, DescribeConfigs v0
//! `include_synonyms`; DeleteTopics v0 is v1's layout). They are decoded as
//! that version with the field's default and answered in their own
//! response layout by the regular handlers.

use kafka_protocol::messages::{
    CreateTopicsResponse, DeleteTopicsResponse, DescribeConfigsResponse,
};

use super::codec::Writer;

/// CreateTopics v0: topics [name, error_code]; v1 adds error_message.
pub fn create_topics_response(version: i16, resp: &CreateTopicsResponse) -> Writer {
    let mut w = Writer::default();
    w.array_len(resp.topics.len());
    for t in &resp.topics {
        w.string(&t.name.0).i16(t.error_code);
        if version >= 1 {
            w.nullable_string(t.error_message.as_deref());
        }
    }
    w
}

/// DeleteTopics v0: responses [name, error_code], no throttle time.
pub fn delete_topics_response(resp: &DeleteTopicsResponse) -> Writer {
    let mut w = Writer::default();
    w.array_len(resp.responses.len());
    for t in &resp.responses {
        let name = t.name.as_ref().map(|n| n.0.as_str()).unwrap_or("");
        w.string(name).i16(t.error_code);
    }
    w
}

/// Kafka's `ConfigSource.DEFAULT_CONFIG`.
const DEFAULT_CONFIG: i8 = 5;

/// DescribeConfigs v0: each config's `is_default` where v1 has its source
/// and synonyms.
pub fn describe_configs_response(resp: &DescribeConfigsResponse) -> Writer {
    let mut w = Writer::default();
    w.i32(resp.throttle_time_ms).array_len(resp.results.len());
    for r in &resp.results {
        w.i16(r.error_code)
            .nullable_string(r.error_message.as_deref())
            .i8(r.resource_type)
            .string(&r.resource_name)
            .array_len(r.configs.len());
        for c in &r.configs {
            w.string(&c.name)
                .nullable_string(c.value.as_deref())
                .bool(c.read_only)
                .bool(c.config_source == DEFAULT_CONFIG)
                .bool(c.is_sensitive);
        }
    }
    w
}
