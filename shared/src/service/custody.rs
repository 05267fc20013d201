//! Where a file's bytes end up once they are all there, and who is told:
//! kept, the file marked ready (`file.ready`); purged (every byte, an
//! upload in parts under way included); or refused, purged and reported
//! (`file.rejected`, [`Custody::refuse`]). A delete wins over bytes
//! arriving for a file deleted meanwhile. The gate ([`super::gate`]) and a
//! delete ([`super::files::delete`]) act through it.
//!
//! [`Reporter`]: the changes the record store does not make itself,
//! reported: bytes refused (`file.rejected`, once a link, on every replica:
//! marked in the ledger), a link spent (`file.downloaded`). Each is one
//! audit line and, where webhooks are on, an event in the outbox (on AWS
//! the ledger keeps it, and the table's stream delivers it). A failure to
//! report is logged, and never fails the request that made the change.

use std::sync::Arc;

use super::intake::Intake;
use crate::error::Error;
use crate::file::FileMeta;
use crate::ledger::Ledger;
use crate::records::RecordStore;

/// Marks files ready, purges their bytes, and refuses them.
#[derive(Clone, Debug)]
pub struct Custody {
    store: Arc<dyn crate::store::ObjectStore>,
    records: Arc<dyn RecordStore>,
    transfers: Arc<crate::config::Transfers>,
    reporter: Reporter,
}

impl Custody {
    /// Over the `backends`' records and store, refusals reported by
    /// `reporter`.
    pub fn new(backends: &super::backends::Backends, reporter: Reporter) -> Self {
        Self {
            store: backends.store.clone(),
            records: backends.records.clone(),
            transfers: backends.transfers.clone(),
            reporter,
        }
    }

    /// What reports the changes the records do not make themselves.
    pub(crate) fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// Refuses `file`, whose bytes `by` refused (`scan-…`, `type-…`, once
    /// each): every byte purged, and `file.rejected` reported with `why`
    /// (reported even where the purge failed, whose error is then the
    /// answer: the refusal stands in the record either way).
    pub(crate) async fn refuse(&self, file: &FileMeta, by: &str, why: &str) -> Result<(), Error> {
        let purged = self.purge(file).await;
        self.reporter
            .reject_because(file, by, Some(why.to_owned()))
            .await;
        purged
    }

    /// Marks `file` ready (`file.ready`), unless it was deleted meanwhile.
    pub(crate) async fn ready(&self, file: &FileMeta, jti: Option<&str>) -> Result<(), Error> {
        self.records.mark_ready(&file.owner, &file.id).await?;
        self.unless_deleted(file).await?;
        crate::telemetry::audit(crate::telemetry::Change::Ready, file, jti);
        Ok(())
    }

    /// Bytes of `file` just stored: purged, and [`Error::NotFound`], if it
    /// was deleted meanwhile.
    pub(crate) async fn unless_deleted(&self, file: &FileMeta) -> Result<(), Error> {
        if self.records.deleted(&file.id).await?.is_some() {
            tracing::info!(file_id = %file.id, "bytes arrived for a deleted file: purged");
            self.purge(file).await?;
            return Err(Error::NotFound);
        }
        Ok(())
    }

    /// Removes every byte of `file`: an upload in parts under way (S3's
    /// multipart upload, the local parts) and the object, every version
    /// a download could be given.
    pub(crate) async fn purge(&self, file: &FileMeta) -> Result<(), Error> {
        let key = file.object_key();
        if let Intake::Parts(parts, plan) = Intake::of(&*self.store, &self.transfers, file)
            && let Err(e) = parts.abort(&key, &plan).await
        {
            // A part arriving now holds it; the purge below takes the rest.
            tracing::warn!(file_id = %file.id, error = %e, "could not abort the upload in parts");
        }
        self.store.purge(&key).await?;
        Ok(())
    }
}

/// Reports changes beside the records.
#[derive(Clone, Debug)]
pub struct Reporter {
    records: Arc<dyn RecordStore>,
    ledger: Arc<dyn Ledger>,
}

impl Reporter {
    /// Over the records (their outbox) and the ledger.
    pub fn new(records: Arc<dyn RecordStore>, ledger: Arc<dyn Ledger>) -> Self {
        Self { records, ledger }
    }

    /// Bytes that were not `file`, sent under the link `jti`, refused
    /// (`file.rejected`): no record changes, so the ledger keeps the event
    /// where its records are the outbox (DynamoDB's stream, for a day, as
    /// long as the stream keeps a record), and it is [`Reporter::report`]ed.
    pub(crate) async fn reject(&self, file: &FileMeta, jti: &str) {
        self.reject_because(file, jti, None).await;
    }

    /// [`Reporter::reject`], saying why in the event (`reason`).
    pub(crate) async fn reject_because(&self, file: &FileMeta, jti: &str, reason: Option<String>) {
        use crate::events::{Event, EventType};
        let until = crate::time::now_unix() + 24 * 3600;
        // One file.rejected a link, on every replica (marked in the
        // ledger): whoever holds an upload link cannot make each bad PUT a
        // signed delivery to the team's endpoint. The link stays usable.
        if let Ok(crate::ledger::Spend::AlreadySpent) =
            self.ledger.spend(&format!("rejected#{jti}"), until).await
        {
            tracing::info!(file_id = %file.id, %jti, "bytes refused again on one link: no new event");
            return;
        }
        let mut event = Event::about(EventType::Rejected, file, Some(jti));
        event.data.reason = reason;
        if let Err(e) = self
            .ledger
            .keep_event(&event.id, &event.body(), until)
            .await
        {
            tracing::warn!(file_id = %file.id, kind = event.kind.as_str(), error = %e, "event not recorded");
        }
        self.report(&event, file).await;
    }
    /// A change the record store does not make (a link spent, bytes
    /// refused): its audit line, and `event` about `file` appended to the
    /// outbox when webhooks are on; a failure is logged, and never fails
    /// the request that made the change.
    pub(crate) async fn report(&self, event: &crate::events::Event, file: &FileMeta) {
        crate::telemetry::audit(event.kind.into(), file, event.data.token_id.as_deref());
        if let Some(outbox) = self.records.outbox()
            && let Err(e) = outbox.append(event).await
        {
            tracing::warn!(file_id = %file.id, kind = event.kind.as_str(), error = %e, "event not recorded");
        }
    }
}
