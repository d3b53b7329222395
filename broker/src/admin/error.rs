//! The admin API's errors: an HTTP status and a JSON body naming the
//! Kafka error (`TOPIC_ALREADY_EXISTS`, ...) the same operation over the
//! Kafka protocol would have returned, with a message an operator can act
//! on. Never a panic, never a bare 500 for a client's mistake.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use kafka_protocol::ResponseError;

use crate::metrics::errors::error_name;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    /// NOT_COORDINATOR: the node that coordinates the group.
    pub coordinator: Option<i32>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.to_string(),
            message: message.into(),
            coordinator: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }

    pub fn starting(phase: &str) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "BROKER_NOT_AVAILABLE",
            format!("the broker is starting ({phase})"),
        )
    }

    /// A Kafka error code from a handler, with its message (or Kafka's
    /// name when the handler gave none).
    pub fn kafka(code: i16, message: Option<&str>) -> Self {
        let name = error_name(code);
        let message = message
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| {
                ResponseError::try_from_code(code)
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| name.to_string())
            });
        Self::new(status_of(code), name, message)
    }
}

/// The HTTP status a Kafka error maps to.
fn status_of(code: i16) -> StatusCode {
    match ResponseError::try_from_code(code) {
        Some(
            ResponseError::UnknownTopicOrPartition
            | ResponseError::GroupIdNotFound
            | ResponseError::UnknownTopicId,
        ) => StatusCode::NOT_FOUND,
        Some(
            ResponseError::TopicAlreadyExists
            | ResponseError::NonEmptyGroup
            | ResponseError::UnknownMemberId
            | ResponseError::RebalanceInProgress
            | ResponseError::ConcurrentTransactions,
        ) => StatusCode::CONFLICT,
        Some(ResponseError::NotCoordinator | ResponseError::NotLeaderOrFollower) => {
            StatusCode::MISDIRECTED_REQUEST
        }
        Some(
            ResponseError::CoordinatorLoadInProgress
            | ResponseError::CoordinatorNotAvailable
            | ResponseError::RequestTimedOut
            | ResponseError::NotController
            | ResponseError::BrokerNotAvailable
            | ResponseError::LeaderNotAvailable
            | ResponseError::KafkaStorageError
            | ResponseError::NotEnoughReplicas,
        ) => StatusCode::SERVICE_UNAVAILABLE,
        Some(
            ResponseError::TopicAuthorizationFailed
            | ResponseError::GroupAuthorizationFailed
            | ResponseError::ClusterAuthorizationFailed
            | ResponseError::TopicDeletionDisabled,
        ) => StatusCode::FORBIDDEN,
        Some(ResponseError::UnknownServerError) | None => StatusCode::INTERNAL_SERVER_ERROR,
        Some(_) => StatusCode::BAD_REQUEST,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": {
                "code": self.code,
                "message": self.message,
                "coordinator": self.coordinator,
            }
        });
        (self.status, Json(body)).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_errors_map_to_http_statuses_and_names() {
        let e = ApiError::kafka(36, Some("Topic 'a' already exists."));
        assert_eq!(e.status, StatusCode::CONFLICT);
        assert_eq!(e.code, "TOPIC_ALREADY_EXISTS");
        assert_eq!(e.message, "Topic 'a' already exists.");
        assert_eq!(ApiError::kafka(3, None).status, StatusCode::NOT_FOUND);
        assert_eq!(ApiError::kafka(40, None).status, StatusCode::BAD_REQUEST);
        assert_eq!(
            ApiError::kafka(16, None).status,
            StatusCode::MISDIRECTED_REQUEST
        );
        assert!(!ApiError::kafka(3, None).message.is_empty());
    }
}
