//! Writing small files so a crash leaves the old content or the new one,
//! never a mix: checkpoints, snapshots, topic metadata, `meta.properties`.
//! Used by the log, the config store and the broker's identity files; it
//! knows none of them.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Replaces `path` with `bytes` so that a crash leaves either the old or
/// the new content.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with_mode(path, bytes, 0o666)
}

/// As [`write_atomically`], readable and writable by the owner only
/// (mode 0600): for secrets such as stored credentials.
pub fn write_atomically_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with_mode(path, bytes, 0o600)
}

/// The new file gets `mode` (less the umask); a temporary file a crash
/// left is replaced, not reused, so it cannot lend its mode.
fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Makes a directory's entries (files created, renamed or removed in it)
/// durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}
