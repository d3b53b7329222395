//! `EtcdStore`: the cluster store on etcd v3, through etcd's JSON gateway
//! (`/v3/kv/*`, `/v3/lease/*`, `/v3/watch`) over plain HTTP with the
//! `reqwest` client the object store already links — no gRPC stack to
//! compile (docs/cluster-metadata.md says why). Keys and values travel
//! base64-encoded; 64-bit numbers as JSON strings.
//!
//! Several endpoints may be given: a request that cannot reach one (down,
//! timed out, no quorum behind it) is tried on the next. This module owns
//! the wire format only; it never interprets keys.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::store::{
    ClusterStore, Compare, KeyValue, LeaseId, Op, Revision, StoreError, TxnOutcome, WatchEvent,
    WatchStream,
};

/// How long one request may take on one endpoint before the next is tried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
const DEFAULT_PREFIX: &str = "/strata";

#[derive(Debug)]
pub(crate) struct EtcdStore {
    client: reqwest::Client,
    /// `http://host:port`, one per etcd member given.
    endpoints: Vec<String>,
    /// Prepended to every key, without a trailing slash.
    prefix: String,
    /// The endpoint that answered last.
    current: AtomicUsize,
}

impl EtcdStore {
    /// `etcd://HOST:PORT[,HOST:PORT...][/PREFIX]`.
    pub(crate) fn from_url(url: &str) -> Result<EtcdStore, StoreError> {
        let bad = |why: &str| {
            StoreError::Protocol(format!(
                "--metadata `{url}`: {why}; expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX]"
            ))
        };
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| bad("not an etcd:// URL"))?;
        let (hosts, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, DEFAULT_PREFIX),
        };
        let prefix = if prefix.is_empty() {
            DEFAULT_PREFIX
        } else {
            prefix
        };
        let mut endpoints = Vec::new();
        for h in hosts.split(',').filter(|h| !h.is_empty()) {
            let (host, port) = h
                .rsplit_once(':')
                .ok_or_else(|| bad("an endpoint lacks :PORT"))?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(bad("an endpoint is not HOST:PORT"));
            }
            endpoints.push(format!("http://{h}"));
        }
        if endpoints.is_empty() {
            return Err(bad("no endpoint"));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(1))
            .tcp_keepalive(Duration::from_secs(5))
            .build()
            .map_err(|e| StoreError::Protocol(format!("http client: {e}")))?;
        Ok(EtcdStore {
            client,
            endpoints,
            prefix: prefix.to_string(),
            current: AtomicUsize::new(0),
        })
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}/{}", self.prefix, key)
    }

    fn enc(&self, key: &str) -> String {
        B64.encode(self.full_key(key))
    }

    /// The end of the key range holding every key starting with `prefix`.
    fn range_end(&self, prefix: &str) -> String {
        let mut end = self.full_key(prefix).into_bytes();
        // Increment the last byte below 0xff (keys here are ASCII).
        while let Some(last) = end.pop() {
            if last < 0xff {
                end.push(last + 1);
                break;
            }
        }
        B64.encode(end)
    }

    /// POSTs `body` to `path`, trying each endpoint once from the last good.
    /// A transaction is tried on the next endpoint only if it could not be
    /// sent: once sent, a timeout leaves its outcome unknown, and running
    /// it again would report a committed write as a lost race.
    async fn call(&self, path: &str, body: &Value) -> Result<Value, StoreError> {
        let idempotent = path != "/v3/kv/txn";
        let n = self.endpoints.len();
        let start = self.current.load(Ordering::Relaxed);
        let mut last_err = String::new();
        for i in 0..n {
            let ix = (start + i) % n;
            let url = format!("{}{}", self.endpoints[ix], path);
            let sent = self
                .client
                .post(&url)
                .timeout(REQUEST_TIMEOUT)
                .body(body.to_string())
                .send()
                .await;
            let resp = match sent {
                Ok(r) => r,
                Err(e) if idempotent || e.is_connect() => {
                    last_err = format!("{url}: {e}");
                    continue;
                }
                Err(e) => return Err(StoreError::OutcomeUnknown(format!("{url}: {e}"))),
            };
            let status = resp.status();
            let text = match resp.text().await {
                Ok(t) => t,
                Err(e) if idempotent => {
                    last_err = format!("{url}: {e}");
                    continue;
                }
                Err(e) => return Err(StoreError::OutcomeUnknown(format!("{url}: {e}"))),
            };
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| StoreError::Protocol(format!("{url}: {e}: {text:.200}")))?;
            if status.is_success() {
                self.current.store(ix, Ordering::Relaxed);
                return Ok(v);
            }
            let msg = v
                .get("message")
                .or_else(|| v.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if msg.contains("lease not found") {
                return Err(StoreError::LeaseExpired(lease_in(body)));
            }
            if msg.contains("compacted") {
                return Err(StoreError::Compacted(0));
            }
            // No leader, timed out, too many requests: another member may
            // do — except a transaction that may have been applied.
            if !idempotent && !msg.contains("no leader") {
                return Err(StoreError::OutcomeUnknown(format!(
                    "{url}: {status}: {msg}"
                )));
            }
            last_err = format!("{url}: {status}: {msg}");
        }
        Err(StoreError::Unavailable(last_err))
    }

    fn kvs(&self, v: &Value) -> Result<Vec<KeyValue>, StoreError> {
        match v.get("kvs").and_then(Value::as_array) {
            Some(a) => a.iter().map(|kv| decode_kv(&self.prefix, kv)).collect(),
            None => Ok(Vec::new()),
        }
    }

    fn compare_json(&self, c: &Compare) -> Value {
        match c {
            Compare::Absent(k) => json!({
                "key": self.enc(k), "target": "CREATE", "result": "EQUAL",
                "create_revision": "0"
            }),
            Compare::ModRevision(k, r) => json!({
                "key": self.enc(k), "target": "MOD", "result": "EQUAL",
                "mod_revision": r.to_string()
            }),
            Compare::CreateRevision(k, r) => json!({
                "key": self.enc(k), "target": "CREATE", "result": "EQUAL",
                "create_revision": r.to_string()
            }),
        }
    }

    fn op_json(&self, op: &Op) -> Value {
        match op {
            Op::Put { key, value, lease } => json!({"request_put": {
                "key": self.enc(key), "value": B64.encode(value), "lease": lease.to_string()
            }}),
            Op::Delete { key } => json!({"request_delete_range": {"key": self.enc(key)}}),
            Op::DeletePrefix { prefix } => json!({"request_delete_range": {
                "key": self.enc(prefix), "range_end": self.range_end(prefix)
            }}),
        }
    }
}

fn decode_kv(prefix: &str, v: &Value) -> Result<KeyValue, StoreError> {
    let full = decode_b64(v.get("key"))?;
    let full = String::from_utf8(full)
        .map_err(|_| StoreError::Protocol("a key is not UTF-8".to_string()))?;
    let key = full
        .strip_prefix(prefix)
        .and_then(|k| k.strip_prefix('/'))
        .unwrap_or(&full)
        .to_string();
    Ok(KeyValue {
        key,
        value: decode_b64(v.get("value"))?,
        create_revision: int(v.get("create_revision")),
        mod_revision: int(v.get("mod_revision")),
        lease: int(v.get("lease")),
    })
}

fn decode_event(prefix: &str, e: &Value) -> Result<WatchEvent, StoreError> {
    let kv = e
        .get("kv")
        .ok_or_else(|| StoreError::Protocol("watch event without kv".to_string()))?;
    let kv = decode_kv(prefix, kv)?;
    Ok(match e.get("type").and_then(Value::as_str) {
        Some("DELETE") => WatchEvent::Delete {
            key: kv.key,
            mod_revision: kv.mod_revision,
        },
        _ => WatchEvent::Put(kv),
    })
}

/// Decodes one message of a watch stream into its events.
fn watch_message(prefix: &str, line: &[u8]) -> Result<Vec<WatchEvent>, StoreError> {
    let v: Value = serde_json::from_slice(line)
        .map_err(|e| StoreError::Protocol(format!("watch message: {e}")))?;
    if let Some(err) = v.get("error") {
        return Err(StoreError::Unavailable(format!("watch: {err}")));
    }
    let r = v.get("result").unwrap_or(&v);
    let compacted = int(r.get("compact_revision"));
    if compacted > 0 {
        return Err(StoreError::Compacted(compacted));
    }
    if r.get("canceled").and_then(Value::as_bool) == Some(true) {
        return Err(StoreError::Unavailable("watch canceled".to_string()));
    }
    match r.get("events").and_then(Value::as_array) {
        Some(events) => events.iter().map(|e| decode_event(prefix, e)).collect(),
        None => Ok(Vec::new()),
    }
}

fn lease_in(body: &Value) -> LeaseId {
    int(body.get("ID"))
}

/// etcd's JSON gateway writes 64-bit integers as strings and leaves zero
/// values out.
fn int(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

fn decode_b64(v: Option<&Value>) -> Result<Vec<u8>, StoreError> {
    match v.and_then(Value::as_str) {
        Some(s) => B64
            .decode(s)
            .map_err(|e| StoreError::Protocol(format!("bad base64 from etcd: {e}"))),
        None => Ok(Vec::new()),
    }
}

fn revision_of(v: &Value) -> Revision {
    int(v.get("header").and_then(|h| h.get("revision")))
}

#[async_trait]
impl ClusterStore for EtcdStore {
    fn describe(&self) -> String {
        let hosts: Vec<&str> = self
            .endpoints
            .iter()
            .map(|e| e.trim_start_matches("http://"))
            .collect();
        format!("etcd://{}{}", hosts.join(","), self.prefix)
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        let v = self
            .call("/v3/kv/range", &json!({"key": self.enc(key)}))
            .await?;
        Ok(self.kvs(&v)?.into_iter().next())
    }

    async fn list(&self, prefix: &str) -> Result<(Vec<KeyValue>, Revision), StoreError> {
        let body = json!({"key": self.enc(prefix), "range_end": self.range_end(prefix)});
        let v = self.call("/v3/kv/range", &body).await?;
        Ok((self.kvs(&v)?, revision_of(&v)))
    }

    async fn txn(&self, compares: Vec<Compare>, ops: Vec<Op>) -> Result<TxnOutcome, StoreError> {
        let body = json!({
            "compare": compares.iter().map(|c| self.compare_json(c)).collect::<Vec<_>>(),
            "success": ops.iter().map(|o| self.op_json(o)).collect::<Vec<_>>(),
        });
        let v = self.call("/v3/kv/txn", &body).await?;
        Ok(TxnOutcome {
            succeeded: v.get("succeeded").and_then(Value::as_bool).unwrap_or(false),
            revision: revision_of(&v),
        })
    }

    async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, StoreError> {
        let secs = ttl.as_secs().max(1);
        let v = self
            .call("/v3/lease/grant", &json!({"TTL": secs.to_string()}))
            .await?;
        match int(v.get("ID")) {
            0 => Err(StoreError::Protocol(format!("lease grant without ID: {v}"))),
            id => Ok(id),
        }
    }

    async fn keep_alive(&self, lease: LeaseId) -> Result<(), StoreError> {
        let v = self
            .call("/v3/lease/keepalive", &json!({"ID": lease.to_string()}))
            .await?;
        let r = v.get("result").unwrap_or(&v);
        // An expired or revoked lease comes back with no TTL.
        if int(r.get("TTL")) <= 0 {
            return Err(StoreError::LeaseExpired(lease));
        }
        Ok(())
    }

    async fn revoke_lease(&self, lease: LeaseId) -> Result<(), StoreError> {
        match self
            .call("/v3/lease/revoke", &json!({"ID": lease.to_string()}))
            .await
        {
            Ok(_) | Err(StoreError::LeaseExpired(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StoreError> {
        let body = json!({"create_request": {
            "key": self.enc(prefix),
            "range_end": self.range_end(prefix),
            "start_revision": from.to_string(),
        }});
        let n = self.endpoints.len();
        let start = self.current.load(Ordering::Relaxed);
        let mut last_err = String::new();
        let mut resp = None;
        for i in 0..n {
            let url = format!("{}/v3/watch", self.endpoints[(start + i) % n]);
            // Without a leader behind it, a member's watch would stay open
            // and silent; etcd cancels it instead when asked to.
            let sent = self
                .client
                .post(&url)
                .header("Grpc-Metadata-hasleader", "true")
                .body(body.to_string())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => {
                    resp = Some(r);
                    break;
                }
                Ok(r) => last_err = format!("{url}: {}", r.status()),
                Err(e) => last_err = format!("{url}: {e}"),
            }
        }
        let Some(mut resp) = resp else {
            return Err(StoreError::Unavailable(last_err));
        };
        let (tx, rx) = mpsc::channel(256);
        let prefix = self.prefix.clone();
        tokio::spawn(async move {
            let mut buf: Vec<u8> = Vec::new();
            loop {
                let chunk = tokio::select! {
                    c = resp.chunk() => c,
                    _ = tx.closed() => return,
                };
                let chunk = match chunk {
                    Ok(Some(c)) => c,
                    Ok(None) => {
                        let _ = tx
                            .send(Err(StoreError::Unavailable("watch stream ended".into())))
                            .await;
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(StoreError::Unavailable(e.to_string()))).await;
                        return;
                    }
                };
                buf.extend_from_slice(&chunk);
                while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let msg = watch_message(&prefix, &line);
                    let stop = msg.is_err();
                    if let Ok(events) = &msg {
                        if events.is_empty() {
                            continue;
                        }
                    }
                    if tx.send(msg).await.is_err() || stop {
                        return;
                    }
                }
                // A message larger than any metadata write: the stream is broken.
                if buf.len() > 64 << 20 {
                    let _ = tx
                        .send(Err(StoreError::Protocol("watch message too large".into())))
                        .await;
                    return;
                }
            }
        });
        Ok(rx)
    }
}
