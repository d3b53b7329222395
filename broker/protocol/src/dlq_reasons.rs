//! What a dead-letter record says about itself, by the header names that
//! pipelines use: why it was dead-lettered (the reason), and where it came
//! from (source topic, partition, offset). Shared by the broker's DLQ
//! monitor and `strata dlq`. Pure functions over header names and bytes;
//! the broker re-exports this module as `dlq::reasons`.

/// Header names read for a record's reason, in order; an entry ending in
/// `.*` matches any header with that prefix (`error.*`). Kafka Connect's
/// and Spring Kafka's dead-letter headers are among them.
pub const DEFAULT_REASON_HEADERS: &[&str] = &[
    "dlq.reason",
    "error.reason",
    "error.class",
    "error.type",
    "error.code",
    "error.message",
    "error.*",
    "__connect.errors.exception.class.name",
    "kafka_dlt-exception-fqcn",
];

/// The topic a dead-letter record came from.
pub const SOURCE_TOPIC: &str = "dlq.source_topic";
pub const SOURCE_PARTITION: &str = "dlq.source_partition";
/// Added by `strata dlq replay`: `TOPIC/PARTITION/OFFSET` of the
/// dead-letter record a replayed record came from, so a second replay of
/// the same range is visible.
pub const REPLAYED_FROM: &str = "dlq.replayed_from";

/// The reason of a record with no reason header.
pub(crate) const NO_REASON: &str = "(no reason header)";
/// Reasons are cut to this many characters (exception messages can be
/// long, and each reason is a metric label).
pub(crate) const MAX_REASON_CHARS: usize = 120;

/// A topic is a dead-letter queue when marked (`dlq.enable`) or named so.
pub fn is_dlq(topic: &str, marked: bool) -> bool {
    marked || topic.ends_with(".dlq")
}

/// The source topic the `.dlq` naming convention implies.
pub fn conventional_source(topic: &str) -> Option<&str> {
    topic.strip_suffix(".dlq").filter(|s| !s.is_empty())
}

fn matches(pattern: &str, header: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => header.starts_with(prefix),
        None => header == pattern,
    }
}

/// The reason a record gives: the value of the first header named in
/// `names` (in that order), as text, cut to [`MAX_REASON_CHARS`].
pub fn reason<'a>(headers: &[(&'a str, Option<&'a [u8]>)], names: &[String]) -> String {
    for n in names {
        if let Some((_, Some(v))) = headers.iter().find(|(h, v)| matches(n, h) && v.is_some()) {
            let text = String::from_utf8_lossy(v);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            return text.chars().take(MAX_REASON_CHARS).collect();
        }
    }
    NO_REASON.to_string()
}

/// A header's value as text, if present and UTF-8.
pub fn text<'a>(headers: &[(&'a str, Option<&'a [u8]>)], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|(h, _)| *h == name)
        .and_then(|(_, v)| v.and_then(|b| std::str::from_utf8(b).ok()))
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_named_header_present_gives_the_reason() {
        let names: Vec<String> = DEFAULT_REASON_HEADERS
            .iter()
            .map(|n| n.to_string())
            .collect();
        let h: Vec<(&str, Option<&[u8]>)> = vec![
            ("error.message", Some(b"bad json at 3")),
            ("dlq.reason", Some(b"schema")),
        ];
        assert_eq!(reason(&h, &names), "schema");
        let h: Vec<(&str, Option<&[u8]>)> = vec![("error.stage", Some(b"transform"))];
        assert_eq!(reason(&h, &names), "transform");
        let h: Vec<(&str, Option<&[u8]>)> = vec![(
            "__connect.errors.exception.class.name",
            Some(b"org.apache.kafka.connect.errors.DataException"),
        )];
        assert_eq!(
            reason(&h, &names),
            "org.apache.kafka.connect.errors.DataException"
        );
        assert_eq!(reason(&[("x", Some(b"y"))], &names), NO_REASON);
        let long = "x".repeat(500);
        let h: Vec<(&str, Option<&[u8]>)> = vec![("dlq.reason", Some(long.as_bytes()))];
        assert_eq!(reason(&h, &names).len(), MAX_REASON_CHARS);
        assert!(is_dlq("orders.dlq", false) && !is_dlq("orders", false) && is_dlq("x", true));
        assert_eq!(conventional_source("orders.dlq"), Some("orders"));
        assert_eq!(conventional_source(".dlq"), None);
    }
}
