//! Kafka's names of its error codes (`NOT_LEADER_OR_FOLLOWER`), as
//! Kafka's tools and metrics print them: for the broker's metrics and
//! admin API and for the CLI.

use std::collections::HashMap;
use std::sync::LazyLock;

use kafka_protocol::ResponseError;

/// Kafka's name of an error code (`UNKNOWN_SERVER_ERROR` for a code this
/// client library does not know).
pub fn error_name(code: i16) -> &'static str {
    static NAMES: LazyLock<HashMap<i16, &'static str>> = LazyLock::new(|| {
        (-1..=200i16)
            .filter_map(|c| Some((c, ResponseError::try_from_code(c)?)))
            .map(|(c, e)| {
                (
                    c,
                    &*Box::leak(upper_snake(&format!("{e:?}")).into_boxed_str()),
                )
            })
            .collect()
    });
    NAMES.get(&code).copied().unwrap_or("UNKNOWN_SERVER_ERROR")
}

/// `NotLeaderOrFollower` -> `NOT_LEADER_OR_FOLLOWER`.
fn upper_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(19), "NOT_ENOUGH_REPLICAS");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(i16::MAX), "UNKNOWN_SERVER_ERROR");
    }
}
