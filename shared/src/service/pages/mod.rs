//! Browser upload: for hosted clients whose sandbox cannot reach the upload
//! host, and files that are on the person's own computer anyway. In this
//! order: the model asks for a page and shows its link to the person → the
//! page (rendered by the issuer) hashes the file in the browser and asks for
//! a signed PUT for exactly that size and digest (its start: the file is
//! issued once per page, under the page owner's limits) → it uploads
//! straight to the store → once the person says they are done, the model
//! asks for the result, which settles the file's record against the store.
//!
//! The page token is the whole capability: one file (or up to
//! [`MAX_PAGE_FILES`], each started on its own), for the user who asked,
//! until it expires; it holds no bearer token. The files' ids are chosen
//! when the page is made (the first, and the others derived from it), so
//! the status is a lookup of those files' records: no other state.

mod start;
mod status;

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::backends::Backends;
use super::files::Files;
use super::limits::Limits;
use super::links::Links;
use super::uploads::Uploads;

use crate::error::Error;
use crate::file::FileId;
use crate::rate::Kind;
use crate::service::intake::Intake;
use crate::service::uploads::issue::{MAX_FILENAME_BYTES, Reader, UploadRequest, UploadTarget};
use crate::sha::Sha256;
use crate::time::{now_unix, rfc3339};
use crate::token::{PageToken, TokenError};

/// What `request_browser_upload` takes.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserUploadRequest {
    /// The file to pick, if known (shown on the page).
    #[serde(default)]
    pub filename: Option<String>,
    /// The media type it must be, if any.
    #[serde(default)]
    pub content_type: Option<String>,
    /// The largest file to accept, in bytes.
    #[serde(default)]
    pub max_size: Option<u64>,
    /// Files the person may pick: 1-20 (default 1).
    #[serde(default)]
    pub files: Option<u32>,
}

/// The most files one page takes.
pub const MAX_PAGE_FILES: u32 = 20;

/// The answer to `request_browser_upload`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BrowserUpload {
    /// Pass to `get_upload_status` once the person says the upload is done.
    pub upload_id: String,
    /// The page the person opens to upload the file.
    pub page_url: String,
    /// When the page stops accepting an upload (RFC 3339).
    pub expires_at: String,
    /// How many files the page takes, when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<u32>,
    /// After the person was shown the page by the client itself (URL
    /// elicitation): where the upload stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<UploadState>,
    /// And when it is ready: what to pass to actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

/// What the page sends to start a file: at once where the file's digest
/// may come with its last bytes (the store takes a stream), else once it
/// has hashed the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserStart {
    /// The picked file's name.
    pub filename: String,
    /// Its size.
    pub size: u64,
    /// Its SHA-256, computed in the browser; absent when the page starts
    /// before hashing, to declare it with the last bytes.
    #[serde(default)]
    pub sha256: Option<Sha256>,
    /// Its media type, as the browser knows it.
    #[serde(default)]
    pub content_type: Option<String>,
}

/// Where the page PUTs the file.
#[derive(Debug, Clone, Serialize)]
pub struct BrowserTarget {
    /// The file's id.
    pub file_id: FileId,
    /// The PUT (of the whole file, for one not in parts).
    pub upload: UploadTarget,
    /// For a file in parts: where the page sends them, part by part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parts: Option<PageParts>,
    /// Where sluice receives the bytes: the file as one resumable (tus)
    /// upload, sent from where it stands (a reload of the page goes on
    /// from there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<PageStream>,
}

/// How a page sends a file as one resumable (tus) upload.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PageStream {
    /// The upload link: the tus upload's URL.
    pub link: String,
    /// The bytes each of the page's requests sends (the part size): what a
    /// dropped request costs the page to send again, at most.
    pub chunk_size: u64,
}

/// How a page sends a file in parts: the upload link whose part routes it
/// uses (`GET <link>/parts`, `POST <link>/parts/<n>?sha256=`, the part's
/// PUT, `POST <link>/complete`), as the upload line's script does.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PageParts {
    /// The upload link.
    pub link: String,
    /// How many parts.
    pub count: u32,
    /// Every part's size but the last's.
    pub part_size: u64,
    /// The origin every part's target must be under (the store's, or the
    /// issuer's own): the page checks each target as the line's script
    /// does.
    pub origin: String,
}

/// Where a browser upload stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UploadState {
    /// Not uploaded (yet): the person has not finished.
    Pending,
    /// Uploaded and verified: the handle is ready.
    Ready,
    /// Being scanned for malware.
    Scanning,
    /// Refused by its malware scan.
    Rejected,
    /// The page expired before a file arrived.
    Expired,
}

/// How far a status call looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// The records, and the store for a file still pending (found there
    /// already, and how much has arrived).
    Store,
    /// The records alone: one read a file (and the bytes this process
    /// sees arriving, which cost none).
    Records,
}

/// The answer to `get_upload_status`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UploadStatus {
    /// `pending`, `ready` or `expired`.
    pub state: UploadState,
    /// Why it was rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When ready: what to pass to actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// When ready: the file's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// When ready: the name the person's file had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Its size in bytes: when ready, and while pending once the person
    /// chose the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// While pending, once the person chose the file: the bytes arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received: Option<u64>,
    /// When ready: its SHA-256.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// A page for several files: each one uploaded so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<PickedFile>>,
}

impl UploadStatus {
    /// A status in `state`, saying nothing more yet.
    pub fn of(state: UploadState) -> Self {
        Self {
            state,
            reason: None,
            handle: None,
            file_id: None,
            filename: None,
            size: None,
            received: None,
            sha256: None,
            files: None,
        }
    }
}

/// One file the person uploaded on a page for several.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PickedFile {
    /// What to pass to actions.
    pub handle: String,
    /// The file's id.
    pub file_id: FileId,
    /// The name the person's file had.
    pub filename: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256.
    pub sha256: Sha256,
}

/// Why a page cannot be used, in words for the person in front of it.
pub fn page_refusal(e: &TokenError) -> &'static str {
    match e {
        TokenError::Expired => {
            "This upload link has expired. Go back to the conversation and ask for a new one."
        }
        _ => {
            "This upload link is not valid. Check that you opened the whole link, or go back to \
             the conversation and ask for a new one."
        }
    }
}

/// The person's page and the widget: a page made for a file, started from
/// the browser, and its status (waited on by `get_upload_status`).
#[derive(Clone, Debug)]
pub struct Pages {
    records: Arc<dyn crate::records::RecordStore>,
    transfers: Arc<crate::config::Transfers>,
    uploads: Uploads,
    files: Files,
    limits: Limits,
    links: Links,
}

impl Pages {
    /// Pages under the issuer of `endpoints`, whose files `uploads` issues.
    pub fn new(
        backends: &Backends,
        uploads: Uploads,
        files: Files,
        limits: Limits,
        links: Links,
    ) -> Self {
        Self {
            records: backends.records.clone(),
            transfers: backends.transfers.clone(),
            uploads,
            files,
            limits,
            links,
        }
    }
}

impl Pages {
    /// Makes a page for the person to upload one file as `owner`.
    pub fn request_browser_upload(
        &self,
        owner: &str,
        req: BrowserUploadRequest,
    ) -> Result<BrowserUpload, Error> {
        let limit = self.transfers.max_upload_bytes;
        let max_size = req.max_size.unwrap_or(limit);
        if max_size == 0 || max_size > limit {
            return Err(Error::Invalid(format!(
                "max_size must be between 1 and {limit} bytes"
            )));
        }
        let filename = req
            .filename
            .map(|f| f.trim().to_owned())
            .filter(|f| !f.is_empty());
        if filename
            .as_ref()
            .is_some_and(|f| f.len() > MAX_FILENAME_BYTES)
        {
            return Err(Error::Invalid("filename is too long".into()));
        }
        let files = req.files.unwrap_or(1);
        if !(1..=MAX_PAGE_FILES).contains(&files) {
            return Err(Error::Invalid(format!(
                "files must be between 1 and {MAX_PAGE_FILES}"
            )));
        }
        let expires_at = now_unix() + self.transfers.handle_ttl.as_secs() as i64;
        let page = PageToken {
            owner: owner.to_owned(),
            file_id: FileId::random(),
            filename,
            content_type: req
                .content_type
                .map(|c| c.trim().to_owned())
                .filter(|c| !c.is_empty()),
            max_size,
            files,
            expires_at,
        };
        tracing::info!(file_id = %page.file_id, files, "browser upload page issued");
        Ok(BrowserUpload {
            state: None,
            handle: None,
            files: (files > 1).then_some(files),
            upload_id: self
                .links
                .upload_id(owner, &page.file_id, expires_at, files),
            page_url: self.links.page(&page),
            expires_at: rfc3339(expires_at),
        })
    }

    /// Opens a page token, for the page or its start request.
    pub fn open_page(&self, token: &str) -> Result<PageToken, TokenError> {
        self.links.open_page(token)
    }

    /// Opens a page token for its start request: the page, or why it cannot
    /// be used, in words for the person. Checked before the start's body is
    /// read.
    pub fn page_for_start(&self, token: &str) -> Result<PageToken, Error> {
        self.open_page(token)
            .map_err(|e| Error::PageRefused(page_refusal(&e)))
    }
}
