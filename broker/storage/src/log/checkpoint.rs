//! Offset checkpoint files in Kafka's text format (`recovery-point-offset-
//! checkpoint`, `log-start-offset-checkpoint`): a version line, a count line,
//! then `topic partition offset` lines. Written atomically (temp file,
//! fsync, rename, fsync directory). Knows nothing about logs.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;

pub type Offsets = HashMap<(String, i32), i64>;

pub fn read(path: &Path) -> io::Result<Offsets> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Offsets::new()),
        Err(e) => return Err(e),
    };
    let bad = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    let mut lines = text.lines();
    if lines.next() != Some("0") {
        return Err(bad("unsupported checkpoint version"));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| bad("missing entry count"))?;
    // The count is the file's word: each entry takes at least 6 bytes, so
    // never reserve for more than the text could hold.
    let mut out = Offsets::with_capacity(count.min(text.len() / 6));
    for line in lines.take(count) {
        let mut parts = line.rsplitn(3, ' ');
        let (Some(off), Some(part), Some(topic)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("malformed entry"));
        };
        let off: i64 = off.parse().map_err(|_| bad("malformed offset"))?;
        let part: i32 = part.parse().map_err(|_| bad("malformed partition"))?;
        out.insert((topic.to_string(), part), off);
    }
    if out.len() != count {
        return Err(bad("entry count mismatch"));
    }
    Ok(out)
}

pub fn write(path: &Path, offsets: &Offsets) -> io::Result<()> {
    let mut entries: Vec<_> = offsets.iter().collect();
    entries.sort();
    let mut text = format!("0\n{}\n", entries.len());
    for ((topic, partition), offset) in entries {
        text.push_str(&format!("{topic} {partition} {offset}\n"));
    }
    strata_common::durable_file::write_atomically(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("recovery-point-offset-checkpoint");
        let mut o = Offsets::new();
        o.insert(("orders".into(), 0), 10);
        o.insert(("a-b".into(), 11), 7);
        write(&p, &o).unwrap();
        assert_eq!(read(&p).unwrap(), o);
        assert!(read(&dir.path().join("none")).unwrap().is_empty());
        fs::write(&p, "0\n2\nx 0 1\n").unwrap();
        assert!(read(&p).is_err());
    }

    /// A count the file cannot back is an error, not a reservation (it
    /// used to size the map from it: a corrupt file aborted the start).
    #[test]
    fn a_huge_entry_count_is_refused_without_allocating() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("recovery-point-offset-checkpoint");
        fs::write(&p, "0\n99999999999999\nt 0 5\n").unwrap();
        assert!(read(&p).is_err());
    }
}
