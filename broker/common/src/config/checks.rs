//! The value checks of settings whose rule is more than a type and a
//! range (`Validator::Custom` in `defs.rs`): each returns why a value is
//! wrong, in words an operator reads in the INVALID_CONFIG message.

pub(super) fn check_nice(v: &str) -> Result<(), String> {
    match v.trim().parse::<i32>() {
        Ok(n) if (0..=19).contains(&n) => Ok(()),
        _ => Err("must be an integer from 0 to 19".into()),
    }
}

/// Kafka's MetadataVersion strings that `message.format.version` accepts
/// (`0.8.0` … `3.9`, with or without an `-IVn` suffix).
pub(super) fn check_message_format_version(v: &str) -> Result<(), String> {
    let (base, iv) = match v.split_once("-IV") {
        Some((b, n)) => (b, Some(n)),
        None => (v, None),
    };
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let suffix_ok = iv.is_none_or(digits);
    let parts: Vec<&str> = base.split('.').collect();
    let numeric = parts.iter().all(|p| digits(p));
    let known = match parts.as_slice() {
        ["0", minor, ..] => matches!(*minor, "8" | "9" | "10" | "11"),
        ["1", minor, ..] | ["2", minor, ..] => minor.parse::<u32>().is_ok_and(|m| m <= 8),
        ["3", minor, ..] => minor.parse::<u32>().is_ok_and(|m| m <= 9),
        _ => false,
    };
    if numeric && known && suffix_ok && parts.len() <= 4 {
        Ok(())
    } else {
        Err(format!("Version `{v}` is not a valid version"))
    }
}

/// `compression.type`: a codec or `producer`, case insensitive as Kafka's.
pub(super) fn check_compression_type(v: &str) -> Result<(), String> {
    if v.eq_ignore_ascii_case("producer") || strata_format::transcode::Codec::from_name(v).is_some()
    {
        Ok(())
    } else {
        Err("String must be one of (case insensitive): UNCOMPRESSED, ZSTD, LZ4, SNAPPY, GZIP, PRODUCER".into())
    }
}

/// `compression.gzip.level`: zlib's levels, or -1 for its default.
pub(super) fn check_gzip_level(v: &str) -> Result<(), String> {
    match v.trim().parse::<i32>() {
        Ok(n) if n == -1 || (1..=9).contains(&n) => Ok(()),
        _ => Err("Value must be between 1 and 9, or -1 (the default level)".into()),
    }
}

pub(super) fn check_priority_groups(v: &str) -> Result<(), String> {
    strata_prefetch::ClassPolicy::parse_members(v).map(|_| ())
}

pub(super) fn check_priority_shares(v: &str) -> Result<(), String> {
    strata_prefetch::ClassPolicy::parse_shares(v).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_format_versions_kafka_39_accepts() {
        for ok in ["0.10.2", "0.10.2-IV0", "2.8", "3.0-IV1", "3.9", "1.1"] {
            assert!(check_message_format_version(ok).is_ok(), "{ok}");
        }
        for bad in ["4.0", "banana", "3.0-", "3.x", "", "0.7"] {
            assert!(check_message_format_version(bad).is_err(), "{bad}");
        }
    }
}

/// Kafka's class names for `replica.selector.class` (the only two it
/// ships; a custom class cannot be loaded into a Rust broker).
pub(crate) const RACK_AWARE_SELECTOR: &str =
    "org.apache.kafka.common.replica.RackAwareReplicaSelector";
pub(crate) const LEADER_SELECTOR: &str = "org.apache.kafka.common.replica.LeaderSelector";

/// `replica.selector.class`: one of Kafka's two selectors.
pub(super) fn check_replica_selector(v: &str) -> Result<(), String> {
    match v.trim() {
        "" | RACK_AWARE_SELECTOR | LEADER_SELECTOR => Ok(()),
        other => Err(format!(
            "must be {RACK_AWARE_SELECTOR} or {LEADER_SELECTOR} (custom selectors cannot be loaded), not {other}"
        )),
    }
}

/// A comma-separated list of topic names (empty: none).
pub(super) fn check_topic_list(v: &str) -> Result<(), String> {
    for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        crate::topic_name::validate_topic_name(name).map_err(|e| format!("`{name}`: {e}"))?;
    }
    Ok(())
}

/// A comma-separated list of record header names, at least one.
pub(super) fn check_header_list(v: &str) -> Result<(), String> {
    let names: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Err("name at least one header".into());
    }
    if names.iter().any(|n| n.len() > 256) {
        return Err("a header name is at most 256 characters".into());
    }
    Ok(())
}
