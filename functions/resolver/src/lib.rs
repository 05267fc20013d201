//! The `resolver` function: redeems single-use download links
//! (`GET /l/{token}`) and handles that a backend received raw
//! (`POST /resolve`).

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;
use sluice::http::auth::require;
use sluice::http::{HttpError, JsonBody, Routes, only, text};
use sluice::service::downloads::{Delivery, DownloadTicket};
use sluice::{Caller, FileMeta, Scope, Sluice};

/// The resolver's routes.
pub fn router(state: Sluice) -> Router {
    routes().with_state(state)
}

/// What the resolver serves, each route once with its methods (the
/// deployment's routes are held against this list).
pub fn routes() -> Routes<Sluice> {
    Routes::new()
        // HEAD must not run the GET handler (axum's `get` would): that
        // would spend the link.
        .route("/l/{token}", "GET", get(download).head(|| only("GET")))
        .route("/resolve", "POST", post(resolve))
        // A download batch's list of links (single-use, like a link; HEAD
        // must not spend it either), and the script its line runs.
        .route("/g/{token}", "GET", get(batch_links).head(|| only("GET")))
        .route("/g/{token}/sh", "GET", get(fetch_script))
}

/// A download batch's files, each with a fresh single-use link, once.
async fn batch_links(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(text(sluice.batches().batch_links(&token).await?))
}

/// The script a download batch's line runs, to a live list link only.
async fn fetch_script(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(text(sluice.batches().fetch_script(&token).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveRequest {
    handle: String,
}

/// A backend (or the handle's owner) turns a handle into the file's pinned
/// description and a single-use download link.
async fn resolve(
    State(sluice): State<Sluice>,
    caller: Caller,
    JsonBody(req): JsonBody<ResolveRequest>,
) -> Result<Json<DownloadTicket>, HttpError> {
    if !caller.has(Scope::FilesResolve) {
        require(&sluice, &caller, Scope::FilesRead)?;
    }
    Ok(Json(
        sluice
            .downloads()
            .resolve_handle(&caller, &req.handle)
            .await?,
    ))
}

/// Redeems a download link (the order of checks is
/// [`sluice::service::downloads::Downloads::redeem_link`]'s) and delivers what it says: a redirect
/// to the store, or the bytes.
async fn download(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    headers: http::HeaderMap,
) -> Result<Response, HttpError> {
    let from = resume_offset(&headers);
    Ok(match sluice.downloads().redeem_link(&token, from).await? {
        Delivery::Redirect(url) => (
            StatusCode::TEMPORARY_REDIRECT,
            [
                (
                    header::LOCATION,
                    HeaderValue::from_str(&url).map_err(sluice::Error::internal)?,
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
        )
            .into_response(),
        Delivery::Whole { file, bytes } => {
            let (status, headers) = body_headers(&file, from);
            (status, headers, Body::from(bytes)).into_response()
        }
        Delivery::Stream { file, stream } => {
            let (status, headers) = body_headers(&file, from);
            (status, headers, Body::from_stream(stream)).into_response()
        }
        Delivery::PastTheEnd { size } => (
            StatusCode::RANGE_NOT_SATISFIABLE,
            [(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{size}"))
                    .map_err(sluice::Error::internal)?,
            )],
        )
            .into_response(),
    })
}

/// The status and headers of a file's bytes sent from offset `from`: the
/// whole file (200), or the rest of it (206 with its `Content-Range`).
fn body_headers(file: &FileMeta, from: u64) -> (StatusCode, http::HeaderMap) {
    let mut h: http::HeaderMap = download_headers(file).into_iter().collect();
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if from == 0 {
        return (StatusCode::OK, h);
    }
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(file.size - from));
    let range = format!("bytes {from}-{}/{}", file.size - 1, file.size);
    if let Ok(v) = HeaderValue::from_str(&range) {
        h.insert(header::CONTENT_RANGE, v);
    }
    (StatusCode::PARTIAL_CONTENT, h)
}

/// Where a client resuming a download asks to start: `Range: bytes=<n>-`,
/// the one form `curl -C -` sends. Any other range (several, a suffix, an
/// end) is ignored and the whole file sent, as RFC 9110 allows.
fn resume_offset(headers: &http::HeaderMap) -> u64 {
    headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("bytes="))
        .and_then(|v| v.strip_suffix('-'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn download_headers(file: &FileMeta) -> [(header::HeaderName, HeaderValue); 5] {
    let value = |s: &str| {
        HeaderValue::from_str(s)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
    };
    [
        (header::CONTENT_TYPE, value(&file.content_type)),
        (header::CONTENT_LENGTH, HeaderValue::from(file.size)),
        (
            header::CONTENT_DISPOSITION,
            value(&sluice::filename::content_disposition(&file.filename)),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
    ]
}
