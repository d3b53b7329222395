//! Multipart uploads: parts staged under `<root>/.strata-s3/uploads/<id>/`,
//! joined in the order the client lists them, committed like any write.
//! Enforces S3's rules (part numbers 1 to 10000, ascending order in the
//! completion, 5 MiB minimum for every part but the last).

use std::fs::{self, File};
use std::io;
use std::path::PathBuf;

use super::{
    blocking, etag_eq, meta_of, FsStore, ObjectMeta, WriteCondition, MIN_PART_BYTES, STAGING,
};
use crate::error::{S3Error, S3Result};

impl FsStore {
    fn upload_dir(&self, upload_id: &str) -> S3Result<PathBuf> {
        if uuid::Uuid::parse_str(upload_id).is_err() {
            return Err(S3Error::NoSuchUpload(upload_id.to_string()));
        }
        let dir = self.root.join(STAGING).join("uploads").join(upload_id);
        if dir.is_dir() {
            Ok(dir)
        } else {
            Err(S3Error::NoSuchUpload(upload_id.to_string()))
        }
    }

    pub async fn create_upload(&self, bucket: &str, key: &str) -> S3Result<String> {
        self.object_path(bucket, key)?;
        let id = uuid::Uuid::new_v4().to_string();
        let dir = self.root.join(STAGING).join("uploads").join(&id);
        let target = format!("{bucket}/{key}");
        blocking(move || {
            fs::create_dir_all(&dir)?;
            fs::write(dir.join("target"), target)?;
            Ok(())
        })
        .await?;
        Ok(id)
    }

    fn check_upload(&self, upload_id: &str, bucket: &str, key: &str) -> S3Result<PathBuf> {
        let dir = self.upload_dir(upload_id)?;
        let target = fs::read_to_string(dir.join("target"))?;
        if target != format!("{bucket}/{key}") {
            return Err(S3Error::NoSuchUpload(upload_id.to_string()));
        }
        Ok(dir)
    }

    pub async fn put_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part: u32,
        staged: PathBuf,
    ) -> S3Result<ObjectMeta> {
        let dir = match self.check_upload(upload_id, bucket, key) {
            Ok(d) => d,
            Err(e) => {
                let _ = fs::remove_file(&staged);
                return Err(e);
            }
        };
        if !(1..=10_000).contains(&part) {
            let _ = fs::remove_file(&staged);
            return Err(S3Error::InvalidArgument(format!(
                "part number {part} must be 1 to 10000"
            )));
        }
        blocking(move || {
            let dest = dir.join(format!("{part:05}"));
            fs::rename(&staged, &dest)?;
            Ok(meta_of(&fs::metadata(&dest)?))
        })
        .await
    }

    /// Joins the named parts into the object, then forgets the upload.
    pub async fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<(u32, Option<String>)>,
        cond: WriteCondition,
    ) -> S3Result<ObjectMeta> {
        let dir = self.check_upload(upload_id, bucket, key)?;
        if parts.is_empty() {
            return Err(S3Error::MalformedXml(
                "CompleteMultipartUpload names no parts".into(),
            ));
        }
        if parts.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(S3Error::InvalidPartOrder);
        }
        let tmp = self.tmp_path();
        let t = tmp.clone();
        let d = dir.clone();
        blocking(move || {
            let mut out = File::create(&t)?;
            let last = parts.len() - 1;
            for (i, (n, etag)) in parts.iter().enumerate() {
                let p = d.join(format!("{n:05}"));
                let m = fs::metadata(&p)
                    .map_err(|_| S3Error::InvalidPart(format!("part {n} was not uploaded")))?;
                if let Some(e) = etag {
                    if !etag_eq(e, &meta_of(&m).etag) {
                        return Err(S3Error::InvalidPart(format!("part {n} has another ETag")));
                    }
                }
                if i < last && m.len() < MIN_PART_BYTES {
                    return Err(S3Error::EntityTooSmall(*n));
                }
                io::copy(&mut File::open(&p)?, &mut out)?;
            }
            out.sync_data()?;
            Ok(())
        })
        .await
        .inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })?;
        let meta = self.commit(tmp, bucket, key, cond).await?;
        let _ = fs::remove_dir_all(dir);
        Ok(meta)
    }

    pub async fn abort_upload(&self, bucket: &str, key: &str, upload_id: &str) -> S3Result<()> {
        let dir = self.check_upload(upload_id, bucket, key)?;
        fs::remove_dir_all(dir)?;
        Ok(())
    }
}
