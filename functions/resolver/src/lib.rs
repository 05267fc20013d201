//! The `resolver` function: redeems single-use download links
//! (`GET /l/{token}`; `GET /links/{token}` for sealed ones issued before
//! links were short) and handles that a backend received raw
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
use sluice::http::{HttpError, JsonBody, only};
use sluice::service::links::{Delivery, DownloadTicket};
use sluice::{Caller, FileMeta, Scope, Sluice};

/// The resolver's routes.
pub fn router(state: Sluice) -> Router {
    Router::new()
        .route(
            "/l/{token}",
            get(download).head(|| only("GET")).fallback(|| only("GET")),
        )
        .route(
            "/links/{token}",
            get(download)
                // HEAD must not run the GET handler: that would spend the link.
                .head(|| only("GET"))
                .fallback(|| only("GET")),
        )
        .route("/resolve", post(resolve).fallback(|| only("POST")))
        .with_state(state)
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
    Ok(Json(sluice.resolve_handle(&caller, &req.handle).await?))
}

/// Redeems a download link (the order of checks is [`Sluice::redeem_link`]'s)
/// and delivers what it says: a redirect to the store, or the bytes.
async fn download(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(match sluice.redeem_link(&token).await? {
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
            (StatusCode::OK, download_headers(&file), Body::from(bytes)).into_response()
        }
        Delivery::Stream { file, stream } => (
            StatusCode::OK,
            download_headers(&file),
            Body::from_stream(stream),
        )
            .into_response(),
    })
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
