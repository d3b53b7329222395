//! Request decoding, version negotiation and routing to handlers; response
//! framing. Decoding failures are connection errors (the caller closes the
//! connection), as in Kafka.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{
    decode_request_header_from_buffer, Decodable, Encodable, HeaderVersion,
};
use kafka_protocol::ResponseError;
use thiserror::Error;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use strata_security::principal::KafkaPrincipal;

use crate::decode_bounds as bounds;
use crate::metrics::errors;

use super::handlers;
use super::legacy;
use super::versions;
use super::Broker;

#[derive(Debug, Error)]
pub enum DispatchError {
    #[error("frame of {0} bytes is too short for a request header")]
    ShortFrame(usize),
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    #[error("unsupported version {version} of {api:?}")]
    UnsupportedVersion { api: ApiKey, version: i16 },
    #[error("cannot decode {api:?} v{version}: {message}")]
    Decode {
        api: ApiKey,
        version: i16,
        message: String,
    },
    #[error("refused {api:?} v{version} before decoding: {source}")]
    OutOfBounds {
        api: ApiKey,
        version: i16,
        #[source]
        source: bounds::BoundsError,
    },
    #[error("cannot encode response: {0}")]
    Encode(String),
    #[error("{principal} may not use {api:?}: with authorizer.class.name set, Strata checks ACLs on the produce, fetch, metadata, consumer group, ACL and SCRAM user APIs only so far, and serves every other API to super.users alone (docs/security.md)")]
    NotAuthorized { api: ApiKey, principal: String },
}

/// A framed request with its header decoded and its body still encoded.
#[derive(Debug)]
pub struct Request {
    /// The client's address, as group members report it (`client_host`).
    pub peer: String,
    pub api_key: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
    pub header: RequestHeader,
    pub body: Bytes,
    /// The connection's budget for response bytes not yet written to its
    /// socket (None outside a connection: tests).
    pub response_budget: Option<Arc<Semaphore>>,
    /// Who sent it: the SASL identity, the client certificate's mapped
    /// subject, or `User:ANONYMOUS`.
    pub principal: Arc<KafkaPrincipal>,
    /// The listener it came in on (its name, upper case).
    pub listener: Arc<str>,
}

/// `User:ANONYMOUS` and the `--listen` listener's name, shared.
static ANONYMOUS: std::sync::LazyLock<Arc<KafkaPrincipal>> =
    std::sync::LazyLock::new(|| Arc::new(KafkaPrincipal::anonymous()));
static PLAINTEXT: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| Arc::from("PLAINTEXT"));

/// Response bytes one connection may hold before they reach its socket:
/// a Fetch reserves up to its `max_bytes` from it (and is answered with at
/// most what it got) before it reads anything, and gives it back once its
/// response is written. A client that pipelines fetches and never reads
/// its socket holds at most this much of the broker's memory.
pub const CONNECTION_RESPONSE_BUDGET: usize = 64 << 20;

impl Request {
    pub fn parse(mut frame: Bytes) -> Result<Self, DispatchError> {
        if frame.len() < 8 {
            return Err(DispatchError::ShortFrame(frame.len()));
        }
        let key = i16::from_be_bytes([frame[0], frame[1]]);
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        let api_key = ApiKey::try_from(key).map_err(|_| DispatchError::UnknownApiKey(key))?;
        // The header's own version follows from the request's; for a
        // version nobody defined there is no header to read. ApiVersions is
        // the exception clients rely on (KIP-511): answered at v0 below.
        if api_key != ApiKey::ApiVersions && !versions::is_supported(api_key, version) {
            return Err(DispatchError::UnsupportedVersion {
                api: api_key,
                version,
            });
        }
        // A legacy version is older than every flexible one: its header is
        // v1 (the crate would infer v2 for an API it knows only flexible).
        let header = if legacy::is_legacy(api_key, version) {
            RequestHeader::decode(&mut frame, 1)
        } else {
            decode_request_header_from_buffer(&mut frame)
        }
        .map_err(|e| DispatchError::Decode {
            api: api_key,
            version,
            message: format!("request header: {e}"),
        })?;
        Ok(Request {
            peer: String::new(),
            api_key,
            version,
            correlation_id: header.correlation_id,
            header,
            body: frame,
            response_budget: None,
            // The connection sets both; shared defaults cost no allocation.
            principal: ANONYMOUS.clone(),
            listener: PLAINTEXT.clone(),
        })
    }

    /// Who sent it, for the authorizer.
    pub(crate) fn caller(&self, broker: &Broker) -> super::authz::Caller {
        super::authz::Caller::of(&self.principal, &self.peer, broker)
    }

    /// Decodes the body, once [`bounds`] has found that doing so costs no
    /// more than a small multiple of its size.
    pub(crate) fn decode_body<T: Decodable>(&mut self) -> Result<T, DispatchError> {
        bounds::check_request(self.api_key as i16, self.version, &self.body).map_err(|source| {
            DispatchError::OutOfBounds {
                api: self.api_key,
                version: self.version,
                source,
            }
        })?;
        T::decode(&mut self.body, self.version).map_err(|e| DispatchError::Decode {
            api: self.api_key,
            version: self.version,
            message: e.to_string(),
        })
    }
}

/// Frames a response: size, response header, body.
pub fn encode_response<R: Encodable + HeaderVersion>(
    correlation_id: i32,
    version: i16,
    response: &R,
) -> Result<BytesMut, DispatchError> {
    let size_hint = response.compute_size(version).unwrap_or(256);
    let mut buf = BytesMut::with_capacity(size_hint + 16);
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, R::header_version(version))
        .map_err(|e| DispatchError::Encode(e.to_string()))?;
    response
        .encode(&mut buf, version)
        .map_err(|e| DispatchError::Encode(e.to_string()))?;
    let len = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

/// A framed response on its way to the connection's writer.
#[derive(Debug)]
pub struct Outgoing {
    pub frame: BytesMut,
    /// Written on the historical read path's runtime, whose threads run at
    /// a lower priority (`remote.fetch.threads.nice`): a fetch that read
    /// history. Copying megabytes of history into a socket is the biggest
    /// CPU cost of a catch-up left in the broker; on the request workers it
    /// would delay producers and tail readers whenever CPU runs short.
    pub history: Option<tokio::runtime::Handle>,
    /// The part of the connection's response budget this response holds
    /// until it is written.
    pub budget: Option<OwnedSemaphorePermit>,
}

impl From<BytesMut> for Outgoing {
    fn from(frame: BytesMut) -> Self {
        Outgoing {
            frame,
            history: None,
            budget: None,
        }
    }
}

pub type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Option<Outgoing>, DispatchError>> + Send>>;

/// A request after its ordered phase.
pub enum Prepared {
    /// The response is known (`None`: no response, acks=0 produce).
    Ready(Result<Option<BytesMut>, DispatchError>),
    /// The rest may run concurrently with the connection's later requests.
    Deferred(ResponseFuture),
}

/// Runs the part of a request that must happen in connection order: all of
/// it for admin and metadata requests (as Kafka does), the appends of a
/// Produce. What remains — a Produce's wait for durability, a Fetch's long
/// poll — is returned to run concurrently; responses are still written in
/// request order by the connection.
pub async fn prepare(mut req: Request, broker: &Arc<Broker>) -> Prepared {
    let (api, version, cid) = (req.api_key, req.version, req.correlation_id);
    if let Err(principal) = super::authz::gate(api, &req.principal, broker) {
        return Prepared::Ready(Err(DispatchError::NotAuthorized { api, principal }));
    }
    if !versions::is_supported(api, version) || legacy::is_legacy(api, version) {
        return Prepared::Ready(handle(req, broker).await);
    }
    match api {
        ApiKey::Produce => {
            let r: ProduceRequest = match req.decode_body() {
                Ok(r) => r,
                Err(e) => return Prepared::Ready(Err(e)),
            };
            let caller = req.caller(broker);
            let pending = handlers::produce::append(r, version, broker, &caller).await;
            Prepared::Deferred(Box::pin(async move {
                match handlers::produce::complete(pending).await {
                    Some(resp) => {
                        errors::count(ApiKey::Produce, &resp);
                        encode_response(cid, version, &resp).map(|f| Some(f.into()))
                    }
                    None => Ok(None),
                }
            }))
        }
        ApiKey::Fetch => {
            let mut r: FetchRequest = match req.decode_body() {
                Ok(r) => r,
                Err(e) => return Prepared::Ready(Err(e)),
            };
            let budget = req.response_budget.clone();
            let caller = req.caller(broker);
            let b = broker.clone();
            let client = handlers::fetch::Client {
                client_id: req.header.client_id.as_deref().unwrap_or("").to_string(),
                host: format!("/{}", req.peer),
            };
            Prepared::Deferred(Box::pin(async move {
                let permit = match budget {
                    Some(budget) => {
                        let want = if r.max_bytes <= 0 {
                            CONNECTION_RESPONSE_BUDGET
                        } else {
                            (r.max_bytes as usize).min(CONNECTION_RESPONSE_BUDGET)
                        };
                        r.max_bytes = want as i32;
                        // Waits while earlier responses are unwritten: they
                        // go out first anyway.
                        budget.acquire_many_owned(want as u32).await.ok()
                    }
                    None => None,
                };
                let fetched = handlers::fetch::handle_for(r, version, &b, &client, &caller).await;
                let history = match &b.remote {
                    Some(remote) if fetched.history_bytes > 0 => {
                        Some(remote.history_runtime().clone())
                    }
                    _ => None,
                };
                let resp = fetched.response;
                errors::count(ApiKey::Fetch, &resp);
                let frame = match &history {
                    // Encoding copies the records too: there as well.
                    Some(rt) => rt
                        .spawn(async move { encode_response(cid, version, &resp) })
                        .await
                        .map_err(|e| DispatchError::Encode(e.to_string()))??,
                    None => encode_response(cid, version, &resp)?,
                };
                // Give back what the response did not use.
                let budget = permit.map(|mut p| {
                    let unused = p.num_permits().saturating_sub(frame.len());
                    drop(p.split(unused));
                    p
                });
                Ok(Some(Outgoing {
                    frame,
                    history,
                    budget,
                }))
            }))
        }
        // These wait for the rest of the group; they must not hold up the
        // connection (librdkafka sends heartbeats on the same one).
        ApiKey::JoinGroup | ApiKey::SyncGroup => {
            let b = broker.clone();
            Prepared::Deferred(Box::pin(async move {
                handle(req, &b).await.map(|r| r.map(Outgoing::from))
            }))
        }
        _ => Prepared::Ready(handle(req, broker).await),
    }
}

/// Decodes, handles and encodes one request. `Ok(None)` means no response
/// is sent (acks=0 produce).
pub async fn handle(mut req: Request, broker: &Broker) -> Result<Option<BytesMut>, DispatchError> {
    let (api, version, cid) = (req.api_key, req.version, req.correlation_id);
    if !versions::is_supported(api, version) {
        if api == ApiKey::ApiVersions {
            // KIP-511: answer with v0 so any client can read the supported range.
            let resp = handlers::cluster::api_versions(ResponseError::UnsupportedVersion.code());
            return encode_response(cid, 0, &resp).map(Some);
        }
        return Err(DispatchError::UnsupportedVersion { api, version });
    }
    if legacy::is_legacy(api, version) {
        let caller = req.caller(broker);
        return legacy::handle(api, version, cid, &req.body, broker, &caller)
            .await
            .map_err(|e| DispatchError::Decode {
                api,
                version,
                message: e.to_string(),
            });
    }
    macro_rules! route {
        ($req_ty:ty, $handler:expr) => {{
            let r: $req_ty = req.decode_body()?;
            let resp = $handler(r, version, broker).await;
            errors::count(api, &resp);
            encode_response(cid, version, &resp).map(Some)
        }};
    }
    // The same, for handlers that answer with the listener's addresses
    // (and check the caller's ACLs).
    macro_rules! route_on {
        ($req_ty:ty, $handler:expr) => {{
            let r: $req_ty = req.decode_body()?;
            let caller = req.caller(broker);
            let resp = $handler(r, version, broker, &req.listener, &caller).await;
            errors::count(api, &resp);
            encode_response(cid, version, &resp).map(Some)
        }};
    }
    // The same, for handlers that check the caller's ACLs.
    macro_rules! route_as {
        ($req_ty:ty, $handler:expr) => {{
            let r: $req_ty = req.decode_body()?;
            let caller = req.caller(broker);
            let resp = $handler(r, version, broker, &caller).await;
            errors::count(api, &resp);
            encode_response(cid, version, &resp).map(Some)
        }};
    }
    // Produce and Fetch never come here: `prepare` defers them (their
    // ordered and waiting phases differ from every other API's).
    match api {
        ApiKey::ListOffsets => route_as!(ListOffsetsRequest, handlers::list_offsets::handle),
        ApiKey::OffsetForLeaderEpoch => {
            route!(OffsetForLeaderEpochRequest, handlers::leader_epoch::handle)
        }
        ApiKey::Metadata => route_on!(MetadataRequest, handlers::metadata::handle),
        ApiKey::ApiVersions => {
            let r: ApiVersionsRequest = req.decode_body()?;
            let resp = if version >= 3 && !handlers::cluster::valid_client_software(&r) {
                // KIP-511, as Kafka: INVALID_REQUEST and no API list.
                let mut e = ApiVersionsResponse::default();
                e.error_code = ResponseError::InvalidRequest.code();
                e
            } else {
                handlers::cluster::api_versions(0)
            };
            encode_response(cid, version, &resp).map(Some)
        }
        ApiKey::FindCoordinator => {
            route_on!(FindCoordinatorRequest, handlers::cluster::find_coordinator)
        }
        ApiKey::DescribeCluster => {
            route_on!(DescribeClusterRequest, handlers::cluster::describe_cluster)
        }
        ApiKey::ElectLeaders => route!(ElectLeadersRequest, handlers::elect_leaders::handle),
        ApiKey::DeleteRecords => route!(DeleteRecordsRequest, handlers::delete_records::handle),
        ApiKey::DescribeLogDirs => route!(DescribeLogDirsRequest, handlers::log_dirs::handle),
        ApiKey::AlterPartitionReassignments => route!(
            AlterPartitionReassignmentsRequest,
            handlers::reassignments::alter
        ),
        ApiKey::ListPartitionReassignments => route!(
            ListPartitionReassignmentsRequest,
            handlers::reassignments::list
        ),
        ApiKey::CreateTopics => route!(CreateTopicsRequest, handlers::topics::create_topics),
        ApiKey::DeleteTopics => route!(DeleteTopicsRequest, handlers::topics::delete_topics),
        ApiKey::CreatePartitions => {
            route!(CreatePartitionsRequest, handlers::topics::create_partitions)
        }
        ApiKey::DescribeConfigs => {
            route!(DescribeConfigsRequest, handlers::configs::describe_configs)
        }
        ApiKey::AlterConfigs => route!(AlterConfigsRequest, handlers::configs::alter_configs),
        ApiKey::IncrementalAlterConfigs => {
            route!(
                IncrementalAlterConfigsRequest,
                handlers::configs::incremental_alter_configs
            )
        }
        ApiKey::JoinGroup => {
            let r: JoinGroupRequest = req.decode_body()?;
            let client_id = req.header.client_id.as_deref().unwrap_or("").to_string();
            let host = format!("/{}", req.peer);
            let caller = req.caller(broker);
            let resp =
                handlers::groups::join_group(r, version, broker, &client_id, &host, &caller).await;
            errors::count(api, &resp);
            encode_response(cid, version, &resp).map(Some)
        }
        ApiKey::SyncGroup => route_as!(SyncGroupRequest, handlers::groups::sync_group),
        ApiKey::Heartbeat => route_as!(HeartbeatRequest, handlers::groups::heartbeat),
        ApiKey::LeaveGroup => route_as!(LeaveGroupRequest, handlers::groups::leave_group),
        ApiKey::OffsetCommit => route_as!(OffsetCommitRequest, handlers::groups::offset_commit),
        ApiKey::OffsetFetch => route_as!(OffsetFetchRequest, handlers::groups::offset_fetch),
        ApiKey::OffsetDelete => route_as!(OffsetDeleteRequest, handlers::groups::offset_delete),
        ApiKey::DescribeGroups => {
            route_as!(DescribeGroupsRequest, handlers::groups::describe_groups)
        }
        ApiKey::ListGroups => route_as!(ListGroupsRequest, handlers::groups::list_groups),
        ApiKey::DeleteGroups => route_as!(DeleteGroupsRequest, handlers::groups::delete_groups),
        ApiKey::InitProducerId => {
            route_as!(InitProducerIdRequest, handlers::producer::init_producer_id)
        }
        ApiKey::AddPartitionsToTxn => {
            route!(
                AddPartitionsToTxnRequest,
                handlers::txn::add_partitions_to_txn
            )
        }
        ApiKey::AddOffsetsToTxn => {
            route!(AddOffsetsToTxnRequest, handlers::txn::add_offsets_to_txn)
        }
        ApiKey::TxnOffsetCommit => {
            route!(TxnOffsetCommitRequest, handlers::txn::txn_offset_commit)
        }
        ApiKey::EndTxn => route!(EndTxnRequest, handlers::txn::end_txn),
        ApiKey::DescribeTransactions => {
            route!(
                DescribeTransactionsRequest,
                handlers::txn::describe_transactions
            )
        }
        ApiKey::ListTransactions => {
            route!(ListTransactionsRequest, handlers::txn::list_transactions)
        }
        ApiKey::DescribeProducers => {
            route!(
                DescribeProducersRequest,
                handlers::txn_admin::describe_producers
            )
        }
        ApiKey::WriteTxnMarkers => {
            route!(
                WriteTxnMarkersRequest,
                handlers::txn_admin::write_txn_markers
            )
        }
        // A listener with SASL hands these to the connection's
        // authenticator before dispatch; here they came on one without.
        ApiKey::SaslHandshake => route!(SaslHandshakeRequest, handlers::sasl::handshake),
        ApiKey::SaslAuthenticate => route!(SaslAuthenticateRequest, handlers::sasl::authenticate),
        ApiKey::DescribeUserScramCredentials => route_as!(
            DescribeUserScramCredentialsRequest,
            handlers::scram_users::describe
        ),
        ApiKey::AlterUserScramCredentials => route_as!(
            AlterUserScramCredentialsRequest,
            handlers::scram_users::alter
        ),
        ApiKey::DescribeAcls => route_as!(DescribeAclsRequest, handlers::acls::describe),
        ApiKey::CreateAcls => route_as!(CreateAclsRequest, handlers::acls::create),
        ApiKey::DeleteAcls => route_as!(DeleteAclsRequest, handlers::acls::delete),
        other => Err(DispatchError::UnsupportedVersion {
            api: other,
            version,
        }),
    }
}
