//! One client connection: reads size-prefixed frames, decodes the request
//! header, runs each request's ordered phase in arrival order (appends,
//! admin), lets the rest (fsync waits, fetch long polls) overlap, and writes
//! responses back in request order. Clients pipeline several requests per
//! connection and rely on both orders.
//!
//! A frame over `socket.request.max.bytes`, a negative size or an
//! undecodable header closes this connection only, with a log line.
//! Responses waiting for the socket hold at most
//! [`CONNECTION_RESPONSE_BUDGET`](dispatch::CONNECTION_RESPONSE_BUDGET)
//! bytes of fetched records: a client that stops reading stops its fetches.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tracing::Instrument;

use super::dispatch::{self, Outgoing, Prepared};
use super::Broker;
use crate::metrics::requests::REQUESTS;

/// Requests a single connection may have in flight before reading pauses.
const MAX_IN_FLIGHT: usize = 64;

type Pending = oneshot::Receiver<Option<Outgoing>>;

pub async fn handle_connection(
    stream: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let (mut reader, writer) = stream.into_split();
    let (tx, rx) = mpsc::channel::<Pending>(MAX_IN_FLIGHT);
    let (closed_tx, mut closed_rx) = oneshot::channel::<()>();
    let writer_task = tokio::spawn(write_responses(writer, rx, closed_tx, peer));
    let max = broker.max_request_bytes;
    let response_budget = Arc::new(Semaphore::new(dispatch::CONNECTION_RESPONSE_BUDGET));
    loop {
        let size = tokio::select! {
            r = reader.read_i32() => match r {
                Ok(n) => n,
                Err(_) => break, // EOF or reset
            },
            _ = &mut closed_rx => break,
            _ = shutdown.changed() => break,
        };
        if size < 0 || size as usize > max {
            tracing::warn!(%peer, size, limit = max,
                "closing connection: request size is negative or exceeds socket.request.max.bytes");
            break;
        }
        let mut frame = BytesMut::zeroed(size as usize);
        if reader.read_exact(&mut frame).await.is_err() {
            break;
        }
        let frame: Bytes = frame.freeze();
        let read_at = std::time::Instant::now();
        let request_bytes = frame.len() + 4;
        let request = match dispatch::Request::parse(frame) {
            Ok(mut r) => {
                r.peer = peer.ip().to_string();
                r.response_budget = Some(response_budget.clone());
                r
            }
            Err(e) => {
                tracing::warn!(%peer, error = %e, "closing connection: malformed request");
                break;
            }
        };
        let (done_tx, done_rx) = oneshot::channel();
        if tx.send(done_rx).await.is_err() {
            break;
        }
        let span = tracing::debug_span!("request", api = ?request.api_key, version = request.version,
            correlation_id = request.correlation_id, %peer);
        let measured = Measured {
            api: request.api_key,
            request_bytes,
            read_at,
        };
        // The ordered phase runs here, before the next request is read.
        match dispatch::prepare(request, &broker)
            .instrument(span.clone())
            .await
        {
            Prepared::Ready(result) => {
                if !complete(
                    result.map(|r| r.map(Outgoing::from)),
                    done_tx,
                    peer,
                    measured,
                ) {
                    break;
                }
            }
            Prepared::Deferred(rest) => {
                tokio::spawn(
                    async move {
                        complete(rest.await, done_tx, peer, measured);
                    }
                    .instrument(span),
                );
            }
        }
    }
    drop(tx);
    let _ = writer_task.await;
}

/// What the request metrics need of a request.
struct Measured {
    api: kafka_protocol::messages::ApiKey,
    request_bytes: usize,
    read_at: std::time::Instant,
}

/// Hands a response to the writer. On error, dropping `done_tx` makes the
/// writer close the connection after the responses that precede this one.
/// Returns false if the connection must close.
fn complete(
    result: Result<Option<Outgoing>, dispatch::DispatchError>,
    done_tx: oneshot::Sender<Option<Outgoing>>,
    peer: SocketAddr,
    m: Measured,
) -> bool {
    let response_bytes = match &result {
        Ok(r) => Some(r.as_ref().map_or(0, |o| o.frame.len())),
        Err(_) => None,
    };
    REQUESTS.observe(m.api, m.request_bytes, response_bytes, m.read_at.elapsed());
    match result {
        Ok(response) => {
            let _ = done_tx.send(response);
            true
        }
        Err(e) => {
            tracing::warn!(%peer, error = %e, "closing connection: request rejected");
            false
        }
    }
}

async fn write_responses(
    writer: tokio::net::tcp::OwnedWriteHalf,
    mut rx: mpsc::Receiver<Pending>,
    closed: oneshot::Sender<()>,
    peer: SocketAddr,
) {
    let mut out = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(pending) = rx.recv().await {
        match pending.await {
            Ok(Some(Outgoing {
                frame,
                history: Some(rt),
                budget: _held_until_written,
            })) => {
                // The socket stays registered with this runtime's reactor;
                // only the copying runs on the history runtime's threads.
                let written = rt
                    .spawn(async move {
                        let r = match out.write_all(&frame).await {
                            Ok(()) => out.flush().await,
                            Err(e) => Err(e),
                        };
                        (out, r)
                    })
                    .await;
                let error = match written {
                    Ok((o, Ok(()))) => {
                        out = o;
                        continue;
                    }
                    Ok((_, Err(e))) => e.to_string(),
                    // The history runtime is shutting down with the broker.
                    Err(e) => e.to_string(),
                };
                // The writer went with the failed task: nothing to flush.
                tracing::debug!(%peer, %error, "write failed");
                let _ = closed.send(());
                return;
            }
            Ok(Some(Outgoing {
                frame,
                budget: _held_until_written,
                ..
            })) => {
                if let Err(e) = out.write_all(&frame).await {
                    tracing::debug!(%peer, error = %e, "write failed");
                    break;
                }
                if rx.is_empty() && out.flush().await.is_err() {
                    break;
                }
            }
            Ok(None) => {} // acks=0: no response
            Err(_) => break,
        }
    }
    let _ = out.flush().await;
    let _ = out.shutdown().await;
    let _ = closed.send(());
}
