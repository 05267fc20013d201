//! Uploads: a file asked for, and its bytes arriving, in whichever way its
//! link speaks ([`crate::service::intake::Protocol`]). Each file here is one
//! step, and says its order in its first lines:
//!
//! - [`issue`]: a file is asked for → checked → admitted under the caller's
//!   limits → recorded pending → its handle and upload target signed.
//! - [`put`]: bytes arrive on an upload link in one PUT (proxied stores
//!   only) → verified while they stream → stored → the file marked ready.
//! - [`stream`]: the same link as a resumable (tus) upload: where it stands
//!   → bytes appended from there, hashed once → the last byte decides.
//! - [`parts`]: uploads in parts where the store receives the bytes (S3):
//!   the plan → each part's target → the join → the proof.
//! - [`small`]: the inline (base64) fallback for files of at most 16 KiB.
//! - [`progress`]: how far an upload has come, for a status call.

pub mod issue;
pub mod parts;
pub mod progress;
pub mod put;
pub mod small;
pub mod stream;

use std::sync::Arc;

use super::backends::Backends;
use super::custody::Reporter;
use super::files::Files;
use super::limits::Limits;
use super::links::Links;
use crate::config::Endpoints;

/// Files asked for and their bytes taken in: the upload links, the part
/// targets, the resumable streams, the inline fallback.
#[derive(Clone, Debug)]
pub struct Uploads {
    store: Arc<dyn crate::store::ObjectStore>,
    transfers: Arc<crate::config::Transfers>,
    proofs: super::proof::Proofs,
    files: Files,
    limits: Limits,
    endpoints: Arc<Endpoints>,
    links: Links,
    reporter: Reporter,
    arrivals: progress::Arrivals,
}

impl Uploads {
    /// Upload links under the issuer of `endpoints`, for files recorded
    /// through `files`, admitted within `limits`.
    pub(crate) fn new(
        backends: &Backends,
        proofs: super::proof::Proofs,
        files: Files,
        limits: Limits,
        endpoints: Arc<Endpoints>,
        links: Links,
        reporter: Reporter,
    ) -> Self {
        Self {
            store: backends.store.clone(),
            transfers: backends.transfers.clone(),
            proofs,
            files,
            limits,
            endpoints,
            links,
            reporter,
            arrivals: progress::Arrivals::default(),
        }
    }
}
