//! Where an import stands, as its caller asks: the job this process runs,
//! else its record (an import run in the importer function, or by another
//! replica); a ready one's file as the malware gate has it.

use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::watch;

use super::{ImportState, ImportTicket, Imports, Outcome};
use crate::error::Error;
use crate::file::FileId;
use crate::service::files::stored::Stored;

impl Imports {
    /// Where import `id` stands as its record says, asking again until it
    /// has ended or `wait` is spent (an import another process runs).
    pub(super) async fn polled(
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
    pub(super) async fn scanned(
        &self,
        owner: &str,
        mut ticket: ImportTicket,
    ) -> Result<ImportTicket, Error> {
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
    pub(super) async fn status_of(
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
    pub(super) async fn recorded(&self, owner: &str, id: &FileId) -> Result<ImportTicket, Error> {
        let import = self
            .records
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
    pub(super) async fn note(&self, id: &FileId, owner: &str, source: &str, outcome: &Outcome) {
        let now = crate::time::now_unix();
        let (state, reason) = match outcome {
            Outcome::Pending => ("pending", None),
            Outcome::Ready(_) => ("ready", None),
            Outcome::Rejected(why) => ("rejected", Some(why.clone())),
        };
        let keep = self
            .transfers
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
        if let Err(e) = self.records.put_import(&record).await {
            tracing::warn!(file_id = %id, error = %e, "an import's record was not written");
        }
    }
}

impl Imports {
    /// Waits up to `wait` for the import's outcome, and says it.
    pub(super) async fn wait_for(
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
}
