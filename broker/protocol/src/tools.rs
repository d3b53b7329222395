//! What Kafka's command-line tools compute on the client side, shared by
//! the admin API (which answers for the broker) and the `strata` CLI (a
//! Kafka client): where `kafka-consumer-groups.sh --reset-offsets` moves
//! an offset, and how `kafka-topics.sh` / `kafka-configs.sh` describe
//! what Metadata and DescribeConfigs return. No broker state.

/// Milliseconds since the epoch from RFC 3339 (`2026-12-05T10:00:00Z`,
/// an offset, or no zone: UTC), a date-time without seconds, or a number
/// of milliseconds.
pub fn parse_datetime(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, f) {
            return Ok(t.and_utc().timestamp_millis());
        }
    }
    Err(format!(
        "cannot read `{s}` as a date-time: use RFC 3339 (2026-12-05T10:00:00Z, or +01:00 for a zone; none means UTC) or milliseconds since the epoch"
    ))
}

/// Where a reset moves one partition's committed offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    Earliest,
    Latest,
    /// The ListOffsets answer for the time (negative: no record at or after it).
    Datetime(i64),
    Offset(i64),
    Shift(i64),
}

/// The new offset of a partition whose log spans `lo..hi` and whose group
/// committed `current` (None: nothing), clamped to the log as
/// kafka-consumer-groups.sh does. Shared by the admin API and the CLI.
pub fn new_offset(reset: Reset, lo: i64, hi: i64, current: Option<i64>) -> i64 {
    let wanted = match reset {
        Reset::Earliest => lo,
        Reset::Latest => hi,
        // No record at or after the time: the end, as Kafka's tool does.
        Reset::Datetime(at) if at < 0 => hi,
        Reset::Datetime(at) => at,
        Reset::Offset(o) => o,
        Reset::Shift(by) => current.unwrap_or(lo).saturating_add(by),
    };
    wanted.clamp(lo, hi.max(lo))
}

/// A topic's replication factor as Metadata shows it: its partitions'
/// largest replica count.
pub fn replication_factor(
    t: &kafka_protocol::messages::metadata_response::MetadataResponseTopic,
) -> usize {
    t.partitions
        .iter()
        .map(|p| p.replica_nodes.len())
        .max()
        .unwrap_or(0)
}

/// Kafka's DescribeConfigs config source, by name.
pub fn source_name(code: i8) -> &'static str {
    match code {
        1 => "topic",
        2 | 3 => "broker_dynamic",
        4 => "broker_static",
        5 => "default",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_land_inside_the_log() {
        assert_eq!(new_offset(Reset::Earliest, 5, 50, Some(20)), 5);
        assert_eq!(new_offset(Reset::Latest, 5, 50, Some(20)), 50);
        assert_eq!(new_offset(Reset::Datetime(30), 5, 50, None), 30);
        assert_eq!(new_offset(Reset::Datetime(-1), 5, 50, None), 50);
        assert_eq!(new_offset(Reset::Offset(1000), 5, 50, None), 50);
        assert_eq!(new_offset(Reset::Offset(0), 5, 50, None), 5);
        assert_eq!(new_offset(Reset::Shift(-3), 5, 50, Some(20)), 17);
        assert_eq!(new_offset(Reset::Shift(2), 5, 50, None), 7);
        assert_eq!(new_offset(Reset::Shift(i64::MIN), 5, 50, Some(20)), 5);
    }

    #[test]
    fn datetimes_are_read_as_kafka_users_write_them() {
        assert_eq!(
            parse_datetime("2026-12-05T10:00:00Z").unwrap(),
            1_796_464_800_000
        );
        assert_eq!(
            parse_datetime("2026-12-05T11:00:00+01:00").unwrap(),
            1_796_464_800_000
        );
        assert_eq!(
            parse_datetime("2026-12-05T10:00:00.000").unwrap(),
            1_796_464_800_000
        );
        assert_eq!(parse_datetime("1796464800000").unwrap(), 1_796_464_800_000);
        assert!(parse_datetime("yesterday")
            .unwrap_err()
            .contains("RFC 3339"));
    }
}
