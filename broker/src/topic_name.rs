//! Kafka's rules for topic names: length, characters, and the names that
//! are taken. It owns the check only; creating topics is the log manager's.

use crate::log_manager::{TopicError, TOPICS_DIR};

/// Kafka's limit on topic name length.
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Checks a topic name the way Kafka does.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    if name.is_empty() {
        return Err(TopicError::InvalidName(
            "Topic name is illegal, it can't be empty".into(),
        ));
    }
    if name == "." || name == ".." {
        return Err(TopicError::InvalidName(format!(
            "Topic name cannot be \"{name}\""
        )));
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(TopicError::InvalidName(format!(
            "Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LEN} characters, topic name: {name}"
        )));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
    {
        return Err(TopicError::InvalidName(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )));
    }
    if name == TOPICS_DIR {
        return Err(TopicError::InvalidName(format!(
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
