//! The `resolver` function: redeems single-use download links
//! (`GET /links/{token}`) and handles that a backend received raw
//! (`POST /resolve`).

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;
use sluice::error::JsonBody;
use sluice::ledger::Spend;
use sluice::service::{DownloadTicket, stored_mismatch};
use sluice::store::{DownloadAs, verified};
use sluice::{ApiError, Caller, FileMeta, Method, Scope, Sluice};

/// Files up to this size are read and verified whole before the first byte is
/// sent, so a mismatch is a clean 409. Larger files stream with their last
/// chunk held back until they verify.
pub const VERIFY_WHOLE_BYTES: u64 = 1024 * 1024;

/// The resolver's routes.
pub fn router(state: Sluice) -> Router {
    Router::new()
        .route(
            "/links/{token}",
            get(download)
                // HEAD must not run the GET handler: that would spend the link.
                .head(|| async { ApiError::MethodNotAllowed("GET") })
                .fallback(|| async { ApiError::MethodNotAllowed("GET") }),
        )
        .route(
            "/resolve",
            post(resolve).fallback(|| async { ApiError::MethodNotAllowed("POST") }),
        )
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
) -> Result<Json<DownloadTicket>, ApiError> {
    if !caller.scopes.contains(&Scope::FilesResolve) {
        caller.require(Scope::FilesRead)?;
    }
    let file = sluice.redeem_handle(&caller, &req.handle)?;
    sluice.issue_download(&file).await.map(Json)
}

/// Redeems a download link: verify → find the object → spend → stream,
/// verifying size and digest on the way out.
async fn download(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    let link = sluice.verify_link(&token, Method::Get)?;
    let file = &link.file;
    let key = file.object_key();
    let info = sluice.store().head(&key).await?.ok_or(ApiError::NotFound)?;
    // A direct store (S3) records the digest it verified on upload; without
    // one the object cannot be vouched for without reading it, so it is refused.
    let digest_ok = match info.sha256 {
        Some(d) => d == file.sha256,
        None => !sluice.store().is_direct(),
    };
    if info.size != file.size || !digest_ok {
        tracing::warn!(file_id = %file.id, jti = %link.jti, "stored object does not match its link");
        return Err(stored_mismatch());
    }

    if sluice.store().is_direct() {
        spend(&sluice, &link.jti, link.expires_at).await?;
        let disposition = sluice::filename::content_disposition(&file.filename);
        let download = DownloadAs {
            content_disposition: &disposition,
            content_type: &file.content_type,
        };
        let url = sluice
            .store()
            .presign_get(&key, &info, download, sluice.parts().download_url_ttl)
            .await?
            .ok_or_else(|| {
                ApiError::internal(std::io::Error::other("a direct store must presign"))
            })?;
        tracing::info!(file_id = %file.id, jti = %link.jti, "download redirected to the store");
        return Ok((
            StatusCode::TEMPORARY_REDIRECT,
            [
                (
                    header::LOCATION,
                    HeaderValue::from_str(&url).map_err(ApiError::internal)?,
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
        )
            .into_response());
    }

    let body = if file.size <= VERIFY_WHOLE_BYTES {
        let bytes = sluice
            .read_verified(file)
            .await?
            .ok_or(ApiError::NotFound)?;
        spend(&sluice, &link.jti, link.expires_at).await?;
        Body::from(bytes)
    } else {
        spend(&sluice, &link.jti, link.expires_at).await?;
        let stream = sluice.store().get(&key).await?.ok_or(ApiError::NotFound)?;
        Body::from_stream(verified(stream, file.size, file.sha256))
    };
    tracing::info!(file_id = %file.id, jti = %link.jti, size = file.size, "download started");
    Ok((StatusCode::OK, download_headers(file), body).into_response())
}

async fn spend(sluice: &Sluice, jti: &str, expires_at: i64) -> Result<(), ApiError> {
    match sluice.ledger().spend(jti, expires_at).await? {
        Spend::Fresh => Ok(()),
        Spend::AlreadySpent => {
            tracing::info!(jti, "spent link presented again");
            Err(ApiError::NotFound)
        }
    }
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
