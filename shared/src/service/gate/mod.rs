//! The malware gate (DESIGN.md, "Malware scanning"): bytes that arrived
//! are made ready here, or held `scanning` until their scanner's verdict
//! ([`Gate::stored_now`]); nothing hands out a file's bytes until then
//! ([`crate::service::files::Files::stored`] asks here last,
//! [`Gate::gated`]). Its bytes found stored → noted in its record, with the
//! time → a scan: clamd's in the background, a bounded number at once,
//! the turns shared among the files' owners in rotation (the admission
//! part's [`crate::service::limits::Turns`]),
//! tried again with growing waits while clamd cannot be reached, the
//! deadline running from its first attempt (a file waiting for a turn is
//! not held to it); GuardDuty's tag read while answering, the deadline
//! running from the first look → the verdict:
//! clean → noted, then ready (`file.ready`); infected → noted, its bytes
//! deleted at once, `file.rejected` with the reason; unscannable → the
//! operator's policy; no verdict by the deadline → rejected `unscanned`.
//! A scan this process lost (a restart) starts again at the next look.

mod types;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument as _;

use super::custody::Custody;
use crate::config::{Scan, TypeCheck};
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::records::{FileRecord, ScanNote, Verdict};
use crate::scan::{Finding, ScanError, Scanner};
use crate::service::limits::turns::Turns;
use crate::time::now_unix;

/// The first wait before a failed scan is tried again; it doubles, up to
/// [`LONGEST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between two attempts at a scan.
const LONGEST_RETRY: Duration = Duration::from_secs(30);

/// The malware gate: what happens to bytes that arrived, and whether a
/// file's bytes may be let out. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gate {
    store: Arc<dyn crate::store::ObjectStore>,
    records: Arc<dyn crate::records::RecordStore>,
    custody: Custody,
    /// The scanner, with scanning on.
    scans: Option<Arc<Scans>>,
    /// What is done with the type a file's bytes show ([`types`]).
    types: TypeCheck,
}

impl Gate {
    /// Over the `backends`' records and store: bytes made ready, purged or
    /// refused by `custody`, scanned by `scans` when scanning is on.
    pub fn new(
        backends: &super::backends::Backends,
        custody: Custody,
        scans: Option<Scans>,
        types: TypeCheck,
    ) -> Self {
        Self {
            store: backends.store.clone(),
            records: backends.records.clone(),
            custody,
            scans: scans.map(Arc::new),
            types,
        }
    }
}

/// The scanner, its settings, and the scans under way in this process.
#[derive(Debug)]
pub struct Scans {
    settings: Scan,
    scanner: Arc<dyn Scanner>,
    under_way: Mutex<HashSet<FileId>>,
    turns: Turns,
}

impl Scans {
    /// `scanner`, under `settings`.
    pub fn new(settings: Scan, scanner: Arc<dyn Scanner>) -> Self {
        Self {
            turns: Turns::new(settings.at_once),
            settings,
            scanner,
            under_way: Mutex::new(HashSet::new()),
        }
    }

    /// Whether a scan of `id` is under way here; marks it so if not.
    fn take(&self, id: &FileId) -> bool {
        self.under_way
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone())
    }

    fn done(&self, id: &FileId) {
        self.under_way
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}

/// What a file's scan says of using it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gated {
    /// It may be used.
    Passed,
    /// No verdict yet.
    Scanning,
    /// Refused, and why (`malware: …`, `unscanned: …`).
    Refused(String),
    /// Nothing to let out: its record is gone (deleted, or swept), or its
    /// bytes are not there and nothing refused them.
    Gone,
}

impl Gate {
    /// Whether files are scanned before they are used.
    pub fn scanning(&self) -> bool {
        self.scans.is_some()
    }

    /// Notes that a file's bytes have arrived, through the upload link
    /// `jti` when one is known. A delete wins: bytes that arrive for a file
    /// deleted meanwhile (an upload, a join, a copy under way when it was
    /// deleted) are purged, and the answer is the uniform
    /// [`Error::NotFound`] of a dead link.
    ///
    /// With scanning on, the file is held `scanning` instead, and its scan
    /// started: it turns ready on a verdict that passes.
    ///
    /// First of all, the type its first bytes show ([`types`]): a file
    /// refused for it is [`Error::ScanRejected`], its bytes deleted.
    pub async fn stored_now(&self, file: &FileMeta, jti: Option<&str>) -> Result<(), Error> {
        let detected = self.typed(file).await?;
        if self.hold_for_scan(file, detected.clone()).await? {
            return self.custody.unless_deleted(file).await;
        }
        self.note_type(file, detected).await;
        self.custody.ready(file, jti).await
    }

    /// A file whose bytes were found stored, proven and let out
    /// ([`Gate::gated`] passed them), made ready: with scanning on its
    /// verdict made it ready already; with it off, its bytes are
    /// [`Gate::stored_now`] (bytes straight to S3 are seen only now: a
    /// step of the file's `trace`).
    pub(crate) async fn let_out(&self, file: &FileMeta, trace: Option<&str>) -> Result<(), Error> {
        if self.scanning() {
            return Ok(());
        }
        self.stored_now(file, None)
            .instrument(crate::traces::follow("file.ready", file.id.as_str(), trace))
            .await
    }

    /// [`Gate::stored_now`] for bytes that just arrived through upload
    /// link `jti` (an upload, a join): they are stored whatever happens to
    /// the record now (one left pending is found ready by the next
    /// listing), unless the file was deleted meanwhile: then they are gone,
    /// and the link answers as a dead one ([`Error::NotFound`]).
    pub(crate) async fn arrived(&self, file: &FileMeta, jti: &str) -> Result<(), Error> {
        match self.stored_now(file, Some(jti)).await {
            Err(Error::NotFound) => Err(Error::NotFound),
            // Refused for its type: the upload is answered why.
            Err(e @ Error::ScanRejected(_)) => Err(e),
            Err(e) => {
                tracing::warn!(file_id = %file.id, error = %e, "could not mark the file ready");
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    /// `file`'s bytes, stored and proven, as the gate lets them out:
    /// passed once its verdict passed (at once with scanning off); scanning
    /// until then (a scan started if none is under way); refused after a
    /// verdict that did not pass. The one place a scan is asked for, so
    /// every path that hands out bytes asks through
    /// [`crate::service::files::Files::stored`].
    ///
    /// Where its scan stands: its record's note, a first note if it has
    /// none, the deadline, then the scanner. A file whose bytes are not
    /// `there` is [`Gated::Refused`] if its scan or type refused it (its
    /// bytes were deleted then), else [`Gated::Gone`].
    pub(crate) async fn gated(&self, file: &FileMeta, there: bool) -> Result<Gated, Error> {
        if !there {
            return Ok(self
                .refusal(file)
                .await?
                .map_or(Gated::Gone, Gated::Refused));
        }
        let Some(gate) = self.scans.clone() else {
            return Ok(Gated::Passed);
        };
        let Some(record) = self.records.get(&file.owner, &file.id).await? else {
            // Deleted or swept meanwhile: nothing is let out.
            return Ok(Gated::Gone);
        };
        if record.ready {
            return Ok(Gated::Passed);
        }
        let since = match record.scan {
            Some(ScanNote {
                verdict: Some(verdict),
                ..
            }) => {
                return match verdict.refusal() {
                    // Refused already: its bytes were deleted then.
                    Some(why) => Ok(Gated::Refused(why)),
                    // Passed, and not marked ready (that write failed).
                    None => Ok(or_still_scanning(file, self.decided(file, verdict).await)),
                };
            }
            Some(ScanNote { since, .. }) => since,
            // A function that may not write records (the resolver) still
            // answers: the next look of one that may notes it.
            None => self.note_stored(file, None).await.unwrap_or_else(|e| {
                tracing::warn!(file_id = %file.id, error = %e, "its scan's first note was not written");
                now_unix()
            }),
        };
        // A scan in the background holds its own deadline, from its first
        // attempt; a tag read while answering is attempted at each look,
        // the first at `since`.
        if gate.scanner.reads_bytes() {
            self.scan_in_background(file, since);
            return Ok(Gated::Scanning);
        }
        if now_unix() >= since + gate.settings.deadline.as_secs() as i64 {
            return Ok(self.unscanned(gate.as_ref(), file, since).await);
        }
        match self.attempt(&gate, file).await {
            Ok(Finding::Waiting) => Ok(Gated::Scanning),
            Ok(finding) => Ok(or_still_scanning(
                file,
                self.found(file, since, finding).await,
            )),
            Err(e) => {
                tracing::warn!(file_id = %file.id, error = %e, "no verdict yet: the scan is asked again at the next look");
                crate::telemetry::scan_failed();
                Ok(Gated::Scanning)
            }
        }
    }

    /// Why a file whose bytes are not there was refused by its scan, as
    /// its record says (its bytes were deleted then); none if it was not.
    async fn refusal(&self, file: &FileMeta) -> Result<Option<String>, Error> {
        if self.scans.is_none() && self.types != TypeCheck::Refuse {
            return Ok(None);
        }
        let record = self.records.get(&file.owner, &file.id).await?;
        Ok(record.and_then(|r| r.refusal()))
    }

    /// One attempt at `file`'s scan, bounded by `SLUICE_SCAN_TIMEOUT_SECS`:
    /// one that takes longer gives no finding, as an unreachable scanner.
    async fn attempt(&self, gate: &Scans, file: &FileMeta) -> Result<Finding, ScanError> {
        tokio::time::timeout(gate.settings.timeout, gate.scanner.scan(file, &*self.store))
            .await
            .unwrap_or_else(|_| {
                Err(ScanError::Unreachable(format!(
                    "no answer within {} s",
                    gate.settings.timeout.as_secs()
                )))
            })
    }

    /// Notes that `file`'s bytes are stored and wait for their verdict
    /// (kept if a note is there already); since when.
    async fn note_stored(&self, file: &FileMeta, detected: Option<String>) -> Result<i64, Error> {
        let since = now_unix();
        self.records
            .note_scan(
                &file.owner,
                &file.id,
                &ScanNote {
                    since,
                    verdict: None,
                    detected,
                },
            )
            .await?;
        Ok(since)
    }

    /// With scanning on, bytes that just arrived: noted, and their scan
    /// started (clamd's, in the background). `false` when scanning is off
    /// (the caller marks the file ready).
    async fn hold_for_scan(
        &self,
        file: &FileMeta,
        detected: Option<String>,
    ) -> Result<bool, Error> {
        let Some(gate) = &self.scans else {
            return Ok(false);
        };
        let since = self.note_stored(file, detected).await?;
        tracing::info!(target: "sluice::audit", change = "stored", file_id = %file.id, owner = %file.owner, size = file.size, "file stored: scanning");
        if gate.scanner.reads_bytes() {
            self.scan_in_background(file, since);
        }
        Ok(true)
    }

    /// A copy of the stored file `from` (its record, as read to find it)
    /// was made as `file`: with scanning on, a copy of a file that passed
    /// its scan passes with the same verdict; any other is scanned itself.
    pub(crate) async fn copied(&self, file: &FileMeta, from: &FileRecord) -> Result<(), Error> {
        if self.scans.is_some() {
            let verdict = from
                .scan
                .as_ref()
                .and_then(|n| n.verdict.clone())
                .filter(Verdict::passes);
            if let Some(verdict) = verdict {
                return match self.decided(file, verdict).await? {
                    Gated::Passed => Ok(()),
                    _ => Err(Error::bug("a passing verdict refused")),
                };
            }
        }
        self.stored_now(file, None).await
    }

    /// Starts `file`'s scan in the background, unless one is under way
    /// here: tried until a finding, or the deadline.
    fn scan_in_background(&self, file: &FileMeta, since: i64) {
        let Some(gate) = self.scans.clone() else {
            return;
        };
        if !gate.take(&file.id) {
            return;
        }
        let (this, file) = (self.clone(), file.clone());
        // In the trace of the request that stored the bytes, where there is one.
        let span = crate::traces::follow("file.scan", file.id.as_str(), None);
        tokio::spawn(
            async move {
                this.scan_until_found(&gate, &file, since).await;
                gate.done(&file.id);
            }
            .instrument(span),
        );
    }

    async fn scan_until_found(&self, gate: &Scans, file: &FileMeta, since: i64) {
        let mut first = None;
        let mut wait = FIRST_RETRY;
        loop {
            let found = {
                let _turn = gate.turns.take(&file.owner).await;
                first.get_or_insert_with(now_unix);
                self.attempt(gate, file).await
            };
            let first = first.unwrap_or_else(now_unix);
            let deadline = first + gate.settings.deadline.as_secs() as i64;
            let decided = match found {
                Ok(Finding::Waiting) => None,
                Ok(finding) => Some(self.found(file, since, finding).await),
                Err(ScanError::Gone) => return,
                Err(e) => {
                    tracing::warn!(file_id = %file.id, error = %e, retry_in_secs = wait.as_secs(), "scan failed: the file stays scanning");
                    crate::telemetry::scan_failed();
                    None
                }
            };
            match decided {
                Some(Ok(_)) => return,
                Some(Err(e)) => {
                    tracing::warn!(file_id = %file.id, error = %e, "a verdict could not be recorded: scanned again");
                }
                None => {}
            }
            if now_unix() + wait.as_secs() as i64 >= deadline {
                // No attempt left before the deadline: unscanned at it.
                let left = (deadline - now_unix()).max(0) as u64;
                tokio::time::sleep(Duration::from_secs(left)).await;
                self.unscanned(gate, file, first).await;
                return;
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(LONGEST_RETRY);
        }
    }

    /// `file` had no verdict by the deadline, which ran from `first` (its
    /// scan's first attempt): rejected `unscanned`, failing closed.
    async fn unscanned(&self, gate: &Scans, file: &FileMeta, first: i64) -> Gated {
        let why = format!(
            "no verdict within {} s of its first scan",
            gate.settings.deadline.as_secs()
        );
        let verdict = Verdict::Unscanned {
            why,
            allowed: false,
        };
        counted(file, first, &verdict);
        or_still_scanning(file, self.decided(file, verdict).await)
    }

    /// A scanner's finding about `file`, made a verdict (the operator's
    /// policy for a file it will not scan) and acted on.
    async fn found(&self, file: &FileMeta, since: i64, finding: Finding) -> Result<Gated, Error> {
        let allowed = self
            .scans
            .as_ref()
            .is_some_and(|g| g.settings.allow_unscanned);
        let verdict = match finding {
            Finding::Clean { by } => Verdict::Clean { by },
            Finding::Infected { signature, by } => Verdict::Infected { signature, by },
            Finding::Unscannable { why } => Verdict::Unscanned { why, allowed },
            Finding::Waiting => return Ok(Gated::Scanning),
        };
        counted(file, since, &verdict);
        self.decided(file, verdict).await
    }

    /// Acts on `file`'s verdict: noted in its record; one that passes makes
    /// it ready (`file.ready`); any other deletes its bytes and reports it
    /// rejected (`file.rejected`, with the reason).
    async fn decided(&self, file: &FileMeta, verdict: Verdict) -> Result<Gated, Error> {
        let note = ScanNote {
            since: now_unix(),
            verdict: Some(verdict.clone()),
            detected: self.kept_type(file).await,
        };
        self.records.note_scan(&file.owner, &file.id, &note).await?;
        let Some(why) = verdict.refusal() else {
            self.custody.ready(file, None).await?;
            return Ok(Gated::Passed);
        };
        tracing::warn!(target: "sluice::audit", change = "rejected", file_id = %file.id, owner = %file.owner, reason = %why, "file rejected by its scan: its bytes are deleted");
        // `file.rejected`, with the reason, once a file (its audit line).
        self.custody
            .refuse(file, &format!("scan-{}", file.id), &why)
            .await?;
        Ok(Gated::Refused(why))
    }

    /// What `record` alone says of its scan (a status read from the
    /// records): `Scanning` while its bytes wait for a verdict, `Rejected`
    /// after one that refused; `None` with scanning off, before its bytes
    /// were found stored, or after a verdict that passed.
    pub(crate) fn held(&self, record: &FileRecord) -> Option<Gated> {
        match record.scan.as_ref()?.verdict.as_ref() {
            None => self.scans.as_ref().map(|_| Gated::Scanning),
            // A type's refusal holds with scanning off too.
            Some(v) => v.refusal().map(Gated::Refused),
        }
    }

    /// Notes the type told of `file` where no scan will (scanning off):
    /// before it is marked ready, which no note follows.
    async fn note_type(&self, file: &FileMeta, detected: Option<String>) {
        if let Some(detected) = detected {
            self.write_note(file, None, detected).await;
        }
    }

    /// Writes `file`'s note of the type told and a `verdict`, now; one that
    /// could not be written is logged (the type is lost, never the file).
    pub(super) async fn write_note(
        &self,
        file: &FileMeta,
        verdict: Option<Verdict>,
        detected: String,
    ) {
        let note = ScanNote {
            since: now_unix(),
            verdict,
            detected: Some(detected),
        };
        if let Err(e) = self.records.note_scan(&file.owner, &file.id, &note).await {
            tracing::warn!(file_id = %file.id, error = %e, "its type was not recorded");
        }
    }

    /// The type `file`'s note keeps (to keep it beside a verdict).
    async fn kept_type(&self, file: &FileMeta) -> Option<String> {
        let record = self.records.get(&file.owner, &file.id).await.ok()??;
        record.scan?.detected
    }
}

/// What deciding `file`'s verdict gave; one that could not be recorded (a
/// function that may not write the records, the table unavailable) leaves
/// the file scanning, for the next look to decide again.
fn or_still_scanning(file: &FileMeta, decided: Result<Gated, Error>) -> Gated {
    decided.unwrap_or_else(|e| {
        tracing::warn!(file_id = %file.id, error = %e, "a verdict was not recorded: the file stays scanning");
        Gated::Scanning
    })
}

/// `file`'s scan gave `verdict`, `since` its bytes were stored: its audit
/// line and the metrics (a scanner's finding, or the deadline's).
fn counted(file: &FileMeta, since: i64, verdict: &Verdict) {
    let (detail, by) = match verdict {
        Verdict::Clean { by } => ("-", by.as_str()),
        Verdict::Infected { signature, by } => (signature.as_str(), by.as_str()),
        Verdict::Unscanned { why, .. } | Verdict::Mistyped { why } => (why.as_str(), "-"),
    };
    crate::telemetry::scanned(
        file,
        verdict.label(),
        detail,
        by,
        Duration::from_secs((now_unix() - since).max(0) as u64),
    );
}
