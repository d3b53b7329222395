//! The console page: one self-contained HTML page (styles and script
//! inline, no external assets) served by the broker at `/` and
//! `/console`. It draws what the admin API returns: topics with local
//! versus remote bytes per partition, groups with per-partition lag and
//! catch-up state, and tiering progress. Static: the data comes from the
//! API, with the bearer token the page asks for when the API wants one.

use axum::http::header;
use axum::response::IntoResponse;

const PAGE: &str = include_str!("console.html");

pub async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE,
    )
}
