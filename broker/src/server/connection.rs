//! One client connection: reads size-prefixed frames, decodes the request
//! header, runs each request's ordered phase in arrival order (appends,
//! admin), lets the rest (fsync waits, fetch long polls) overlap, and writes
//! responses back in request order. Clients pipeline several requests per
//! connection and rely on both orders.
//!
//! On a TLS listener the TLS handshake comes first (bounded by
//! [`TLS_HANDSHAKE_TIMEOUT`]); on a SASL listener every frame passes the
//! connection's [`SaslAuthenticator`] until, and after, it authenticates
//! (`strata_security::sasl`): before authentication only ApiVersions and
//! the SASL exchange are served, frames are capped at
//! `sasl.server.max.receive.size`, and a failure closes the connection
//! after `connection.failed.authentication.delay.ms`. Each request carries
//! the connection's principal and listener.
//!
//! A frame over `socket.request.max.bytes`, a negative size or an
//! undecodable header closes this connection only, with a log line.
//! Responses waiting for the socket hold at most
//! [`CONNECTION_RESPONSE_BUDGET`](dispatch::CONNECTION_RESPONSE_BUDGET)
//! bytes of fetched records: a client that stops reading stops its fetches.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::listeners::SecurityProtocol;
use strata_security::principal::KafkaPrincipal;
use strata_security::principal_mapping::PrincipalMapper;
use strata_security::sasl::{
    self, Reply, SaslAuthenticator, SaslResponse, SaslServerConfig, ScramCredentials,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tracing::Instrument;

use super::dispatch::{self, Outgoing, Prepared};
use super::Broker;
use crate::metrics::connections;
use crate::metrics::requests::REQUESTS;

/// Requests a single connection may have in flight before reading pauses.
const MAX_IN_FLIGHT: usize = 64;

/// How long a client has to complete its TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client of a SASL listener has, from its connection, to
/// authenticate: a client that trickles bytes cannot hold a connection
/// (and its frame buffer) unauthenticated for longer.
pub const SASL_AUTHENTICATION_TIMEOUT: Duration = Duration::from_secs(30);

type Pending = oneshot::Receiver<Option<Outgoing>>;

/// A SASL listener's authentication settings.
pub struct SaslContext {
    pub config: Arc<SaslServerConfig>,
    pub credentials: Arc<dyn ScramCredentials>,
    /// `sasl.server.max.receive.size`.
    pub max_receive_size: usize,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_delay: Duration,
}

/// What a connection knows of the listener it came in on.
pub struct ListenerContext {
    /// The listener's name, upper case (PLAINTEXT for `--listen`).
    pub name: Arc<str>,
    pub protocol: SecurityProtocol,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// `ssl.principal.mapping.rules` (TLS listeners).
    pub mapper: Option<PrincipalMapper>,
    pub sasl: Option<SaslContext>,
}

impl std::fmt::Debug for ListenerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerContext")
            .field("name", &self.name)
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

pub async fn handle_connection(
    stream: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    listener: Arc<ListenerContext>,
    shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    connections::accepted(&listener.name);
    let Some(acceptor) = listener.tls.clone() else {
        let (reader, writer) = stream.into_split();
        let principal = Arc::new(KafkaPrincipal::anonymous());
        serve(reader, writer, peer, broker, listener, principal, shutdown).await;
        return;
    };
    let tls = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            connections::tls_failed(&listener.name, "error");
            tracing::info!(%peer, listener = %listener.name, error = %e, "closing connection: TLS handshake failed");
            return;
        }
        Err(_) => {
            connections::tls_failed(&listener.name, "timeout");
            tracing::info!(%peer, listener = %listener.name,
                "closing connection: TLS handshake not completed within 10 s");
            return;
        }
    };
    let principal = match &listener.mapper {
        Some(mapper) => match super::tls::principal(tls.get_ref().1.peer_certificates(), mapper) {
            Ok(p) => p,
            Err(e) => {
                tracing::info!(%peer, listener = %listener.name, error = %e,
                    "closing connection: no principal for the client certificate");
                return;
            }
        },
        None => KafkaPrincipal::anonymous(),
    };
    let (reader, writer) = tokio::io::split(tls);
    serve(
        reader,
        writer,
        peer,
        broker,
        listener,
        Arc::new(principal),
        shutdown,
    )
    .await;
}

/// What to do after a SASL reply.
enum AfterSasl {
    /// Serve the request as usual.
    Serve(dispatch::Request),
    /// Read the next frame.
    Next,
    Close,
}

async fn serve<R, W>(
    mut reader: R,
    writer: W,
    peer: SocketAddr,
    broker: Arc<Broker>,
    listener: Arc<ListenerContext>,
    mut principal: Arc<KafkaPrincipal>,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Pending>(MAX_IN_FLIGHT);
    let (closed_tx, mut closed_rx) = oneshot::channel::<()>();
    let writer_task = tokio::spawn(write_responses(writer, rx, closed_tx, peer));
    let max = broker.max_request_bytes;
    let response_budget = Arc::new(Semaphore::new(dispatch::CONNECTION_RESPONSE_BUDGET));
    let mut auth = listener
        .sasl
        .as_ref()
        .map(|s| SaslAuthenticator::new(s.config.clone(), s.credentials.clone()));
    // The mechanism of the latest handshake, for the metrics.
    let mut mechanism: &'static str = "none";
    let auth_deadline = tokio::time::Instant::now() + SASL_AUTHENTICATION_TIMEOUT;
    let mut authenticated_once = false;
    loop {
        let pre_auth = auth.is_some() && !authenticated_once;
        let size = tokio::select! {
            r = reader.read_i32() => match r {
                Ok(n) => n,
                Err(_) => break, // EOF or reset
            },
            _ = &mut closed_rx => break,
            _ = shutdown.changed() => break,
            _ = tokio::time::sleep_until(auth_deadline), if pre_auth => {
                tracing::info!(%peer, listener = %listener.name,
                    "closing connection: not authenticated within 30 s");
                break;
            }
        };
        let unauthenticated = auth.as_ref().is_some_and(|a| !a.is_authenticated());
        let limit = match (&listener.sasl, unauthenticated) {
            (Some(s), true) => s.max_receive_size.min(max),
            _ => max,
        };
        if size < 0 || size as usize > limit {
            if unauthenticated {
                tracing::info!(%peer, size, limit, listener = %listener.name,
                    "closing connection: frame before authentication exceeds sasl.server.max.receive.size");
            } else {
                tracing::warn!(%peer, size, limit = max,
                    "closing connection: request size is negative or exceeds socket.request.max.bytes");
            }
            break;
        }
        let mut frame = BytesMut::zeroed(size as usize);
        if pre_auth {
            match tokio::time::timeout_at(auth_deadline, reader.read_exact(&mut frame)).await {
                Ok(Ok(_)) => {}
                Ok(Err(_)) => break,
                Err(_) => {
                    tracing::info!(%peer, listener = %listener.name,
                        "closing connection: not authenticated within 30 s");
                    break;
                }
            }
        } else if reader.read_exact(&mut frame).await.is_err() {
            break;
        }
        let frame: Bytes = frame.freeze();
        let read_at = std::time::Instant::now();
        let request_bytes = frame.len() + 4;
        let request = match (auth.as_mut(), listener.sasl.as_ref()) {
            (Some(a), Some(ctx)) => {
                match authenticate(a, ctx, frame, &broker, &tx, peer, &listener, &mut mechanism)
                    .await
                {
                    AfterSasl::Serve(r) => {
                        authenticated_once |= a.is_authenticated();
                        if let Some(p) = a.principal() {
                            if *principal != *p {
                                principal = Arc::new(p.clone());
                            }
                        }
                        r
                    }
                    AfterSasl::Next => {
                        authenticated_once |= a.is_authenticated();
                        continue;
                    }
                    AfterSasl::Close => break,
                }
            }
            _ => match dispatch::Request::parse(frame) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "closing connection: malformed request");
                    break;
                }
            },
        };
        let mut request = request;
        request.peer = peer.ip().to_string();
        request.response_budget = Some(response_budget.clone());
        request.principal = principal.clone();
        request.listener = listener.name.clone();
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

/// Hands one frame of a SASL listener to the authenticator and carries
/// out its reply.
#[allow(clippy::too_many_arguments)]
async fn authenticate(
    a: &mut SaslAuthenticator,
    ctx: &SaslContext,
    frame: Bytes,
    broker: &Broker,
    tx: &mpsc::Sender<Pending>,
    peer: SocketAddr,
    listener: &ListenerContext,
    mechanism: &mut &'static str,
) -> AfterSasl {
    let now_ms = broker.logs.clock().now_ms();
    let was_authenticated = a.is_authenticated();
    if a.expects_raw_token() {
        let reply = a.on_raw_token(&frame, now_ms);
        count(a, was_authenticated, &reply, listener, mechanism);
        return carry_out(a, ctx, reply, None, tx, peer, listener).await;
    }
    let mut request = match dispatch::Request::parse(frame) {
        Ok(r) => r,
        Err(e) => {
            tracing::info!(%peer, listener = %listener.name, error = %e,
                "closing connection: malformed request during SASL authentication");
            return AfterSasl::Close;
        }
    };
    let handshake: Option<SaslHandshakeRequest>;
    let authenticate: Option<SaslAuthenticateRequest>;
    let seen = match request.api_key {
        ApiKey::ApiVersions => sasl::Request::ApiVersions,
        ApiKey::SaslHandshake => match request.decode_body::<SaslHandshakeRequest>() {
            Ok(r) => {
                *mechanism = ctx
                    .config
                    .mechanisms
                    .iter()
                    .find(|m| m.name() == r.mechanism.as_str())
                    .map_or("unsupported", |m| m.name());
                handshake = Some(r);
                sasl::Request::SaslHandshake {
                    version: request.version,
                    mechanism: handshake.as_ref().map_or("", |h| h.mechanism.as_str()),
                }
            }
            Err(e) => {
                tracing::info!(%peer, error = %e, "closing connection: undecodable SaslHandshake");
                return AfterSasl::Close;
            }
        },
        ApiKey::SaslAuthenticate => match request.decode_body::<SaslAuthenticateRequest>() {
            Ok(r) => {
                authenticate = Some(r);
                sasl::Request::SaslAuthenticate {
                    auth_bytes: authenticate.as_ref().map_or(&[][..], |r| &r.auth_bytes[..]),
                }
            }
            Err(e) => {
                tracing::info!(%peer, error = %e, "closing connection: undecodable SaslAuthenticate");
                return AfterSasl::Close;
            }
        },
        other => sasl::Request::Other {
            api_key: other as i16,
        },
    };
    let reply = a.on_request(seen, now_ms);
    count(a, was_authenticated, &reply, listener, mechanism);
    if reply == Reply::Serve {
        return AfterSasl::Serve(request);
    }
    let header = (request.api_key, request.version, request.correlation_id);
    carry_out(a, ctx, reply, Some(header), tx, peer, listener).await
}

/// Counts an authentication that ended with this reply: one that made
/// the connection authenticated, or one that closes it.
fn count(
    a: &SaslAuthenticator,
    was_authenticated: bool,
    reply: &Reply,
    listener: &ListenerContext,
    mechanism: &str,
) {
    let closes = matches!(
        reply,
        Reply::Close { .. } | Reply::Respond { close: true, .. }
    );
    if closes {
        connections::authentication(&listener.name, mechanism, false);
    } else if a.is_authenticated() && !was_authenticated {
        connections::authentication(&listener.name, mechanism, true);
    }
}

async fn carry_out(
    a: &SaslAuthenticator,
    ctx: &SaslContext,
    reply: Reply,
    header: Option<(ApiKey, i16, i32)>,
    tx: &mpsc::Sender<Pending>,
    peer: SocketAddr,
    listener: &ListenerContext,
) -> AfterSasl {
    let (response, close, delayed) = match reply {
        Reply::Serve => return AfterSasl::Next,
        Reply::Respond { response, close } => (Some(response), close, close),
        Reply::Close { delayed } => (None, true, delayed),
    };
    if close {
        tracing::info!(%peer, listener = %listener.name,
            reason = a.failure_reason().unwrap_or("a request the SASL state does not allow"),
            "closing connection: authentication failed");
        // As Kafka: the failure's answer itself waits for the delay, so a
        // password guesser learns nothing sooner.
        if delayed {
            tokio::time::sleep(ctx.failed_delay).await;
        }
    }
    if let Some(response) = response {
        if let Some(frame) = encode_sasl(&response, header, &ctx.config) {
            let (done_tx, done_rx) = oneshot::channel();
            if tx.send(done_rx).await.is_err() {
                return AfterSasl::Close;
            }
            let _ = done_tx.send(Some(Outgoing::from(frame)));
        }
    }
    if close {
        return AfterSasl::Close;
    }
    if let Some(p) = a.principal().filter(|_| a.is_authenticated()) {
        tracing::debug!(%peer, listener = %listener.name, principal = %p, "authenticated");
    }
    AfterSasl::Next
}

/// A SASL answer as a response frame (None: nothing can be answered).
fn encode_sasl(
    response: &SaslResponse,
    header: Option<(ApiKey, i16, i32)>,
    config: &SaslServerConfig,
) -> Option<BytesMut> {
    let mechanisms = || {
        config
            .mechanisms
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect::<Vec<_>>()
    };
    let handshake = |code: i16, names: Vec<StrBytes>| {
        let mut r = SaslHandshakeResponse::default();
        r.error_code = code;
        r.mechanisms = names;
        r
    };
    let authenticate = |code: i16, message: Option<String>, bytes: Vec<u8>, lifetime: i64| {
        let mut r = SaslAuthenticateResponse::default();
        r.error_code = code;
        r.error_message = message.map(StrBytes::from_string);
        r.auth_bytes = Bytes::from(bytes);
        r.session_lifetime_ms = lifetime;
        r
    };
    if let SaslResponse::RawToken(bytes) = response {
        let mut frame = BytesMut::with_capacity(bytes.len() + 4);
        frame.put_i32(bytes.len() as i32);
        frame.extend_from_slice(bytes);
        return Some(frame);
    }
    let (api, version, cid) = header?;
    let encoded = match (response, api) {
        (
            SaslResponse::Handshake {
                error_code,
                mechanisms,
            },
            _,
        ) => {
            let names = mechanisms
                .iter()
                .cloned()
                .map(StrBytes::from_string)
                .collect();
            dispatch::encode_response(cid, version, &handshake(*error_code, names))
        }
        (
            SaslResponse::Authenticate {
                error_code,
                error_message,
                auth_bytes,
                session_lifetime_ms,
            },
            _,
        ) => dispatch::encode_response(
            cid,
            version,
            &authenticate(
                *error_code,
                error_message.clone(),
                auth_bytes.clone(),
                *session_lifetime_ms,
            ),
        ),
        (SaslResponse::Error { error_code }, ApiKey::SaslHandshake) => {
            dispatch::encode_response(cid, version, &handshake(*error_code, mechanisms()))
        }
        (SaslResponse::Error { error_code }, ApiKey::SaslAuthenticate) => {
            dispatch::encode_response(
                cid,
                version,
                &authenticate(*error_code, None, Vec::new(), 0),
            )
        }
        (SaslResponse::Error { error_code }, ApiKey::ApiVersions) => {
            let mut r = ApiVersionsResponse::default();
            r.error_code = *error_code;
            dispatch::encode_response(cid, version, &r)
        }
        // Another API's error response: the connection closes anyway.
        _ => return None,
    };
    encoded.ok()
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

async fn write_responses<W: AsyncWrite + Unpin + Send + 'static>(
    writer: W,
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
