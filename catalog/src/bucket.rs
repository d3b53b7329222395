//! The bucket: turning `--object-store URL` into an object store and the key
//! prefix the cluster lives under, and checking at start-up that it is
//! usable (one clear line instead of minutes of retries). The catalog, the
//! tiering manager and the historical read path all open it here.
//!
//! `file://DIR` (the embedded default), `memory://` (tests), and
//! `s3://BUCKET[/PREFIX]` with the standard AWS environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION` /
//! `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL` / `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`)
//! and path-style addressing, which MinIO and other S3-compatible servers
//! need; `gs://BUCKET[/PREFIX]` with Google's environment
//! (`GOOGLE_SERVICE_ACCOUNT` / `GOOGLE_APPLICATION_CREDENTIALS`, ...);
//! `az://CONTAINER[/PREFIX]` with Azure's (`AZURE_STORAGE_ACCOUNT_NAME`,
//! `AZURE_STORAGE_ACCOUNT_KEY`, `AZURE_STORAGE_USE_EMULATOR`, ...).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use thiserror::Error;

/// Why a bucket URL cannot be opened or used. Each message is one line and
/// names the URL.
#[derive(Debug, Error)]
pub enum BucketError {
    #[error("object store {url}: expected file://DIR, memory://, s3://BUCKET[/PREFIX], gs://BUCKET[/PREFIX] or az://CONTAINER[/PREFIX]")]
    UnknownScheme { url: String },
    #[error("object store {url}: missing bucket or container name")]
    MissingName { url: String },
    #[error("object store {url}: cannot create {dir}: {source}")]
    CreateDir {
        url: String,
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("object store {url}: {}", first_line(.source))]
    Build {
        url: String,
        #[source]
        source: Box<object_store::Error>,
    },
    /// The probe at start-up failed: wrong endpoint, missing bucket, bad
    /// credentials. Retrying the same settings will not help.
    #[error("object store {url} is not usable ({what} {key}): {}", first_line(.source))]
    Unusable {
        url: String,
        what: &'static str,
        key: String,
        #[source]
        source: Box<object_store::Error>,
    },
}

fn first_line(e: &object_store::Error) -> String {
    e.to_string().lines().next().unwrap_or("").to_string()
}

/// An object store and the key prefix everything of this cluster lives under.
#[derive(Debug, Clone)]
pub struct Bucket {
    pub store: Arc<dyn ObjectStore>,
    pub prefix: String,
    /// The URL it came from, for logs.
    pub url: String,
}

/// Retries bounded so a wrong endpoint fails within seconds, not minutes.
fn retry() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 3,
        retry_timeout: Duration::from_secs(15),
    }
}

pub fn open(url: &str) -> Result<Bucket, BucketError> {
    // Every request is counted (`counting_store`, `/metrics`).
    let bucket = |store: Arc<dyn ObjectStore>, prefix: &str| Bucket {
        store: Arc::new(crate::counting_store::CountingStore::new(
            store,
            crate::counting_store::STORE_REQUESTS.clone(),
        )),
        prefix: prefix.trim_matches('/').to_string(),
        url: url.to_string(),
    };
    if let Some(dir) = url.strip_prefix("file://") {
        std::fs::create_dir_all(dir).map_err(|source| BucketError::CreateDir {
            url: url.to_string(),
            dir: dir.to_string(),
            source,
        })?;
        let fs = LocalFileSystem::new_with_prefix(dir).map_err(|source| build(url, source))?;
        return Ok(bucket(Arc::new(fs), ""));
    }
    if url == "memory://" || url.starts_with("memory://") {
        return Ok(bucket(
            Arc::new(InMemory::new()),
            url.trim_start_matches("memory://"),
        ));
    }
    if let Some(rest) = url.strip_prefix("s3://") {
        let (name, prefix) = split_bucket(url, rest)?;
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(name)
            .with_virtual_hosted_style_request(false)
            .with_retry(retry());
        if let Ok(endpoint) = std::env::var("AWS_ENDPOINT_URL") {
            b = b.with_endpoint(endpoint);
        }
        if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err() {
            b = b.with_region("us-east-1");
        } else if let Ok(region) = std::env::var("AWS_REGION") {
            b = b.with_region(region);
        }
        let s3 = b.build().map_err(|source| build(url, source))?;
        return Ok(bucket(Arc::new(s3), prefix));
    }
    if let Some(rest) = url.strip_prefix("gs://") {
        let (name, prefix) = split_bucket(url, rest)?;
        let gcs = GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(name)
            .with_retry(retry())
            .build()
            .map_err(|source| build(url, source))?;
        return Ok(bucket(Arc::new(gcs), prefix));
    }
    if let Some(rest) = url.strip_prefix("az://") {
        let (name, prefix) = split_bucket(url, rest)?;
        let az = MicrosoftAzureBuilder::from_env()
            .with_container_name(name)
            .with_retry(retry())
            .build()
            .map_err(|source| build(url, source))?;
        return Ok(bucket(Arc::new(az), prefix));
    }
    Err(BucketError::UnknownScheme {
        url: url.to_string(),
    })
}

fn build(url: &str, source: object_store::Error) -> BucketError {
    BucketError::Build {
        url: url.to_string(),
        source: Box::new(source),
    }
}

fn split_bucket<'a>(url: &str, rest: &'a str) -> Result<(&'a str, &'a str), BucketError> {
    let (name, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if name.is_empty() {
        return Err(BucketError::MissingName {
            url: url.to_string(),
        });
    }
    Ok((name, prefix))
}

/// Writes, reads and deletes a probe object; returns a one-line reason if
/// the store is unusable (wrong endpoint, missing bucket, bad credentials).
pub async fn check(bucket: &Bucket) -> Result<(), BucketError> {
    let key = if bucket.prefix.is_empty() {
        ObjectPath::from("_strata/probe")
    } else {
        ObjectPath::from(format!("{}/_strata/probe", bucket.prefix))
    };
    let fail = |what: &'static str, source: object_store::Error| BucketError::Unusable {
        url: bucket.url.clone(),
        what,
        key: key.to_string(),
        source: Box::new(source),
    };
    bucket
        .store
        .put(&key, PutPayload::from(Bytes::from_static(b"strata")))
        .await
        .map_err(|e| fail("writing", e))?;
    bucket
        .store
        .get(&key)
        .await
        .map_err(|e| fail("reading", e))?;
    bucket
        .store
        .delete(&key)
        .await
        .map_err(|e| fail("deleting", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn file_and_memory_urls_work() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}/bucket", dir.path().display());
        let b = open(&url).unwrap();
        check(&b).await.unwrap();
        assert!(dir.path().join("bucket").is_dir());
        check(&open("memory://").unwrap()).await.unwrap();
    }

    #[test]
    fn bad_urls_say_why() {
        let why = |url: &str| open(url).unwrap_err().to_string();
        assert!(why("ftp://x").contains("expected file://"));
        assert!(why("s3://").contains("missing bucket"));
        assert!(why("gs://").contains("missing bucket"));
        assert!(why("az://").contains("missing bucket or container"));
    }

    #[tokio::test]
    async fn azure_emulator_endpoint_down_fails_in_one_line() {
        // Azurite's well-known account against a port nothing listens on.
        std::env::set_var("AZURE_STORAGE_USE_EMULATOR", "true");
        let b = open("az://container/prefix").unwrap();
        std::env::remove_var("AZURE_STORAGE_USE_EMULATOR");
        let err = check(&b).await.unwrap_err().to_string();
        assert!(
            err.starts_with("object store az://container/prefix is not usable (writing"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }

    #[tokio::test]
    async fn unreachable_endpoint_fails_in_one_line() {
        std::env::set_var("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
        std::env::set_var("AWS_ALLOW_HTTP", "true");
        std::env::set_var("AWS_ACCESS_KEY_ID", "x");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "y");
        let b = open("s3://nope/prefix").unwrap();
        let started = std::time::Instant::now();
        let err = check(&b).await.unwrap_err().to_string();
        assert!(
            err.starts_with("object store s3://nope/prefix is not usable (writing"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
