//! What the components are built from: the backends (where the bytes, the
//! records and the spent tokens are) and how files move
//! ([`crate::config::Transfers`]). A bundle for the wiring alone
//! ([`super::Sluice::new`]): each component takes from it what it uses
//! and holds only that. What a file's upload link speaks is decided in
//! [`super::intake`]; objects are proven by [`super::proof::Proofs`];
//! links and handles are minted and opened by [`super::links::Links`]; the
//! changes the records do not make themselves are reported by
//! [`super::custody::Reporter`].

use std::sync::Arc;

use crate::config::Transfers;
use crate::ledger::Ledger;
use crate::records::RecordStore;
use crate::store::ObjectStore;

/// The backends and the transfer settings, as the wiring hands them out.
#[derive(Clone, Debug)]
pub struct Backends {
    /// The object store.
    pub store: Arc<dyn ObjectStore>,
    /// The file records.
    pub records: Arc<dyn RecordStore>,
    /// The spent-token ledger.
    pub ledger: Arc<dyn Ledger>,
    /// How files move: lifetimes, sizes and time limits.
    pub transfers: Arc<Transfers>,
}
