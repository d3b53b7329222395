//! The S3 REST API over HTTP/1.1, path-style (`/<bucket>/<key>`): routes
//! each request to the `FsStore` operation it names and writes S3's headers
//! and XML. Owns request parsing and response shapes; it never touches the
//! file system itself. No request is authenticated: signatures are accepted
//! unchecked, as a development server may.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use futures_util::StreamExt;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tracing::Instrument;

use crate::chunked;
use crate::error::{S3Error, S3Result};
use crate::range;
use crate::store::{etag_eq, FsStore, ObjectMeta, WriteCondition};
use crate::xml::{self, escape};

const XMLNS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";
/// Largest request body decoded in memory (aws-chunked, XML documents).
const MAX_BUFFERED_BODY: usize = 5 << 30;
/// What `encoding-type=url` leaves as it is.
const KEY_SAFE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

pub fn router(store: Arc<FsStore>) -> Router {
    Router::new().fallback(dispatch).with_state(store)
}

struct Req {
    method: Method,
    bucket: Option<String>,
    key: Option<String>,
    query: HashMap<String, String>,
    headers: HeaderMap,
    body: Body,
}

async fn dispatch(State(store): State<Arc<FsStore>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let raw_path = parts.uri.path().to_string();
    let span = tracing::debug_span!("s3", method = %parts.method, path = %raw_path);
    async move {
        let path = match percent_decode_str(&raw_path).decode_utf8() {
            Ok(p) => p.into_owned(),
            Err(_) => {
                return error_response(
                    &S3Error::InvalidArgument("the path is not UTF-8".into()),
                    &raw_path,
                    false,
                )
            }
        };
        let mut segs = path.trim_start_matches('/').splitn(2, '/');
        let bucket = segs.next().filter(|s| !s.is_empty()).map(str::to_string);
        let key = segs.next().filter(|s| !s.is_empty()).map(str::to_string);
        let query = parts
            .uri
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let head = parts.method == Method::HEAD;
        let r = Req {
            method: parts.method,
            bucket,
            key,
            query,
            headers: parts.headers,
            body,
        };
        match route(&store, r).await {
            Ok(resp) => resp,
            Err(e) => {
                if e.status().is_server_error() {
                    tracing::warn!(error = %e, "request failed");
                } else {
                    tracing::debug!(error = %e, "request refused");
                }
                error_response(&e, &path, head)
            }
        }
    }
    .instrument(span)
    .await
}

async fn route(store: &FsStore, r: Req) -> S3Result<Response> {
    let q = |k: &str| r.query.contains_key(k);
    match (&r.method, r.bucket.clone(), r.key.clone()) {
        (&Method::GET, None, _) => list_buckets(store),
        (&Method::PUT, Some(b), None) => {
            store.create_bucket(&b)?;
            Ok(empty(StatusCode::OK))
        }
        (&Method::HEAD, Some(b), None) => {
            store.head_bucket(&b)?;
            Ok(empty(StatusCode::OK))
        }
        (&Method::DELETE, Some(b), None) => {
            store.delete_bucket(&b)?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        (&Method::GET, Some(b), None) if q("location") => {
            store.head_bucket(&b)?;
            Ok(xml_response(format!(
                "<LocationConstraint xmlns=\"{XMLNS}\"></LocationConstraint>"
            )))
        }
        (&Method::GET, Some(b), None) => list_objects(store, &b, &r.query).await,
        (&Method::POST, Some(b), None) if q("delete") => delete_objects(store, &b, r.body).await,
        (&Method::PUT, Some(b), Some(k)) if q("uploadId") && q("partNumber") => {
            put_part(store, &b, &k, r).await
        }
        (&Method::PUT, Some(b), Some(k)) if r.headers.contains_key("x-amz-copy-source") => {
            copy_object(store, &b, &k, &r.headers).await
        }
        (&Method::PUT, Some(b), Some(k)) => put_object(store, &b, &k, r).await,
        (&Method::GET, Some(b), Some(k)) => get_object(store, &b, &k, &r.headers, false).await,
        (&Method::HEAD, Some(b), Some(k)) => get_object(store, &b, &k, &r.headers, true).await,
        (&Method::DELETE, Some(b), Some(k)) if q("uploadId") => {
            store.abort_upload(&b, &k, &r.query["uploadId"]).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        (&Method::DELETE, Some(b), Some(k)) => {
            store.delete(&b, &k).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        (&Method::POST, Some(b), Some(k)) if q("uploads") => {
            let id = store.create_upload(&b, &k).await?;
            Ok(xml_response(format!(
                "<InitiateMultipartUploadResult xmlns=\"{XMLNS}\"><Bucket>{}</Bucket><Key>{}</Key><UploadId>{id}</UploadId></InitiateMultipartUploadResult>",
                escape(&b),
                escape(&k)
            )))
        }
        (&Method::POST, Some(b), Some(k)) if q("uploadId") => {
            complete_upload(store, &b, &k, r).await
        }
        (m, _, _) => Err(S3Error::NotImplemented(format!(
            "{m} with query {:?}",
            r.query.keys().collect::<Vec<_>>()
        ))),
    }
}

// ---- objects ----------------------------------------------------------------

fn write_condition(h: &HeaderMap) -> WriteCondition {
    if let Some(v) = header_str(h, "if-none-match") {
        if v.trim() == "*" {
            return WriteCondition::Absent;
        }
    }
    match header_str(h, "if-match") {
        Some(e) => WriteCondition::Matches(e.to_string()),
        None => WriteCondition::Always,
    }
}

async fn body_to_staged(
    store: &FsStore,
    headers: &HeaderMap,
    body: Body,
) -> S3Result<std::path::PathBuf> {
    if chunked::is_aws_chunked(headers) {
        let raw = axum::body::to_bytes(body, MAX_BUFFERED_BODY)
            .await
            .map_err(|e| S3Error::InvalidArgument(format!("reading the request body: {e}")))?;
        store.stage_bytes(chunked::decode(&raw)?).await
    } else {
        store.stage(body.into_data_stream()).await
    }
}

async fn put_object(store: &FsStore, b: &str, k: &str, r: Req) -> S3Result<Response> {
    store.head_bucket(b)?;
    let cond = write_condition(&r.headers);
    let staged = body_to_staged(store, &r.headers, r.body).await?;
    let meta = store.commit(staged, b, k, cond).await?;
    Ok(with_etag(empty(StatusCode::OK), &meta))
}

async fn put_part(store: &FsStore, b: &str, k: &str, r: Req) -> S3Result<Response> {
    let n: u32 = r.query["partNumber"].parse().map_err(|_| {
        S3Error::InvalidArgument(format!(
            "partNumber {:?} is not a number",
            r.query["partNumber"]
        ))
    })?;
    if r.headers.contains_key("x-amz-copy-source") {
        return Err(S3Error::NotImplemented("UploadPartCopy".into()));
    }
    let staged = body_to_staged(store, &r.headers, r.body).await?;
    let meta = store
        .put_part(b, k, &r.query["uploadId"], n, staged)
        .await?;
    Ok(with_etag(empty(StatusCode::OK), &meta))
}

async fn complete_upload(store: &FsStore, b: &str, k: &str, r: Req) -> S3Result<Response> {
    let cond = write_condition(&r.headers);
    let doc = read_text(r.body).await?;
    let mut parts = Vec::new();
    for p in xml::elements(&doc, "Part")? {
        let n = xml::texts(p, "PartNumber")?
            .first()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .ok_or_else(|| S3Error::MalformedXml("a Part without a PartNumber".into()))?;
        parts.push((n, xml::texts(p, "ETag")?.into_iter().next()));
    }
    let meta = store
        .complete_upload(b, k, &r.query["uploadId"], parts, cond)
        .await?;
    let resp = xml_response(format!(
        "<CompleteMultipartUploadResult xmlns=\"{XMLNS}\"><Location>/{}/{}</Location><Bucket>{}</Bucket><Key>{}</Key><ETag>{}</ETag></CompleteMultipartUploadResult>",
        escape(b),
        escape(k),
        escape(b),
        escape(k),
        escape(&meta.etag)
    ));
    Ok(with_etag(resp, &meta))
}

async fn copy_object(store: &FsStore, b: &str, k: &str, h: &HeaderMap) -> S3Result<Response> {
    let src = header_str(h, "x-amz-copy-source").unwrap_or_default();
    let src = percent_decode_str(src.split('?').next().unwrap_or_default())
        .decode_utf8()
        .map_err(|_| S3Error::InvalidArgument("x-amz-copy-source is not UTF-8".into()))?;
    let (sb, sk) = src.trim_start_matches('/').split_once('/').ok_or_else(|| {
        S3Error::InvalidArgument(format!("x-amz-copy-source {src:?} is not <bucket>/<key>"))
    })?;
    let meta = store.copy(sb, sk, b, k, write_condition(h)).await?;
    Ok(xml_response(format!(
        "<CopyObjectResult><LastModified>{}</LastModified><ETag>{}</ETag></CopyObjectResult>",
        iso8601(meta.modified),
        escape(&meta.etag)
    )))
}

/// GET and HEAD: conditional headers in RFC 9110's order, then the range.
async fn get_object(
    store: &FsStore,
    b: &str,
    k: &str,
    h: &HeaderMap,
    head: bool,
) -> S3Result<Response> {
    let (file, meta) = store.open_object(b, k).await?;
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    };
    let since = |name: &str| {
        header_str(h, name)
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .map(secs)
    };
    let modified = secs(meta.modified);
    if let Some(e) = header_str(h, "if-match") {
        if !e
            .split(',')
            .any(|e| e.trim() == "*" || etag_eq(e, &meta.etag))
        {
            return Err(S3Error::PreconditionFailed);
        }
    } else if since("if-unmodified-since").is_some_and(|t| modified > t) {
        return Err(S3Error::PreconditionFailed);
    }
    let not_modified = match header_str(h, "if-none-match") {
        Some(e) => e
            .split(',')
            .any(|e| e.trim() == "*" || etag_eq(e, &meta.etag)),
        None => since("if-modified-since").is_some_and(|t| modified <= t),
    };
    if not_modified {
        return Ok(with_meta_headers(empty(StatusCode::NOT_MODIFIED), &meta));
    }
    let range = match header_str(h, "range") {
        Some(v) => range::resolve(v, meta.size)?,
        None => None,
    };
    let (status, start, end) = match range {
        Some((s, e)) => (StatusCode::PARTIAL_CONTENT, s, e),
        None => (StatusCode::OK, 0, meta.size),
    };
    let body = if head {
        Body::empty()
    } else {
        Body::from_stream(FsStore::read_range(file, start, end))
    };
    let mut resp = Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, end - start)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::ACCEPT_RANGES, "bytes");
    if status == StatusCode::PARTIAL_CONTENT {
        resp = resp.header(
            header::CONTENT_RANGE,
            format!("bytes {}-{}/{}", start, end - 1, meta.size),
        );
    }
    let resp = resp
        .body(body)
        .map_err(|e| S3Error::Internal(std::io::Error::other(e)))?;
    Ok(with_meta_headers(resp, &meta))
}

// ---- buckets ----------------------------------------------------------------

fn list_buckets(store: &FsStore) -> S3Result<Response> {
    let mut doc = format!("<ListAllMyBucketsResult xmlns=\"{XMLNS}\"><Owner><ID>strata</ID><DisplayName>strata</DisplayName></Owner><Buckets>");
    for (name, created) in store.buckets()? {
        doc.push_str(&format!(
            "<Bucket><Name>{}</Name><CreationDate>{}</CreationDate></Bucket>",
            escape(&name),
            iso8601(created)
        ));
    }
    doc.push_str("</Buckets></ListAllMyBucketsResult>");
    Ok(xml_response(doc))
}

/// ListObjectsV2 (`list-type=2`) and the original ListObjects.
async fn list_objects(store: &FsStore, b: &str, q: &HashMap<String, String>) -> S3Result<Response> {
    let v2 = q.get("list-type").map(String::as_str) == Some("2");
    let prefix = q.get("prefix").cloned().unwrap_or_default();
    let delimiter = q.get("delimiter").cloned();
    let max_keys = match q.get("max-keys") {
        Some(m) => m
            .parse::<usize>()
            .map_err(|_| S3Error::InvalidArgument(format!("max-keys {m:?} is not a number")))?
            .min(1000),
        None => 1000,
    };
    let url = q.get("encoding-type").map(String::as_str) == Some("url");
    let enc = |s: &str| {
        if url {
            utf8_percent_encode(s, KEY_SAFE).to_string()
        } else {
            escape(s)
        }
    };
    let after = if v2 {
        q.get("continuation-token")
            .or_else(|| q.get("start-after"))
            .cloned()
    } else {
        q.get("marker").cloned()
    };
    let listing = store
        .list(b, &prefix, delimiter.as_deref(), after.as_deref(), max_keys)
        .await?;
    let count = listing.objects.len() + listing.common_prefixes.len();
    let mut doc = format!(
        "<ListBucketResult xmlns=\"{XMLNS}\"><Name>{}</Name><Prefix>{}</Prefix><MaxKeys>{max_keys}</MaxKeys><IsTruncated>{}</IsTruncated>",
        escape(b),
        enc(&prefix),
        listing.next.is_some()
    );
    if let Some(d) = &delimiter {
        doc.push_str(&format!("<Delimiter>{}</Delimiter>", enc(d)));
    }
    if url {
        doc.push_str("<EncodingType>url</EncodingType>");
    }
    if v2 {
        doc.push_str(&format!("<KeyCount>{count}</KeyCount>"));
        if let Some(t) = q.get("continuation-token") {
            doc.push_str(&format!(
                "<ContinuationToken>{}</ContinuationToken>",
                escape(t)
            ));
        }
        if let Some(s) = q.get("start-after") {
            doc.push_str(&format!("<StartAfter>{}</StartAfter>", enc(s)));
        }
        if let Some(n) = &listing.next {
            doc.push_str(&format!(
                "<NextContinuationToken>{}</NextContinuationToken>",
                escape(n)
            ));
        }
    } else {
        if let Some(m) = q.get("marker") {
            doc.push_str(&format!("<Marker>{}</Marker>", enc(m)));
        }
        if let Some(n) = &listing.next {
            doc.push_str(&format!("<NextMarker>{}</NextMarker>", enc(n)));
        }
    }
    for (key, meta) in &listing.objects {
        doc.push_str(&format!(
            "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            enc(key),
            iso8601(meta.modified),
            escape(&meta.etag),
            meta.size
        ));
    }
    for p in &listing.common_prefixes {
        doc.push_str(&format!(
            "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
            enc(p)
        ));
    }
    doc.push_str("</ListBucketResult>");
    Ok(xml_response(doc))
}

/// DeleteObjects: each key deleted on its own; failures are listed.
async fn delete_objects(store: &FsStore, b: &str, body: Body) -> S3Result<Response> {
    store.head_bucket(b)?;
    let doc = read_text(body).await?;
    let quiet = xml::texts(&doc, "Quiet")?
        .first()
        .is_some_and(|q| q.trim() == "true");
    let mut out = format!("<DeleteResult xmlns=\"{XMLNS}\">");
    for obj in xml::elements(&doc, "Object")? {
        let Some(key) = xml::texts(obj, "Key")?.into_iter().next() else {
            return Err(S3Error::MalformedXml("an Object without a Key".into()));
        };
        match store.delete(b, &key).await {
            Ok(()) if quiet => {}
            Ok(()) => out.push_str(&format!("<Deleted><Key>{}</Key></Deleted>", escape(&key))),
            Err(e) => out.push_str(&format!(
                "<Error><Key>{}</Key><Code>{}</Code><Message>{}</Message></Error>",
                escape(&key),
                e.code(),
                escape(&e.to_string())
            )),
        }
    }
    out.push_str("</DeleteResult>");
    Ok(xml_response(out))
}

// ---- helpers ----------------------------------------------------------------

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn read_text(body: Body) -> S3Result<String> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| S3Error::InvalidArgument(format!("reading the request body: {e}")))?;
        buf.extend_from_slice(&chunk);
        if buf.len() > 16 << 20 {
            return Err(S3Error::InvalidArgument(
                "XML request body over 16 MiB".into(),
            ));
        }
    }
    String::from_utf8(buf).map_err(|_| S3Error::MalformedXml("the body is not UTF-8".into()))
}

fn iso8601(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    r
}

fn xml_response(doc: String) -> Response {
    let mut r = Response::new(Body::from(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{doc}"
    )));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    r
}

fn with_etag(mut r: Response, meta: &ObjectMeta) -> Response {
    if let Ok(v) = HeaderValue::from_str(&meta.etag) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

fn with_meta_headers(r: Response, meta: &ObjectMeta) -> Response {
    let mut r = with_etag(r, meta);
    if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(meta.modified)) {
        r.headers_mut().insert(header::LAST_MODIFIED, v);
    }
    r
}

fn error_response(e: &S3Error, resource: &str, head: bool) -> Response {
    let body = if head {
        Body::empty()
    } else {
        Body::from(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message><Resource>{}</Resource></Error>",
            e.code(),
            escape(&e.to_string()),
            escape(resource)
        ))
    };
    let mut r = Response::new(body);
    *r.status_mut() = e.status();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    r
}
