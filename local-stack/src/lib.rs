//! `strata-s3`: an S3-protocol server over a local directory, for laptops,
//! tests and benchmarks where neither Docker (MinIO) nor a cloud bucket is at
//! hand. It speaks the part of the S3 REST API that `object_store` and the
//! common tools use: buckets, PUT/GET (ranged)/HEAD/DELETE, conditional
//! writes (`If-None-Match: *`, `If-Match`) that are atomic, conditional
//! reads, ListObjects v1/v2 with delimiters and pagination, DeleteObjects,
//! CopyObject, and multipart uploads.
//!
//! It is not a storage product: it checks no credentials, keeps no versions
//! and stores no user metadata. Strata itself never depends on it; only the
//! tests and benchmarks do. See `docs/local-stack.md`.

pub mod chunked;
pub mod error;
pub mod http;
pub mod range;
pub mod store;
pub mod xml;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::TcpListener;

pub use error::S3Error;
pub use store::FsStore;

/// The store over `root`, with `buckets` created.
fn open_store(root: &Path, buckets: &[impl AsRef<str>]) -> anyhow::Result<Arc<FsStore>> {
    let store = FsStore::open(root)?;
    for b in buckets {
        store.create_bucket(b.as_ref())?;
    }
    Ok(store)
}

/// Serves the directory `root` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    root: PathBuf,
    buckets: &[String],
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let store = open_store(&root, buckets)?;
    axum::serve(listener, http::router(store))
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

/// A server on a free loopback port in the current runtime, for tests.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TestServer {
    pub async fn start(root: PathBuf, buckets: &[&str]) -> anyhow::Result<TestServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let store = open_store(&root, buckets)?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, http::router(store))
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(TestServer {
            addr,
            stop: Some(tx),
        })
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}
