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
//! list, whose `GET /g/{token}` mints each file's single-use link; or
//! a single-use link to them all as one zip (`GET /z/{token}`, [`zip`]).

mod download;
mod upload;
pub mod zip;
#[cfg(feature = "zips")]
mod zip_writer;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::service::intake::Protocol;
use crate::service::uploads::issue::{Reader, UploadRequest};

use super::backends::Backends;
use super::downloads::Downloads;
use super::files::Files;
use super::files::stored::Stored;
use super::limits::Limits;
use super::links::Links;
use super::uploads::Uploads;
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

/// What a batch's answer may add, a file, to the kilobyte a model reads of
/// one file's (DESIGN: "≤ 1 KiB + 64 B per file").
pub const PER_FILE_READS: usize = 64;

/// The answer to `get_download_urls`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DownloadBatch {
    /// Run where the files should go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The files as one zip, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip: Option<zip::ZipTicket>,
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
    /// For hosts that fetch files from answers (ChatGPT): a single-use
    /// link of its own, for the first files whose reference fits the
    /// kilobyte a model reads (`zip: true` gives one for all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_ref: Option<crate::service::downloads::FileRef>,
}

/// An entry checked: its path and the file it issues, or why it is refused.
type Checked = Result<(String, FileMeta), String>;

/// A file of the caller's already stored (its record, with its scan's
/// verdict), and what the store said of it.
type StoredCopy = (crate::records::FileRecord, ObjectInfo);

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

/// Many files in one call and one line, each way.
#[derive(Clone, Debug)]
pub struct Batches {
    store: Arc<dyn crate::store::ObjectStore>,
    records: Arc<dyn crate::records::RecordStore>,
    ledger: Arc<dyn crate::ledger::Ledger>,
    transfers: Arc<crate::config::Transfers>,
    uploads: Uploads,
    downloads: Downloads,
    files: Files,
    limits: Limits,
    links: Links,
    /// Where zips are built.
    zips: zip::Zips,
}

impl Batches {
    /// Batches of the files `uploads` issues and `downloads` links; zips
    /// built where `zips` says.
    pub fn new(
        backends: &Backends,
        uploads: Uploads,
        downloads: Downloads,
        files: Files,
        limits: Limits,
        links: Links,
        zips: zip::Zips,
    ) -> Self {
        Self {
            store: backends.store.clone(),
            records: backends.records.clone(),
            ledger: backends.ledger.clone(),
            transfers: backends.transfers.clone(),
            uploads,
            downloads,
            files,
            limits,
            links,
            zips,
        }
    }
}

impl Batches {
    /// The batch a token of `kind` names, unexpired: every failure the
    /// uniform [`Error::NotFound`].
    async fn batch_of(&self, token: &str, kind: ShortKind) -> Result<(Short, Batch), Error> {
        let now = now_unix();
        let short = self.links.open_batch(token, kind)?;
        let batch = self
            .records
            .get_batch(&short.file_id)
            .await?
            .filter(|b| b.expires_at > now)
            .ok_or(Error::NotFound)?;
        Ok((short, batch))
    }

    /// The batch handle `handle` names, for `caller` (its owner, or a
    /// service with `files:resolve`): one read, whatever its size, so that
    /// a caller counts its files before anything is built for them.
    pub(crate) async fn batch_for(&self, caller: &Caller, handle: &str) -> Result<Batch, Error> {
        let id = self.links.open_batch_handle(handle)?;
        let batch = self
            .records
            .get_batch(&id)
            .await?
            .ok_or(Error::HandleExpired)?;
        if batch.expires_at <= now_unix() {
            return Err(Error::HandleExpired);
        }
        if !caller.may_resolve(&batch.owner) {
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
            .map(|id| self.links.handle(&id))
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
