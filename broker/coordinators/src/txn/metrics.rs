//! The transaction coordinator's `/metrics` families: open transactions,
//! the oldest one's age, commits and aborts by cause. Read-only.

use strata_common::metrics_family::{value_of, Family, Kind, MetricSource};

use super::coordinator::TransactionCoordinator;

impl MetricSource for TransactionCoordinator {
    fn families(&self) -> Vec<Family> {
        let (ongoing, oldest_ms) = self.ongoing_summary(self.clock.now_ms());
        let c = &self.counters;
        let mut aborted = Family::of(&(
            "strata_transactions_aborted_total",
            Kind::Counter,
            "Transactions aborted, by cause: client (abort_transaction), timeout (open past transaction.timeout.ms; the producer is fenced), fencing (a new producer instance initialised the transactional id).",
        ));
        for (cause, v) in [
            ("client", &c.aborts_client),
            ("timeout", &c.aborts_timeout),
            ("fencing", &c.aborts_fencing),
        ] {
            aborted.push(vec![("cause", cause.to_string())], value_of(v));
        }
        vec![
            Family::one_of(
                &(
                    "strata_transactions_ongoing",
                    Kind::Gauge,
                    "Open transactions (state Ongoing) on this coordinator.",
                ),
                ongoing as f64,
            ),
            Family::one_of(
                &(
                    "strata_transaction_oldest_age_seconds",
                    Kind::Gauge,
                    "Age of the oldest open transaction; 0 when none is open.",
                ),
                oldest_ms as f64 / 1e3,
            ),
            Family::one_of(
                &(
                    "strata_transactions_committed_total",
                    Kind::Counter,
                    "Transactions committed.",
                ),
                value_of(&c.commits),
            ),
            aborted,
        ]
    }
}
