//! Which file a caller means, and what is known of the caller's files:
//! a `file` argument is a handle (verified: its tag → its record, found by
//! the file id it names → the record's expiry → its owner, or a caller that
//! resolves for others) or one of the caller's file ids (looked up in the
//! records, never across owners) → a record marked pending is settled
//! against the store (its bytes may have arrived straight at S3) → `list_files` pages through the
//! caller's unexpired files, newest first. Where a file's object stands is
//! [`stored`] (which asks the malware gate, [`super::gate`], last); a
//! delete, [`delete`].

pub mod delete;
pub mod stored;

use futures_util::{StreamExt as _, TryStreamExt as _};
use serde::Serialize;
use std::sync::Arc;

use super::backends::Backends;
use super::custody::Custody;
use super::custody::Reporter;
use super::gate::{Gate, Gated};
use super::links::Links;
use crate::auth::Caller;
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::records::FileRecord;
use crate::sha::Sha256;
use crate::time::{now_unix, rfc3339};
use crate::token::Short;
use stored::Stored;

/// The page size of `list_files` when none is asked for.
pub const DEFAULT_PAGE: usize = 50;
/// The largest page of `list_files`.
pub const MAX_PAGE: usize = 100;
/// HEADs at once when pending entries are checked for their bytes.
const HEADS_AT_ONCE: usize = 8;

/// Whether a file's bytes have arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    /// Issued; the upload has not completed.
    Pending,
    /// Uploaded in parts and joined; the proof of its whole sha256 goes on
    /// (the upload command, run again, finishes it).
    Verifying,
    /// Uploaded and verified (and, with scanning on, passed its scan).
    Ready,
    /// Being scanned for malware.
    Scanning,
    /// Refused by its malware scan.
    Rejected,
}

/// One entry of `list_files`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FileListing {
    /// The file's id.
    pub file_id: String,
    /// The name it was uploaded under.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex sha256; absent while a person's page still sends the
    /// file, to declare it with its last bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// The media type.
    pub content_type: String,
    /// `pending` until the bytes arrive, then `ready` (`verifying` between,
    /// for a file in parts whose whole sha256 is being proven).
    pub state: FileState,
    /// Why it was rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The type its bytes show, where one was told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detected_type: Option<String>,
    /// When it was issued (RFC 3339).
    pub created_at: String,
    /// When its handle and record expire (RFC 3339).
    pub expires_at: String,
}

/// One page of `list_files`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FilePage {
    /// The files, newest first.
    pub files: Vec<FileListing>,
    /// Pass as `cursor` for the next page; absent after the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The caller's files: which one a caller means, what its record says,
/// where its object stands ([`stored`]), a page of them, and a delete
/// ([`delete`]).
#[derive(Clone, Debug)]
pub struct Files {
    store: Arc<dyn crate::store::ObjectStore>,
    records: Arc<dyn crate::records::RecordStore>,
    proofs: super::proof::Proofs,
    links: Links,
    /// The malware gate ([`super::gate`]).
    gate: Gate,
    custody: Custody,
}

impl Files {
    /// Over the `backends`' store and records, proving what the store
    /// cannot vouch for with `proofs`, asking the malware `gate` before bytes
    /// are let out; a delete purges through `custody`.
    pub(crate) fn new(
        backends: &Backends,
        proofs: super::proof::Proofs,
        links: Links,
        gate: Gate,
        custody: Custody,
    ) -> Self {
        Self {
            store: backends.store.clone(),
            records: backends.records.clone(),
            proofs,
            links,
            gate,
            custody,
        }
    }
}

impl Files {
    /// The links and handles of this deployment.
    pub(crate) fn links(&self) -> &Links {
        &self.links
    }

    /// The malware gate: bytes that arrived made ready or held for their
    /// scan, and whether a file's bytes may be let out.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Where a file's bytes end: kept, or purged.
    pub(crate) fn custody(&self) -> &Custody {
        &self.custody
    }

    /// What reports the changes the records do not make themselves.
    pub(crate) fn reporter(&self) -> &Reporter {
        self.custody.reporter()
    }

    /// The record of the file a link names (written once when the file
    /// was issued: what it pins, when it expires, its trace): none, the uniform
    /// [`Error::NotFound`].
    pub(crate) async fn linked(&self, link: &Short) -> Result<FileRecord, Error> {
        self.records
            .find(&link.file_id)
            .await?
            .ok_or(Error::NotFound)
    }

    /// Resolves a `file` argument: a handle (`$uploadedFile:…`) or a file id
    /// of the caller's.
    pub async fn resolve_file(&self, caller: &Caller, file: &str) -> Result<FileMeta, Error> {
        let file = file.trim();
        if let Some(id) = FileId::parse(file) {
            return self.find_file(&caller.owner, &id).await;
        }
        self.redeem_handle(caller, file).await
    }

    /// Verifies a handle for `caller`: its owner, or a service with
    /// `files:resolve`. A handle's file is its record (written once when it
    /// was issued).
    pub async fn redeem_handle(&self, caller: &Caller, handle: &str) -> Result<FileMeta, Error> {
        let id = self.links.open_handle(handle)?;
        // A handle we issued whose record is gone was swept: expired.
        let record = self.records.find(&id).await?.ok_or(Error::HandleExpired)?;
        if record.expires_at <= now_unix() {
            return Err(Error::HandleExpired);
        }
        let file = record.file;
        if !caller.may_resolve(&file.owner) {
            return Err(Error::OtherUsersHandle);
        }
        Ok(file)
    }

    /// Finds file `id` among `owner`'s files. Another user's file id is
    /// simply not found: ids are never resolved across owners.
    pub async fn find_file(&self, owner: &str, id: &FileId) -> Result<FileMeta, Error> {
        let record = self
            .records
            .get(owner, id)
            .await?
            .filter(|r| r.file.owner == owner)
            .ok_or_else(|| Error::UnknownFile(id.clone()))?;
        if record.expires_at <= now_unix() {
            return Err(Error::FileExpired(id.clone()));
        }
        Ok(record.file)
    }

    /// `file` with `sha256` declared its digest, where it was to come (a
    /// person's page that sends while it hashes): written once to its
    /// record, which then pins it as any other does. A digest declared
    /// before stands: another is refused ([`Error::DigestDeclared`]), and
    /// so is one for a file issued with its digest ([`FileMeta::digest`]).
    pub(crate) async fn declare(&self, file: FileMeta, sha256: Sha256) -> Result<FileMeta, Error> {
        if sha256.is_to_come() {
            return Err(Error::the_mark_declared());
        }
        let kept = match file.digest() {
            Some(kept) => kept,
            None => {
                let record = self
                    .records
                    .declare(&file.owner, &file.id, sha256)
                    .await?
                    .ok_or(Error::NotFound)?;
                record.file.sha256
            }
        };
        if kept != sha256 {
            return Err(Error::DigestDeclared(kept));
        }
        Ok(FileMeta { sha256, ..file })
    }

    /// What `record` alone says of its scan (a status read from the
    /// records): `Scanning` while its bytes wait for a verdict, `Rejected`
    /// after one that refused; `None` with scanning off, before its bytes
    /// were found stored, or after a verdict that passed.
    pub(crate) fn held(&self, record: &FileRecord) -> Option<FileState> {
        match self.gate.held(record)? {
            Gated::Scanning => Some(FileState::Scanning),
            Gated::Refused(_) => Some(FileState::Rejected),
            Gated::Passed | Gated::Gone => None,
        }
    }

    /// A record marked pending whose bytes have arrived by now, and match
    /// their pin ([`Files::stored`]: uploads straight to S3 are not seen
    /// otherwise), is marked ready; returns the record brought up to date.
    pub(crate) async fn settle(&self, record: FileRecord) -> Result<FileRecord, Error> {
        Ok(self.settle_state(record).await?.0)
    }

    /// [`Files::settle`], with the state a listing shows.
    pub(crate) async fn settle_state(
        &self,
        mut record: FileRecord,
    ) -> Result<(FileRecord, FileState), Error> {
        if record.ready {
            return Ok((record, FileState::Ready));
        }
        // Refused by its scan or its type: its bytes are gone, its record
        // says why.
        if record.refusal().is_some() {
            return Ok((record, FileState::Rejected));
        }
        let state = match self.stored(&record.file).await? {
            // Found stored, proven and let out: ready.
            Stored::Ready(_) => match self
                .gate
                .let_out(&record.file, record.trace.as_deref())
                .await
            {
                Ok(()) => {
                    record.ready = true;
                    FileState::Ready
                }
                // Deleted while it was read: its bytes are gone.
                Err(Error::NotFound) => FileState::Pending,
                Err(e) => return Err(e),
            },
            Stored::Verifying => FileState::Verifying,
            Stored::Scanning => FileState::Scanning,
            Stored::Refused(_) => FileState::Rejected,
            Stored::Missing | Stored::Mismatch => FileState::Pending,
        };
        // Refused just now: its reason is in the record's fresh note (a
        // file still scanning shows nothing of its note).
        if state == FileState::Rejected
            && let Some(fresh) = self
                .records
                .get(&record.file.owner, &record.file.id)
                .await?
        {
            record.scan = fresh.scan;
        }
        Ok((record, state))
    }

    /// [`Files::settle`] for each of `records`, with bounded-parallel HEADs;
    /// each with the state a listing shows.
    pub(crate) async fn refresh(
        &self,
        records: Vec<FileRecord>,
    ) -> Result<Vec<(FileRecord, FileState)>, Error> {
        futures_util::stream::iter(records)
            .map(|record| self.settle_state(record))
            .buffered(HEADS_AT_ONCE)
            .try_collect()
            .await
    }

    /// Starts again the scans of `files` (their bytes noted stored, no
    /// verdict yet), as a server that starts does with those it left: each
    /// is looked at as a listing would, which starts its scan (or, past
    /// the deadline, rejects it).
    pub async fn resume_scans(&self, files: Vec<FileMeta>) {
        if !self.gate.scanning() || files.is_empty() {
            return;
        }
        tracing::info!(
            files = files.len(),
            "scans left by the last run started again"
        );
        for file in files {
            if let Err(e) = self.stored(&file).await {
                tracing::warn!(file_id = %file.id, error = %e, "a scan could not be started again");
            }
        }
    }

    /// One page of the caller's unexpired files, newest first: at most
    /// `limit` (default [`DEFAULT_PAGE`], at most [`MAX_PAGE`]), after `cursor`.
    pub async fn list_files(
        &self,
        owner: &str,
        limit: Option<usize>,
        cursor: Option<&str>,
    ) -> Result<FilePage, Error> {
        let limit = limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(Error::Invalid(format!(
                "limit must be between 1 and {MAX_PAGE}, got {limit}"
            )));
        }
        let after = match cursor.map(str::trim).filter(|c| !c.is_empty()) {
            None => None,
            Some(c) => Some(self.links.open_cursor(owner, c)?),
        };
        let page = self
            .records
            .page(owner, limit, after.as_ref(), now_unix())
            .await?;
        let files = self
            .refresh(page.records)
            .await?
            .into_iter()
            .map(|(r, state)| FileListing {
                // Read before the fields it reads are moved out.
                sha256: r.file.digest(),
                reason: (state == FileState::Rejected)
                    .then(|| r.refusal())
                    .flatten(),
                detected_type: r.scan.as_ref().and_then(|n| n.detected.clone()),
                file_id: r.file.id.to_string(),
                filename: r.file.filename,
                size: r.file.size,
                content_type: r.file.content_type,
                state,
                created_at: rfc3339(r.created_ms / 1000),
                expires_at: rfc3339(r.expires_at),
            })
            .collect();
        Ok(FilePage {
            files,
            next_cursor: page.next.map(|c| self.links.cursor(owner, &c)),
        })
    }
}
