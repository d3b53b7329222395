//! `strata-cli`: the operator CLI in the `strata` binary: `strata topic`, `group`,
//! `tiering`, `produce`, `consume` and `dlq`. Everything a Kafka broker knows is
//! asked over the Kafka protocol (`kafka.rs`), so these commands work
//! against any Kafka broker; what only Strata knows (tiering status, lag
//! age, catch-up estimates) comes from Strata's admin API (`admin_http.rs`)
//! and is left out, with a note, where that API is not reachable.
//!
//! Tables for people, `--output json` for scripts; progress bars (on a
//! terminal only) for long operations. Owns no broker state and never
//! opens a data directory: it depends on `strata-protocol` and the Kafka
//! codec, none of the broker's crates.

pub mod admin_http;
pub mod consume;
pub mod dlq;
pub mod group;
pub mod kafka;
pub mod output;
pub mod produce;
pub mod tiering;
pub mod topic;

pub use kafka::{ClientError, KafkaClient};

/// Where the CLI finds the cluster and Strata's admin API.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// Kafka bootstrap address(es), HOST:PORT[,HOST:PORT...].
    #[arg(
        long = "bootstrap-server",
        env = "STRATA_BOOTSTRAP_SERVER",
        default_value = "127.0.0.1:9092",
        global = true
    )]
    pub bootstrap_server: String,

    /// Strata's admin API (what only Strata knows: tiering, lag age,
    /// catch-up estimates).
    #[arg(
        long = "admin-url",
        env = "STRATA_ADMIN_URL",
        default_value = "http://127.0.0.1:9644",
        global = true
    )]
    pub admin_url: String,

    /// Output format.
    #[arg(long, value_enum, default_value = "table", global = true)]
    pub output: output::Format,
}

/// The CLI's errors: what went wrong, in words an operator can act on.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Kafka(#[from] ClientError),
    #[error(transparent)]
    Admin(#[from] admin_http::AdminError),
    #[error("{0}")]
    Usage(String),
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
}

pub type CliResult<T> = Result<T, CliError>;

/// `NAME=VALUE` pairs from the command line.
pub fn parse_pairs(pairs: &[String], what: &str) -> CliResult<Vec<(String, String)>> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(CliError::Usage(format!("{what} `{p}` is not NAME=VALUE"))),
        })
        .collect()
}
