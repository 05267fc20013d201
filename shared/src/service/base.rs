//! What every flow stands on, and the few decisions they share: where the
//! bytes and the records are, the ledger, the signing keys and how files
//! move ([`crate::config::Transfers`]); what a file's upload link speaks
//! ([`Base::intake`], decided once here: [`super::intake`]). Objects are proven in
//! [`super::proof`], on this type; links and handles are minted and opened
//! by [`super::links::Links`]; the changes the records do not make
//! themselves are reported by [`super::custody::Reporter`].

use std::sync::Arc;

use crate::config::Transfers;
use crate::file::FileMeta;
use crate::ledger::Ledger;
use crate::multipart::Plan;
use crate::records::RecordStore;
use crate::store::ObjectStore;

pub use super::intake::{Intake, Protocol};

/// The backends and transfer settings every component holds: cheap to
/// clone (each part shared). The keys are [`super::links::Links`]'s alone.
#[derive(Clone, Debug)]
pub struct Base {
    store: Arc<dyn ObjectStore>,
    records: Arc<dyn RecordStore>,
    ledger: Arc<dyn Ledger>,
    transfers: Arc<Transfers>,
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

    /// What the upload link of `file` speaks, with the store's capability
    /// it uses ([`Intake`], decided once here): one stream where the store
    /// streams, whatever the size; else parts over the single-PUT size
    /// where the store takes them; else one PUT, straight to the store or
    /// through sluice.
    pub fn intake(&self, file: &FileMeta) -> Intake<'_> {
        Intake::of(self.store(), self.transfers(), file)
    }

    /// What the upload link of `file` speaks ([`Base::intake`], without the
    /// store's capability).
    pub fn protocol_of(&self, file: &FileMeta) -> Protocol {
        self.intake(file).protocol()
    }

    /// How `file` is cut if its link speaks parts ([`Base::intake`]
    /// decides).
    pub fn plan_of(&self, file: &FileMeta) -> Option<Plan> {
        self.intake(file).plan()
    }

    /// Whether file bytes go straight to the store (S3), never through
    /// sluice.
    pub fn stores_directly(&self) -> bool {
        matches!(self.store().access(), crate::store::Access::Direct(_))
    }
}
