//! The `issuer` function: mints upload handles and links for programs that
//! are not MCP clients (`POST /uploads`), serves the browser upload page
//! (`/browser/{token}`, rendered by [`page`]), and in local mode is the
//! object store's upload endpoint (`PUT /u/{token}`; with S3, the place a
//! presigned PUT is minted behind: `GET /u/{token}` answers it, a `PUT`
//! is redirected to it). Each handler
//! translates HTTP to one service call and back; the steps of each live in
//! the service (`sluice::service::uploads` for an upload's). It also
//! deletes a file (`DELETE /files/{file}`).

mod page;
mod tus;

use std::io;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, head, post, put};
use futures_util::{StreamExt as _, TryStreamExt as _};
use http::{HeaderMap, StatusCode, header};
use sluice::http::auth::require;
use sluice::http::{HttpError, JsonBody, Routes, own_body_limits, text};
use sluice::service::files::delete::DeletedFile;
use sluice::service::imports::{ImportRequest, ImportTicket};
use sluice::service::pages::{BrowserStart, BrowserTarget};
use sluice::service::receipts::ReceiptAnswer;
use sluice::service::uploads::issue::{UploadRequest, UploadTicket};
use sluice::service::uploads::parts::Completion;
use sluice::service::uploads::put::Accepted;
use sluice::{Caller, Scope, Sluice};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The issuer's routes.
pub fn router(state: Sluice) -> Router {
    routes(&state).with_state(state)
}

/// What the issuer serves, each route once with its methods (the
/// deployment's routes are held against this list).
pub fn routes(state: &Sluice) -> Routes<Sluice> {
    Routes::new()
        .route("/uploads", "POST", post(request_upload))
        .route("/files/{file}", "DELETE", delete(delete_file))
        // Receipts of custody (`sluice::service::receipts`): a file's, and
        // the public keys that verify every receipt (public: an auditor
        // needs no account).
        .route("/files/{file}/receipt", "GET", get(file_receipt))
        .route("/.well-known/jwks.json", "GET", get(jwks))
        // Files fetched from a URL (`sluice::service::imports`).
        .route("/imports", "POST", post(import_file))
        .route("/imports/{file_id}", "GET", get(import_status))
        .merge(widget_routes(state))
        .route("/browser/assets/{name}", "GET", get(asset))
        .route("/browser/{token}", "GET", get(show_page))
        // Many files in one line (`sluice::service::batches`), called by the
        // line only (no CORS): the files of a batch still to send, the
        // batch's script, and where a file of a batch goes in one PUT.
        .route("/b/{token}", "GET", get(batch_to_send))
        .route("/b/{token}/sh", "GET", get(batch_script))
        .route("/u/{token}/to", "GET", get(put_target))
}

/// The routes an upload form calls, from the page (same origin) or the
/// in-chat widget, which runs on the MCP Apps host's sandbox origin: they
/// answer CORS for [`Sluice::widget_origins`] only. Each is authorised by
/// the token in its path alone (no cookie, no ambient credential).
fn widget_routes(state: &Sluice) -> Routes<Sluice> {
    let origins: Vec<http::HeaderValue> = state
        .widget_origins()
        .iter()
        .filter_map(|o| http::HeaderValue::from_str(o).ok())
        .collect();
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([
            http::Method::GET,
            http::Method::HEAD,
            http::Method::POST,
            http::Method::PUT,
            http::Method::PATCH,
        ])
        .allow_headers(
            [
                header::CONTENT_TYPE,
                header::IF_NONE_MATCH,
                http::HeaderName::from_static("x-amz-checksum-sha256"),
                http::HeaderName::from_static("x-amz-sdk-checksum-algorithm"),
            ]
            .into_iter()
            .chain(tus::REQUEST_HEADERS)
            .collect::<Vec<_>>(),
        )
        // A "not now" says when to ask again, and a resumable upload where
        // it stands; the widget, on another origin, may read them only if
        // they are exposed (none is a safelisted header).
        .expose_headers(
            std::iter::once(header::RETRY_AFTER)
                .chain(tus::ANSWER_HEADERS)
                .collect::<Vec<_>>(),
        )
        .max_age(std::time::Duration::from_secs(600));
    // An upload's body has its own limits (`sluice::service::uploads`).
    let own_limits = || axum::middleware::from_fn(own_body_limits);
    let max_size = state.transfers().max_upload_bytes;
    Routes::new()
        // The upload link: one PUT of the whole file, or, where sluice
        // receives the bytes, a tus upload (`tus`: HEAD, PATCH, OPTIONS).
        .route(
            "/u/{token}",
            "GET, HEAD, PUT, PATCH",
            put(upload_short)
                .get(upload_location)
                .merge(head(tus::head))
                .patch(tus::patch)
                .layer(own_limits()),
        )
        // Uploads in parts (`sluice::service::uploads::parts`).
        .route("/u/{token}/sh", "GET", get(parts_script))
        .route("/u/{token}/parts", "GET", get(stored_parts))
        .route("/u/{token}/parts/{n}", "POST", post(part_target))
        .route("/u/{token}/complete", "POST", post(complete_parts))
        .route("/browser/{token}/start", "POST", post(start_browser))
        .cors(cors)
        .layer(axum::middleware::from_fn(move |request, next| {
            tus::options(max_size, request, next)
        }))
}

async fn request_upload(
    State(sluice): State<Sluice>,
    caller: Caller,
    JsonBody(req): JsonBody<UploadRequest>,
) -> Result<Json<UploadTicket>, HttpError> {
    require(&sluice, &caller, Scope::FilesWrite)?;
    Ok(Json(
        sluice.uploads().issue_upload(&caller.owner, req).await?,
    ))
}

/// `POST /imports`: the server fetches a URL into a file of the caller's
/// (`files:write`), answering when it ends or `pending` after a short wait.
async fn import_file(
    State(sluice): State<Sluice>,
    caller: Caller,
    JsonBody(req): JsonBody<ImportRequest>,
) -> Result<Json<ImportTicket>, HttpError> {
    require(&sluice, &caller, Scope::FilesWrite)?;
    Ok(Json(
        sluice.imports().import_file(&caller.owner, req).await?,
    ))
}

/// How long `GET /imports/{file_id}` waits.
#[derive(Debug, serde::Deserialize)]
struct ImportWait {
    /// Seconds (the service waits at most the status wait).
    #[serde(default)]
    wait_seconds: u64,
}

/// `GET /imports/{file_id}[?wait_seconds=N]`: where an import stands
/// (`files:read`).
async fn import_status(
    State(sluice): State<Sluice>,
    caller: Caller,
    Path(file_id): Path<String>,
    Query(wait): Query<ImportWait>,
) -> Result<Json<ImportTicket>, HttpError> {
    require(&sluice, &caller, Scope::FilesRead)?;
    let id = sluice::FileId::parse(&file_id).ok_or(sluice::Error::NotFound)?;
    let wait = std::time::Duration::from_secs(wait.wait_seconds);
    Ok(Json(
        sluice
            .imports()
            .import_status(&caller.owner, &id, wait)
            .await?,
    ))
}

/// `DELETE /files/{file}` (a file id or a handle): the caller's own file
/// (`files:write`), or, by its handle, another user's (`files:delete`). A
/// second delete answers the same.
async fn delete_file(
    State(sluice): State<Sluice>,
    caller: Caller,
    Path(file): Path<String>,
) -> Result<Json<DeletedFile>, HttpError> {
    if !caller.has(Scope::FilesDelete) {
        require(&sluice, &caller, Scope::FilesWrite)?;
    }
    Ok(Json(sluice.files().delete_file(&caller, &file).await?))
}

/// `GET /files/{file}/receipt` (a file id or a handle, `files:read`): the
/// caller's ready file's signed receipt; any other state is said.
async fn file_receipt(
    State(sluice): State<Sluice>,
    caller: Caller,
    Path(file): Path<String>,
) -> Result<Json<ReceiptAnswer>, HttpError> {
    require(&sluice, &caller, Scope::FilesRead)?;
    Ok(Json(sluice.receipts().receipt(&caller, &file).await?))
}

/// `GET /.well-known/jwks.json`: the receipt keys, current and retired.
async fn jwks(State(sluice): State<Sluice>) -> Result<Response, HttpError> {
    Ok((
        [(header::CACHE_CONTROL, "public, max-age=300")],
        Json(sluice.receipts().jwks().await?),
    )
        .into_response())
}

/// The upload page for `token`, or a page saying why it cannot be used.
async fn show_page(State(sluice): State<Sluice>, Path(token): Path<String>) -> Response {
    let opened = sluice.pages().open_page(&token);
    let (status, html) = page::render(&opened);
    // On S3 the page PUTs to the store's origin: the policy must allow it.
    let store_origin = match &opened {
        Ok(_) => sluice.uploads().store_origin().await,
        Err(_) => None,
    };
    (status, page::headers(store_origin.as_deref()), html).into_response()
}

/// The page's script and style: the same for every page.
async fn asset(Path(name): Path<String>) -> Result<Response, HttpError> {
    let asset = page::ASSETS
        .iter()
        .find(|a| a.name == name)
        .ok_or(sluice::Error::NotFound)?;
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

/// The most a page's start request may carry: a name, a size, a digest.
const MAX_START_BYTES: usize = 8 * 1024;

/// The page, having hashed the file, asks for its signed PUT. The page
/// token is checked before any byte of the body is read, and the body is
/// read only up to [`MAX_START_BYTES`].
/// Which file of a page a start is for (`?file=n`, 0 for the first).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StartQuery {
    #[serde(default)]
    file: u32,
}

async fn start_browser(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    Query(which): Query<StartQuery>,
    body: Body,
) -> Result<Json<BrowserTarget>, HttpError> {
    let page = sluice.pages().page_for_start(&token)?;
    let bytes = axum::body::to_bytes(body, MAX_START_BYTES)
        .await
        .map_err(|_| HttpError::Body {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: format!("the request is over {MAX_START_BYTES} bytes, or broke off"),
        })?;
    let start: BrowserStart = serde_json::from_slice(&bytes).map_err(|e| HttpError::Body {
        status: StatusCode::BAD_REQUEST,
        message: format!("the request is not the JSON a page sends: {e}"),
    })?;
    Ok(Json(
        sluice
            .pages()
            .start_browser_upload(&page, which.file, start)
            .await?,
    ))
}

/// Where the bytes of an upload link go ([`sluice::service::uploads::Uploads::upload_location`]),
/// as text: what the upload command asks before its PUT.
async fn upload_location(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(text(sluice.uploads().upload_location(&token).await?))
}

/// A PUT to a short upload link ([`sluice::service::uploads::Uploads::accept`]):
/// where the store takes the bytes (S3), redirected (307, before any of the
/// body is read) to a presigned PUT minted now; otherwise streamed into the
/// store.
async fn upload_short(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    let declared = content_length(&headers)?;
    let stream = body.into_data_stream().map_err(io::Error::other).boxed();
    Ok(
        match sluice.uploads().accept(&token, declared, stream).await? {
            Accepted::Stored(uploaded) => Json(uploaded).into_response(),
            Accepted::Redirect(url) => {
                let location =
                    http::HeaderValue::from_str(&url).map_err(sluice::Error::internal)?;
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [
                        (header::LOCATION, location),
                        (
                            header::CACHE_CONTROL,
                            http::HeaderValue::from_static("no-store"),
                        ),
                    ],
                )
                    .into_response()
            }
        },
    )
}

/// Plain text that is not to be cached: where an upload's bytes go, and
/// the answers of an upload in parts.
/// The script an upload line in parts runs ([`sluice::service::uploads::Uploads::parts_script`]).
async fn parts_script(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(text(
        sluice.uploads().parts_script(&token).await?.to_owned(),
    ))
}

/// The files of a batch still to send, one a line (tab-separated).
async fn batch_to_send(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(text(sluice.batches().batch_to_send(&token).await?))
}

/// The script a batch's line runs, to a live batch link only.
async fn batch_script(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(text(sluice.batches().batch_script(&token).await?))
}

/// Where a file of a batch goes in one PUT: the URL, then its headers.
async fn put_target(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(text(sluice.uploads().put_target(&token).await?))
}

/// The parts stored so far, one number a line.
async fn stored_parts(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    let parts = sluice.uploads().stored_parts(&token).await?;
    Ok(text(
        parts.iter().map(|n| format!("{n}\n")).collect::<String>(),
    ))
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PartQuery {
    sha256: String,
}

/// Where to send part `n`, whose SHA-256 the query declares: the URL, then
/// its headers (`sluice::curl::part_target`), as data the script checks.
async fn part_target(
    State(sluice): State<Sluice>,
    Path((token, n)): Path<(String, u32)>,
    axum::extract::Query(q): axum::extract::Query<PartQuery>,
) -> Result<Response, HttpError> {
    let sha256 = sluice::Sha256::parse(&q.sha256)
        .map_err(|e| sluice::Error::Invalid(format!("sha256: {e}")))?;
    Ok(text(sluice.uploads().part_target(&token, n, sha256).await?))
}

/// Joins the parts and proves the whole file
/// ([`sluice::service::uploads::Uploads::complete_parts`]): 200 with the file once it is proven;
/// 202 while its proof goes on, which the upload script answers by asking again.
async fn complete_parts(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
) -> Result<Response, HttpError> {
    Ok(match sluice.uploads().complete_parts(&token).await? {
        Completion::Ready(done) => Json(done).into_response(),
        Completion::Verifying { proven, size } => (
            StatusCode::ACCEPTED,
            Json(serde_json::json!({
                "state": "verifying",
                "proven": proven,
                "size": size,
                "message": format!("{proven} of {size} bytes proven so far: ask again to go on"),
            })),
        )
            .into_response(),
    })
}

/// The request's `Content-Length`, if it has one.
pub(crate) fn content_length(headers: &HeaderMap) -> Result<Option<u64>, HttpError> {
    headers
        .get(header::CONTENT_LENGTH)
        .map(|value| {
            value
                .to_str()
                .ok()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| HttpError::Body {
                    status: StatusCode::BAD_REQUEST,
                    message: "Content-Length is not a number".into(),
                })
        })
        .transpose()
}
