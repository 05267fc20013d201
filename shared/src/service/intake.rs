//! What a file's upload link speaks, decided in one place from what the
//! store can do and the file's size (DESIGN.md, "Files of any size":
//! whoever receives the bytes checks them, once), and carrying the store's
//! capability it uses: a link that speaks parts holds the store's parts,
//! so "parts on a store without them" cannot be written.

use crate::config::Transfers;
use crate::file::FileMeta;
use crate::multipart::Plan;
use crate::store::{Access, ObjectStore, PartStore, StreamStore};

/// What an upload link speaks, decided in one place
/// ([`Intake::of`], without the store's capability) from what the store can do and the file's
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

/// What an upload link speaks ([`Protocol`]), with the store's capability
/// it uses.
#[derive(Clone, Copy)]
pub enum Intake<'a> {
    /// One resumable stream, received by sluice.
    Stream(&'a dyn StreamStore),
    /// Parts, each sent straight to the store, cut by the plan.
    Parts(&'a dyn PartStore, Plan),
    /// One PUT of the whole file: presigned, straight to the store
    /// ([`Access::Direct`]), or through sluice ([`Access::Proxied`]).
    Put(Access<'a>),
}

impl std::fmt::Debug for Intake<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.protocol().fmt(f)
    }
}

impl<'a> Intake<'a> {
    /// What `file`'s upload link speaks on `store`: one stream where the
    /// store streams, whatever the size; else parts over the single-PUT
    /// size where the store takes them; else one PUT.
    pub fn of(store: &'a dyn ObjectStore, transfers: &Transfers, file: &FileMeta) -> Self {
        if let Some(stream) = store.stream() {
            return Intake::Stream(stream);
        }
        match store.parts() {
            Some(parts) if file.size > transfers.single_put_max_bytes => {
                Intake::Parts(parts, Plan::new(file.size, transfers.part_bytes))
            }
            _ => Intake::Put(store.access()),
        }
    }

    /// Whether a file's digest may be declared with its last bytes on
    /// `store`, instead of when it is issued: only where sluice receives
    /// the bytes as one stream, hashing each as it arrives. A presigned
    /// PUT's checksum is signed before the bytes go, and parts are proven
    /// whole against the digest the file was issued with.
    pub fn digest_may_come_last(store: &dyn ObjectStore) -> bool {
        store.stream().is_some()
    }

    /// What it speaks, without the capability.
    pub fn protocol(&self) -> Protocol {
        match self {
            Intake::Stream(_) => Protocol::Stream,
            Intake::Parts(_, plan) => Protocol::Parts(*plan),
            Intake::Put(_) => Protocol::Put,
        }
    }

    /// How the file is cut, if it goes in parts.
    pub fn plan(&self) -> Option<Plan> {
        match self {
            Intake::Parts(_, plan) => Some(*plan),
            Intake::Stream(_) | Intake::Put(_) => None,
        }
    }
}
