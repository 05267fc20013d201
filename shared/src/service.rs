//! [`Sluice`]: the issuing and resolving logic, shared by every function.
//!
//! Handlers parse a request, call one of these methods, and turn the result
//! into a response; the MCP tools call the very same methods in-process.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::auth::{AccessVerifier, Caller, Scope};
use crate::curl;
use crate::error::ApiError;
use crate::file::{FileId, FileMeta};
use crate::keys::Keyring;
use crate::ledger::Ledger;
use crate::sha::Sha256;
use crate::store::ObjectStore;
use crate::time::{now_unix, rfc3339};
use crate::token::{Handle, LinkToken, Method, TokenError};

/// The longest filename label accepted, in bytes.
pub const MAX_FILENAME_BYTES: usize = 1024;

/// The most bytes the base64 fallback tools move through the model.
pub const SMALL_FILE_MAX: usize = 16 * 1024;

/// What `request_upload` and `POST /uploads` take.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadRequest {
    /// The file's name, e.g. `report.pdf`. Kept as a label; the upload command reads a file of this name from the current directory.
    pub filename: String,
    /// Exact size in bytes (e.g. from `stat -c %s FILE` or `wc -c < FILE`).
    pub size: u64,
    /// SHA-256 of the exact bytes, 64 hex digits (e.g. from `sha256sum FILE`).
    pub sha256: Sha256,
    /// The media type, e.g. `application/pdf`; guessed from the name when absent.
    #[serde(default)]
    pub content_type: Option<String>,
}

/// Where and how to send a file's bytes.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UploadTarget {
    /// The single-use URL.
    pub url: String,
    /// Always `PUT`.
    pub method: &'static str,
    /// Exactly the headers the client must send.
    pub headers: BTreeMap<String, String>,
    /// When the URL stops working (RFC 3339).
    pub expires_at: String,
}

/// The answer to an upload request.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UploadTicket {
    /// `$uploadedFile:<token>`: what the model passes to actions.
    pub handle: String,
    /// The new file's id.
    pub file_id: FileId,
    /// Where to PUT the bytes.
    pub upload: UploadTarget,
    /// A ready-to-run upload command.
    pub curl: String,
    /// The largest size accepted.
    pub max_bytes: u64,
}

/// Where to GET a file's bytes.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DownloadTarget {
    /// The single-use URL.
    pub url: String,
    /// Always `GET`.
    pub method: &'static str,
    /// When the URL stops working (RFC 3339).
    pub expires_at: String,
}

/// The answer to a download request.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DownloadTicket {
    /// The file's id.
    pub file_id: FileId,
    /// The name it was uploaded under.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex digest.
    pub sha256: Sha256,
    /// The media type.
    pub content_type: String,
    /// The link.
    pub download: DownloadTarget,
    /// A ready-to-run download command.
    pub curl: String,
}

/// The answer to a small-file upload.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SmallUpload {
    /// `$uploadedFile:<token>`: what the model passes to actions.
    pub handle: String,
    /// The new file's id.
    pub file_id: FileId,
    /// The name it was stored under.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex digest.
    pub sha256: Sha256,
}

/// Everything a [`Sluice`] is built from.
#[derive(Debug)]
pub struct Parts {
    /// Signing keys.
    pub keys: Keyring,
    /// Bearer token validation.
    pub access: AccessVerifier,
    /// Where objects live.
    pub store: Arc<dyn ObjectStore>,
    /// Where spent tokens are recorded.
    pub ledger: Arc<dyn Ledger>,
    /// The origin (and path prefix) clients reach sluice at: the base of
    /// links and uploads.
    pub public_url: Url,
    /// The MCP endpoint's URL (the RFC 8707 resource).
    pub mcp_url: Url,
    /// Handle lifetime.
    pub handle_ttl: Duration,
    /// Download link lifetime.
    pub link_ttl: Duration,
    /// Upload link lifetime.
    pub upload_ttl: Duration,
    /// The largest file accepted.
    pub max_upload_bytes: u64,
    /// How long a presigned download URL (aws) is valid.
    pub download_url_ttl: Duration,
    /// The largest MCP request body.
    pub mcp_max_body_bytes: usize,
    /// Authorization servers for the protected-resource metadata.
    pub auth_servers: Vec<Url>,
    /// The configured actions (none: the action tools are not listed).
    pub actions: crate::actions::Actions,
    /// How long an upload's body may go without a byte.
    pub body_idle_timeout: Duration,
    /// How fast one user may have files issued.
    pub issue_limit: crate::limits::IssueLimit,
    /// Where file records live.
    pub records: Arc<dyn crate::records::RecordStore>,
    /// Per-user caps on files waiting for their bytes.
    pub pending_caps: crate::catalog::PendingCaps,
}

/// The shared state of every function: cheap to clone.
#[derive(Clone)]
pub struct Sluice(Arc<Parts>);

impl fmt::Debug for Sluice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sluice")
            .field("public_url", &self.0.public_url.as_str())
            .finish_non_exhaustive()
    }
}

impl Sluice {
    /// Assembles the state.
    pub fn new(parts: Parts) -> Self {
        Self(Arc::new(parts))
    }

    /// The object store.
    pub fn store(&self) -> &dyn ObjectStore {
        &*self.0.store
    }

    /// The signing keys.
    pub(crate) fn keys(&self) -> &Keyring {
        &self.0.keys
    }

    /// The file records.
    pub fn records(&self) -> &dyn crate::records::RecordStore {
        &*self.0.records
    }

    /// The spent-token ledger.
    pub fn ledger(&self) -> &dyn Ledger {
        &*self.0.ledger
    }

    /// The configured actions.
    pub fn actions(&self) -> &crate::actions::Actions {
        &self.0.actions
    }

    /// Bearer token validation.
    pub fn access(&self) -> &AccessVerifier {
        &self.0.access
    }

    /// Everything the state was built from.
    pub fn parts(&self) -> &Parts {
        &self.0
    }

    /// The public base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.0.public_url.as_str().trim_end_matches('/')
    }

    /// The MCP endpoint's URL, e.g. `https://files.example.com/mcp`.
    pub fn mcp_url(&self) -> &str {
        self.0.mcp_url.as_str()
    }

    /// Where the `mcp` function's routes are mounted: the MCP URL without
    /// its final `/mcp`.
    pub fn mcp_base_url(&self) -> &str {
        self.mcp_url()
            .strip_suffix("/mcp")
            .unwrap_or(self.mcp_url())
    }

    /// Validates an upload request, pins the file, records it, and signs its handle.
    pub(crate) async fn issue_file(
        &self,
        owner: &str,
        req: UploadRequest,
        id: FileId,
    ) -> Result<(FileMeta, String), ApiError> {
        let filename = req.filename.trim();
        if filename.is_empty() {
            return Err(ApiError::BadRequest("filename must not be empty".into()));
        }
        if filename.len() > MAX_FILENAME_BYTES {
            return Err(ApiError::BadRequest(format!(
                "filename is longer than {MAX_FILENAME_BYTES} bytes"
            )));
        }
        if req.size > self.0.max_upload_bytes {
            return Err(ApiError::BadRequest(format!(
                "size {} is over the limit of {} bytes",
                req.size, self.0.max_upload_bytes
            )));
        }
        self.0.issue_limit.check(owner)?;
        let content_type = match req.content_type.as_deref().map(str::trim) {
            None | Some("") => mime_guess::from_path(filename)
                .first_or_octet_stream()
                .essence_str()
                .to_owned(),
            Some(ct) => parse_content_type(ct)?,
        };
        let file = FileMeta {
            id,
            owner: owner.to_owned(),
            filename: filename.to_owned(),
            content_type,
            size: req.size,
            sha256: req.sha256,
        };
        let expires_at = now_unix() + self.0.handle_ttl.as_secs() as i64;
        self.record_file(&file, expires_at).await?;
        let handle = Handle {
            file: file.clone(),
            expires_at,
        }
        .encode(&self.0.keys);
        Ok((file, handle))
    }

    /// Issues a handle and a single-use upload link for a file `owner` is about to upload.
    pub async fn issue_upload(
        &self,
        owner: &str,
        req: UploadRequest,
    ) -> Result<UploadTicket, ApiError> {
        let (file, handle) = self.issue_file(owner, req, FileId::random()).await?;
        let target = self.upload_target(&file).await?;
        // curl sets Content-Length from the file itself: a file of another
        // size then fails the store's check at once, where an explicit header
        // would leave the request waiting for bytes that never come.
        let curl = curl::upload_command(
            &target.url,
            target
                .headers
                .iter()
                .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length"))
                .map(|(k, v)| (k.as_str(), v.as_str())),
            curl::local_file_name(&file.filename),
        );
        Ok(UploadTicket {
            handle,
            file_id: file.id,
            upload: target,
            curl,
            max_bytes: self.0.max_upload_bytes,
        })
    }

    /// Where and how to PUT `file`'s bytes: a presigned PUT of the store
    /// (S3), which itself enforces size, digest and single use, or a
    /// single-use link to sluice's own `PUT /uploads/{token}`.
    pub(crate) async fn upload_target(&self, file: &FileMeta) -> Result<UploadTarget, ApiError> {
        let expires_at = now_unix() + self.0.upload_ttl.as_secs() as i64;
        let presigned = self
            .store()
            .presign_put(
                &file.object_key(),
                file.size,
                file.sha256,
                &file.content_type,
                self.0.upload_ttl,
            )
            .await?;
        let (url, headers) = match presigned {
            // The store itself enforces size, digest and single use.
            Some(p) => {
                tracing::info!(file_id = %file.id, size = file.size, "direct upload issued");
                (p.url, p.headers.into_iter().collect())
            }
            None => {
                let link = LinkToken::new(Method::Put, file.clone(), expires_at);
                tracing::info!(file_id = %file.id, jti = %link.jti, size = file.size, "upload issued");
                (
                    format!("{}/uploads/{}", self.base_url(), link.encode(&self.0.keys)),
                    BTreeMap::from([("Content-Type".to_owned(), file.content_type.clone())]),
                )
            }
        };
        Ok(UploadTarget {
            url,
            method: "PUT",
            headers,
            expires_at: rfc3339(expires_at),
        })
    }

    /// Stores a small file sent inline (base64 through the model): at most
    /// [`SMALL_FILE_MAX`] bytes, and only if `sha256` matches.
    pub async fn upload_small(
        &self,
        owner: &str,
        filename: String,
        data: Vec<u8>,
        sha256: Sha256,
        content_type: Option<String>,
    ) -> Result<SmallUpload, ApiError> {
        if data.len() > SMALL_FILE_MAX {
            return Err(ApiError::BadRequest(format!(
                "the data is {} bytes, over the {SMALL_FILE_MAX}-byte limit of this fallback: \
                 use request_upload and run its curl command instead",
                data.len()
            )));
        }
        let actual = Sha256::of(&data);
        if actual != sha256 {
            return Err(ApiError::BadRequest(format!(
                "the data decodes to {} bytes with sha256 {actual}, not {sha256}: nothing was stored; \
                 check the base64 and the digest",
                data.len()
            )));
        }
        let (file, handle) = self
            .store_inline(owner, filename, data, sha256, content_type)
            .await?;
        Ok(SmallUpload {
            handle,
            file_id: file.id,
            filename: file.filename,
            size: file.size,
            sha256: file.sha256,
        })
    }

    /// Stores bytes already in memory as a new file of `owner` (callers
    /// bound their size and have checked `sha256`); returns what it pins
    /// and its handle.
    pub(crate) async fn store_inline(
        &self,
        owner: &str,
        filename: String,
        data: Vec<u8>,
        sha256: Sha256,
        content_type: Option<String>,
    ) -> Result<(FileMeta, String), ApiError> {
        let req = UploadRequest {
            filename,
            size: data.len() as u64,
            sha256,
            content_type,
        };
        let (file, handle) = self.issue_file(owner, req, FileId::random()).await?;
        let body: crate::store::ByteStream = Box::pin(futures_util::stream::once(async move {
            Ok(bytes::Bytes::from(data))
        }));
        self.store()
            .put(&file.object_key(), file.size, file.sha256, body)
            .await?;
        self.file_stored(&file).await?;
        tracing::info!(file_id = %file.id, size = file.size, "inline file stored");
        Ok((file, handle))
    }

    /// Reads a small file whole, verified, for the base64 fallback.
    pub async fn read_small(&self, file: &FileMeta) -> Result<Vec<u8>, ApiError> {
        if file.size > SMALL_FILE_MAX as u64 {
            return Err(ApiError::BadRequest(format!(
                "{} is {} bytes, over the {SMALL_FILE_MAX}-byte limit of this fallback: \
                 use get_download_url and run its curl command instead",
                file.filename, file.size
            )));
        }
        self.read_verified(file).await?.ok_or_else(not_uploaded)
    }

    /// Reads a file's object whole (callers bound its size) and checks it
    /// against the pinned size and sha256; `None` if there is no object.
    pub async fn read_verified(&self, file: &FileMeta) -> Result<Option<Vec<u8>>, ApiError> {
        let Some(stream) = self.store().get(&file.object_key()).await? else {
            return Ok(None);
        };
        let chunks: Vec<bytes::Bytes> = futures_util::TryStreamExt::try_collect(stream)
            .await
            .map_err(ApiError::internal)?;
        let data = chunks.concat();
        if data.len() as u64 != file.size || Sha256::of(&data) != file.sha256 {
            tracing::warn!(file_id = %file.id, "stored object does not match its pinned size and sha256");
            return Err(stored_mismatch());
        }
        Ok(Some(data))
    }

    /// Resolves a `file` argument: a handle (`$uploadedFile:…`) or a file id
    /// of the caller's.
    pub async fn resolve_file(&self, caller: &Caller, file: &str) -> Result<FileMeta, ApiError> {
        let file = file.trim();
        if let Some(id) = FileId::parse(file) {
            return self.find_file(&caller.owner, &id).await;
        }
        self.redeem_handle(caller, file)
    }

    /// Verifies a handle for `caller`: its owner, or a service with `files:resolve`.
    pub fn redeem_handle(&self, caller: &Caller, handle: &str) -> Result<FileMeta, ApiError> {
        let h = Handle::decode(&self.0.keys, handle).map_err(|e| match e {
            TokenError::Expired => {
                ApiError::BadRequest(
                "this handle has expired: request a new upload (request_upload, or POST /uploads) and upload the file to the new URL"
                    .into(),
            )
            }
            _ => ApiError::BadRequest(
                "this is not a valid handle: pass the exact \"$uploadedFile:…\" value the upload request returned"
                    .into(),
            ),
        })?;
        if h.file.owner != caller.owner && !caller.scopes.contains(&Scope::FilesResolve) {
            return Err(ApiError::Forbidden(
                "this handle was issued to another user".into(),
            ));
        }
        Ok(h.file)
    }

    /// Issues a single-use download link for an uploaded file.
    pub async fn issue_download(&self, file: &FileMeta) -> Result<DownloadTicket, ApiError> {
        if self.store().head(&file.object_key()).await?.is_none() {
            return Err(not_uploaded());
        }
        Ok(self.download_ticket(file))
    }

    /// A single-use download link for a file the caller knows is stored
    /// (just stored, or just checked): no request to the store.
    pub(crate) fn download_ticket(&self, file: &FileMeta) -> DownloadTicket {
        let link = LinkToken::new(
            Method::Get,
            file.clone(),
            now_unix() + self.0.link_ttl.as_secs() as i64,
        );
        tracing::info!(file_id = %file.id, jti = %link.jti, "download link issued");
        let url = format!("{}/links/{}", self.base_url(), link.encode(&self.0.keys));
        DownloadTicket {
            file_id: file.id.clone(),
            filename: file.filename.clone(),
            size: file.size,
            sha256: file.sha256,
            content_type: file.content_type.clone(),
            curl: curl::download_command(&url, &file.safe_name()),
            download: DownloadTarget {
                url,
                method: "GET",
                expires_at: rfc3339(link.expires_at),
            },
        }
    }

    /// Verifies a link token for `method`. Every failure is the same 404, so
    /// a caller learns nothing about why; the reason is logged at debug.
    pub fn verify_link(&self, token: &str, method: Method) -> Result<LinkToken, ApiError> {
        LinkToken::decode(&self.0.keys, token, method).map_err(|e| {
            tracing::debug!(reason = %e, %method, "link refused");
            ApiError::NotFound
        })
    }
}

/// The answer when stored bytes differ from what was pinned: nothing is sent.
pub fn stored_mismatch() -> ApiError {
    ApiError::Conflict(
        "the stored file does not match its pinned size and sha256; it was not sent".into(),
    )
}

fn not_uploaded() -> ApiError {
    ApiError::Conflict(
        "this file has not been uploaded yet: run the upload command (the curl line) its upload request returned first"
            .into(),
    )
}

/// Accepts a media type such as `text/plain; charset=utf-8`.
fn parse_content_type(ct: &str) -> Result<String, ApiError> {
    let bad = || {
        ApiError::BadRequest(format!(
            "content_type {ct:?} is not a media type such as text/plain"
        ))
    };
    if ct.len() > 255 || ct.chars().any(|c| c.is_control()) {
        return Err(bad());
    }
    ct.parse::<mime::Mime>()
        .map(|m| m.to_string())
        .map_err(|_| bad())
}
