//! What every flow stands on, and the few decisions they share: where the
//! bytes and the records are, the ledger, the signing keys and how files
//! move ([`crate::config::Transfers`]); what a file's upload link speaks
//! ([`Base::protocol_of`], decided once here). Objects are proven in
//! [`super::proof`], on this type; links and handles are minted and opened
//! by [`super::links::Links`]; the changes the records do not make
//! themselves are reported by [`super::reporter::Reporter`].

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
}
