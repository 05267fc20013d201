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

mod fetch;
mod spool;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, watch};
use url::Url;

use super::base::Base;
use super::files::Files;
use super::files::stored::Stored;
use super::limits::Limits;
use super::links::Links;
use super::uploads::Uploads;
use crate::config::Imports as Settings;
use crate::error::Error;
use crate::fetch::{Fetcher, host_of};
use crate::file::{FileId, FileMeta};
use crate::rate::Kind;
use crate::service::uploads::issue::Counted;
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

/// Where imports' fetches run.
#[derive(Clone)]
enum Runner {
    /// In this process: a server that lives on.
    Here,
    /// In a function of its own, started for each import (on AWS, where a
    /// function is frozen once it answers).
    Function(Arc<dyn Dispatch>),
}

/// Starts an import in the importer function.
#[async_trait::async_trait]
pub trait Dispatch: Send + Sync + std::fmt::Debug {
    /// Starts `job`, without waiting for it to end.
    async fn start(&self, job: &ImportJob) -> Result<(), Error>;
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
    base: Base,
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
    pool: Arc<Semaphore>,
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
    pub fn new(
        base: Base,
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
            base,
            uploads,
            links: files.links().clone(),
            files,
            limits,
            pool: Arc::new(Semaphore::new(settings.at_once.max(1))),
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
        let transfers = self.base.transfers();
        let mut most = self
            .settings
            .max_bytes
            .map_or(transfers.max_upload_bytes, |m| {
                m.min(transfers.max_upload_bytes)
            });
        if self.base.stores_directly() && self.base.store().parts().is_none() {
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

    /// [`Imports::import_file`], before the malware gate.
    async fn start_import(&self, owner: &str, req: ImportRequest) -> Result<ImportTicket, Error> {
        let Some(runner) = self.runner.clone() else {
            return Err(Error::Invalid(
                "this server does not import files from URLs: upload the file instead \
                 (request_upload, or request_browser_upload for a file on the person's computer)"
                    .into(),
            ));
        };
        let mut req = req;
        let raw = match (req.url.take(), req.file.take()) {
            (Some(url), None) => url,
            (None, Some(file)) => {
                req.filename = req.filename.or(file.file_name);
                req.content_type = req.content_type.or(file.mime_type);
                file.download_url
            }
            _ => {
                return Err(Error::Invalid(
                    "give the file's url (or the file the host handed over), one of them".into(),
                ));
            }
        };
        let url =
            Url::parse(raw.trim()).map_err(|e| Error::Invalid(format!("url is not a URL: {e}")))?;
        self.settings
            .guard
            .check_url(&url)
            .map_err(|r| Error::Invalid(format!("{r}; nothing was fetched")))?;
        let max = self.max_bytes();
        if let Some(size) = req.size
            && size > max
        {
            return Err(Error::Invalid(format!(
                "size {size} is over the import limit of {max} bytes; nothing was fetched"
            )));
        }
        let source = host_of(&url);
        let id = FileId::random();
        // Admission, in its one order (the scope is the tool's, the form
        // checked above): the rate → one of the caller's imports under
        // way, counted in the records so every replica and function sees
        // it → with a size and digest declared, the file issued under the
        // pending caps → only then the fetch.
        self.limits.check_rate(Kind::Issue, owner)?;
        let turn = self.take_turn(owner, &id).await?;
        let declared = match (req.size, req.sha256) {
            (Some(size), Some(sha256)) => {
                let filename =
                    fetch::kept_name([req.filename.clone(), crate::fetch::url_filename(&url)]);
                let request = super::uploads::issue::UploadRequest {
                    filename,
                    size,
                    sha256,
                    content_type: req.content_type.clone(),
                };
                let issued = self
                    .uploads
                    .issue_file_as(owner, request, id.clone(), Counted::CapsOnly)
                    .await;
                match issued {
                    Ok((file, _, _)) => Some(file),
                    Err(e) => {
                        self.give_turn(owner, turn, &id).await;
                        return Err(e);
                    }
                }
            }
            _ => None,
        };
        tracing::info!(file_id = %id, %source, "import begun");
        self.note(&id, owner, &source, &Outcome::Pending).await;
        if let Runner::Function(dispatch) = runner {
            let job = ImportJob {
                owner: owner.to_owned(),
                file_id: id.to_string(),
                request: ImportRequest {
                    url: Some(url.to_string()),
                    ..req
                },
                declared: declared.is_some(),
                turn: Some(turn),
            };
            if let Err(e) = dispatch.start(&job).await {
                tracing::warn!(file_id = %id, error = %e, "the importer could not be started");
                let why = "the import could not be started: ask again in a moment".to_owned();
                if let Some(file) = &declared {
                    self.forget(file).await;
                }
                self.give_turn(owner, turn, &id).await;
                self.note(&id, owner, &source, &Outcome::Rejected(why))
                    .await;
            }
            let wait = self.limits.wait(owner, id.as_str(), self.settings.wait);
            return self.polled(owner, &id, wait.time()).await;
        }
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
                    source: source.clone(),
                    declared: declared.clone(),
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
            url,
            req,
            declared,
            received,
            turn: Some(turn),
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

    /// Where import `id` stands as its record says, asking again until it
    /// has ended or `wait` is spent (an import another process runs).
    async fn polled(
        &self,
        owner: &str,
        id: &FileId,
        wait: std::time::Duration,
    ) -> Result<ImportTicket, Error> {
        let until = Instant::now() + wait;
        loop {
            let ticket = self.recorded(owner, id).await?;
            if ticket.state != ImportState::Pending || Instant::now() >= until {
                return Ok(ticket);
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }

    /// A declared file whose import ended rejected: reported rejected
    /// (`file.rejected`), its record deleted, its bytes purged.
    pub(super) async fn forget(&self, file: &FileMeta) {
        self.files
            .reporter()
            .reject(file, &format!("import-{}", file.id))
            .await;
        if let Err(e) = self.base.records().delete(&file.owner, &file.id).await {
            tracing::warn!(file_id = %file.id, error = %e, "a rejected import's record was not deleted");
        }
        if let Err(e) = self.files.custody().purge(file).await {
            tracing::warn!(file_id = %file.id, error = %e, "a rejected import's bytes were not purged");
        }
    }

    /// Where import `id` of `owner`'s stands, waiting up to `wait` (at most
    /// the status wait) for it to end. An import this process no longer knows is its file's record.
    pub async fn import_status(
        &self,
        owner: &str,
        id: &FileId,
        wait: std::time::Duration,
    ) -> Result<ImportTicket, Error> {
        let ticket = self.status_of(owner, id, wait).await?;
        self.scanned(owner, ticket).await
    }

    /// An import that brought its file in, as the malware gate has it
    /// (scanning on): `scanning` until its verdict, no handle until then;
    /// `rejected` with the reason after one that refused it.
    async fn scanned(&self, owner: &str, mut ticket: ImportTicket) -> Result<ImportTicket, Error> {
        if ticket.state != ImportState::Ready || !self.files.gate().scanning() {
            return Ok(ticket);
        }
        let file = self.files.find_file(owner, &ticket.file_id).await?;
        match self.files.stored(&file).await? {
            Stored::Ready(_) => {}
            Stored::Refused(why) => {
                ticket.state = ImportState::Rejected;
                ticket.handle = None;
                ticket.reason = Some(why);
            }
            _ => {
                ticket.state = ImportState::Scanning;
                ticket.handle = None;
            }
        }
        Ok(ticket)
    }

    /// [`Imports::import_status`], before the malware gate.
    async fn status_of(
        &self,
        owner: &str,
        id: &FileId,
        wait: std::time::Duration,
    ) -> Result<ImportTicket, Error> {
        // The waits part: one of few waits a user, one an import, within
        // a rate; any other call answers at once.
        let wait = self.limits.wait(owner, id.as_str(), wait);
        let rx = {
            let jobs = self.jobs_lock();
            jobs.get(id)
                .filter(|j| j.owner == owner)
                .map(|j| j.outcome.clone())
        };
        match rx {
            Some(rx) => self.wait_for(owner, id, rx, wait.time()).await,
            None => self.polled(owner, id, wait.time()).await,
        }
    }

    /// An import this process does not hold, as its record says (one begun
    /// before a restart). A record still pending past the import's deadline
    /// was left by a process that stopped: the import is over.
    async fn recorded(&self, owner: &str, id: &FileId) -> Result<ImportTicket, Error> {
        let import = self
            .base
            .records()
            .get_import(id)
            .await?
            .filter(|r| r.owner == owner)
            .ok_or_else(|| Error::UnknownFile(id.clone()))?;
        let over = import.noted_at + self.settings.deadline.as_secs() as i64 + 60;
        let mut ticket = ImportTicket {
            file_id: id.clone(),
            handle: None,
            state: ImportState::Pending,
            source: import.source,
            filename: None,
            size: None,
            sha256: None,
            received: None,
            reason: None,
        };
        match import.state.as_str() {
            "ready" => {
                let file = self.files.find_file(owner, id).await?;
                ticket.state = ImportState::Ready;
                ticket.handle = Some(self.links.handle(id));
                ticket.filename = Some(file.filename);
                ticket.size = Some(file.size);
                ticket.sha256 = Some(file.sha256);
            }
            "rejected" => {
                ticket.state = ImportState::Rejected;
                ticket.reason = import.reason;
            }
            _ if crate::time::now_unix() > over => {
                ticket.state = ImportState::Rejected;
                ticket.reason = Some(
                    "the server stopped before the import ended; nothing was kept: import it again"
                        .into(),
                );
            }
            _ => {}
        }
        Ok(ticket)
    }

    /// Writes where import `id` stands, for a status asked elsewhere or
    /// later; a failure is logged, and never fails the import.
    async fn note(&self, id: &FileId, owner: &str, source: &str, outcome: &Outcome) {
        let now = crate::time::now_unix();
        let (state, reason) = match outcome {
            Outcome::Pending => ("pending", None),
            Outcome::Ready(_) => ("ready", None),
            Outcome::Rejected(why) => ("rejected", Some(why.clone())),
        };
        let keep = self
            .base
            .transfers()
            .handle_ttl
            .max(self.settings.deadline)
            .as_secs() as i64;
        let record = crate::records::ImportRecord {
            id: Some(id.clone()),
            owner: owner.to_owned(),
            source: source.to_owned(),
            state: state.to_owned(),
            reason,
            noted_at: now,
            expires_at: now + keep + 3600,
        };
        if let Err(e) = self.base.records().put_import(&record).await {
            tracing::warn!(file_id = %id, error = %e, "an import's record was not written");
        }
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
            let wait = self.base.transfers().status_wait;
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

    /// Takes one of `owner`'s turns for an import under way (at most
    /// `SLUICE_IMPORTS_PER_USER`), kept in the records so that every
    /// process and function counts the same imports; a turn whose process
    /// died lapses past the import's deadline.
    async fn take_turn(&self, owner: &str, id: &FileId) -> Result<u32, Error> {
        let per_user = u32::try_from(self.settings.per_user).unwrap_or(u32::MAX);
        let until = crate::time::now_unix() + self.settings.deadline.as_secs() as i64 + 60;
        match self
            .base
            .records()
            .take_import_turn(owner, id.as_str(), per_user, until)
            .await?
        {
            Some(turn) => Ok(turn),
            None => Err(Error::Limited {
                message: format!(
                    "you have {per_user} imports under way, the most at once: nothing was fetched; \
                     ask again when one has ended"
                ),
                retry_after: 10,
            }),
        }
    }

    /// Gives back `owner`'s turn `turn`, held by import `id`; a failure is
    /// logged (the turn lapses at the import's deadline).
    pub(super) async fn give_turn(&self, owner: &str, turn: u32, id: &FileId) {
        if let Err(e) = self
            .base
            .records()
            .give_import_turn(owner, turn, id.as_str())
            .await
        {
            tracing::warn!(file_id = %id, error = %e, "an import's turn was not given back: it lapses");
        }
    }

    /// Waits up to `wait` for the import's outcome, and says it.
    async fn wait_for(
        &self,
        owner: &str,
        id: &FileId,
        mut rx: watch::Receiver<Outcome>,
        wait: std::time::Duration,
    ) -> Result<ImportTicket, Error> {
        let _ = tokio::time::timeout(wait, rx.wait_for(|o| *o != Outcome::Pending)).await;
        let outcome = rx.borrow().clone();
        let jobs = self.jobs_lock();
        let job = jobs
            .get(id)
            .filter(|j| j.owner == owner)
            .ok_or_else(|| Error::UnknownFile(id.clone()))?;
        let known = match &outcome {
            Outcome::Ready(file) => Some(file),
            _ => job.declared.as_ref(),
        };
        Ok(ImportTicket {
            file_id: id.clone(),
            handle: matches!(outcome, Outcome::Ready(_)).then(|| self.links.handle(id)),
            state: match outcome {
                Outcome::Pending => ImportState::Pending,
                Outcome::Ready(_) => ImportState::Ready,
                Outcome::Rejected(_) => ImportState::Rejected,
            },
            source: job.source.clone(),
            filename: known.map(|f| f.filename.clone()),
            size: known.map(|f| f.size),
            sha256: known.map(|f| f.sha256),
            received: matches!(outcome, Outcome::Pending)
                .then(|| job.received.load(Ordering::Relaxed)),
            reason: match outcome {
                Outcome::Rejected(why) => Some(why),
                _ => None,
            },
        })
    }

    fn jobs_lock(&self) -> std::sync::MutexGuard<'_, HashMap<FileId, Job>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
}
