//! The catalog and the uploader against a real S3-protocol server over HTTP:
//! moto (`moto[server]` from PyPI, installed into `.venv` by
//! `scripts/test.sh`), started by the test itself on a free loopback port.
//! moto implements conditional writes faithfully, so these are the fencing
//! tests (issue 4).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use strata_catalog::bucket;
use strata_catalog::{CatalogError, PartitionCatalog, PartitionPath};
use strata_tiering::{upload_segment, SealedSegment, UploadOptions};

struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto_binary() -> PathBuf {
    if let Ok(p) = std::env::var("STRATA_MOTO_SERVER") {
        return PathBuf::from(p);
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/moto_server");
    assert!(
        p.exists(),
        "moto_server not found at {}: run scripts/test.sh (it installs tests/requirements.txt into .venv) or set STRATA_MOTO_SERVER",
        p.display()
    );
    p
}

/// One moto server per test binary, with bucket `strata` created.
fn moto() -> &'static Moto {
    static MOTO: OnceLock<Moto> = OnceLock::new();
    MOTO.get_or_init(|| {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // The server lives in a static that is never dropped, so a small
        // shell watchdog stops it when this test process exits.
        let script = format!(
            "\"$0\" -H 127.0.0.1 -p {port} & m=$!; while kill -0 {parent} 2>/dev/null; do sleep 1; done; kill $m",
            parent = std::process::id()
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .arg(moto_binary())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        // object_store never creates buckets: a plain unsigned PUT does.
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(s, "PUT /strata HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200"), "create bucket: {resp}");
        std::env::set_var("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"));
        std::env::set_var("AWS_ALLOW_HTTP", "true");
        std::env::set_var("AWS_ACCESS_KEY_ID", "test");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
        std::env::set_var("AWS_REGION", "us-east-1");
        Moto { child, port }
    })
}

fn bucket_at(prefix: &str) -> bucket::Bucket {
    let _ = moto().port;
    bucket::open(&format!("s3://strata/{prefix}")).unwrap()
}

#[tokio::test]
async fn s3_store_passes_the_startup_check() {
    bucket::check(&bucket_at("check")).await.unwrap();
    let missing = bucket::open("s3://no-such-bucket").unwrap();
    let err = bucket::check(&missing).await.unwrap_err().to_string();
    assert!(
        err.starts_with("object store s3://no-such-bucket is not usable"),
        "{err}"
    );
}

#[tokio::test]
async fn sixteen_concurrent_claims_get_sixteen_epochs() {
    let b = bucket_at("claims");
    let path = PartitionPath::new(&b.prefix, "t", "id", 0);
    strata_catalog::testing::concurrent_claims_get_distinct_epochs(b.store.clone(), path, 16).await;
}

#[tokio::test]
async fn stale_broker_is_fenced_and_the_catalog_stays_consistent() {
    let b = bucket_at("fence");
    let store: Arc<dyn ObjectStore> = b.store.clone();
    let path = PartitionPath::new(&b.prefix, "orders", "id", 3);
    let dir = tempfile::tempdir().unwrap();
    let seg = |base: i64| {
        let stem = format!("{base:020}");
        let log: Vec<u8> = (0..(6 << 20)).map(|i: usize| (i % 253) as u8).collect();
        for (ext, bytes) in [
            ("log", log),
            ("index", vec![1; 8]),
            ("timeindex", vec![2; 12]),
        ] {
            std::fs::write(dir.path().join(format!("{stem}.{ext}")), bytes).unwrap();
        }
        SealedSegment {
            base_offset: base,
            last_offset: base + 9,
            max_timestamp: base,
            leader_epoch: 0,
            log: dir.path().join(format!("{stem}.log")),
            index: dir.path().join(format!("{stem}.index")),
            time_index: dir.path().join(format!("{stem}.timeindex")),
            producer_snapshot: None,
            txn_index: None,
        }
    };
    let opts = UploadOptions {
        multipart_threshold: 1 << 20,
        part_size: 5 << 20,
        ..Default::default()
    };
    let mut a = PartitionCatalog::claim(store.clone(), path.clone(), "broker-a")
        .await
        .unwrap();
    upload_segment(&store, &mut a, &seg(0), &opts)
        .await
        .unwrap();
    let mut b2 = PartitionCatalog::claim(store.clone(), path.clone(), "broker-b")
        .await
        .unwrap();
    upload_segment(&store, &mut b2, &seg(10), &opts)
        .await
        .unwrap();
    let err = upload_segment(&store, &mut a, &seg(10), &opts)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            strata_tiering::TieringError::Catalog(CatalogError::Fenced {
                mine: 1,
                current: 2,
                ..
            })
        ),
        "{err}"
    );
    let view = PartitionCatalog::open(store, path).await.unwrap();
    let m = view.manifest();
    assert_eq!(m.owner, "broker-b");
    assert_eq!(
        m.segments.iter().map(|s| s.base_offset).collect::<Vec<_>>(),
        vec![0, 10]
    );
    assert_eq!(m.segments[0].size_bytes, 6 << 20);
}
