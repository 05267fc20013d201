//! Imports: a file the server fetches from a URL, for files already on the
//! web (a dataset, a release asset, another system's presigned link, the
//! `download_url` a host gives for a file the person attached). In this
//! order: the request checked (the URL by the guard, [`crate::fetch::guard`],
//! before anything is recorded; a declared size under the caps) → one from
//! the caller's issuing rate, and one of the imports they may have under way
//! → the file: with its size and SHA-256 declared, issued now and pending
//! under the caps (it lists as pending); otherwise its id chosen now, and
//! the file issued once its bytes are in (its handle is given once ready) → the fetch, in the
//! background, one of a bounded number at once, under the import's deadline
//! ([`fetch`]) → ready (`file.ready`), or rejected with the reason
//! (`file.rejected`, nothing kept) → the caller is answered as soon as it
//! ends, or `pending` after a short wait, and asks again
//! ([`Imports::import_status`]).
//!
//! Locally the fetches run in the server. On AWS, where a function is frozen
//! once it answers, each import is started in the importer function
//! ([`Dispatch`], an asynchronous invocation), which runs it
//! ([`Imports::run_job`]) and leaves its outcome in the import's record,
//! where the function that was asked reads it.

mod admit;
mod fetch;
mod spool;
mod status;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use url::Url;

use super::backends::Backends;
use super::files::Files;
use super::limits::{Limits, Turns};
use super::links::Links;
use super::uploads::Uploads;
use crate::config::Imports as Settings;
use crate::error::Error;
use crate::fetch::{Fetcher, host_of};
use crate::file::{FileId, FileMeta};
use crate::sha::Sha256;

/// How long a finished import's outcome is kept for its status.
const KEEP_FINISHED_SECS: u64 = 3600;

/// The input field a host that resolves attached files fills, as ChatGPT's
/// Apps SDK describes it (a tool's `_meta["openai/fileParams"]` names the
/// top-level fields that take one).
pub const FILE_PARAMS_META: &str = "openai/fileParams";

/// A file the host hands over: where to fetch it, and its id at the host.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(inline)]
pub struct HostFile {
    /// Where the host serves the file.
    pub download_url: String,
    /// The host's id of it.
    pub file_id: String,
    /// Its name.
    #[serde(default)]
    pub file_name: Option<String>,
    /// Its media type.
    #[serde(default)]
    pub mime_type: Option<String>,
}

impl HostFile {
    /// The File fields of `fields` that a host filled with a file it hands
    /// over (an object, not a handle), each parsed, or why it cannot be.
    pub(crate) fn handed_in(
        action: &crate::actions::Action,
        fields: &serde_json::Value,
    ) -> Vec<(String, Result<HostFile, Error>)> {
        action
            .fields
            .iter()
            .filter(|f| matches!(f.kind, crate::actions::FieldKind::File))
            .filter_map(|f| {
                let value @ serde_json::Value::Object(_) = fields.get(&f.name)? else {
                    return None;
                };
                let file = serde_json::from_value(value.clone()).map_err(|_| {
                    Error::Invalid("a file handed over needs its download_url and file_id".into())
                });
                Some((f.name.clone(), file))
            })
            .collect()
    }
}

/// What `import_file` and `POST /imports` take.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// The `http(s)` URL to fetch.
    #[serde(default)]
    pub url: Option<String>,
    /// Instead of `url`: a file the host hands over (the host fills it).
    #[serde(default)]
    pub file: Option<HostFile>,
    /// The name to keep (else the server's, else the URL's).
    #[serde(default)]
    pub filename: Option<String>,
    /// Exact size, if known: other lengths are rejected.
    #[serde(default)]
    pub size: Option<u64>,
    /// SHA-256, if known: other bytes are rejected.
    #[serde(default)]
    pub sha256: Option<Sha256>,
    /// The media type (else the server's, else guessed).
    #[serde(default)]
    pub content_type: Option<String>,
}

/// Where an import stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // said by their names; kept out of the tools' schemas
pub enum ImportState {
    Pending,
    Scanning,
    Ready,
    Rejected,
}

/// The answer to an import, and to asking how it stands.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ImportTicket {
    /// For get_import_status.
    pub file_id: FileId,
    /// `$uploadedFile:…`, once ready (none before: a handle of bytes not
    /// yet in would only be refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Where it stands.
    pub state: ImportState,
    /// Scheme and host.
    pub source: String,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[allow(missing_docs)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// What the file is pinned to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// Bytes so far, while pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received: Option<u64>,
    /// Why it was rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How an import ended, or that it has not.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Pending,
    Ready(FileMeta),
    Rejected(String),
}

/// One import under way or lately ended, in this process.
#[derive(Debug)]
struct Job {
    owner: String,
    source: String,
    /// The file, once its size and digest are known (at once when declared).
    declared: Option<FileMeta>,
    received: Arc<AtomicU64>,
    outcome: watch::Receiver<Outcome>,
    started: Instant,
}

/// An import admitted, about to be fetched: whose, its id, the host it
/// comes from, the URL the guard let through, the request, the file if
/// it was declared (issued), and the turn it holds.
struct Begun<'a> {
    owner: &'a str,
    id: FileId,
    source: String,
    url: Url,
    req: ImportRequest,
    declared: Option<FileMeta>,
    turn: u32,
}

/// Where imports' fetches run.
#[derive(Clone)]
enum Runner {
    /// In this process: a server that lives on.
    Here,
    /// In a function of its own, started for each import (on AWS, where a
    /// function is frozen once it answers).
    Function(Arc<dyn Dispatch>),
}

/// Starts work in the importer function, the one function that may run
/// for minutes after the request that asked for it was answered.
#[async_trait::async_trait]
pub trait Dispatch: Send + Sync + std::fmt::Debug {
    /// Starts `job`, without waiting for it to end.
    async fn start(&self, job: &ImportJob) -> Result<(), Error>;

    /// Starts building the zip of download batch `batch` into the store
    /// ([`crate::service::batches::Batches::build_zip`]), without waiting
    /// for it to end.
    async fn start_zip(&self, batch: &FileId) -> Result<(), Error>;
}

/// What the importer function is handed: a batch whose zip it builds
/// (`{"zip": <batch id>}`), or an import's job.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ImporterEvent {
    /// Build the zip of the download batch `zip` names.
    Zip {
        /// The batch's id.
        zip: String,
    },
    /// Run an import.
    Import(Box<ImportJob>),
}

/// One import, as the importer function is handed it: who asked, which
/// file, the request as asked (its URL in `url`, checked by the guard when
/// it was asked for, and again), and whether the file was issued then.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportJob {
    /// The `sub` of the user who asked.
    pub owner: String,
    /// The import's file id.
    pub file_id: String,
    /// The request as asked.
    #[serde(default)]
    pub request: ImportRequest,
    /// Whether the file was issued when the import was asked for (its size
    /// and SHA-256 declared).
    pub declared: bool,
    /// The caller's turn among their imports under way, given back when
    /// the import ends (none from a sender before turns: it lapses).
    #[serde(default)]
    pub turn: Option<u32>,
}

/// Files fetched by the server from a URL.
#[derive(Clone)]
pub struct Imports {
    store: Arc<dyn crate::store::ObjectStore>,
    records: Arc<dyn crate::records::RecordStore>,
    transfers: Arc<crate::config::Transfers>,
    proofs: super::proof::Proofs,
    uploads: Uploads,
    files: Files,
    limits: Limits,
    links: Links,
    settings: Arc<Settings>,
    /// `None`: imports are off here (the setting, or a function that is
    /// frozen once it answers and has no importer to start).
    runner: Option<Runner>,
    /// The guarded client, made at the first fetch of this process (a
    /// function that only starts imports never makes it).
    fetcher: Arc<OnceLock<Arc<Fetcher>>>,
    jobs: Arc<Mutex<HashMap<FileId, Job>>>,
    /// The fetches this process runs at once (`SLUICE_IMPORTS_AT_ONCE`),
    /// shared among owners in turn (the admission part's [`Turns`]).
    fetches: Arc<Turns>,
}

impl std::fmt::Debug for Imports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Imports")
            .field("on", &self.runner.is_some())
            .finish_non_exhaustive()
    }
}

impl Imports {
    /// Imports under `settings`: fetched here where `here` (a server that
    /// lives on), else started in the importer function through
    /// `dispatch`, else not offered.
    pub(crate) fn new(
        (backends, proofs): (&Backends, super::proof::Proofs),
        uploads: Uploads,
        files: Files,
        limits: Limits,
        settings: Settings,
        here: bool,
        dispatch: Option<Arc<dyn Dispatch>>,
    ) -> Self {
        let runner = match (&settings.guard.reach, dispatch) {
            (crate::fetch::guard::Reach::Off, _) => None,
            (_, Some(dispatch)) => Some(Runner::Function(dispatch)),
            _ if here => Some(Runner::Here),
            _ => None,
        };
        Self {
            store: backends.store.clone(),
            records: backends.records.clone(),
            transfers: backends.transfers.clone(),
            proofs,
            uploads,
            links: files.links().clone(),
            files,
            limits,
            fetches: Arc::new(Turns::new(settings.at_once)),
            settings: Arc::new(settings),
            runner,
            fetcher: Arc::default(),
            jobs: Arc::default(),
        }
    }

    /// The guarded client.
    fn fetcher(&self) -> Arc<Fetcher> {
        self.fetcher
            .get_or_init(|| {
                Arc::new(Fetcher::new(
                    self.settings.guard.clone(),
                    self.settings.timeouts,
                ))
            })
            .clone()
    }

    /// Whether `import_file` is offered.
    pub fn offered(&self) -> bool {
        self.runner.is_some()
    }

    /// The largest file an import takes: the setting, within the largest
    /// upload; where the store receives the bytes and takes no parts,
    /// within one PUT of them held whole.
    fn max_bytes(&self) -> u64 {
        let transfers = &self.transfers;
        let mut most = self
            .settings
            .max_bytes
            .map_or(transfers.max_upload_bytes, |m| {
                m.min(transfers.max_upload_bytes)
            });
        if matches!(self.store.access(), crate::store::Access::Direct(_))
            && self.store.parts().is_none()
        {
            most = most.min(transfers.single_put_max_bytes);
        }
        most
    }

    /// Imports `req.url` as a file of `owner`'s: answered when it ends, or
    /// `pending` after the configured wait.
    pub async fn import_file(
        &self,
        owner: &str,
        req: ImportRequest,
    ) -> Result<ImportTicket, Error> {
        let ticket = self.start_import(owner, req).await?;
        self.scanned(owner, ticket).await
    }

    /// [`Imports::import_file`], before the malware gate: the form → the
    /// admission → the fetch, in the importer function or here.
    async fn start_import(&self, owner: &str, req: ImportRequest) -> Result<ImportTicket, Error> {
        let Some(runner) = self.runner.clone() else {
            return Err(Error::Invalid(
                "this server does not import files from URLs: upload the file instead \
                 (request_upload, or request_browser_upload for a file on the person's computer)"
                    .into(),
            ));
        };
        let (url, req) = self.checked(req)?;
        let source = host_of(&url);
        let id = FileId::random();
        let (turn, declared) = self.admitted(owner, &id, &url, &req).await?;
        tracing::info!(file_id = %id, %source, "import begun");
        self.note(&id, owner, &source, &Outcome::Pending).await;
        let begun = Begun {
            owner,
            id,
            source,
            url,
            req,
            declared,
            turn,
        };
        match runner {
            Runner::Function(dispatch) => self.dispatched(&*dispatch, begun).await,
            Runner::Here => self.run_here(begun).await,
        }
    }

    /// An import begun, handed to the importer function; answered when it
    /// ends there (read from its record), or `pending` after the wait. One
    /// that could not be handed over gives back what it held and is
    /// rejected, saying to ask again.
    async fn dispatched(
        &self,
        dispatch: &dyn Dispatch,
        begun: Begun<'_>,
    ) -> Result<ImportTicket, Error> {
        let (owner, id, turn) = (begun.owner, &begun.id, begun.turn);
        let job = ImportJob {
            owner: owner.to_owned(),
            file_id: id.to_string(),
            request: ImportRequest {
                url: Some(begun.url.to_string()),
                ..begun.req
            },
            declared: begun.declared.is_some(),
            turn: Some(turn),
        };
        if let Err(e) = dispatch.start(&job).await {
            tracing::warn!(file_id = %id, error = %e, "the importer could not be started");
            let why = "the import could not be started: ask again in a moment".to_owned();
            if let Some(file) = &begun.declared {
                self.forget(file).await;
            }
            self.give_turn(owner, turn, id).await;
            self.note(id, owner, &begun.source, &Outcome::Rejected(why))
                .await;
        }
        let wait = self.limits.wait(owner, id.as_str(), self.settings.wait);
        self.polled(owner, id, wait.time()).await
    }

    /// An import begun, fetched here in the background (one of the jobs
    /// this process keeps, finished ones an hour); answered when it ends,
    /// or `pending` after the wait.
    async fn run_here(&self, begun: Begun<'_>) -> Result<ImportTicket, Error> {
        let (owner, id) = (begun.owner, begun.id);
        let (tx, rx) = watch::channel(Outcome::Pending);
        let received = Arc::new(AtomicU64::new(0));
        {
            let mut jobs = self.jobs_lock();
            jobs.retain(|_, j| {
                *j.outcome.borrow() == Outcome::Pending
                    || j.started.elapsed().as_secs() < KEEP_FINISHED_SECS
            });
            jobs.insert(
                id.clone(),
                Job {
                    owner: owner.to_owned(),
                    source: begun.source,
                    declared: begun.declared.clone(),
                    received: received.clone(),
                    outcome: rx.clone(),
                    started: Instant::now(),
                },
            );
        }
        let work = fetch::Work {
            imports: self.clone(),
            fetcher: self.fetcher(),
            owner: owner.to_owned(),
            id: id.clone(),
            url: begun.url,
            req: begun.req,
            declared: begun.declared,
            received,
            turn: Some(begun.turn),
        };
        tokio::spawn(async move {
            let outcome = work.run().await;
            let _ = tx.send(outcome);
        });
        let wait = self.limits.wait(owner, id.as_str(), self.settings.wait);
        self.wait_for(owner, &id, rx, wait.time()).await
    }

    /// Runs `job` to its end, here: what the importer function does with
    /// each import it is handed. A job handed over again (an asynchronous
    /// invocation is delivered at least once) that has ended is answered
    /// as it ended, and not run twice.
    pub async fn run_job(&self, job: ImportJob) -> Result<ImportTicket, Error> {
        let id = FileId::parse(&job.file_id)
            .ok_or_else(|| Error::Invalid("the job names no file id".into()))?;
        let owner = job.owner.clone();
        let ticket = self.recorded(&owner, &id).await?;
        if ticket.state != ImportState::Pending {
            tracing::info!(file_id = %id, "an import handed over again had ended: not run twice");
            return Ok(ticket);
        }
        let mut req = job.request;
        let raw = req.url.take().unwrap_or_default();
        let url = Url::parse(&raw).map_err(|e| Error::Invalid(format!("url: {e}")))?;
        self.settings
            .guard
            .check_url(&url)
            .map_err(|r| Error::Invalid(r.to_string()))?;
        let declared = match job.declared {
            true => Some(self.files.find_file(&owner, &id).await?),
            false => None,
        };
        let work = fetch::Work {
            imports: self.clone(),
            fetcher: self.fetcher(),
            owner: owner.clone(),
            id: id.clone(),
            url,
            req,
            declared,
            received: Arc::default(),
            turn: job.turn,
        };
        work.run().await;
        self.recorded(&owner, &id).await
    }

    /// Imports a file a host handed over for an action's File field, and
    /// gives its handle once it is ready: waiting up to the status wait,
    /// then telling the caller how to go on.
    pub async fn import_handed(&self, owner: &str, file: HostFile) -> Result<String, Error> {
        let request = ImportRequest {
            url: None,
            file: Some(file),
            filename: None,
            size: None,
            sha256: None,
            content_type: None,
        };
        let mut ticket = self.import_file(owner, request).await?;
        if ticket.state == ImportState::Pending {
            let wait = self.transfers.status_wait;
            ticket = self.import_status(owner, &ticket.file_id, wait).await?;
        }
        match ticket.state {
            ImportState::Ready => ticket
                .handle
                .ok_or_else(|| Error::bug("a ready import has a handle")),
            ImportState::Rejected => Err(Error::Invalid(format!(
                "the file handed over was not imported: {}",
                ticket.reason.as_deref().unwrap_or("the fetch failed")
            ))),
            ImportState::Scanning => Err(Error::Scanning),
            ImportState::Pending => Err(Error::Invalid(format!(
                "the file handed over is still being fetched ({} bytes so far): call get_import_status \
                 with file_id {} until it is ready, then pass its handle",
                ticket.received.unwrap_or(0),
                ticket.file_id
            ))),
        }
    }

    fn jobs_lock(&self) -> std::sync::MutexGuard<'_, HashMap<FileId, Job>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
}
