//! The broker's wall clock in Kafka's unit: milliseconds since the Unix
//! epoch, as record timestamps, LogAppendTime and retention use it.

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
