//! `meta.properties` in Kafka's format: the cluster id and node id a data
//! directory belongs to. Reads and writes that one file, nothing else.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use uuid::Uuid;

use strata_common::durable_file::write_atomically;

const META_PROPERTIES: &str = "meta.properties";

/// Whether `dir` holds no broker data yet (no `meta.properties`).
pub fn is_fresh(data_dir: &Path) -> bool {
    !data_dir.join(META_PROPERTIES).exists()
}

/// Reads `meta.properties` (Kafka's format) or creates it with a new
/// cluster id. Returns the cluster id.
pub(crate) fn load_or_create(data_dir: &Path, node_id: i32) -> io::Result<String> {
    let path = data_dir.join(META_PROPERTIES);
    if let Ok(text) = fs::read_to_string(&path) {
        let props: BTreeMap<&str, &str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .collect();
        if let Some(id) = props.get("cluster.id") {
            return Ok(id.trim().to_string());
        }
    }
    let id = new_cluster_id();
    write(data_dir, &id, node_id)?;
    Ok(id)
}

/// A new cluster id in Kafka's form (22 characters, URL-safe base64).
pub fn new_cluster_id() -> String {
    base64_url(Uuid::new_v4().as_bytes())
}

pub fn write(data_dir: &Path, cluster_id: &str, node_id: i32) -> io::Result<()> {
    let text =
        format!("#Written by Strata\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n");
    write_atomically(&data_dir.join(META_PROPERTIES), text.as_bytes())
}

/// URL-safe base64 without padding, as Kafka encodes cluster ids.
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_id_is_22_chars_and_persists() {
        assert_eq!(base64_url(&[0u8; 16]).len(), 22);
        let dir = tempfile::tempdir().unwrap();
        assert!(is_fresh(dir.path()));
        let id = load_or_create(dir.path(), 3).unwrap();
        assert!(!is_fresh(dir.path()));
        assert_eq!(load_or_create(dir.path(), 3).unwrap(), id);
    }
}
