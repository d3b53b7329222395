//! strata-s3 against the `object_store` crate's own conformance suite (the
//! functions its maintainers run against real S3, MinIO and LocalStack),
//! over HTTP on loopback, plus the guarantees Strata's catalog rests on:
//! conditional writes where exactly one of many concurrent writers wins.

use std::sync::Arc;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::integration::*;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use strata_catalog::PartitionPath;
use strata_local_stack::TestServer;

fn client(server: &TestServer, bucket: &str) -> AmazonS3 {
    AmazonS3Builder::new()
        .with_endpoint(server.endpoint())
        .with_allow_http(true)
        .with_bucket_name(bucket)
        .with_access_key_id("any")
        .with_secret_access_key("any")
        .with_region("us-east-1")
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_the_object_store_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(dir.path().to_path_buf(), &["suite"])
        .await
        .unwrap();
    let s3 = client(&server, "suite");
    put_get_delete_list(&s3).await;
    list_with_offset_exclusivity(&s3).await;
    get_opts(&s3).await;
    list_uses_directories_correctly(&s3).await;
    list_with_delimiter(&s3).await;
    rename_and_copy(&s3).await;
    stream_get(&s3).await;
    multipart(&s3, &s3).await;
    multipart_put_part_out_of_order(&s3, &s3).await;
    multipart_race_condition(&s3, true).await;
    multipart_out_of_order(&s3).await;
    list_paginated(&s3, &s3).await;
    put_opts(&s3, true).await;
}

/// 32 concurrent writes of `path` in `mode`: the indexes of those that
/// succeeded. Each loser must fail as `lost` says, nothing else.
async fn race(
    s3: &Arc<dyn ObjectStore>,
    path: &Path,
    mode: PutMode,
    lost: fn(&object_store::Error) -> bool,
) -> Vec<usize> {
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let (s3, path, mode) = (s3.clone(), path.clone(), mode.clone());
            tokio::spawn(async move {
                let opts = PutOptions {
                    mode,
                    ..Default::default()
                };
                s3.put_opts(&path, PutPayload::from(format!("writer {i}")), opts)
                    .await
                    .map(|_| i)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(i) => winners.push(i),
            Err(e) if lost(&e) => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    winners
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_many_concurrent_conditional_writers_exactly_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(dir.path().to_path_buf(), &["race"])
        .await
        .unwrap();
    let s3: Arc<dyn ObjectStore> = Arc::new(client(&server, "race"));
    for round in 0..5 {
        // Create-if-absent.
        let path = Path::from(format!("create/{round}"));
        let winners = race(&s3, &path, PutMode::Create, |e| {
            matches!(e, object_store::Error::AlreadyExists { .. })
        })
        .await;
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let body = s3.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(&body[..], format!("writer {}", winners[0]).as_bytes());

        // Compare-and-swap on the ETag every writer read.
        let meta = s3.head(&path).await.unwrap();
        let seen = UpdateVersion {
            e_tag: meta.e_tag.clone(),
            version: None,
        };
        let winners = race(&s3, &path, PutMode::Update(seen), |e| {
            matches!(e, object_store::Error::Precondition { .. })
        })
        .await;
        assert_eq!(winners.len(), 1, "round {round}: CAS winners {winners:?}");
        let body = s3.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(&body[..], format!("writer {}", winners[0]).as_bytes());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_catalog_claims_get_sixteen_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(dir.path().to_path_buf(), &["strata"])
        .await
        .unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(client(&server, "strata"));
    let path = PartitionPath::new("cluster", "t", "id", 0);
    strata_catalog::testing::concurrent_claims_get_distinct_epochs(store, path, 16).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ranged_read_of_a_large_object_is_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(dir.path().to_path_buf(), &["big"])
        .await
        .unwrap();
    let s3 = client(&server, "big");
    let data: Vec<u8> = (0..(9 << 20) as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let path = Path::from("seg/00000000000000000000.log");
    s3.put(&path, PutPayload::from(data.clone())).await.unwrap();
    // Ranges that start and end inside, across and at the 1 MiB read blocks.
    for (a, b) in [
        (0, 1),
        ((1 << 20) - 3, (1 << 20) + 5),
        (4 << 20, 8 << 20),
        ((9 << 20) - 7, 9 << 20),
        (0, 9 << 20),
    ] {
        let got = s3.get_range(&path, a as u64..b as u64).await.unwrap();
        assert_eq!(&got[..], &data[a..b], "range {a}..{b}");
    }
    let err = s3
        .get_range(&path, (10 << 20) as u64..(11 << 20) as u64)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("416"),
        "a range past the end is refused with 416 Range Not Satisfiable: {err}"
    );
    // The objects are plain files a developer can look at.
    let on_disk = std::fs::read(dir.path().join("big/seg/00000000000000000000.log")).unwrap();
    assert_eq!(on_disk, data);
}
