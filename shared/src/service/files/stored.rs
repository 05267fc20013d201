//! Where a file's object stands, decided once for every flow that hands
//! out bytes or says a file is uploaded: no object → missing; the store
//! vouches for it (a direct store recorded the pinned digest, a proxied one
//! verified every byte on the way in) → ready; an object a direct store
//! cannot vouch for → ready once proven ([`crate::service::proof`], where
//! a proof decides what such an object is), a
//! slice at a time; any other object → a mismatch, never delivered.

use super::Files;
use crate::error::Error;
use crate::file::FileMeta;
use crate::service::gate::Gated;
use crate::service::proof::Vouched;
use crate::store::{Access, ObjectInfo, Pin};

/// Where a file's object stands, as far as the store can tell without
/// reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// No object yet.
    Missing,
    /// The object is there, and the store vouches for it: a direct store
    /// recorded the pinned digest; a proxied store verified every byte on
    /// its way in (and reads verify again).
    Ready(ObjectInfo),
    /// The object differs from the pin, or a direct store cannot vouch
    /// for its digest: it is never delivered or counted as uploaded.
    Mismatch,
    /// Joined from an upload's parts; the proof of its whole digest goes
    /// on: not delivered yet.
    Verifying,
    /// Stored and proven; its malware scan goes on: not delivered yet.
    Scanning,
    /// Refused by its malware scan, and why: never delivered.
    Refused(String),
}

impl Stored {
    /// The object, if it may be delivered; otherwise the error that says
    /// why not, as a download or a batch answers it.
    pub fn deliverable(self) -> Result<ObjectInfo, Error> {
        match self {
            Stored::Ready(info) => Ok(info),
            Stored::Missing => Err(Error::NotUploaded),
            Stored::Verifying => Err(Error::Verifying),
            Stored::Scanning => Err(Error::Scanning),
            Stored::Refused(why) => Err(Error::ScanRejected(why)),
            Stored::Mismatch => Err(Error::StoredMismatch),
        }
    }
}

impl Files {
    /// Where `file`'s object stands: the one decision of whether stored
    /// bytes match their pin, and (with scanning on) passed their scan
    /// ([`crate::service::gate`]), used by downloads, actions and every check of
    /// whether a file is uploaded.
    pub async fn stored(&self, file: &FileMeta) -> Result<Stored, Error> {
        let bytes = self.stored_bytes(file).await?;
        // No bytes: refused by its scan (they were deleted then)?
        let there = match bytes {
            Stored::Ready(_) => true,
            Stored::Missing => false,
            other => return Ok(other),
        };
        Ok(match self.gate.gated(file, there).await? {
            Gated::Passed => bytes,
            Gated::Scanning => Stored::Scanning,
            Gated::Refused(why) => Stored::Refused(why),
            Gated::Gone => Stored::Missing,
        })
    }

    /// [`Files::stored`], the bytes alone: whether they match their pin.
    async fn stored_bytes(&self, file: &FileMeta) -> Result<Stored, Error> {
        let Some(info) = self.store.head(&file.object_key()).await? else {
            return Ok(Stored::Missing);
        };
        match (info.pin(file), self.store.access()) {
            (Pin::Matches, _) => Ok(Stored::Ready(info)),
            // A proxied store verified every byte on its way in.
            (Pin::Unverified, Access::Proxied) => Ok(Stored::Ready(info)),
            (Pin::Unverified, Access::Direct(presigner)) => {
                let vouched = self
                    .proofs
                    .unvouched(file, &info, presigner.checks_sha256())
                    .await?;
                Ok(match vouched {
                    Vouched::Proven => Stored::Ready(info),
                    Vouched::Verifying => Stored::Verifying,
                    Vouched::NotTheFile => Stored::Mismatch,
                })
            }
            (Pin::Differs, _) => {
                tracing::warn!(file_id = %file.id, "stored object does not match its pin");
                Ok(Stored::Mismatch)
            }
        }
    }
}
