//! Kafka's rules for topic names: length, characters, and the names that
//! are taken or internal. It owns the check only; creating topics is the
//! log manager's.

use thiserror::Error;

/// The data directory's folder of topic metadata: a topic of this name
/// would collide with it.
pub const TOPICS_DIR: &str = "__topics";

/// Why a name cannot be a topic's (Kafka's wording).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct InvalidTopicName(pub String);

/// Internal topics (`__consumer_offsets`) never tier.
pub fn is_internal(topic: &str) -> bool {
    topic.starts_with("__")
}

/// The group coordinator's topic.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// The transaction coordinator's topic.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// The coordinators' own topics (`__consumer_offsets`,
/// `__transaction_state`): Kafka's internal topics, which clients may read
/// but never produce to or delete.
pub fn is_coordinator_topic(topic: &str) -> bool {
    topic == OFFSETS_TOPIC || topic == TRANSACTION_STATE_TOPIC
}

/// Kafka's limit on topic name length.
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Checks a topic name the way Kafka does.
pub fn validate_topic_name(name: &str) -> Result<(), InvalidTopicName> {
    if name.is_empty() {
        return Err(InvalidTopicName(
            "Topic name is illegal, it can't be empty".into(),
        ));
    }
    if name == "." || name == ".." {
        return Err(InvalidTopicName(format!("Topic name cannot be \"{name}\"")));
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(InvalidTopicName(format!(
            "Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LEN} characters, topic name: {name}"
        )));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
    {
        return Err(InvalidTopicName(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )));
    }
    if name == TOPICS_DIR {
        return Err(InvalidTopicName(format!(
            "Topic name \"{name}\" is reserved"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names() {
        assert!(validate_topic_name("orders.v1_x-2").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("a/b").is_err());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
    }
}
