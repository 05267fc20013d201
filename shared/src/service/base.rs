//! What every flow stands on, and the few decisions they share: where the
//! bytes and the records are, the ledger, the signing keys and how files
//! move ([`crate::config::Transfers`]); what a file's upload link speaks
//! ([`Base::protocol_of`], decided once here), and the changes reported
//! beside the records (a refused upload, a spent link). Objects are proven
//! in [`super::proof`], on this type; links and handles are minted and
//! opened by [`super::links::Links`].

use std::sync::Arc;

use crate::config::Transfers;
use crate::error::Error;
use crate::file::FileMeta;
use crate::ledger::Ledger;
use crate::multipart::Plan;
use crate::records::RecordStore;
use crate::store::{Access, ObjectStore, PartStore};

/// The backends and transfer settings every component holds: cheap to
/// clone (each part shared). The keys are [`super::links::Links`]'s alone.
#[derive(Clone, Debug)]
pub struct Base {
    store: Arc<dyn ObjectStore>,
    records: Arc<dyn RecordStore>,
    ledger: Arc<dyn Ledger>,
    transfers: Arc<Transfers>,
}

/// What an upload link speaks, decided in one place
/// ([`Base::protocol_of`]) from what the store can do and the file's
/// size (DESIGN.md, "Files of any size": whoever receives the bytes checks
/// them, once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Where sluice receives the bytes (a store that streams): one
    /// resumable tus stream whatever the size, hashed once as it arrives
    /// ([`crate::service::uploads::stream`]); a plain PUT of the whole file works too.
    Stream,
    /// Where the store receives the bytes and takes parts, above the
    /// single-PUT size: parts, each checked by the store against its
    /// signed SHA-256, the whole proven by sluice ([`crate::service::uploads::parts`]).
    Parts(crate::multipart::Plan),
    /// One PUT of the whole file: presigned where the store receives the
    /// bytes (up to the single-PUT size, or the store's limit where it
    /// takes no parts).
    Put,
}

impl Base {
    /// Built from the backends and the `transfers` group.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        records: Arc<dyn RecordStore>,
        ledger: Arc<dyn Ledger>,
        transfers: Transfers,
    ) -> Self {
        Self {
            store,
            records,
            ledger,
            transfers: Arc::new(transfers),
        }
    }

    /// The object store.
    pub fn store(&self) -> &dyn ObjectStore {
        &*self.store
    }

    /// The object store, shared (for a stream that outlives the call).
    pub(crate) fn store_arc(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// The file records.
    pub fn records(&self) -> &dyn RecordStore {
        &*self.records
    }

    /// The spent-token ledger.
    pub fn ledger(&self) -> &dyn Ledger {
        &*self.ledger
    }

    /// How files move: lifetimes, sizes and time limits.
    pub fn transfers(&self) -> &Transfers {
        &self.transfers
    }

    /// What the upload link of `file` speaks ([`Protocol`]): one stream
    /// where the store streams, whatever the size; else parts over the
    /// single-PUT size where the store takes them; else one PUT.
    pub fn protocol_of(&self, file: &FileMeta) -> Protocol {
        let (store, transfers) = (self.store(), self.transfers());
        if store.stream().is_some() {
            Protocol::Stream
        } else if file.size > transfers.single_put_max_bytes && store.parts().is_some() {
            Protocol::Parts(crate::multipart::Plan::new(file.size, transfers.part_bytes))
        } else {
            Protocol::Put
        }
    }
    /// Whether file bytes go straight to the store (S3), never through
    /// sluice.
    pub fn stores_directly(&self) -> bool {
        matches!(self.store().access(), Access::Direct(_))
    }
    /// How `file` is cut if its link speaks parts ([`Base::protocol_of`]
    /// decides).
    pub fn plan_of(&self, file: &FileMeta) -> Option<Plan> {
        match self.protocol_of(file) {
            Protocol::Parts(plan) => Some(plan),
            Protocol::Stream | Protocol::Put => None,
        }
    }
    /// The store's uploads in parts (asked for only where a file has a
    /// plan, which a store without them never gives).
    pub(crate) fn part_store(&self) -> Result<&dyn PartStore, Error> {
        self.store()
            .parts()
            .ok_or_else(|| Error::bug("a file has parts on a store without them"))
    }
    /// Bytes that were not `file`, sent under the link `jti`, refused
    /// (`file.rejected`): no record changes, so the ledger keeps the event
    /// where its records are the outbox (DynamoDB's stream, for a day, as
    /// long as the stream keeps a record), and it is [`Base::report`]ed.
    pub(crate) async fn reject(&self, file: &FileMeta, jti: &str) {
        self.reject_because(file, jti, None).await;
    }

    /// [`Base::reject`], saying why in the event (`reason`).
    pub(crate) async fn reject_because(&self, file: &FileMeta, jti: &str, reason: Option<String>) {
        use crate::events::{Event, EventType};
        let until = crate::time::now_unix() + 24 * 3600;
        // One file.rejected a link, on every replica (marked in the
        // ledger): whoever holds an upload link cannot make each bad PUT a
        // signed delivery to the team's endpoint. The link stays usable.
        if let Ok(crate::ledger::Spend::AlreadySpent) =
            self.ledger().spend(&format!("rejected#{jti}"), until).await
        {
            tracing::info!(file_id = %file.id, %jti, "bytes refused again on one link: no new event");
            return;
        }
        let mut event = Event::about(EventType::Rejected, file, Some(jti));
        event.data.reason = reason;
        if let Err(e) = self
            .ledger()
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
        if let Some(outbox) = self.records().outbox()
            && let Err(e) = outbox.append(event).await
        {
            tracing::warn!(file_id = %file.id, kind = event.kind.as_str(), error = %e, "event not recorded");
        }
    }
}
