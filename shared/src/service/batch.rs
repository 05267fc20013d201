//! Many files in one call. Uploads, in this order: check the batch (at
//! most [`MAX_BATCH_FILES`] entries, each path relative and plain) and each
//! entry as `request_upload` would (a refused entry does not sink the
//! others) → take one from the caller's issuing rate → find, among the
//! caller's own ready files, those with the same size and SHA-256 (an
//! index by owner and digest: never another user's) → admit the whole
//! batch under the caps at once, or refuse it whole → record every file →
//! copy each one already stored inside the store (no byte sent again) and
//! mark it ready → record the batch, whose handle names every file and
//! whose link (`/b/{token}`) the one line reads.
//!
//! The line fetches the batch's script ([`curl::BATCH_SCRIPT`], run only
//! if its SHA-256 is this release's), which asks `GET /b/{token}` for the
//! files still to send (each run asks again, so a rerun sends only what is
//! missing) and sends each through its own upload link: in one PUT to the
//! target `GET /u/{token}/to` answers, or in parts by the pinned parts
//! script.
//!
//! Downloads: every file resolved and found stored → the bytes of all
//! taken from the owner's hourly allowance at once → a batch of names
//! (collisions resolved in the order asked) → a single-use link to the
//! list, whose `GET /g/{token}` mints each file's single-use link.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures_util::{StreamExt as _, TryStreamExt as _};
use serde::{Deserialize, Serialize};

use super::issue::{Reader, UploadRequest};
use super::uploads::Protocol;
use super::{Sluice, Stored};
use crate::auth::Caller;
use crate::curl;
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::ledger::Spend;
use crate::rate::Kind;
use crate::records::{Batch, BatchFile, FileRecord};
use crate::sha::Sha256;
use crate::store::{Access, ObjectInfo};
use crate::time::now_unix;
use crate::token::{BATCH_PREFIX, Short, ShortKind};

/// The most files one batch takes.
pub const MAX_BATCH_FILES: usize = 1000;

/// The longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// How many files of a batch are looked up, recorded or copied at once.
const AT_ONCE: usize = 16;

/// One file of `request_uploads`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchEntry {
    /// Where the file is, relative to where the line runs (no `..`, not absolute).
    pub path: String,
    /// Exact size in bytes.
    pub size: u64,
    /// SHA-256 of the bytes, 64 hex digits.
    pub sha256: Sha256,
    /// The name to keep; the path's last component when absent.
    #[serde(default)]
    pub filename: Option<String>,
    /// The media type; guessed from the name when absent.
    #[serde(default)]
    pub content_type: Option<String>,
}

/// `send`: the line sends it; `stored`: you had these bytes stored, not
/// sent again; `refused`: see `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntryState {
    // No doc comment on a variant: the schema stays a plain enum.
    Send,
    Stored,
    Refused,
}

/// One file of a batch's answer, in the order asked.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BatchItem {
    /// Absent when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_id: Option<FileId>,
    pub state: EntryState,
    /// Why it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The answer to `request_uploads`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BatchTicket {
    /// `$uploadedFiles:…`: every file issued.
    pub handle: String,
    /// Run where the files are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Files per state.
    pub counts: BTreeMap<&'static str, usize>,
    /// Each file in the order asked.
    pub files: Vec<BatchItem>,
}

/// The answer to `get_download_urls`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DownloadBatch {
    /// Run where the files should go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Each file in the order asked.
    pub files: Vec<DownloadItem>,
}

/// One file of a download batch.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DownloadItem {
    /// The file's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_id: Option<FileId>,
    /// Saved under this name, not its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Why it is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An entry checked: its path and the file it issues, or why it is refused.
type Checked = Result<(String, FileMeta), String>;

/// A file of the caller's already stored, and what the store said of it.
type StoredCopy = (FileMeta, ObjectInfo);

/// A path as the line reads it: relative to where it runs, `/`-separated,
/// no part `..` or starting with `.` or `-` (the batch script refuses those
/// too: a list that names `../secret` or `.envrc` is not run), no control,
/// invisible or bidirectional-control character (which make one path read
/// as another).
fn checked_path(path: &str) -> Result<String, String> {
    let path = path.trim();
    if path.is_empty() {
        return Err("path must not be empty".into());
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(format!("path is longer than {MAX_PATH_BYTES} bytes"));
    }
    if path.starts_with('/') || path.contains('\\') {
        return Err(
            "path must be relative to where the line runs, with / between its parts".into(),
        );
    }
    if path
        .chars()
        .any(|c| c.is_control() || crate::filename::is_invisible(c))
    {
        return Err("path must not hold control or invisible characters".into());
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return Err("path must name a file below where the line runs, without ..".into());
    }
    if parts.iter().any(|p| p.starts_with(['.', '-'])) {
        return Err(
            "path must not have a part starting with . or - (hidden files are not sent in a batch: \
             use request_upload for one)"
                .into(),
        );
    }
    Ok(parts.join("/"))
}

impl Sluice {
    /// Issues every file of `entries` for `owner` at once (see the module's
    /// order).
    pub async fn issue_uploads(
        &self,
        owner: &str,
        entries: Vec<BatchEntry>,
    ) -> Result<BatchTicket, Error> {
        if entries.is_empty() || entries.len() > MAX_BATCH_FILES {
            return Err(Error::Invalid(format!(
                "files must list 1 to {MAX_BATCH_FILES} files, got {}",
                entries.len()
            )));
        }
        // Each entry checked once: its path and the file it would issue,
        // or why it is refused.
        let mut paths = HashSet::new();
        let checked: Vec<Checked> = entries
            .into_iter()
            .map(|e| {
                let (path, file) = self.checked_entry(owner, e)?;
                if !paths.insert(path.clone()) {
                    return Err(format!("path {path} is listed twice: list each file once"));
                }
                Ok((path, file))
            })
            .collect();
        // The rate counts files: one call of a thousand takes a thousand.
        self.check_rate_n(
            Kind::Issue,
            owner,
            checked.iter().filter(|c| c.is_ok()).count(),
        )?;
        let now = now_unix();
        // The caller's own stored copies, found by digest: each distinct
        // size and digest looked up once, however many entries share it.
        let asked: Vec<Option<(u64, Sha256)>> = checked
            .iter()
            .map(|c| c.as_ref().ok().map(|(_, f)| (f.size, f.sha256)))
            .collect();
        let distinct: Vec<(u64, Sha256)> = asked
            .iter()
            .flatten()
            .copied()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let looked: HashMap<(u64, Sha256), StoredCopy> = futures_util::stream::iter(distinct)
            .map(|(size, sha256)| async move {
                let copy = self.stored_copy(owner, size, sha256, now).await?;
                Ok::<_, Error>(copy.map(|c| ((size, sha256), c)))
            })
            .buffer_unordered(AT_ONCE)
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .flatten()
            .collect();
        let found: Vec<Option<StoredCopy>> = asked
            .iter()
            .map(|a| a.and_then(|k| looked.get(&k).cloned()))
            .collect();
        let expires_at = now + self.transfers().handle_ttl.as_secs() as i64;
        let files: Vec<Option<FileMeta>> = checked
            .iter()
            .map(|c| c.as_ref().ok().map(|(_, f)| f.clone()))
            .collect();
        let stored: Vec<bool> = found.iter().map(Option::is_some).collect();
        self.admit_batch(owner, &files, &stored, expires_at, now)
            .await?;
        // Copies of what is stored already; a copy the store cannot make
        // is sent like any other file.
        let pairs: Vec<(Option<FileMeta>, Option<StoredCopy>)> =
            files.into_iter().zip(found).collect();
        let copied: Vec<bool> = futures_util::stream::iter(pairs)
            .map(|pair| async move {
                match pair {
                    (Some(file), Some((old, info))) => self.copy_stored(&old, &info, &file).await,
                    _ => Ok(false),
                }
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        let (mut items, mut listed, mut to_send) = (Vec::new(), Vec::new(), Vec::new());
        for (c, copied) in checked.into_iter().zip(copied) {
            items.push(match c {
                Ok((path, file)) => {
                    listed.push(BatchFile {
                        id: file.id.to_string(),
                        path,
                        size: file.size,
                        sha256: file.sha256,
                    });
                    let state = if copied {
                        EntryState::Stored
                    } else {
                        EntryState::Send
                    };
                    let file_id = Some(file.id.clone());
                    if !copied {
                        to_send.push(file);
                    }
                    BatchItem {
                        file_id,
                        state,
                        error: None,
                    }
                }
                Err(why) => BatchItem {
                    file_id: None,
                    state: EntryState::Refused,
                    error: Some(why),
                },
            });
        }
        // The uploads in parts begun (S3's upload is made when issued).
        futures_util::stream::iter(to_send)
            .map(|f| async move { self.begin_upload(&f).await })
            .buffer_unordered(AT_ONCE)
            .try_collect::<Vec<_>>()
            .await?;
        let id = FileId::random();
        let manifest = manifest_of(&listed);
        self.records()
            .put_batch(&Batch {
                id: Some(id.clone()),
                owner: owner.to_owned(),
                expires_at,
                files: listed,
            })
            .await?;
        let count = |s: EntryState| items.iter().filter(|i| i.state == s).count();
        let counts = BTreeMap::from([
            ("send", count(EntryState::Send)),
            ("stored", count(EntryState::Stored)),
            ("refused", count(EntryState::Refused)),
        ]);
        let command = if counts["send"] > 0 {
            let link = Short::batch(ShortKind::BatchUpload, id.clone(), expires_at);
            tracing::info!(batch = %id, jti = %link.jti(), files = items.len(), "batch issued");
            let url = format!("{}/b/{}", self.issuer_base(), link.encode(self.keys()));
            let origin = self.part_origin().await?;
            let line = curl::batch_command(&url, &origin, &manifest);
            let probe = self.origins_probed(&origin);
            let probe: Vec<&str> = probe.iter().map(String::as_str).collect();
            Some(curl::or_unreachable(&line, &probe, curl::UPLOAD_INSTEAD))
        } else {
            None
        };
        Ok(BatchTicket {
            handle: format!(
                "{BATCH_PREFIX}{}",
                Short::batch(ShortKind::BatchHandle, id, 0).encode(self.keys())
            ),
            command,
            counts,
            files: items,
        })
    }

    /// A ready file of `owner`'s with this size and digest whose object is
    /// there and matches, if any, with what the store said of its object.
    async fn stored_copy(
        &self,
        owner: &str,
        size: u64,
        sha256: Sha256,
        now: i64,
    ) -> Result<Option<StoredCopy>, Error> {
        let Some(record) = self.records().find_ready(owner, size, sha256, now).await? else {
            return Ok(None);
        };
        Ok(match self.stored(&record.file).await? {
            Stored::Ready(info) => Some((record.file, info)),
            _ => None,
        })
    }

    /// An entry of `request_uploads` checked as `request_upload` checks a
    /// file: its path and the file it issues, or why it is refused.
    fn checked_entry(&self, owner: &str, e: BatchEntry) -> Checked {
        let path = checked_path(&e.path)?;
        let req = UploadRequest {
            filename: e
                .filename
                .unwrap_or_else(|| curl::local_file_name(&path).to_owned()),
            size: e.size,
            sha256: e.sha256,
            content_type: e.content_type,
        };
        let (filename, content_type) = self.checked(&req).map_err(|e| e.to_string())?;
        let file = FileMeta {
            id: FileId::random(),
            owner: owner.to_owned(),
            filename,
            content_type,
            size: req.size,
            sha256: req.sha256,
        };
        Ok((path, file))
    }

    /// Copies `old`'s object (`info`: what the store said of it when it was
    /// found) to `file`'s inside the store and marks `file` ready: whether it
    /// was copied. The copy is of that very object (pinned to its ETag);
    /// where the store cannot vouch for the copy's digest, its record keeps
    /// the proof, for that very copy.
    async fn copy_stored(
        &self,
        old: &FileMeta,
        info: &ObjectInfo,
        file: &FileMeta,
    ) -> Result<bool, Error> {
        let copy = match self
            .store()
            .copy(&old.object_key(), &file.object_key(), info)
            .await
        {
            Ok(Some(copy)) => copy,
            Ok(None) => return Ok(false),
            Err(e) => {
                tracing::warn!(file_id = %file.id, error = %e, "a stored copy could not be made: sent again");
                return Ok(false);
            }
        };
        if let Access::Direct(_) = self.store().access()
            && copy.sha256 != Some(file.sha256)
        {
            let proof = super::proof::proven_for(copy.etag.clone());
            self.records()
                .swap_proof(&file.owner, &file.id, None, Some(&proof))
                .await?;
        }
        self.file_stored(file, None).await?;
        tracing::info!(file_id = %file.id, from = %old.id, "stored copy made");
        Ok(true)
    }

    /// Admits and records every file of a batch under the caller's caps at
    /// once, in one step of the record store where it has a single writer
    /// ([`Usage::put_all_within`](crate::records::Usage::put_all_within)): the files to send as pending
    /// ones, and the bytes sent or copied (a copy takes room as much as
    /// bytes sent) under the cap on pending bytes, all of them under the
    /// cap on all the caller's bytes; or refuses the whole batch, recording
    /// nothing, saying so.
    async fn admit_batch(
        &self,
        owner: &str,
        files: &[Option<FileMeta>],
        stored: &[bool],
        expires_at: i64,
        now: i64,
    ) -> Result<(), Error> {
        let (records, caps) = (self.records(), self.pending_caps());
        let (mut sent, mut sent_bytes, mut new_bytes) = (0u64, 0u64, 0u64);
        for (file, stored) in files.iter().zip(stored) {
            if let Some(file) = file {
                new_bytes = new_bytes.saturating_add(file.size);
                if !stored {
                    sent += 1;
                    sent_bytes = sent_bytes.saturating_add(file.size);
                }
            }
        }
        let issued: Vec<FileRecord> = files
            .iter()
            .flatten()
            .map(|f| FileRecord::issued(f, expires_at))
            .collect();
        let batch = crate::records::Admission {
            records: &issued,
            sent: (sent, new_bytes),
        };
        if records.put_all_within(&batch, caps, now).await?.is_none() {
            return Ok(());
        }
        // At a cap: files uploaded straight to the store may still be
        // marked pending; settle them and try once more.
        let pending = records.pending(owner, now, caps.files).await?;
        self.refresh(pending).await?;
        let Some(again) = records.put_all_within(&batch, caps, now).await? else {
            return Ok(());
        };
        Err(Error::Limited {
            message: format!(
                "this batch is refused whole, nothing was issued: its {sent} files to send \
                 ({sent_bytes} bytes; {new_bytes} new bytes with the copies of files you \
                 stored already) beside your {} pending ({} bytes) pass the limits of {} \
                 pending files and {} pending bytes{}; send fewer files at once, or wait for \
                 your pending files to arrive or expire",
                again.files,
                again.bytes,
                caps.files,
                caps.bytes,
                caps.stored
                    .map(|cap| format!(", or {cap} bytes stored per user"))
                    .unwrap_or_default(),
            ),
            retry_after: 60,
        })
    }

    /// The batch a token of `kind` names, unexpired: every failure the
    /// uniform [`Error::NotFound`].
    async fn batch_of(&self, token: &str, kind: ShortKind) -> Result<(Short, Batch), Error> {
        let now = now_unix();
        let short = Short::decode(self.keys(), token, kind, now).map_err(|e| {
            tracing::debug!(reason = %e, "batch link refused");
            Error::NotFound
        })?;
        let batch = self
            .records()
            .get_batch(&short.file_id)
            .await?
            .filter(|b| b.expires_at > now)
            .ok_or(Error::NotFound)?;
        Ok((short, batch))
    }

    /// What `GET /b/{token}` answers: one line per file of the batch, in
    /// order, its [`curl::manifest_line`] (the line pins their digest),
    /// then its upload link (`-`: stored already; `x`: deleted or expired)
    /// and its part size in MiB (0: one PUT), tab-separated. Files found
    /// stored are marked ready on the way.
    pub async fn batch_to_send(&self, token: &str) -> Result<String, Error> {
        let (_, batch) = self.batch_of(token, ShortKind::BatchUpload).await?;
        let lines: Vec<String> = futures_util::stream::iter(batch.files)
            .map(|f| async move {
                let (line, record) = self.listed(&f).await?;
                let Some(record) = record else {
                    return Ok(format!("{line}\tx\t0\n"));
                };
                let expires = record.expires_at;
                let (record, state) = self.settle_state(record).await?;
                if state == super::files::FileState::Ready {
                    return Ok(format!("{line}\t-\t0\n"));
                }
                let file = record.file;
                let target = self.upload_target(&file, expires, Reader::Model).await?;
                // How it goes: one resumable stream where sluice receives
                // the bytes, else its part size in MiB (0: one PUT).
                let how = match self.protocol_of(&file) {
                    Protocol::Stream => "s".to_owned(),
                    Protocol::Parts(p) => (p.part_size / (1024 * 1024)).to_string(),
                    Protocol::Put => "0".to_owned(),
                };
                Ok::<_, Error>(format!("{line}\t{}\t{how}\n", target.url))
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        Ok(lines.concat())
    }

    /// A file of a batch as its list begins its line (its manifest line,
    /// without the line break), and its record, if it still has one.
    async fn listed(&self, f: &BatchFile) -> Result<(String, Option<FileRecord>), Error> {
        let line = curl::manifest_line(&f.sha256, f.size, &f.path)
            .trim_end_matches('\n')
            .to_owned();
        let record = match FileId::parse(&f.id) {
            Some(id) => self.records().find(&id).await?,
            None => None,
        };
        Ok((line, record))
    }

    /// The script a batch's line runs ([`curl::BATCH_SCRIPT`]), to a live
    /// batch link only.
    pub async fn batch_script(&self, token: &str) -> Result<&'static str, Error> {
        self.batch_of(token, ShortKind::BatchUpload).await?;
        Ok(curl::BATCH_SCRIPT)
    }

    /// The script a download batch's line runs ([`curl::FETCH_SCRIPT`]),
    /// to a live list link only (asking for it does not spend the link).
    pub async fn fetch_script(&self, token: &str) -> Result<&'static str, Error> {
        self.batch_of(token, ShortKind::BatchDownload).await?;
        Ok(curl::FETCH_SCRIPT)
    }

    /// What `GET /u/{token}/to` answers for a file sent in one PUT: where
    /// to PUT it and the headers to send ([`curl::part_target`]'s form),
    /// for the batch script to check and use.
    pub async fn put_target(&self, token: &str) -> Result<String, Error> {
        let upload = self.upload_of(token).await?;
        let target = self
            .upload_target(&upload.file, upload.expires_at, Reader::Page)
            .await?;
        let url = match self.store().access() {
            Access::Direct(_) => target.url,
            Access::Proxied => format!("{}/u/{token}", self.issuer_base()),
        };
        let headers = target
            .headers
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length"))
            .map(|(k, v)| (k.as_str(), v.as_str()));
        Ok(curl::part_target(&url, headers))
    }

    /// The batch handle `handle` names, for `caller` (its owner, or a
    /// service with `files:resolve`): one read, whatever its size, so that
    /// a caller counts its files before anything is built for them.
    pub(crate) async fn batch_for(&self, caller: &Caller, handle: &str) -> Result<Batch, Error> {
        let token = handle.trim().strip_prefix(BATCH_PREFIX).unwrap_or(handle);
        let short = Short::decode(self.keys(), token, ShortKind::BatchHandle, now_unix())
            .map_err(|_| Error::NotAHandle)?;
        let batch = self
            .records()
            .get_batch(&short.file_id)
            .await?
            .ok_or(Error::HandleExpired)?;
        if batch.expires_at <= now_unix() {
            return Err(Error::HandleExpired);
        }
        if batch.owner != caller.owner && !caller.has(crate::auth::Scope::FilesResolve) {
            return Err(Error::OtherUsersHandle);
        }
        Ok(batch)
    }

    /// The handle of each file of `batch`, in order.
    pub(crate) fn handles_in(&self, batch: &Batch) -> Vec<String> {
        batch
            .files
            .iter()
            .filter_map(|f| FileId::parse(&f.id))
            .map(|id| self.handle_of(&id))
            .collect()
    }

    /// The batches `items` name, each distinct batch handle read once,
    /// counting every item as the files it stands for (a batch handle its
    /// files, anything else one): `Err(n)` as soon as that count `n` passes
    /// `max`, before anything is built for them.
    pub(crate) async fn batches_named(
        &self,
        caller: &Caller,
        items: &[&str],
        max: usize,
    ) -> Result<Result<HashMap<String, Batch>, usize>, Error> {
        let mut batches: HashMap<String, Batch> = HashMap::new();
        let mut total = 0usize;
        for item in items {
            total += if is_batch_handle(item) {
                let key = item.trim().to_owned();
                if !batches.contains_key(&key) {
                    let batch = self.batch_for(caller, &key).await?;
                    batches.insert(key.clone(), batch);
                }
                batches[&key].files.len()
            } else {
                1
            };
            if total > max {
                return Ok(Err(total));
            }
        }
        Ok(Ok(batches))
    }

    /// `files` (file ids, handles, or batch handles, in order) with each
    /// batch handle replaced by its files' handles; refused, before any
    /// handle is made, when that would be more than `max` files. Each
    /// distinct batch is read once, however often it is named.
    pub(crate) async fn expanded(
        &self,
        caller: &Caller,
        files: Vec<String>,
        max: usize,
    ) -> Result<Vec<String>, Error> {
        let too_many = |n: usize| {
            Error::Invalid(format!(
                "files must name 1 to {max} files, got {n} or more (a batch handle counts as its files)"
            ))
        };
        if files.len() > max {
            return Err(too_many(files.len()));
        }
        let batches = self
            .batches_named(
                caller,
                &files.iter().map(String::as_str).collect::<Vec<_>>(),
                max,
            )
            .await?
            .map_err(too_many)?;
        let mut wanted = Vec::with_capacity(files.len());
        for f in files {
            match batches.get(f.trim()) {
                Some(batch) => wanted.extend(self.handles_in(batch)),
                None => wanted.push(f),
            }
        }
        Ok(wanted)
    }

    /// Issues one line that downloads every file `files` names (file ids,
    /// handles, or batch handles, in order) for `caller`.
    pub async fn issue_downloads(
        &self,
        caller: &Caller,
        files: Vec<String>,
    ) -> Result<DownloadBatch, Error> {
        let wanted = self.expanded(caller, files, MAX_BATCH_FILES).await?;
        if wanted.is_empty() {
            return Err(Error::Invalid(format!(
                "files must name 1 to {MAX_BATCH_FILES} files, got {}",
                wanted.len()
            )));
        }
        self.check_rate(Kind::Links, &caller.owner)?;
        // An owned copy for the stream: a stream of borrowed items makes the
        // tool's future not Send-general enough for rmcp's handler.
        let found: Vec<Result<FileMeta, String>> = futures_util::stream::iter(wanted.clone())
            .map(|f| async move {
                let file = match self.resolve_file(caller, &f).await {
                    Ok(file) => file,
                    Err(e @ (Error::StoreUnavailable | Error::Internal(_))) => return Err(e),
                    Err(e) => return Ok(Err(e.to_string())),
                };
                Ok(match self.stored(&file).await? {
                    Stored::Ready(_) => Ok(file),
                    Stored::Missing => Err(Error::NotUploaded.to_string()),
                    Stored::Verifying => Err(Error::Verifying.to_string()),
                    Stored::Mismatch => Err(Error::StoredMismatch.to_string()),
                })
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        let mut taken = HashSet::new();
        let mut listed = Vec::new();
        let mut items = Vec::with_capacity(found.len());
        for (f, asked) in found.iter().zip(&wanted) {
            items.push(match f {
                Ok(file) => {
                    let own = file.safe_name();
                    let name = unique_name(&own, &mut taken);
                    listed.push(BatchFile {
                        id: file.id.to_string(),
                        path: name.clone(),
                        size: file.size,
                        sha256: file.sha256,
                    });
                    DownloadItem {
                        file_id: Some(file.id.clone()),
                        name: (name != own).then_some(name),
                        error: None,
                    }
                }
                Err(why) => DownloadItem {
                    file_id: None,
                    name: None,
                    error: Some(format!("{}: {why}", short_input(asked))),
                },
            });
        }
        if listed.is_empty() {
            return Ok(DownloadBatch {
                command: None,
                files: items,
            });
        }
        // Each owner's allowance charged once, for all of their files.
        let mut by_owner: BTreeMap<&str, FileMeta> = BTreeMap::new();
        for file in found.iter().flatten() {
            by_owner
                .entry(file.owner.as_str())
                .and_modify(|sum| sum.size = sum.size.saturating_add(file.size))
                .or_insert_with(|| file.clone());
        }
        for sum in by_owner.values() {
            self.charge_download(sum).await?;
        }
        let expires_at = now_unix() + self.transfers().link_ttl.as_secs() as i64;
        let id = FileId::random();
        let manifest = manifest_of(&listed);
        self.records()
            .put_batch(&Batch {
                id: Some(id.clone()),
                owner: caller.owner.clone(),
                expires_at,
                files: listed,
            })
            .await?;
        let link = Short::batch(ShortKind::BatchDownload, id, expires_at);
        tracing::info!(jti = %link.jti(), files = items.len(), "download batch issued");
        let url = format!("{}/g/{}", self.resolver_base(), link.encode(self.keys()));
        Ok(DownloadBatch {
            command: Some(curl::fetch_command(&url, &manifest)),
            files: items,
        })
    }

    /// What `GET /g/{token}` answers, once: one line per file of the batch,
    /// in order, its [`curl::manifest_line`] (SHA-256, size, name: the line
    /// pins their digest) and a fresh single-use download link (`x`: the
    /// file was deleted or has expired), tab-separated.
    pub async fn batch_links(&self, token: &str) -> Result<String, Error> {
        let (short, batch) = self.batch_of(token, ShortKind::BatchDownload).await?;
        let jti = short.jti();
        if self
            .ledger()
            .spend(&jti, short.expires_at.unwrap_or(0))
            .await?
            == Spend::AlreadySpent
        {
            tracing::info!(%jti, "spent batch link presented again");
            return Err(Error::NotFound);
        }
        // The records read a few at once, as `batch_to_send` reads them.
        let lines: Vec<String> = futures_util::stream::iter(batch.files)
            .map(|f| async move {
                let (line, record) = self.listed(&f).await?;
                Ok::<_, Error>(match record {
                    Some(record) => {
                        let ticket = self.download_ticket(&record.file);
                        format!("{line}\t{}\n", ticket.download.url)
                    }
                    None => format!("{line}\tx\n"),
                })
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await?;
        Ok(lines.concat())
    }
}

/// `name`, or `stem (2).ext`, `stem (3).ext`… the first not in `taken`
/// (which it joins): the same names for the same files in the same order.
/// Names are compared case-folded (`A.txt` and `a.txt` are one file on a
/// case-insensitive disk, as macOS's and Windows' are by default).
fn unique_name(name: &str, taken: &mut HashSet<String>) -> String {
    if taken.insert(name.to_lowercase()) {
        return name.to_owned();
    }
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => name.split_at(i),
        _ => (name, ""),
    };
    (2..)
        .map(|n| format!("{stem} ({n}){ext}"))
        .find(|candidate| taken.insert(candidate.to_lowercase()))
        .expect("some number is free")
}

/// The digest of a batch's manifest ([`curl::manifest_digest`]).
fn manifest_of(files: &[BatchFile]) -> Sha256 {
    curl::manifest_digest(files.iter().map(|f| (&f.sha256, f.size, f.path.as_str())))
}

/// An input of `get_download_urls` as a refusal names it: a file id whole,
/// a handle by its first characters (enough to tell which one it was).
fn short_input(asked: &str) -> String {
    let asked = asked.trim();
    match asked.char_indices().nth(24) {
        Some((i, _)) => format!("{}…", &asked[..i]),
        None => asked.to_owned(),
    }
}

/// Whether `s` is a batch's handle.
pub fn is_batch_handle(s: &str) -> bool {
    s.trim().starts_with(BATCH_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_and_plain() {
        assert_eq!(checked_path("./a//b/c.txt").unwrap(), "a/b/c.txt");
        for bad in [
            "",
            "/etc/passwd",
            "a/../b",
            "..",
            "a\\b",
            "a\nb",
            "./.",
            ".envrc",
            "a/.git/config",
            "-rf",
            "a/-x",
            "invoice\u{202E}fdp.exe",
            "a\u{200B}b",
        ] {
            assert!(checked_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn colliding_names_get_the_same_numbers_every_time() {
        let names = ["a.txt", "a.txt", "b", "a.txt", "b", "a (2).txt"];
        let run = || {
            let mut taken = HashSet::new();
            names
                .iter()
                .map(|n| unique_name(n, &mut taken))
                .collect::<Vec<_>>()
        };
        let first = run();
        assert_eq!(
            first,
            [
                "a.txt",
                "a (2).txt",
                "b",
                "a (3).txt",
                "b (2)",
                "a (2) (2).txt"
            ]
        );
        assert_eq!(run(), first);
    }
}
