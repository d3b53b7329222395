//! Kafka's precedence of the eight quota levels, who shares a rate, and
//! the throttle times a client gets.

use super::*;
use EntityName::{Default as D, Named};

fn n(s: &str) -> Option<EntityName> {
    Some(Named(s.to_string()))
}

const P: QuotaType = QuotaType::ProducerByteRate;

#[test]
fn the_highest_configured_level_applies() {
    let levels = QuotaLimits::levels("alice", "app");
    let mut limits = QuotaLimits::default();
    for (i, e) in levels.iter().enumerate() {
        limits.set(e.clone(), P, Some(i as f64 + 1.0));
    }
    for (i, e) in levels.iter().enumerate() {
        let key = limits.share_key(P, "alice", "app");
        assert_eq!(
            limits.limit(P, &key),
            Some(i as f64 + 1.0),
            "level {} of {levels:?}",
            i + 1
        );
        limits.set(e.clone(), P, None);
    }
    let key = limits.share_key(P, "alice", "app");
    assert_eq!(limits.limit(P, &key), None);
    // The levels are Kafka's, in Kafka's order.
    assert_eq!(levels[0], QuotaEntity::new(n("alice"), n("app")));
    assert_eq!(levels[2], QuotaEntity::new(n("alice"), None));
    assert_eq!(levels[5], QuotaEntity::new(Some(D), None));
    assert_eq!(levels[6], QuotaEntity::new(None, n("app")));
}

#[test]
fn a_default_user_quota_beats_an_exact_client_id_quota() {
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(Some(D), None), P, Some(10.0));
    limits.set(QuotaEntity::new(None, n("app")), P, Some(5.0));
    let key = limits.share_key(P, "alice", "app");
    assert_eq!(
        key,
        ShareKey {
            user: "alice".into(),
            client_id: String::new()
        }
    );
    assert_eq!(limits.limit(P, &key), Some(10.0));
}

#[test]
fn who_shares_a_rate() {
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(None, n("app")), P, Some(5.0));
    // A client-id quota is one pot for every user of that client id.
    assert_eq!(
        limits.share_key(P, "alice", "app"),
        limits.share_key(P, "bob", "app")
    );
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(Some(D), None), P, Some(5.0));
    // A default is a size: each user has their own pot.
    assert_ne!(
        limits.share_key(P, "alice", "app"),
        limits.share_key(P, "bob", "app")
    );
    // A user quota is one pot for all of that user's clients.
    assert_eq!(
        limits.share_key(P, "alice", "a"),
        limits.share_key(P, "alice", "b")
    );
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(n("alice"), Some(D)), P, Some(5.0));
    assert_ne!(
        limits.share_key(P, "alice", "a"),
        limits.share_key(P, "alice", "b")
    );
    assert_eq!(
        limits.limit(P, &limits.share_key(P, "alice", "b")),
        Some(5.0)
    );
    assert_eq!(limits.limit(P, &limits.share_key(P, "bob", "b")), None);
}

#[test]
fn throttle_times_per_pot() {
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(Some(D), None), P, Some(1024.0));
    let mut q = ClientQuotas::new(RateConfig::default(), limits, 1000);
    assert_eq!(q.record(P, "alice", "app", 20_480.0, 0), 10_000);
    // Bob has a pot of his own, and another quota type is not limited.
    assert_eq!(q.record(P, "bob", "app", 5_000.0, 0), 0);
    assert_eq!(
        q.record(QuotaType::ConsumerByteRate, "alice", "app", 1e9, 0),
        0
    );
    assert_eq!(q.sensor_count(), 2);

    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(None, n("app")), P, Some(1024.0));
    let mut q = ClientQuotas::new(RateConfig::default(), limits, 1000);
    assert_eq!(q.record(P, "alice", "app", 8_000.0, 0), 0);
    assert!(
        q.record(P, "bob", "app", 8_000.0, 0) > 0,
        "one pot for client id app"
    );
    assert_eq!(q.record(P, "bob", "other", 8_000.0, 0), 0);
}

#[test]
fn request_time_is_held_back_at_most_one_window() {
    let mut limits = QuotaLimits::default();
    limits.set(
        QuotaEntity::new(n("alice"), None),
        QuotaType::RequestPercentage,
        Some(10.0),
    );
    let mut q = ClientQuotas::new(RateConfig::default(), limits, 10);
    assert_eq!(
        q.record(QuotaType::RequestPercentage, "alice", "c", 1e6, 0),
        1000
    );
}

#[test]
fn made_up_client_ids_cannot_grow_the_rates_without_bound() {
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(None, Some(D)), P, Some(1e6));
    let mut q = ClientQuotas::new(RateConfig::default(), limits, 100);
    for i in 0..10_000 {
        q.record(P, "ANONYMOUS", &format!("client-{i}"), 1.0, i);
        assert!(q.sensor_count() <= 100);
    }
    // The most recent stay (a tenth goes at once at the cap).
    assert!(
        (90..=100).contains(&q.sensor_count()),
        "{}",
        q.sensor_count()
    );
    q.expire_idle(10_000 + SENSOR_IDLE_MS);
    assert_eq!(q.sensor_count(), 0);
}

#[test]
fn idle_rates_are_swept_without_reaching_the_cap() {
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(None, Some(D)), P, Some(1e6));
    let mut q = ClientQuotas::new(RateConfig::default(), limits, 1_000);
    q.record(P, "u", "early", 1.0, 0);
    q.record(P, "u", "late", 1.0, SENSOR_IDLE_MS - 1);
    assert_eq!(q.sensor_count(), 2);
    // An hour after "early" was last used, the next request sweeps it.
    q.record(P, "u", "late", 1.0, SENSOR_IDLE_MS + 60_000);
    assert_eq!(q.sensor_count(), 1);
}

#[test]
fn keys_and_entries() {
    assert_eq!(
        QuotaType::from_key("consumer_byte_rate"),
        Some(QuotaType::ConsumerByteRate)
    );
    assert_eq!(QuotaType::from_key("consumer_byte_rates"), None);
    let mut limits = QuotaLimits::default();
    limits.set(QuotaEntity::new(n("b"), None), P, Some(2.0));
    limits.set(
        QuotaEntity::new(n("a"), None),
        QuotaType::RequestPercentage,
        Some(1.0),
    );
    limits.set(QuotaEntity::new(n("a"), None), P, Some(3.0));
    let e = limits.entries();
    assert_eq!(e.len(), 3);
    assert_eq!(e[0], (QuotaEntity::new(n("a"), None), P, 3.0));
    limits.set(QuotaEntity::new(n("a"), None), P, None);
    assert_eq!(limits.entries().len(), 2);
}
