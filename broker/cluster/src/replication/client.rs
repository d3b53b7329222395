//! The inter-broker client: one Kafka protocol connection from this broker
//! to another (size-prefixed frames, request header v1/v2), used by the
//! replica fetcher. Requests are encoded and responses decoded with the
//! `kafka-protocol` crate; a response frame larger than the bound given at
//! connect time is refused before it is read, so a misbehaving peer costs
//! bounded memory.
//!
//! It owns one socket and its framing; it never decides what to ask.
//! [`BrokerClientPool`] keeps one such connection per broker for callers
//! that send now and then (transaction markers, transaction verification).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("connecting to broker {node} at {addr}: {source}")]
    Connect {
        node: i32,
        addr: String,
        source: std::io::Error,
    },
    #[error("broker {node}: {source}")]
    Io { node: i32, source: std::io::Error },
    #[error("broker {node} did not answer within {timeout:?}")]
    Timeout { node: i32, timeout: Duration },
    #[error("broker {node} sent a {size}-byte response; the limit is {limit}")]
    TooLarge {
        node: i32,
        size: usize,
        limit: usize,
    },
    #[error("broker {node}: cannot encode or decode {what}: {message}")]
    Codec {
        node: i32,
        what: &'static str,
        message: String,
    },
    #[error("broker {node} answered correlation id {got}, expected {expected}")]
    Correlation { node: i32, expected: i32, got: i32 },
}

/// A connection to broker `node`.
#[derive(Debug)]
pub struct BrokerClient {
    node: i32,
    stream: TcpStream,
    next_correlation: i32,
    client_id: StrBytes,
    max_response_bytes: usize,
}

impl BrokerClient {
    /// Connects to `host:port` (broker `node`) within `timeout`.
    pub async fn connect(
        node: i32,
        host: &str,
        port: i32,
        client_id: String,
        max_response_bytes: usize,
        timeout: Duration,
    ) -> Result<Self, ClientError> {
        let addr = format!("{host}:{port}");
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(&addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => return Err(ClientError::Connect { node, addr, source }),
            Err(_) => return Err(ClientError::Timeout { node, timeout }),
        };
        let _ = stream.set_nodelay(true);
        Ok(BrokerClient {
            node,
            stream,
            next_correlation: 1,
            client_id: StrBytes::from_string(client_id),
            max_response_bytes,
        })
    }

    /// Sends `req` at `version` and waits (up to `timeout`) for its answer.
    /// After an error the connection is not to be reused.
    pub async fn send<R: Request>(
        &mut self,
        req: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, ClientError> {
        let node = self.node;
        let correlation_id = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1);
        let mut header = RequestHeader::default();
        header.request_api_key = R::KEY;
        header.request_api_version = version;
        header.correlation_id = correlation_id;
        header.client_id = Some(self.client_id.clone());
        let mut body = BytesMut::with_capacity(256);
        body.put_i32(0);
        header
            .encode(&mut body, R::header_version(version))
            .map_err(|e| codec(node, "request header", e))?;
        req.encode(&mut body, version)
            .map_err(|e| codec(node, "request", e))?;
        let size = (body.len() - 4) as i32;
        body[..4].copy_from_slice(&size.to_be_bytes());
        let exchange = async {
            self.stream.write_all(&body).await?;
            let size = self.stream.read_i32().await?;
            Ok::<i32, std::io::Error>(size)
        };
        let size = match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => return Err(ClientError::Io { node, source }),
            Err(_) => return Err(ClientError::Timeout { node, timeout }),
        };
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size > self.max_response_bytes {
            return Err(ClientError::TooLarge {
                node,
                size,
                limit: self.max_response_bytes,
            });
        }
        let mut frame = vec![0u8; size];
        match tokio::time::timeout(timeout, self.stream.read_exact(&mut frame)).await {
            Ok(Ok(_)) => {}
            Ok(Err(source)) => return Err(ClientError::Io { node, source }),
            Err(_) => return Err(ClientError::Timeout { node, timeout }),
        }
        let mut frame = Bytes::from(frame);
        let header = ResponseHeader::decode(
            &mut frame,
            <R::Response as HeaderVersion>::header_version(version),
        )
        .map_err(|e| codec(node, "response header", e))?;
        if header.correlation_id != correlation_id {
            return Err(ClientError::Correlation {
                node,
                expected: correlation_id,
                got: header.correlation_id,
            });
        }
        let response =
            R::Response::decode(&mut frame, version).map_err(|e| codec(node, "response", e))?;
        if frame.has_remaining() {
            tracing::debug!(
                node,
                api_key = R::KEY,
                extra = frame.remaining(),
                "response longer than its fields"
            );
        }
        Ok(response)
    }
}

/// One connection per broker, opened on first use, used one request at a
/// time (requests to different brokers go in parallel), and dropped after
/// an error so the next request reconnects.
#[derive(Debug)]
pub struct BrokerClientPool {
    client_id: String,
    max_response_bytes: usize,
    connect_timeout: Duration,
    clients: std::sync::Mutex<HashMap<i32, Arc<tokio::sync::Mutex<Option<BrokerClient>>>>>,
}

/// Why a pooled request got no answer.
#[derive(Debug, Error)]
pub enum PoolError {
    /// The broker's address is unknown (`address` said why).
    #[error("{0}")]
    NoAddress(String),
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl BrokerClientPool {
    pub fn new(client_id: String, max_response_bytes: usize, connect_timeout: Duration) -> Self {
        BrokerClientPool {
            client_id,
            max_response_bytes,
            connect_timeout,
            clients: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Sends `req` at `version` to broker `node` and waits up to `timeout`
    /// for the answer. `address` (host, port) is asked only to connect.
    pub async fn send<R: Request>(
        &self,
        node: i32,
        address: impl FnOnce() -> Result<(String, i32), String>,
        req: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, PoolError> {
        let slot = self
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(node)
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        let mut client = match slot.take() {
            Some(c) => c,
            None => {
                let (host, port) = address().map_err(PoolError::NoAddress)?;
                BrokerClient::connect(
                    node,
                    &host,
                    port,
                    self.client_id.clone(),
                    self.max_response_bytes,
                    self.connect_timeout,
                )
                .await?
            }
        };
        let resp = client.send(req, version, timeout).await?;
        *slot = Some(client);
        Ok(resp)
    }
}

fn codec(node: i32, what: &'static str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Codec {
        node,
        what,
        message: e.to_string(),
    }
}
