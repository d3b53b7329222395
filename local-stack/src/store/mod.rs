//! Objects as plain files: `<root>/<bucket>/<key>`, so a developer can look
//! at the bucket with `ls`. Owns the on-disk layout, object metadata (size,
//! ETag, modification time), conditional writes, listings and multipart
//! uploads. It never speaks HTTP.
//!
//! Writes are staged under `<root>/.strata-s3/` (not a valid bucket name)
//! and made visible with one `rename`. A single commit lock around "check the
//! precondition, rename" makes `If-None-Match: *` and `If-Match` atomic: of
//! any number of concurrent conditional writers exactly one wins.
//!
//! Writes are durable when acknowledged: the staged file is fsynced before
//! the rename and the directory after it, as S3 acknowledges a PUT only once
//! it is stored.
//!
//! The ETag is derived from the file itself (inode, modification time, size),
//! so it survives restarts and changes with every write (every write is a
//! new file). It is opaque, as S3 allows; it is not an MD5.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::sync::Mutex;

use crate::error::{S3Error, S3Result};

mod multipart;

/// Smallest part of a multipart upload other than the last, as in S3.
pub const MIN_PART_BYTES: u64 = 5 * 1024 * 1024;
/// Size of one read or write against the file system.
const IO_BLOCK: usize = 1024 * 1024;
const STAGING: &str = ".strata-s3";

#[derive(Debug, Clone)]
pub struct ObjectMeta {
    pub size: u64,
    pub etag: String,
    pub modified: SystemTime,
}

/// The condition a write must meet when it commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCondition {
    Always,
    /// `If-None-Match: *`: only if nothing is there.
    Absent,
    /// `If-Match: <etag>`: only if the object is there with this ETag.
    Matches(String),
}

pub struct Listing {
    pub objects: Vec<(String, ObjectMeta)>,
    pub common_prefixes: Vec<String>,
    /// The last entry returned when more follow (a continuation token).
    pub next: Option<String>,
}

pub struct FsStore {
    root: PathBuf,
    commit: Mutex<()>,
}

fn meta_of(m: &fs::Metadata) -> ObjectMeta {
    let modified = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let nanos = modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    ObjectMeta {
        size: m.len(),
        etag: format!("\"{:x}-{:x}-{:x}\"", m.ino(), nanos, m.len()),
        modified,
    }
}

/// ETags compare without their quotes, and `W/` weak prefixes are ignored.
pub fn etag_eq(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.trim()
            .trim_start_matches("W/")
            .trim_matches('"')
            .to_string()
    };
    norm(a) == norm(b)
}

fn valid_bucket(name: &str) -> S3Result<()> {
    let ok = (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
        && !name.starts_with(['.', '-'])
        && !name.ends_with(['.', '-']);
    if ok {
        Ok(())
    } else {
        Err(S3Error::InvalidBucketName(format!(
            "bucket name {name:?} must be 3 to 63 characters of a-z, 0-9, '.' and '-'"
        )))
    }
}

fn valid_key(key: &str) -> S3Result<()> {
    let bad = |why: &str| {
        Err(S3Error::InvalidArgument(format!(
            "object key {key:?} {why}"
        )))
    };
    if key.is_empty() || key.len() > 1024 {
        return bad("must be 1 to 1024 bytes long");
    }
    if key.contains('\0') {
        return bad("may not contain NUL");
    }
    if key
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return bad(
            "has an empty, '.' or '..' path segment, which this file-backed server cannot store",
        );
    }
    Ok(())
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> S3Result<T> + Send + 'static,
) -> S3Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| S3Error::Internal(io::Error::other(e)))?
}

impl FsStore {
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Arc<FsStore>> {
        let root = root.into();
        fs::create_dir_all(root.join(STAGING).join("tmp"))?;
        fs::create_dir_all(root.join(STAGING).join("uploads"))?;
        // Staged files of a run that died are garbage.
        for e in fs::read_dir(root.join(STAGING).join("tmp"))? {
            let _ = fs::remove_file(e?.path());
        }
        Ok(Arc::new(FsStore {
            root,
            commit: Mutex::new(()),
        }))
    }

    fn bucket_dir(&self, bucket: &str) -> S3Result<PathBuf> {
        valid_bucket(bucket)?;
        Ok(self.root.join(bucket))
    }

    fn existing_bucket(&self, bucket: &str) -> S3Result<PathBuf> {
        let dir = self.bucket_dir(bucket)?;
        if dir.is_dir() {
            Ok(dir)
        } else {
            Err(S3Error::NoSuchBucket(bucket.to_string()))
        }
    }

    fn object_path(&self, bucket: &str, key: &str) -> S3Result<PathBuf> {
        valid_key(key)?;
        Ok(self.existing_bucket(bucket)?.join(key))
    }

    fn tmp_path(&self) -> PathBuf {
        self.root
            .join(STAGING)
            .join("tmp")
            .join(uuid::Uuid::new_v4().to_string())
    }

    // ---- buckets -------------------------------------------------------------

    pub fn create_bucket(&self, bucket: &str) -> S3Result<()> {
        fs::create_dir_all(self.bucket_dir(bucket)?)?;
        Ok(())
    }

    pub fn head_bucket(&self, bucket: &str) -> S3Result<()> {
        self.existing_bucket(bucket).map(|_| ())
    }

    pub fn delete_bucket(&self, bucket: &str) -> S3Result<()> {
        let dir = self.existing_bucket(bucket)?;
        if fs::read_dir(&dir)?.next().is_some() {
            return Err(S3Error::BucketNotEmpty);
        }
        fs::remove_dir(dir)?;
        Ok(())
    }

    pub fn buckets(&self) -> S3Result<Vec<(String, SystemTime)>> {
        let mut out = Vec::new();
        for e in fs::read_dir(&self.root)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type()?.is_dir() && valid_bucket(&name).is_ok() {
                out.push((
                    name,
                    e.metadata()?.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                ));
            }
        }
        out.sort();
        Ok(out)
    }

    // ---- writes --------------------------------------------------------------

    /// Writes a request body to a staging file; the caller commits it.
    pub async fn stage<S, E>(&self, mut body: S) -> S3Result<PathBuf>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let path = self.tmp_path();
        let p = path.clone();
        let mut file = Some(blocking(move || Ok(File::create(p)?)).await?);
        let mut buf: Vec<u8> = Vec::with_capacity(IO_BLOCK);
        let result: S3Result<()> = async {
            loop {
                let next = body.next().await;
                let done = next.is_none();
                if let Some(chunk) = next {
                    let chunk = chunk.map_err(|e| {
                        S3Error::Internal(io::Error::other(format!(
                            "reading the request body: {e}"
                        )))
                    })?;
                    buf.extend_from_slice(&chunk);
                }
                if buf.len() >= IO_BLOCK || (done && !buf.is_empty()) {
                    let mut f = file.take().expect("file is put back after each write");
                    let data = std::mem::replace(&mut buf, Vec::with_capacity(IO_BLOCK));
                    f = blocking(move || {
                        f.write_all(&data)?;
                        Ok(f)
                    })
                    .await?;
                    file = Some(f);
                }
                if done {
                    // A PUT is acknowledged durable, as S3's is.
                    let f = file.take().expect("file is put back after each write");
                    return blocking(move || Ok(f.sync_data()?)).await;
                }
            }
        }
        .await;
        if let Err(e) = result {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        Ok(path)
    }

    pub async fn stage_bytes(&self, data: Bytes) -> S3Result<PathBuf> {
        self.stage(futures_util::stream::iter([Ok::<_, io::Error>(data)]))
            .await
    }

    /// Makes a staged file the object `bucket/key` if `cond` holds, atomically
    /// with respect to every other commit. The staged file is consumed.
    pub async fn commit(
        &self,
        staged: PathBuf,
        bucket: &str,
        key: &str,
        cond: WriteCondition,
    ) -> S3Result<ObjectMeta> {
        let dest = match self.object_path(bucket, key) {
            Ok(d) => d,
            Err(e) => {
                let _ = fs::remove_file(&staged);
                return Err(e);
            }
        };
        let bucket_dir = self.existing_bucket(bucket)?;
        let _guard = self.commit.lock().await;
        let key = key.to_string();
        blocking(move || {
            let r = commit_file(&staged, &bucket_dir, &dest, &key, &cond);
            if r.is_err() {
                let _ = fs::remove_file(&staged);
            }
            r
        })
        .await
    }

    /// CopyObject: the source's bytes as a new object.
    pub async fn copy(
        &self,
        src_bucket: &str,
        src_key: &str,
        bucket: &str,
        key: &str,
        cond: WriteCondition,
    ) -> S3Result<ObjectMeta> {
        let src = self.object_path(src_bucket, src_key)?;
        let tmp = self.tmp_path();
        let missing = src_key.to_string();
        let t = tmp.clone();
        blocking(move || match fs::copy(&src, &t) {
            Ok(_) => Ok(File::open(&t)?.sync_data()?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(S3Error::NoSuchKey(missing)),
            Err(e) if e.kind() == io::ErrorKind::IsADirectory => Err(S3Error::NoSuchKey(missing)),
            Err(e) => Err(e.into()),
        })
        .await?;
        self.commit(tmp, bucket, key, cond).await
    }

    pub async fn delete(&self, bucket: &str, key: &str) -> S3Result<()> {
        let path = self.object_path(bucket, key)?;
        let bucket_dir = self.existing_bucket(bucket)?;
        let _guard = self.commit.lock().await;
        blocking(move || {
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_file() => fs::remove_file(&path)?,
                _ => return Ok(()), // S3 answers a delete of nothing with success
            }
            prune_empty_dirs(&path, &bucket_dir);
            Ok(())
        })
        .await
    }

    // ---- reads ---------------------------------------------------------------

    pub async fn head(&self, bucket: &str, key: &str) -> S3Result<ObjectMeta> {
        let path = self.object_path(bucket, key)?;
        let key = key.to_string();
        blocking(move || match fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(meta_of(&m)),
            Ok(_) => Err(S3Error::NoSuchKey(key)),
            Err(e) if missing(&e) => Err(S3Error::NoSuchKey(key)),
            Err(e) => Err(e.into()),
        })
        .await
    }

    /// Opens an object for reading; the metadata is that of the opened file,
    /// so a concurrent overwrite cannot mix two versions in one response.
    pub async fn open_object(&self, bucket: &str, key: &str) -> S3Result<(Arc<File>, ObjectMeta)> {
        let path = self.object_path(bucket, key)?;
        let key = key.to_string();
        blocking(move || {
            let file = match File::open(&path) {
                Ok(f) => f,
                Err(e) if missing(&e) => return Err(S3Error::NoSuchKey(key)),
                Err(e) => return Err(e.into()),
            };
            let m = file.metadata()?;
            if !m.is_file() {
                return Err(S3Error::NoSuchKey(key));
            }
            Ok((Arc::new(file), meta_of(&m)))
        })
        .await
    }

    /// The bytes `[start, end)` of an opened object, in blocks of 1 MiB.
    /// The file is this response's own handle, so its cursor is ours.
    pub fn read_range(
        file: Arc<File>,
        start: u64,
        end: u64,
    ) -> impl Stream<Item = io::Result<Bytes>> + Send {
        futures_util::stream::unfold((file, start), move |(file, pos)| async move {
            if pos >= end {
                return None;
            }
            let len = ((end - pos) as usize).min(IO_BLOCK);
            let f = file.clone();
            let r = tokio::task::spawn_blocking(move || {
                use std::io::{Read, Seek, SeekFrom};
                let mut handle: &File = &f;
                handle.seek(SeekFrom::Start(pos))?;
                // read_to_end fills spare capacity without zeroing it first.
                let mut buf = Vec::with_capacity(len);
                handle.take(len as u64).read_to_end(&mut buf)?;
                if buf.len() < len {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "object shrank while being read",
                    ));
                }
                Ok::<_, io::Error>(Bytes::from(buf))
            })
            .await
            .unwrap_or_else(|e| Err(io::Error::other(e)));
            match r {
                Ok(b) => Some((Ok(b), (file, pos + len as u64))),
                Err(e) => Some((Err(e), (file, end))),
            }
        })
    }

    pub async fn list(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        max_keys: usize,
    ) -> S3Result<Listing> {
        let dir = self.existing_bucket(bucket)?;
        let prefix = prefix.to_string();
        let delimiter = delimiter.filter(|d| !d.is_empty()).map(str::to_string);
        let after = after.map(str::to_string);
        blocking(move || {
            // Only the directory the prefix names can hold matches.
            let base = match prefix.rfind('/') {
                Some(i) => dir.join(&prefix[..i]),
                None => dir.clone(),
            };
            let mut keys = Vec::new();
            walk(&base, &dir, &mut keys)?;
            keys.retain(|(k, _)| k.starts_with(prefix.as_str()));
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            let mut listing = Listing {
                objects: Vec::new(),
                common_prefixes: Vec::new(),
                next: None,
            };
            let mut count = 0usize;
            let mut last: Option<String> = None;
            for (key, meta) in keys {
                let entry = delimiter.as_ref().and_then(|d| {
                    key[prefix.len()..]
                        .find(d.as_str())
                        .map(|i| key[..prefix.len() + i + d.len()].to_string())
                });
                let name = entry.clone().unwrap_or_else(|| key.clone());
                if after.as_deref().is_some_and(|a| name.as_str() <= a)
                    || last.as_deref() == Some(name.as_str())
                {
                    continue;
                }
                if count == max_keys {
                    listing.next = last;
                    return Ok(listing);
                }
                match entry {
                    Some(cp) => listing.common_prefixes.push(cp),
                    None => listing.objects.push((key, meta)),
                }
                count += 1;
                last = Some(name);
            }
            Ok(listing)
        })
        .await
    }
}

fn commit_file(
    staged: &Path,
    bucket_dir: &Path,
    dest: &Path,
    key: &str,
    cond: &WriteCondition,
) -> S3Result<ObjectMeta> {
    let current = match fs::metadata(dest) {
        Ok(m) if m.is_file() => Some(meta_of(&m)),
        Ok(_) => {
            return Err(S3Error::KeyConflict(format!(
                "key {key:?} is a prefix of other keys; this file-backed server cannot store both"
            )))
        }
        Err(_) => None,
    };
    match (cond, &current) {
        (WriteCondition::Always, _) => {}
        (WriteCondition::Absent, None) => {}
        (WriteCondition::Absent, Some(_)) => return Err(S3Error::PreconditionFailed),
        (WriteCondition::Matches(_), None) => return Err(S3Error::NoSuchKey(key.to_string())),
        (WriteCondition::Matches(e), Some(m)) if etag_eq(e, &m.etag) => {}
        (WriteCondition::Matches(_), Some(_)) => return Err(S3Error::PreconditionFailed),
    }
    if let Some(parent) = dest.parent() {
        if let Err(e) = fs::create_dir_all(parent) {
            // A file where a directory must go: key "a" exists and this is "a/b".
            let mut p = parent;
            while p != bucket_dir {
                if p.is_file() {
                    return Err(S3Error::KeyConflict(format!(
                        "key {key:?} lies under another object's key; this file-backed server cannot store both"
                    )));
                }
                match p.parent() {
                    Some(q) => p = q,
                    None => break,
                }
            }
            return Err(e.into());
        }
    }
    fs::rename(staged, dest)?;
    if let Some(parent) = dest.parent() {
        File::open(parent)?.sync_all()?; // the rename itself is durable too
    }
    Ok(meta_of(&fs::metadata(dest)?))
}

/// Removes the directories a deleted key leaves empty, up to the bucket.
fn prune_empty_dirs(path: &Path, bucket_dir: &Path) {
    let mut p = path.parent();
    while let Some(dir) = p {
        if dir == bucket_dir || !dir.starts_with(bucket_dir) || fs::remove_dir(dir).is_err() {
            break;
        }
        p = dir.parent();
    }
}

/// Nothing there: no such file, or a file where a directory was expected.
fn missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn walk(dir: &Path, bucket_dir: &Path, out: &mut Vec<(String, ObjectMeta)>) -> S3Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if missing(&e) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for e in entries {
        let e = e?;
        let ft = e.file_type()?;
        let path = e.path();
        if ft.is_dir() {
            walk(&path, bucket_dir, out)?;
        } else if ft.is_file() {
            let Ok(rel) = path.strip_prefix(bucket_dir) else {
                continue;
            };
            let Some(key) = rel.to_str() else { continue };
            match e.metadata() {
                Ok(m) => out.push((key.to_string(), meta_of(&m))),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {} // deleted meanwhile
                Err(err) => return Err(err.into()),
            }
        }
    }
    Ok(())
}
