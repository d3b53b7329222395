//! The admin API under `/api/v1` on `--http-listen` (axum): topics with
//! their tiering status, consumer groups with lag and catch-up estimates,
//! offset resets, the historical read path's priority classes, the
//! dead-letter topics' counts and warnings and the broker's status, described by an OpenAPI document (`openapi.json`,
//! served at `/api/v1/openapi.json`); and the console page that draws
//! them (`console.rs`). Beyond loopback it needs a bearer token
//! (`auth.rs`).
//!
//! Every change goes through the services the Kafka handlers call (the
//! topic and configuration services in `server/`, the replica manager, the
//! group coordinator), so the API can never do what a Kafka client could
//! not; it owns no state and never calls a handler.

pub(crate) mod auth;
pub(crate) mod console;
pub(crate) mod dlq;
pub(crate) mod error;
pub(crate) mod groups;
pub(crate) mod offsets_reset;
pub(crate) mod priority;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod tiering;
pub mod token;
pub(crate) mod topics;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post, put};
use axum::Router;

use error::ApiError;
use state::HttpState;

/// The OpenAPI document of this API.
pub const OPENAPI: &str = include_str!("openapi.json");

/// A JSON body whose rejection (bad JSON, unknown field, wrong type) is
/// the API's JSON error, not axum's plain text.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    axum::Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            // Bad JSON, a missing or wrong content type, an unknown field:
            // all the client's to fix, all 400 with axum's reason.
            Err(e) => Err(ApiError::bad_request(e.body_text())),
        }
    }
}

pub fn router() -> Router<HttpState> {
    Router::new()
        .route(
            "/api/v1/openapi.json",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], OPENAPI) }),
        )
        .route("/api/v1/broker", get(status::get))
        .route("/api/v1/topics", get(topics::list).post(topics::create))
        .route(
            "/api/v1/topics/{topic}",
            get(topics::describe).delete(topics::delete),
        )
        .route(
            "/api/v1/topics/{topic}/configs",
            axum::routing::patch(topics::alter_configs),
        )
        .route("/api/v1/groups", get(groups::list))
        .route("/api/v1/groups/{group}", get(groups::describe))
        .route(
            "/api/v1/groups/{group}/offsets/reset",
            post(offsets_reset::reset),
        )
        .route("/api/v1/dlq", get(dlq::list))
        .route("/api/v1/priority-classes", get(priority::get))
        .route(
            "/api/v1/priority-classes/groups/{group}",
            put(priority::put_group).delete(priority::delete_group),
        )
        .route(
            "/api/v1/priority-classes/bulk/pause",
            post(priority::pause_bulk),
        )
        .route(
            "/api/v1/priority-classes/bulk/resume",
            post(priority::resume_bulk),
        )
        .route("/", get(console::page))
        .route("/console", get(console::page))
        .fallback(|| async {
            ApiError::not_found("no such path: see /api/v1/openapi.json").into_response()
        })
}
