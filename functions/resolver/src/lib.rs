//! The `resolver` function: redeems single-use download links
//! (`GET /l/{token}`) and handles that a backend received raw
//! (`POST /resolve`).

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

mod page;
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;
use sluice::http::auth::require;
use sluice::http::{HttpError, JsonBody, Routes, only, text};
use sluice::service::batches::zip::Zipped;
use sluice::service::downloads::{Delivery, DownloadTicket, Ranged, Span, Wanted};
use sluice::{Caller, FileMeta, Scope, Sluice};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The resolver's routes.
pub fn router(state: Sluice) -> Router {
    routes(&state).with_state(state)
}

/// What the resolver serves, each route once with its methods (the
/// deployment's routes are held against this list).
pub fn routes(state: &Sluice) -> Routes<Sluice> {
    Routes::new()
        // HEAD and a page spend nothing; bytes spend the link when its
        // last byte goes out (`Downloads::redeem_link`). The download view
        // in the chat, on the host's sandbox origin, fetches a file it
        // embeds with a simple GET (no preflight): the answer names that
        // origin ([`Sluice::widget_origins`]) and no other.
        .route(
            "/l/{token}",
            "GET, HEAD",
            get(download).head(download).layer(view_cors(state)),
        )
        // A batch's files as one zip (`Batches::redeem_zip`): spent as
        // its last byte goes, like a link.
        .route("/z/{token}", "GET, HEAD", get(zip).head(zip))
        .route("/resolve", "POST", post(resolve))
        // A download batch's list of links (single-use, like a link; HEAD
        // must not spend it either), and the script its line runs.
        .route("/g/{token}", "GET", get(batch_links).head(|| only("GET")))
        .route("/g/{token}/sh", "GET", get(fetch_script))
}

/// CORS for the download view's origins: `GET` of a link, nothing else.
fn view_cors(state: &Sluice) -> CorsLayer {
    let origins: Vec<HeaderValue> = state
        .widget_origins()
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([http::Method::GET, http::Method::HEAD])
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
/// [`sluice::service::downloads::Downloads::redeem_link`]'s) for what the
/// request wants ([`wanted`]) and delivers what it says: the headers, the
/// person's page, a redirect to the store, or the bytes.
async fn download(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    method: http::Method,
    RawQuery(query): RawQuery,
    headers: http::HeaderMap,
) -> Result<Response, HttpError> {
    let wanted = wanted(&method, query.as_deref(), &headers);
    Ok(
        match sluice.downloads().redeem_link(&token, wanted).await? {
            Delivery::Redirect(url) => redirect(&url)?,
            Delivery::Whole { file, bytes, span } => {
                let (status, headers) = body_headers(&file, &span, wanted);
                (status, headers, Body::from(bytes)).into_response()
            }
            Delivery::Stream { file, stream, span } => {
                let (status, headers) = body_headers(&file, &span, wanted);
                (status, headers, Body::from_stream(stream)).into_response()
            }
            Delivery::Head { file } => {
                let whole = Span {
                    start: 0,
                    end: file.size,
                    size: file.size,
                };
                let (status, headers) = body_headers(&file, &whole, wanted);
                (status, headers).into_response()
            }
            Delivery::Page { file } => page::of(&file),
            Delivery::Unsatisfiable { size } => (
                StatusCode::RANGE_NOT_SATISFIABLE,
                [
                    (
                        header::CONTENT_RANGE,
                        HeaderValue::from_str(&format!("bytes */{size}"))
                            .map_err(sluice::Error::internal)?,
                    ),
                    (header::ACCEPT_RANGES, HeaderValue::from_static("bytes")),
                ],
            )
                .into_response(),
        },
    )
}

/// A redirect to a presigned URL of the store, never cached.
fn redirect(url: &str) -> Result<Response, HttpError> {
    Ok((
        StatusCode::TEMPORARY_REDIRECT,
        [
            (
                header::LOCATION,
                HeaderValue::from_str(url).map_err(sluice::Error::internal)?,
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
    )
        .into_response())
}

/// Redeems a zip link for what the request wants: its headers, the
/// person's page, the zip as it is built, or a redirect to it built in the
/// bucket (no `Range`: a zip cannot resume, and a request for one is
/// charged the whole zip).
async fn zip(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    method: http::Method,
    RawQuery(query): RawQuery,
    headers: http::HeaderMap,
) -> Result<Response, HttpError> {
    let wanted = match wanted(&method, query.as_deref(), &headers) {
        Wanted::Bytes(_) => Wanted::Bytes(Ranged::Whole),
        other => other,
    };
    let attachment = |name: &str| {
        let mut h = attachment("application/zip", name);
        h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("none"));
        h
    };
    Ok(match sluice.batches().redeem_zip(&token, wanted).await? {
        Zipped::Described {
            file_name,
            files,
            bytes,
            page: true,
        } => page::of_zip(&file_name, files, bytes),
        Zipped::Described { file_name, .. } => {
            (StatusCode::OK, attachment(&file_name)).into_response()
        }
        Zipped::Redirect(url) => redirect(&url)?,
        Zipped::Stream { file_name, stream } => (
            StatusCode::OK,
            attachment(&file_name),
            Body::from_stream(stream),
        )
            .into_response(),
    })
}

/// What a request on a download link wants: its headers (`HEAD`); the
/// person's page (a browser or a link preview asking for HTML, unless it
/// is the page's own button, `?save`); else the bytes, of the one range
/// its `Range` names.
fn wanted(method: &http::Method, query: Option<&str>, headers: &http::HeaderMap) -> Wanted {
    if method == http::Method::HEAD {
        return Wanted::Head;
    }
    let saving = query.is_some_and(|q| q.split('&').any(|p| p == "save" || p.starts_with("save=")));
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    if !saving
        && (page::asks_for_html(text(header::ACCEPT)) || page::is_preview(text(header::USER_AGENT)))
    {
        return Wanted::Page;
    }
    Wanted::Bytes(Ranged::parse(text(header::RANGE)))
}

/// The status and headers of `span` of a file's bytes: the whole file
/// (200), or a range of it (206 with its `Content-Range`).
fn body_headers(file: &FileMeta, span: &Span, wanted: Wanted) -> (StatusCode, http::HeaderMap) {
    let mut h = attachment(&file.content_type, &file.filename);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(span.len()));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    let partial = matches!(wanted, Wanted::Bytes(r) if r.is_partial());
    if !partial {
        return (StatusCode::OK, h);
    }
    if let Ok(v) = HeaderValue::from_str(&span.content_range()) {
        h.insert(header::CONTENT_RANGE, v);
    }
    (StatusCode::PARTIAL_CONTENT, h)
}

/// The headers of a file's bytes sent as an attachment named `name`:
/// never stored by a cache, never sniffed as another type.
fn attachment(content_type: &str, name: &str) -> http::HeaderMap {
    let value = |s: &str| {
        HeaderValue::from_str(s)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
    };
    [
        (header::CONTENT_TYPE, value(content_type)),
        (
            header::CONTENT_DISPOSITION,
            value(&sluice::filename::content_disposition(name)),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
    ]
    .into_iter()
    .collect()
}
