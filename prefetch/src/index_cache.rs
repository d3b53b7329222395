//! A small bounded cache of segment index objects (`.index`,
//! `.timeindex`), oldest out first. Indexes are read on every remote
//! lookup and are tiny next to segments, so they stay in memory apart from
//! the chunk cache.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use bytes::Bytes;

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<String, Bytes>,
    order: VecDeque<String>,
    bytes: usize,
}

#[derive(Debug)]
pub struct IndexCache {
    inner: Mutex<Inner>,
    budget: usize,
}

impl IndexCache {
    pub fn new(budget: usize) -> Self {
        IndexCache {
            inner: Mutex::new(Inner::default()),
            budget,
        }
    }

    pub fn get(&self, key: &str) -> Option<Bytes> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .get(key)
            .cloned()
    }

    pub fn put(&self, key: &str, value: Bytes) {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if value.len() > self.budget || c.map.contains_key(key) {
            return;
        }
        c.bytes += value.len();
        c.map.insert(key.to_string(), value);
        c.order.push_back(key.to_string());
        while c.bytes > self.budget {
            let Some(old) = c.order.pop_front() else {
                break;
            };
            if let Some(v) = c.map.remove(&old) {
                c.bytes -= v.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_over_budget() {
        let c = IndexCache::new(10);
        c.put("a", Bytes::from_static(b"12345"));
        c.put("b", Bytes::from_static(b"12345"));
        c.put("c", Bytes::from_static(b"1"));
        assert!(c.get("a").is_none());
        assert!(c.get("b").is_some() && c.get("c").is_some());
        c.put("huge", Bytes::from(vec![0u8; 11]));
        assert!(c.get("huge").is_none());
    }
}
