//! The CLI's Kafka protocol client: one connection per broker, API
//! versions negotiated with ApiVersions, requests routed to partition
//! leaders and group coordinators from Metadata and FindCoordinator. It
//! speaks only the Kafka protocol, so the CLI works against any Kafka
//! broker, not only Strata.
//!
//! Owns connections and framing. It never trusts a broker's answer with
//! memory: a response frame larger than `MAX_RESPONSE_BYTES` is refused
//! before it is read, so the decoder only ever sees a bounded buffer.

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use kafka_protocol::ResponseError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response the CLI reads (a Fetch is capped well below it).
pub const MAX_RESPONSE_BYTES: usize = 128 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CLIENT_ID: &str = "strata-cli";

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("connecting to {0} timed out")]
    ConnectTimeout(String),
    #[error("talking to {addr}: {source}")]
    Io {
        addr: String,
        source: std::io::Error,
    },
    #[error("{addr} did not answer within {secs} s")]
    Timeout { addr: String, secs: u64 },
    #[error("{addr} sent a malformed answer: {message}")]
    Protocol { addr: String, message: String },
    #[error("{addr} does not support {api} at a version this CLI speaks")]
    Unsupported { addr: String, api: &'static str },
    #[error("{what}: {name}{}", message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    Kafka {
        what: String,
        code: i16,
        name: String,
        message: Option<String>,
    },
    #[error("{0}")]
    Other(String),
}

impl ClientError {
    pub fn kafka(what: impl Into<String>, code: i16, message: Option<&str>) -> Self {
        ClientError::Kafka {
            what: what.into(),
            code,
            name: strata_protocol::error_names::error_name(code).to_string(),
            message: message.filter(|m| !m.is_empty()).map(str::to_string),
        }
    }

    /// The Kafka error code, when the broker answered with one.
    pub fn code(&self) -> Option<i16> {
        match self {
            ClientError::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// One connection to one broker.
struct Conn {
    addr: String,
    stream: TcpStream,
    correlation_id: i32,
    /// API key -> (min, max) version the broker supports.
    versions: HashMap<i16, (i16, i16)>,
}

impl Conn {
    async fn open(addr: &str) -> Result<Conn> {
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => {
                return Err(ClientError::Connect {
                    addr: addr.to_string(),
                    source,
                })
            }
            Err(_) => return Err(ClientError::ConnectTimeout(addr.to_string())),
        };
        let _ = stream.set_nodelay(true);
        let mut c = Conn {
            addr: addr.to_string(),
            stream,
            correlation_id: 0,
            versions: HashMap::new(),
        };
        // v0 is understood by every broker.
        let r: ApiVersionsResponse = c.send_at(ApiVersionsRequest::default(), 0).await?;
        if r.error_code != 0 {
            return Err(ClientError::kafka(
                format!("ApiVersions to {addr}"),
                r.error_code,
                None,
            ));
        }
        c.versions = r
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        Ok(c)
    }

    /// The highest version both sides speak, up to `ours`.
    fn version<R: Request>(&self, api: &'static str, ours: i16) -> Result<i16> {
        match self.versions.get(&R::KEY) {
            Some((min, max)) if *min <= ours => Ok(ours.min(*max)),
            _ => Err(ClientError::Unsupported {
                addr: self.addr.clone(),
                api,
            }),
        }
    }

    async fn send_at<R: Request>(&mut self, req: R, version: i16) -> Result<R::Response> {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let mut header = RequestHeader::default();
        header.request_api_key = R::KEY;
        header.request_api_version = version;
        header.correlation_id = self.correlation_id;
        header.client_id = Some(StrBytes::from_static_str(CLIENT_ID));
        let mut buf = BytesMut::with_capacity(256);
        buf.put_i32(0);
        let proto = |e: anyhow::Error, addr: &str| ClientError::Protocol {
            addr: addr.to_string(),
            message: format!("encoding the request: {e}"),
        };
        header
            .encode(&mut buf, R::header_version(version))
            .map_err(|e| proto(e, &self.addr))?;
        req.encode(&mut buf, version)
            .map_err(|e| proto(e, &self.addr))?;
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        let addr = self.addr.clone();
        let io = |source| ClientError::Io {
            addr: addr.clone(),
            source,
        };
        let exchange = async {
            self.stream.write_all(&buf).await.map_err(io)?;
            let size = self.stream.read_i32().await.map_err(io)?;
            if size < 0 || size as usize > MAX_RESPONSE_BYTES {
                return Err(ClientError::Protocol {
                    addr: addr.clone(),
                    message: format!(
                        "a response of {size} bytes (at most {MAX_RESPONSE_BYTES} are read)"
                    ),
                });
            }
            let mut body = vec![0u8; size as usize];
            self.stream.read_exact(&mut body).await.map_err(io)?;
            Ok(Bytes::from(body))
        };
        let mut body = match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(ClientError::Timeout {
                    addr: self.addr.clone(),
                    secs: REQUEST_TIMEOUT.as_secs(),
                })
            }
        };
        let malformed = |m: String| ClientError::Protocol {
            addr: self.addr.clone(),
            message: m,
        };
        let rh = ResponseHeader::decode(&mut body, R::Response::header_version(version))
            .map_err(|e| malformed(format!("response header: {e}")))?;
        if rh.correlation_id != self.correlation_id {
            return Err(malformed(format!(
                "correlation id {} for request {}",
                rh.correlation_id, self.correlation_id
            )));
        }
        R::Response::decode(&mut body, version).map_err(|e| malformed(format!("{e}")))
    }
}

/// A broker as Metadata names it.
#[derive(Debug, Clone)]
pub struct BrokerAddr {
    pub node_id: i32,
    pub addr: String,
    pub rack: Option<String>,
}

/// A client for a cluster, from one bootstrap address.
pub struct KafkaClient {
    bootstrap: String,
    conns: HashMap<i32, Conn>,
    bootstrap_conn: Option<Conn>,
    brokers: HashMap<i32, BrokerAddr>,
}

/// Highest versions the CLI speaks (each one's fields are set below).
pub mod max_version {
    pub const METADATA: i16 = 12;
    pub const CREATE_TOPICS: i16 = 7;
    pub const DELETE_TOPICS: i16 = 6;
    pub const DESCRIBE_CONFIGS: i16 = 4;
    pub const INCREMENTAL_ALTER_CONFIGS: i16 = 1;
    pub const LIST_GROUPS: i16 = 4;
    pub const DESCRIBE_GROUPS: i16 = 5;
    pub const FIND_COORDINATOR: i16 = 3;
    pub const OFFSET_FETCH: i16 = 7;
    pub const OFFSET_COMMIT: i16 = 8;
    pub const LIST_OFFSETS: i16 = 7;
    pub const PRODUCE: i16 = 9;
    pub const FETCH: i16 = 12;
    pub const INIT_PRODUCER_ID: i16 = 4;
}

impl KafkaClient {
    pub async fn connect(bootstrap: &str) -> Result<KafkaClient> {
        let mut last = None;
        for addr in bootstrap
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            match Conn::open(addr).await {
                Ok(c) => {
                    let mut k = KafkaClient {
                        bootstrap: addr.to_string(),
                        conns: HashMap::new(),
                        bootstrap_conn: Some(c),
                        brokers: HashMap::new(),
                    };
                    k.metadata(Some(&[])).await?;
                    return Ok(k);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| ClientError::Other("no --bootstrap-server given".into())))
    }

    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    pub fn brokers(&self) -> Vec<BrokerAddr> {
        let mut v: Vec<_> = self.brokers.values().cloned().collect();
        v.sort_by_key(|b| b.node_id);
        v
    }

    async fn conn(&mut self, node: Option<i32>) -> Result<&mut Conn> {
        let Some(node) = node else {
            return self
                .bootstrap_conn
                .as_mut()
                .ok_or_else(|| ClientError::Other("no connection".into()));
        };
        if !self.conns.contains_key(&node) {
            let addr = self
                .brokers
                .get(&node)
                .map(|b| b.addr.clone())
                .ok_or_else(|| {
                    ClientError::Other(format!("broker {node} is not in the cluster's metadata"))
                })?;
            let c = Conn::open(&addr).await?;
            self.conns.insert(node, c);
        }
        self.conns
            .get_mut(&node)
            .ok_or_else(|| ClientError::Other(format!("no connection to broker {node}")))
    }

    /// Sends `req` to `node` (None: the bootstrap broker) at the highest
    /// version both speak; `build` fills version-dependent fields.
    pub async fn send<R: Request>(
        &mut self,
        node: Option<i32>,
        api: &'static str,
        ours: i16,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(R::Response, i16)> {
        let c = self.conn(node).await?;
        let v = c.version::<R>(api, ours)?;
        let req = build(v);
        match c.send_at(req, v).await {
            Ok(r) => Ok((r, v)),
            Err(e) => {
                // A broken connection is reopened on the next request.
                if let Some(n) = node {
                    self.conns.remove(&n);
                }
                Err(e)
            }
        }
    }

    /// Metadata for `topics` (None: every topic; Some(&[]): brokers only).
    pub async fn metadata(&mut self, topics: Option<&[String]>) -> Result<MetadataResponse> {
        let (r, _) = self
            .send(None, "Metadata", max_version::METADATA, |_| {
                let mut req = MetadataRequest::default();
                req.topics = topics.map(|ts| {
                    ts.iter()
                        .map(|t| {
                            let mut rt = MetadataRequestTopic::default();
                            rt.name = Some(TopicName(StrBytes::from_string(t.clone())));
                            rt
                        })
                        .collect()
                });
                req.allow_auto_topic_creation = false;
                req
            })
            .await?;
        self.brokers = r
            .brokers
            .iter()
            .map(|b| {
                (
                    b.node_id.0,
                    BrokerAddr {
                        node_id: b.node_id.0,
                        addr: format!("{}:{}", b.host, b.port),
                        rack: b.rack.as_ref().map(|r| r.to_string()),
                    },
                )
            })
            .collect();
        Ok(r)
    }

    /// The broker coordinating `group`.
    pub async fn coordinator(&mut self, group: &str) -> Result<i32> {
        let mut last = None;
        for _ in 0..20 {
            let (r, _) = self
                .send(
                    None,
                    "FindCoordinator",
                    max_version::FIND_COORDINATOR,
                    |_| {
                        let mut req = FindCoordinatorRequest::default();
                        req.key = StrBytes::from_string(group.to_string());
                        req.key_type = 0;
                        req
                    },
                )
                .await?;
            if r.error_code == 0 {
                if !self.brokers.contains_key(&r.node_id.0) {
                    self.brokers.insert(
                        r.node_id.0,
                        BrokerAddr {
                            node_id: r.node_id.0,
                            addr: format!("{}:{}", r.host, r.port),
                            rack: None,
                        },
                    );
                }
                return Ok(r.node_id.0);
            }
            let retriable = r.error_code == ResponseError::CoordinatorNotAvailable.code()
                || r.error_code == ResponseError::CoordinatorLoadInProgress.code();
            last = Some(ClientError::kafka(
                format!("finding the coordinator of group {group}"),
                r.error_code,
                r.error_message.as_deref(),
            ));
            if !retriable {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(last.unwrap_or_else(|| ClientError::Other("no coordinator".into())))
    }
}

/// A partition and the broker that leads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLeader {
    pub topic: String,
    pub partition: i32,
    pub leader: i32,
}

impl KafkaClient {
    /// The partitions of `topics` with their leaders; an unknown topic is
    /// UNKNOWN_TOPIC_OR_PARTITION.
    pub async fn leaders(&mut self, topics: &[String]) -> Result<Vec<PartitionLeader>> {
        let md = self.metadata(Some(topics)).await?;
        let mut out = Vec::new();
        for t in &md.topics {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            if t.error_code != 0 {
                return Err(ClientError::kafka(
                    format!("topic {name}"),
                    t.error_code,
                    None,
                ));
            }
            for p in &t.partitions {
                out.push(PartitionLeader {
                    topic: name.clone(),
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                });
            }
        }
        out.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        Ok(out)
    }

    /// ListOffsets at `timestamp` (-2 earliest, -1 latest, or a time in
    /// ms) for each partition, asked of its leader: the offset, or -1 when
    /// no record is at or after the time.
    pub async fn list_offsets(
        &mut self,
        partitions: &[PartitionLeader],
        timestamp: i64,
    ) -> Result<HashMap<(String, i32), i64>> {
        use kafka_protocol::messages::list_offsets_request::{
            ListOffsetsPartition, ListOffsetsTopic,
        };
        let mut by_leader: HashMap<i32, Vec<&PartitionLeader>> = HashMap::new();
        for p in partitions {
            by_leader.entry(p.leader).or_default().push(p);
        }
        let mut out = HashMap::new();
        for (leader, parts) in by_leader {
            if leader < 0 {
                let p = parts[0];
                return Err(ClientError::kafka(
                    format!("{}-{}", p.topic, p.partition),
                    ResponseError::LeaderNotAvailable.code(),
                    None,
                ));
            }
            let (r, _) = self
                .send(
                    Some(leader),
                    "ListOffsets",
                    max_version::LIST_OFFSETS,
                    |_| {
                        let mut req = ListOffsetsRequest::default();
                        req.replica_id = BrokerId(-1);
                        let mut topics: Vec<ListOffsetsTopic> = Vec::new();
                        for p in &parts {
                            let i = match topics.iter().position(|t| t.name.0.as_str() == p.topic) {
                                Some(i) => i,
                                None => {
                                    let mut t = ListOffsetsTopic::default();
                                    t.name = TopicName(StrBytes::from_string(p.topic.clone()));
                                    topics.push(t);
                                    topics.len() - 1
                                }
                            };
                            let mut lp = ListOffsetsPartition::default();
                            lp.partition_index = p.partition;
                            lp.current_leader_epoch = -1;
                            lp.timestamp = timestamp;
                            topics[i].partitions.push(lp);
                        }
                        req.topics = topics;
                        req
                    },
                )
                .await?;
            for t in &r.topics {
                for p in &t.partitions {
                    if p.error_code != 0 {
                        return Err(ClientError::kafka(
                            format!("ListOffsets for {}-{}", t.name.0, p.partition_index),
                            p.error_code,
                            None,
                        ));
                    }
                    out.insert((t.name.0.to_string(), p.partition_index), p.offset);
                }
            }
        }
        // Every partition asked has its answer (callers index by them).
        if let Some(p) = partitions
            .iter()
            .find(|p| !out.contains_key(&(p.topic.clone(), p.partition)))
        {
            return Err(ClientError::Protocol {
                addr: format!("broker {}", p.leader),
                message: format!(
                    "ListOffsets answered nothing for {}-{}",
                    p.topic, p.partition
                ),
            });
        }
        Ok(out)
    }
}

/// Complete record batches at the front of `records` (a fetch may end in
/// a partial one).
pub fn complete_batches(records: &Bytes) -> Bytes {
    let mut pos = 0usize;
    while records.len() >= pos + 12 {
        let mut len = &records[pos + 8..pos + 12];
        let size = len.get_i32();
        if size < 0 {
            break;
        }
        let end = pos + 12 + size as usize;
        if end > records.len() {
            break;
        }
        pos = end;
    }
    records.slice(..pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_batch_at_the_end_is_dropped() {
        let mut b = BytesMut::new();
        for size in [20i32, 30] {
            b.put_i64(0);
            b.put_i32(size);
            b.put_bytes(1, size as usize);
        }
        let whole = b.len();
        b.put_i64(0);
        b.put_i32(100);
        b.put_bytes(1, 10);
        let b = b.freeze();
        assert_eq!(complete_batches(&b).len(), whole);
        assert_eq!(complete_batches(&b.slice(..5)).len(), 0);
    }
}
