//! `GET /api/v1/dlq`: the dead-letter topics this broker watches, their
//! records counted per reason header, their source topics and their
//! warnings (retention shorter than a source's, records nobody consumed).
//! Read-only; the monitor is `crate::dlq::monitor`.

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::error::ApiResult;
use super::state::HttpState;
use crate::dlq::monitor::DlqTopicStatus;

#[derive(Debug, Serialize)]
pub struct DlqList {
    pub topics: Vec<DlqTopicStatus>,
}

pub async fn list(State(st): State<HttpState>) -> ApiResult<Json<DlqList>> {
    st.broker()?;
    let topics = st
        .parts()
        .and_then(|p| p.dlq.as_ref())
        .map(|d| d.status())
        .unwrap_or_default();
    Ok(Json(DlqList { topics }))
}
