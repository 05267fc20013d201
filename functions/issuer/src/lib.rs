//! The `issuer` function: mints upload handles and links for programs that
//! are not MCP clients (`POST /uploads`), serves the browser upload page
//! (`/browser/{token}`), and in local mode is the object store's upload
//! endpoint (`PUT /uploads/{token}`).

use std::io;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use futures_util::{StreamExt as _, TryStreamExt as _};
use http::{HeaderMap, header};
use serde::Serialize;
use sluice::error::JsonBody;
use sluice::service::{UploadRequest, UploadTicket};
use sluice::{ApiError, Caller, FileId, Method, Scope, Sha256, Sluice};

/// How long after its link expires an upload may still finish.
pub const UPLOAD_GRACE_SECS: i64 = 10;

/// The issuer's routes.
pub fn router(state: Sluice) -> Router {
    Router::new()
        .route(
            "/uploads",
            post(request_upload).fallback(|| async { ApiError::MethodNotAllowed("POST") }),
        )
        .route(
            "/uploads/{token}",
            put(upload).fallback(|| async { ApiError::MethodNotAllowed("PUT") }),
        )
        .route(
            "/browser/assets/{name}",
            get(asset).fallback(|| async { ApiError::MethodNotAllowed("GET") }),
        )
        .route(
            "/browser/{token}",
            get(page).fallback(|| async { ApiError::MethodNotAllowed("GET") }),
        )
        .route(
            "/browser/{token}/start",
            post(start_browser).fallback(|| async { ApiError::MethodNotAllowed("POST") }),
        )
        .with_state(state)
}

async fn request_upload(
    State(sluice): State<Sluice>,
    caller: Caller,
    JsonBody(req): JsonBody<UploadRequest>,
) -> Result<Json<UploadTicket>, ApiError> {
    sluice.require(&caller, Scope::FilesWrite)?;
    sluice.issue_upload(&caller.owner, req).await.map(Json)
}

/// The upload page for `token`, or a page saying why it cannot be used.
async fn page(State(sluice): State<Sluice>, Path(token): Path<String>) -> Response {
    let opened = sluice.open_page(&token);
    let (status, html) = sluice::browser::render(&opened);
    // On S3 the page PUTs to the store's origin: the policy must allow it.
    let store_origin = match &opened {
        Ok(_) => sluice.store_origin().await,
        Err(_) => None,
    };
    (
        status,
        sluice::browser::headers(store_origin.as_deref()),
        html,
    )
        .into_response()
}

/// The page's script and style: the same for every page.
async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    let asset = sluice::browser::ASSETS
        .iter()
        .find(|a| a.name == name)
        .ok_or(ApiError::NotFound)?;
    Ok((
        [
            (header::CONTENT_TYPE, asset.content_type),
            (header::CACHE_CONTROL, "public, max-age=300"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        asset.body,
    )
        .into_response())
}

/// The page, having hashed the file, asks for its signed PUT.
async fn start_browser(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    JsonBody(start): JsonBody<sluice::browser::BrowserStart>,
) -> Result<Json<sluice::browser::BrowserTarget>, ApiError> {
    sluice.start_browser_upload(&token, start).await.map(Json)
}

/// What a successful upload answers.
#[derive(Debug, Serialize)]
struct Uploaded {
    file_id: FileId,
    size: u64,
    sha256: Sha256,
}

/// Streams the body into the store, enforcing the size and digest the link
/// pins. Refusals that can be decided from the headers come before any byte
/// of the body is read.
async fn upload(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Uploaded>, ApiError> {
    // With a direct store (S3) bytes go straight to it, never through here.
    if sluice.store().is_direct() {
        return Err(ApiError::NotFound);
    }
    let link = sluice.verify_link(&token, Method::Put)?;
    let file = link.file;
    if let Some(value) = headers.get(header::CONTENT_LENGTH) {
        let len: u64 = value
            .to_str()
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| ApiError::BadRequest("Content-Length is not a number".into()))?;
        if len > file.size {
            return Err(ApiError::PayloadTooLarge(format!(
                "the body is {len} bytes but this link accepts exactly {}; nothing was stored",
                file.size
            )));
        }
        if len < file.size {
            return Err(ApiError::BadRequest(format!(
                "the body is {len} bytes but this link accepts exactly {}; nothing was stored",
                file.size
            )));
        }
    }
    let stream = body.into_data_stream().map_err(io::Error::other).boxed();
    let stream = sluice::store::idle_timeout(stream, sluice.parts().body_idle_timeout);
    // An upload started before the link expired may finish shortly after,
    // never trickle on for ever.
    let deadline = link.expires_at + UPLOAD_GRACE_SECS;
    let left = u64::try_from(deadline - sluice::time::now_unix()).unwrap_or(0);
    let key = file.object_key();
    let put = sluice.store().put(&key, file.size, file.sha256, stream);
    let Ok(stored) = tokio::time::timeout(Duration::from_secs(left), put).await else {
        tracing::info!(file_id = %file.id, jti = %link.jti, "upload ended at its link's expiry");
        return Err(ApiError::Timeout(
            "the upload link expired before the upload finished; nothing was stored: \
             call request_upload again and upload to the new URL"
                .into(),
        ));
    };
    match stored {
        Ok(()) => {
            tracing::info!(file_id = %file.id, jti = %link.jti, size = file.size, "upload stored");
            // The bytes are stored whatever happens here; a record left
            // pending is found ready by the next listing.
            if let Err(e) = sluice.file_stored(&file).await {
                tracing::warn!(file_id = %file.id, error = %e, "could not mark the file ready");
            }
            Ok(Json(Uploaded {
                file_id: file.id,
                size: file.size,
                sha256: file.sha256,
            }))
        }
        Err(e) => {
            tracing::info!(file_id = %file.id, jti = %link.jti, error = %e, "upload refused");
            Err(e.into())
        }
    }
}
