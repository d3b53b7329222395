//! The admin/metrics HTTP API on `--http-listen`: `GET /metrics` in the
//! Prometheus text format (per-partition offsets and sizes, tiering
//! progress and errors, object store availability) and `GET /health`.
//! Read-only; it never changes broker state.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::log_manager::LogManager;
use crate::remote::RemoteStorage;

#[derive(Debug, Clone)]
pub struct HttpState {
    pub logs: Arc<LogManager>,
    pub remote: Option<Arc<RemoteStorage>>,
}

/// Serves until `shutdown` flips to true.
pub async fn serve(listener: TcpListener, state: HttpState, mut shutdown: watch::Receiver<bool>) {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(|| async { "ok\n" }))
        .with_state(state);
    let stop = async move {
        let _ = shutdown.wait_for(|s| *s).await;
    };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "HTTP API stopped");
    }
}

async fn metrics(State(s): State<HttpState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        render(&s),
    )
}

/// Escapes a label value.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<(String, f64)>,
}

fn family(name: &'static str, kind: &'static str, help: &'static str) -> Family {
    Family {
        name,
        kind,
        help,
        samples: Vec::new(),
    }
}

pub fn render(s: &HttpState) -> String {
    let mut f_leo = family(
        "strata_log_end_offset",
        "gauge",
        "Next offset to be written.",
    );
    let mut f_hw = family(
        "strata_high_watermark",
        "gauge",
        "Offset below which records are durable and readable.",
    );
    let mut f_start = family(
        "strata_log_start_offset",
        "gauge",
        "First readable offset (remote included).",
    );
    let mut f_lstart = family(
        "strata_local_log_start_offset",
        "gauge",
        "First offset on local disk.",
    );
    let mut f_lsize = family(
        "strata_local_log_size_bytes",
        "gauge",
        "Bytes of the partition on local disk.",
    );
    let mut f_segments = family(
        "strata_local_log_segments",
        "gauge",
        "Segments on local disk.",
    );
    for t in s.logs.topics() {
        for log in t.partitions() {
            let l = format!(
                "topic=\"{}\",partition=\"{}\"",
                esc(&t.name),
                log.partition()
            );
            f_leo.samples.push((l.clone(), log.log_end_offset() as f64));
            f_hw.samples.push((l.clone(), log.high_watermark() as f64));
            f_start
                .samples
                .push((l.clone(), log.log_start_offset() as f64));
            f_lstart
                .samples
                .push((l.clone(), log.local_log_start_offset() as f64));
            f_lsize.samples.push((l.clone(), log.size_bytes() as f64));
            f_segments.samples.push((l, log.segment_count() as f64));
        }
    }
    let mut families = vec![f_leo, f_hw, f_start, f_lstart, f_lsize, f_segments];
    if let Some(r) = &s.remote {
        let mut up = family(
            "strata_object_store_available",
            "gauge",
            "1 if the last object store operation succeeded.",
        );
        up.samples.push((
            String::new(),
            if r.manager.store_available() {
                1.0
            } else {
                0.0
            },
        ));
        let mut f_up_seg = family(
            "strata_remote_upload_segments_total",
            "counter",
            "Segments uploaded and recorded in the catalog by this process.",
        );
        let mut f_up_bytes = family(
            "strata_remote_upload_bytes_total",
            "counter",
            "Log bytes uploaded by this process.",
        );
        let mut f_err = family(
            "strata_remote_upload_errors_total",
            "counter",
            "Failed tiering rounds (after retries).",
        );
        let mut f_lag = family(
            "strata_remote_copy_lag_segments",
            "gauge",
            "Sealed local segments not yet in the object store.",
        );
        let mut f_lag_b = family(
            "strata_remote_copy_lag_bytes",
            "gauge",
            "Bytes of sealed local segments not yet in the object store.",
        );
        let mut f_fenced = family(
            "strata_remote_fenced",
            "gauge",
            "1 if another broker claimed this partition's catalog.",
        );
        let mut f_rsize = family(
            "strata_remote_log_size_bytes",
            "gauge",
            "Bytes of the partition in the object store.",
        );
        let mut f_rseg = family(
            "strata_remote_log_segments",
            "gauge",
            "Segments of the partition in the object store.",
        );
        let mut f_rstart = family(
            "strata_remote_log_start_offset",
            "gauge",
            "First offset in the object store (-1: none).",
        );
        let mut f_rend = family(
            "strata_remote_log_end_offset",
            "gauge",
            "Offset after the last tiered segment (-1: none).",
        );
        let mut f_ldel = family(
            "strata_local_segments_deleted_total",
            "counter",
            "Local segments deleted after upload (hot window).",
        );
        let mut f_rdel = family(
            "strata_remote_segments_deleted_total",
            "counter",
            "Remote segments deleted by total retention.",
        );
        for p in r.manager.partitions() {
            let l = format!("topic=\"{}\",partition=\"{}\"", esc(&p.topic), p.partition);
            let m = p.manifest();
            let st = &p.stats;
            let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
            f_up_seg.samples.push((l.clone(), n(&st.uploaded_segments)));
            f_up_bytes.samples.push((l.clone(), n(&st.uploaded_bytes)));
            f_err.samples.push((l.clone(), n(&st.upload_errors)));
            f_lag.samples.push((l.clone(), n(&st.copy_lag_segments)));
            f_lag_b.samples.push((l.clone(), n(&st.copy_lag_bytes)));
            f_fenced.samples.push((
                l.clone(),
                if st.fenced.load(Ordering::Relaxed) {
                    1.0
                } else {
                    0.0
                },
            ));
            f_rsize.samples.push((
                l.clone(),
                m.segments.iter().map(|s| s.size_bytes).sum::<u64>() as f64,
            ));
            f_rseg.samples.push((l.clone(), m.segments.len() as f64));
            f_rstart
                .samples
                .push((l.clone(), m.earliest_offset().unwrap_or(-1) as f64));
            f_rend
                .samples
                .push((l.clone(), m.next_offset().unwrap_or(-1) as f64));
            f_ldel
                .samples
                .push((l.clone(), n(&st.deleted_local_segments)));
            f_rdel.samples.push((l, n(&st.deleted_remote_segments)));
        }
        let st = &r.prefetcher.stats;
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
        let one = |name, kind, help, v: f64| {
            let mut f = family(name, kind, help);
            f.samples.push((String::new(), v));
            f
        };
        let (gets_now, bytes_now, waiting) = r.prefetcher.budget().snapshot();
        let mut f_waiting = family(
            "strata_remote_gets_waiting",
            "gauge",
            "GETs waiting for a slot, per priority class.",
        );
        for c in strata_prefetch::PriorityClass::ALL {
            f_waiting
                .samples
                .push((format!("class=\"{c}\""), waiting[c as usize] as f64));
        }
        families.extend([
            one(
                "strata_remote_fetch_bytes_total",
                "counter",
                "Record bytes served to fetches from remote segments.",
                g(&st.bytes_read),
            ),
            one(
                "strata_remote_fetch_reads_total",
                "counter",
                "Partition reads served by the historical read path.",
                g(&st.reads),
            ),
            one(
                "strata_remote_fetch_wait_seconds_total",
                "counter",
                "Time those reads took (fetches waited for them).",
                g(&st.read_wait_micros) / 1e6,
            ),
            one(
                "strata_remote_get_total",
                "counter",
                "GETs of segment chunks issued to the object store.",
                g(&st.gets),
            ),
            one(
                "strata_remote_get_bytes_total",
                "counter",
                "Bytes fetched by those GETs.",
                g(&st.get_bytes),
            ),
            one(
                "strata_remote_get_seconds_total",
                "counter",
                "Total latency of those GETs.",
                g(&st.get_micros) / 1e6,
            ),
            one(
                "strata_remote_get_errors_total",
                "counter",
                "Failed GETs.",
                g(&st.get_errors),
            ),
            one(
                "strata_remote_cache_hits_total",
                "counter",
                "Chunk lookups answered by the cache.",
                g(&st.cache_hits),
            ),
            one(
                "strata_remote_cache_misses_total",
                "counter",
                "Chunk lookups that needed a GET (or joined one in flight).",
                g(&st.cache_misses),
            ),
            one(
                "strata_remote_readahead_chunks_total",
                "counter",
                "Chunks requested ahead of readers.",
                g(&st.readahead_chunks),
            ),
            one(
                "strata_remote_readahead_depth_chunks",
                "gauge",
                "Sum of the read-ahead windows of active readers.",
                r.prefetcher.readahead_depth() as f64,
            ),
            one(
                "strata_remote_gets_in_flight",
                "gauge",
                "GETs in flight now.",
                gets_now as f64,
            ),
            one(
                "strata_remote_reads_paused",
                "gauge",
                "Bulk-class reads waiting while the class is paused.",
                r.prefetcher.budget().paused_reads() as f64,
            ),
            one(
                "strata_remote_bytes_in_flight",
                "gauge",
                "Bytes of GETs in flight now.",
                bytes_now as f64,
            ),
            f_waiting,
        ]);
        families.extend([
            up, f_up_seg, f_up_bytes, f_err, f_lag, f_lag_b, f_fenced, f_rsize, f_rseg, f_rstart,
            f_rend, f_ldel, f_rdel,
        ]);
    }
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (labels, v) in f.samples {
            if labels.is_empty() {
                let _ = writeln!(out, "{} {v}", f.name);
            } else {
                let _ = writeln!(out, "{}{{{labels}}} {v}", f.name);
            }
        }
    }
    out
}
