//! Turning `--object-store URL` into an object store, and checking at start-up
//! that it is usable (one clear line instead of minutes of retries).
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

pub fn open(url: &str) -> Result<Bucket, String> {
    let bucket = |store: Arc<dyn ObjectStore>, prefix: &str| Bucket {
        store,
        prefix: prefix.trim_matches('/').to_string(),
        url: url.to_string(),
    };
    if let Some(dir) = url.strip_prefix("file://") {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("object store {url}: cannot create {dir}: {e}"))?;
        let fs = LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| format!("object store {url}: {e}"))?;
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
        let s3 = b.build().map_err(|e| format!("object store {url}: {e}"))?;
        return Ok(bucket(Arc::new(s3), prefix));
    }
    if let Some(rest) = url.strip_prefix("gs://") {
        let (name, prefix) = split_bucket(url, rest)?;
        let gcs = GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(name)
            .with_retry(retry())
            .build()
            .map_err(|e| format!("object store {url}: {e}"))?;
        return Ok(bucket(Arc::new(gcs), prefix));
    }
    if let Some(rest) = url.strip_prefix("az://") {
        let (name, prefix) = split_bucket(url, rest)?;
        let az = MicrosoftAzureBuilder::from_env()
            .with_container_name(name)
            .with_retry(retry())
            .build()
            .map_err(|e| format!("object store {url}: {e}"))?;
        return Ok(bucket(Arc::new(az), prefix));
    }
    Err(format!(
        "object store {url}: expected file://DIR, memory://, s3://BUCKET[/PREFIX], gs://BUCKET[/PREFIX] or az://CONTAINER[/PREFIX]"
    ))
}

fn split_bucket<'a>(url: &str, rest: &'a str) -> Result<(&'a str, &'a str), String> {
    let (name, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if name.is_empty() {
        return Err(format!(
            "object store {url}: missing bucket or container name"
        ));
    }
    Ok((name, prefix))
}

/// Writes, reads and deletes a probe object; returns a one-line reason if
/// the store is unusable (wrong endpoint, missing bucket, bad credentials).
pub async fn check(bucket: &Bucket) -> Result<(), String> {
    let key = if bucket.prefix.is_empty() {
        ObjectPath::from("_strata/probe")
    } else {
        ObjectPath::from(format!("{}/_strata/probe", bucket.prefix))
    };
    let fail = |what: &str, e: object_store::Error| {
        let text = e.to_string();
        let text = text.lines().next().unwrap_or("").to_string();
        format!(
            "object store {} is not usable ({what} {key}): {text}",
            bucket.url
        )
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
        assert!(open("ftp://x").unwrap_err().contains("expected file://"));
        assert!(open("s3://").unwrap_err().contains("missing bucket"));
        assert!(open("gs://").unwrap_err().contains("missing bucket"));
        assert!(open("az://")
            .unwrap_err()
            .contains("missing bucket or container"));
    }

    #[tokio::test]
    async fn azure_emulator_endpoint_down_fails_in_one_line() {
        // Azurite's well-known account against a port nothing listens on.
        std::env::set_var("AZURE_STORAGE_USE_EMULATOR", "true");
        let b = open("az://container/prefix").unwrap();
        std::env::remove_var("AZURE_STORAGE_USE_EMULATOR");
        let err = check(&b).await.unwrap_err();
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
        let err = check(&b).await.unwrap_err();
        assert!(
            err.starts_with("object store s3://nope/prefix is not usable (writing"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
