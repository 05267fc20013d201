//! Where a file's object stands, decided once for every flow that hands
//! out bytes or says a file is uploaded: no object → missing; the store
//! vouches for it (a direct store recorded the pinned digest, a proxied one
//! verified every byte on the way in) → ready; an object a direct store
//! cannot vouch for → ready once proven ([`crate::service::proof`]), a
//! slice at a time; any other object → a mismatch, never delivered.

use super::Files;
use crate::error::Error;
use crate::file::FileMeta;
use crate::service::gate::Gated;
use crate::service::proof;
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
        match self.stored_bytes(file).await? {
            Stored::Ready(info) => Ok(match self.gate.gated(file).await? {
                Gated::Passed => Stored::Ready(info),
                Gated::Scanning => Stored::Scanning,
                Gated::Refused(why) => Stored::Refused(why),
                Gated::Gone => Stored::Missing,
            }),
            // No bytes: refused by its scan (they were deleted then)?
            Stored::Missing => Ok(self
                .gate
                .refusal(file)
                .await?
                .map_or(Stored::Missing, Stored::Refused)),
            other => Ok(other),
        }
    }

    /// [`Files::stored`], the bytes alone: whether they match their pin.
    async fn stored_bytes(&self, file: &FileMeta) -> Result<Stored, Error> {
        let Some(info) = self.base.store().head(&file.object_key()).await? else {
            return Ok(Stored::Missing);
        };
        match (info.pin(file), self.base.store().access()) {
            (Pin::Matches, _) => Ok(Stored::Ready(info)),
            // A proxied store verified every byte on its way in.
            (Pin::Unverified, Access::Proxied) => Ok(Stored::Ready(info)),
            (Pin::Unverified, Access::Direct(presigner)) => {
                self.unvouched(file, info, presigner.checks_sha256()).await
            }
            (Pin::Differs, _) => {
                tracing::warn!(file_id = %file.id, "stored object does not match its pin");
                Ok(Stored::Mismatch)
            }
        }
    }
    /// An object a direct store does not vouch for: ready once sluice
    /// proved it (its record says so, for this very object). Until then,
    /// where the store checks SHA-256, a file in parts is being proven by
    /// its upload's completion; where it checks nothing, the object is
    /// proven here, once, a budget at a time.
    async fn unvouched(
        &self,
        file: &FileMeta,
        info: ObjectInfo,
        store_checks: bool,
    ) -> Result<Stored, Error> {
        let record = self.base.records().get(&file.owner, &file.id).await?;
        let kept = record.and_then(|r| r.proof);
        if proof::proves(kept.as_deref(), info.etag.as_deref()) {
            return Ok(Stored::Ready(info));
        }
        if store_checks {
            // Joined from parts: its completion proves it. In one PUT: the
            // store would have recorded the digest it checked (s3s-fs
            // keeps, without one, a body it refused).
            return Ok(match self.base.plan_of(file) {
                Some(_) => Stored::Verifying,
                None => {
                    tracing::warn!(file_id = %file.id, "stored object carries no checked digest");
                    Stored::Mismatch
                }
            });
        }
        let Some(etag) = info.etag.clone() else {
            tracing::warn!(file_id = %file.id, "the store gives no entity tag: the object cannot be proven");
            return Ok(Stored::Mismatch);
        };
        let mut held = match self
            .base
            .hold_proof(file, self.base.transfers().proof_budget)
            .await
        {
            Ok(held) => held,
            Err(crate::store::StoreError::Busy(_)) => return Ok(Stored::Verifying),
            Err(e) => return Err(e.into()),
        };
        let budget = self.base.transfers().proof_budget;
        let proved = self
            .base
            .prove(&mut held, etag, proof::PROOF_SLICE, budget)
            .await;
        held.release(&self.base).await;
        match proved {
            Ok(proof::Proved::Proven) => Ok(Stored::Ready(info)),
            Ok(proof::Proved::Partly(_)) | Err(crate::store::StoreError::Changed) => {
                Ok(Stored::Verifying)
            }
            Err(crate::store::StoreError::Mismatch(m)) => {
                tracing::warn!(file_id = %file.id, error = %m, "stored object is not the file declared: deleted");
                self.base.store().delete(&file.object_key()).await?;
                Ok(Stored::Mismatch)
            }
            Err(e) => Err(e.into()),
        }
    }
}
