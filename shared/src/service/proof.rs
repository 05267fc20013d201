//! The proof that an object is the file declared, where the store cannot
//! vouch for it: an object S3 joined from parts (it keeps only a digest of
//! the parts' digests), or any object of a store whose presigned PUT does
//! not check SHA-256 ([`crate::store::Presigner::checks_sha256`]). A store
//! that proves what it joins (the local one, in one read) never gets here.
//!
//! The order: a completion takes the file's proof (a lease in its record,
//! by a conditional write: one completion at a time on every replica, and
//! a lease older than any request is taken over) → reads the object a
//! slice at a time, each read pinned to the object's entity tag, saving
//! the hash's state in the record after each slice → stops when its budget
//! is spent (a proof longer than one request, which API Gateway ends at
//! 30 s, goes on at the next call from where it stopped) → at the end
//! compares the digest: proven, recorded for that very object; or not the
//! file, and the object goes. The state lives in the record, so nothing is
//! kept beside the object and any store with ranged reads can be proven.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::Transfers;
use crate::error::Error;
use crate::file::FileMeta;
use crate::records::ProofLease;
use crate::service::intake::Intake;
use crate::sha::{Midstate, Mismatch, Sha256};
use crate::store::{Busy, ObjectInfo, ObjectStore, StoreError};

/// The most of an object one ranged read proves (a whole number of MiB,
/// so that the hash's state is saved on a block boundary).
pub(crate) const PROOF_SLICE: u64 = 256 * 1024 * 1024;

/// How long past its budget a proof's lease is held: longer than any
/// request lives (API Gateway ends one at 30 s, Lambda at its timeout), so
/// a lease this old was left by a completion that died.
const LEASE_MARGIN_SECS: i64 = 120;

/// Where a file's proof stands, as its record keeps it (as JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Proof {
    /// Until when a completion holds it (Unix seconds); 0: nobody.
    #[serde(default)]
    lease: i64,
    /// The object the progress or the proof is of (its entity tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
    /// The hash's saved state ([`Midstate::save`]) while under way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
    /// The object of `etag` is proven to be the file.
    #[serde(default)]
    proven: bool,
}

impl Proof {
    fn read(kept: Option<&str>) -> Self {
        kept.and_then(|p| serde_json::from_str(p).ok())
            .unwrap_or_default()
    }
}

/// Whether the proof `kept` in a record proves the object of `etag`.
pub(crate) fn proves(kept: Option<&str>, etag: Option<&str>) -> bool {
    let proof = Proof::read(kept);
    proof.proven && proof.etag.as_deref() == etag
}

/// The proof, as a record keeps it, that the object of `etag` is the file:
/// for a copy made inside the store of an object proven or vouched for.
pub(crate) fn proven_for(etag: Option<String>) -> String {
    serde_json::to_string(&Proof {
        lease: 0,
        etag,
        hash: None,
        proven: true,
    })
    .expect("a proof serializes")
}

/// Proofs of objects the store cannot vouch for: held by [`super::files::Files`]
/// (an object found stored), an upload in parts' completion and an
/// import's. Over the store it reads, the records that keep each proof,
/// and the `transfers` group (each call's budget, what a file's link
/// speaks). Cheap to clone.
#[derive(Clone)]
pub(crate) struct Proofs {
    store: Arc<dyn ObjectStore>,
    /// The file records, where each proof is kept, and its lease.
    records: Arc<dyn ProofLease>,
    transfers: Arc<Transfers>,
}

impl Proofs {
    /// Over `store`, the proofs kept in `records`, under `transfers`.
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        records: Arc<dyn ProofLease>,
        transfers: Arc<Transfers>,
    ) -> Self {
        Self {
            store,
            records,
            transfers,
        }
    }

    /// How long one call may prove for.
    pub(crate) fn budget(&self) -> Duration {
        self.transfers.proof_budget
    }
}

impl std::fmt::Debug for Proofs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proofs").finish_non_exhaustive()
    }
}

/// What a proof says of an object the store does not vouch for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vouched {
    /// Proven the file declared (its record says so, for this object).
    Proven,
    /// Being proven (by its upload's completion, or here, a budget at a
    /// time): not delivered yet.
    Verifying,
    /// Not the file declared, or it cannot be proven: never delivered.
    NotTheFile,
}

/// How far one call of [`Proofs::prove`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proved {
    /// The object is the file declared.
    Proven,
    /// This many bytes are proven; the rest at the next call.
    Partly(u64),
}

/// A file's proof, held by one completion until [`Held::release`].
pub(crate) struct Held {
    file: FileMeta,
    /// The proof as the record holds it now.
    kept: Option<String>,
    proof: Proof,
}

impl Proofs {
    /// Takes `file`'s proof for one call of `budget`: refused
    /// ([`Busy::Completing`]) while another call holds it.
    pub(crate) async fn hold_proof(
        &self,
        file: &FileMeta,
        budget: Duration,
    ) -> Result<Held, StoreError> {
        let record = self
            .records
            .get(&file.owner, &file.id)
            .await?
            .ok_or_else(|| StoreError::Io(std::io::Error::other("the file has no record")))?;
        let mut proof = Proof::read(record.proof.as_deref());
        let now = crate::time::now_unix();
        if proof.lease >= now {
            return Err(StoreError::Busy(Busy::Completing));
        }
        proof.lease = now + i64::try_from(budget.as_secs()).unwrap_or(0) + LEASE_MARGIN_SECS;
        let mut held = Held {
            file: file.clone(),
            kept: record.proof,
            proof,
        };
        held.save(self).await?;
        Ok(held)
    }

    /// Proves the object of `held`'s file, entity tag `etag`, reading
    /// `slice` bytes at a time from where the proof stands, until `budget`
    /// is spent. Not the file declared: [`StoreError::Mismatch`], and the
    /// progress is forgotten.
    pub(crate) async fn prove(
        &self,
        held: &mut Held,
        etag: String,
        slice: u64,
        budget: Duration,
    ) -> Result<Proved, StoreError> {
        let started = Instant::now();
        let (size, sha256, key) = (held.file.size, held.file.sha256, held.file.object_key());
        let mut hash = match (&held.proof.etag, &held.proof.hash) {
            (Some(kept), Some(saved)) if *kept == etag => Midstate::load(saved).unwrap_or_default(),
            _ => Midstate::new(),
        };
        held.proof.etag = Some(etag.clone());
        while hash.offset() < size {
            let (from, to) = (hash.offset(), (hash.offset() + slice).min(size));
            let read = self.store.get_range(&key, from..to, Some(&etag)).await;
            let Some(mut body) = read? else {
                return Err(StoreError::Changed);
            };
            use futures_util::TryStreamExt as _;
            while let Some(chunk) = body.try_next().await? {
                hash.update(&chunk);
            }
            if hash.offset() != to {
                held.forget();
                return Err(StoreError::Mismatch(Mismatch::TooShort {
                    expected: size,
                    actual: hash.offset(),
                }));
            }
            if to < size {
                held.proof.hash = Some(hash.save().expect("slices end on block boundaries"));
                held.save(self).await?;
                if started.elapsed() >= budget {
                    tracing::info!(file_id = %held.file.id, proven = to, size, "proof goes on at the next call");
                    return Ok(Proved::Partly(to));
                }
            }
        }
        let actual: Sha256 = hash.finish();
        if actual != sha256 {
            held.forget();
            return Err(StoreError::Mismatch(Mismatch::Digest {
                expected: sha256,
                actual,
            }));
        }
        held.proven(Some(etag));
        Ok(Proved::Proven)
    }
}

impl Proofs {
    /// An object a direct store does not vouch for: ready once sluice
    /// proved it (its record says so, for this very object). Until then,
    /// where the store checks SHA-256, a file in parts is being proven by
    /// its upload's completion; where it checks nothing, the object is
    /// proven here, once, a budget at a time.
    pub(crate) async fn unvouched(
        &self,
        file: &FileMeta,
        info: &ObjectInfo,
        store_checks: bool,
    ) -> Result<Vouched, Error> {
        let record = self.records.get(&file.owner, &file.id).await?;
        let kept = record.and_then(|r| r.proof);
        if proves(kept.as_deref(), info.etag.as_deref()) {
            return Ok(Vouched::Proven);
        }
        if store_checks {
            // Joined from parts: its completion proves it. In one PUT: the
            // store would have recorded the digest it checked (s3s-fs
            // keeps, without one, a body it refused).
            return Ok(
                match Intake::of(&*self.store, &self.transfers, file).plan() {
                    Some(_) => Vouched::Verifying,
                    None => {
                        tracing::warn!(file_id = %file.id, "stored object carries no checked digest");
                        Vouched::NotTheFile
                    }
                },
            );
        }
        let Some(etag) = info.etag.clone() else {
            tracing::warn!(file_id = %file.id, "the store gives no entity tag: the object cannot be proven");
            return Ok(Vouched::NotTheFile);
        };
        let budget = self.budget();
        let mut held = match self.hold_proof(file, budget).await {
            Ok(held) => held,
            Err(crate::store::StoreError::Busy(_)) => return Ok(Vouched::Verifying),
            Err(e) => return Err(e.into()),
        };
        let proved = self.prove(&mut held, etag, PROOF_SLICE, budget).await;
        held.release(self).await;
        match proved {
            Ok(Proved::Proven) => Ok(Vouched::Proven),
            Ok(Proved::Partly(_)) | Err(crate::store::StoreError::Changed) => {
                Ok(Vouched::Verifying)
            }
            Err(crate::store::StoreError::Mismatch(m)) => {
                tracing::warn!(file_id = %file.id, error = %m, "stored object is not the file declared: deleted");
                self.store.delete(&file.object_key()).await?;
                Ok(Vouched::NotTheFile)
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl Held {
    /// Whether the file was proven already.
    pub(crate) fn is_proven(&self) -> bool {
        self.proof.proven
    }

    /// The object of `etag` (none: the store proved it) is proven.
    pub(crate) fn proven(&mut self, etag: Option<String>) {
        self.proof = Proof {
            lease: self.proof.lease,
            etag,
            hash: None,
            proven: true,
        };
    }

    /// The progress is of nothing any more (the object is not the file).
    pub(crate) fn forget(&mut self) {
        self.proof = Proof {
            lease: self.proof.lease,
            ..Proof::default()
        };
    }

    /// Writes the proof as it stands, if no other call moved it since:
    /// [`Busy::Completing`] if one did (it took over a lease thought dead).
    async fn save(&mut self, proofs: &Proofs) -> Result<(), StoreError> {
        let next = serde_json::to_string(&self.proof).expect("a proof serializes");
        let (owner, id) = (&self.file.owner, &self.file.id);
        if !proofs
            .records
            .swap_proof(owner, id, self.kept.as_deref(), Some(&next))
            .await?
        {
            return Err(StoreError::Busy(Busy::Completing));
        }
        self.kept = Some(next);
        Ok(())
    }

    /// Gives the lease back, keeping the proof as it stands (logged if the
    /// record cannot be written: the lease then lapses on its own).
    pub(crate) async fn release(mut self, proofs: &Proofs) {
        self.proof.lease = 0;
        if let Err(e) = self.save(proofs).await {
            tracing::warn!(file_id = %self.file.id, error = %e, "could not give a proof's lease back");
        }
    }
}
