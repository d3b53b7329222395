//! `strata-s3`: serve a directory over the S3 protocol (see the crate docs).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "strata-s3",
    version,
    about = "An S3-protocol server over a local directory, for development and tests (no authentication)."
)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "STRATA_S3_LISTEN", default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Directory holding the buckets (one subdirectory each).
    #[arg(long, env = "STRATA_S3_ROOT", default_value = "./s3-data")]
    root: PathBuf,
    /// Buckets to create at start (repeat or comma-separate).
    #[arg(
        long = "bucket",
        env = "STRATA_S3_BUCKETS",
        value_delimiter = ',',
        default_value = "strata"
    )]
    buckets: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("STRATA_S3_LOG")
                .unwrap_or_else(|_| "strata_local_stack=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    std::fs::create_dir_all(&args.root)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", args.root.display()))?;
    tracing::info!(
        listen = %listener.local_addr()?,
        root = %args.root.display(),
        buckets = ?args.buckets,
        "strata-s3 serving (path-style, no authentication)"
    );
    let shutdown = async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    };
    strata_local_stack::serve(listener, args.root, &args.buckets, shutdown).await
}
