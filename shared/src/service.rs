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

/// What `request_upload` and `POST /uploads` take.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadRequest {
    /// The file's name, kept as a label.
    pub filename: String,
    /// Exact size in bytes.
    pub size: u64,
    /// The digest of the exact bytes (64 hex digits).
    pub sha256: Sha256,
    /// The media type; guessed from the name when absent.
    #[serde(default)]
    pub content_type: Option<String>,
}

/// Where and how to send a file's bytes.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct DownloadTarget {
    /// The single-use URL.
    pub url: String,
    /// Always `GET`.
    pub method: &'static str,
    /// When the URL stops working (RFC 3339).
    pub expires_at: String,
}

/// The answer to a download request.
#[derive(Debug, Clone, Serialize)]
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
    /// The origin (and path prefix) clients reach sluice at.
    pub public_url: Url,
    /// Handle lifetime.
    pub handle_ttl: Duration,
    /// Download link lifetime.
    pub link_ttl: Duration,
    /// Upload link lifetime.
    pub upload_ttl: Duration,
    /// The largest file accepted.
    pub max_upload_bytes: u64,
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

    /// The spent-token ledger.
    pub fn ledger(&self) -> &dyn Ledger {
        &*self.0.ledger
    }

    /// Bearer token validation.
    pub fn access(&self) -> &AccessVerifier {
        &self.0.access
    }

    /// The public base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.0.public_url.as_str().trim_end_matches('/')
    }

    /// Issues a handle and a single-use upload link for a file `owner` is about to upload.
    pub fn issue_upload(&self, owner: &str, req: UploadRequest) -> Result<UploadTicket, ApiError> {
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
        let content_type = match req.content_type.as_deref().map(str::trim) {
            None | Some("") => mime_guess::from_path(filename)
                .first_or_octet_stream()
                .essence_str()
                .to_owned(),
            Some(ct) => parse_content_type(ct)?,
        };
        let now = now_unix();
        let file = FileMeta {
            id: FileId::random(),
            owner: owner.to_owned(),
            filename: filename.to_owned(),
            content_type,
            size: req.size,
            sha256: req.sha256,
        };
        let handle = Handle {
            file: file.clone(),
            expires_at: now + self.0.handle_ttl.as_secs() as i64,
        }
        .encode(&self.0.keys);
        let link = LinkToken::new(
            Method::Put,
            file.clone(),
            now + self.0.upload_ttl.as_secs() as i64,
        );
        tracing::info!(file_id = %file.id, jti = %link.jti, size = file.size, "upload issued");
        let url = format!("{}/uploads/{}", self.base_url(), link.encode(&self.0.keys));
        let headers = BTreeMap::from([("Content-Type".to_owned(), file.content_type.clone())]);
        let curl = curl::upload_command(
            &url,
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &file.filename,
        );
        Ok(UploadTicket {
            handle,
            file_id: file.id,
            upload: UploadTarget {
                url,
                method: "PUT",
                headers,
                expires_at: rfc3339(link.expires_at),
            },
            curl,
            max_bytes: self.0.max_upload_bytes,
        })
    }

    /// Verifies a handle for `caller`: its owner, or a service with `files:resolve`.
    pub fn redeem_handle(&self, caller: &Caller, handle: &str) -> Result<FileMeta, ApiError> {
        let h = Handle::decode(&self.0.keys, handle).map_err(|e| match e {
            TokenError::Expired => {
                ApiError::BadRequest("this handle has expired: call request_upload again".into())
            }
            _ => ApiError::BadRequest(
                "this is not a valid handle: pass the exact \"$uploadedFile:…\" value returned by request_upload"
                    .into(),
            ),
        })?;
        if h.file.owner != caller.sub && !caller.scopes.contains(&Scope::FilesResolve) {
            return Err(ApiError::Forbidden(
                "this handle was issued to another user".into(),
            ));
        }
        Ok(h.file)
    }

    /// Issues a single-use download link for an uploaded file.
    pub async fn issue_download(&self, file: &FileMeta) -> Result<DownloadTicket, ApiError> {
        if self.store().head(&file.object_key()).await?.is_none() {
            return Err(ApiError::Conflict(
                "this file has not been uploaded yet: run the upload command from request_upload first"
                    .into(),
            ));
        }
        let link = LinkToken::new(
            Method::Get,
            file.clone(),
            now_unix() + self.0.link_ttl.as_secs() as i64,
        );
        tracing::info!(file_id = %file.id, jti = %link.jti, "download link issued");
        let url = format!("{}/links/{}", self.base_url(), link.encode(&self.0.keys));
        Ok(DownloadTicket {
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
        })
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
