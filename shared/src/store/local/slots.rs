//! Transfer slots (the store's, and each owner's share of them), the
//! claims that keep one upload per link, and the running figure of the
//! quota: the one place that reserves against it. An upload reserves its
//! bytes when it begins; what it writes and keeps stays counted, the rest
//! is given back once, when its guard is dropped (however the upload
//! ends). A delete wins over an upload under way: it marks the upload's
//! claim doomed, and the upload, which alone knows what it counted,
//! removes what it wrote and gives it all back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, OwnedSemaphorePermit};

use super::LocalStore;
use crate::file::ObjectKey;
use crate::store::StoreError;

/// A transfer slot: one of the store's, and one of its owner's share.
pub(super) struct Slot {
    _owner: OwnerCount,
    _global: OwnedSemaphorePermit,
    _open: crate::telemetry::Open,
}

/// One transfer counted against its owner's share, until dropped.
struct OwnerCount {
    owner: String,
    per_owner: Arc<Mutex<std::collections::HashMap<String, usize>>>,
}

impl Drop for OwnerCount {
    fn drop(&mut self) {
        let mut counts = self.per_owner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.owner);
            }
        }
    }
}

/// One upload's claim on its key: whether a delete has doomed it.
#[derive(Debug, Default)]
pub(super) struct Claim {
    doomed: AtomicBool,
    told: Notify,
}

impl Claim {
    /// Marks the upload doomed (its file deleted), and tells it.
    fn doom(&self) {
        self.doomed.store(true, Ordering::SeqCst);
        self.told.notify_one();
    }

    /// Whether the upload's file was deleted while it was written.
    pub(super) fn is_doomed(&self) -> bool {
        self.doomed.load(Ordering::SeqCst)
    }

    /// Ends once the upload is doomed.
    pub(super) async fn doomed(&self) {
        while !self.is_doomed() {
            self.told.notified().await;
        }
    }
}

/// The uploads under way, by key.
pub(super) type Claims = Arc<Mutex<HashMap<String, Arc<Claim>>>>;

/// Releases an upload's key and its unused reservation when it ends.
pub(super) struct UploadGuard {
    key: String,
    uploading: Claims,
    claim: Arc<Claim>,
    quota: crate::store::Quota,
    reserved: u64,
}

impl UploadGuard {
    /// The upload's claim.
    pub(super) fn claim(&self) -> Arc<Claim> {
        self.claim.clone()
    }

    /// The upload is stored: its reservation stays counted, as usage.
    pub(super) fn stored(mut self) {
        self.reserved = 0;
    }

    /// `bytes` of the reservation were written and kept: they stay
    /// counted, as usage, when the rest is given back.
    pub(super) fn keep(&mut self, bytes: u64) {
        self.reserved = self.reserved.saturating_sub(bytes);
    }
}

impl Drop for UploadGuard {
    fn drop(&mut self) {
        self.quota.release(self.reserved);
        self.uploading
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.key);
    }
}

impl LocalStore {
    /// A transfer slot for `key`'s owner, or the refusal when the owner's
    /// share, or every slot, is taken.
    pub(super) fn transfer_slot(&self, key: &ObjectKey) -> Result<Slot, StoreError> {
        let owner = key.owner_part().to_owned();
        {
            let mut counts = self.per_owner.lock().unwrap_or_else(|p| p.into_inner());
            let n = counts.entry(owner.clone()).or_insert(0);
            if *n >= self.share {
                return Err(StoreError::Busy(crate::store::Busy::YourTransfers));
            }
            *n += 1;
        }
        let counted = OwnerCount {
            owner,
            per_owner: self.per_owner.clone(),
        };
        // Without one of the store's slots, the owner's count goes back
        // with `counted`.
        let global = self
            .transfers
            .clone()
            .try_acquire_owned()
            .map_err(|_| StoreError::Busy(crate::store::Busy::Transfers))?;
        Ok(Slot {
            _owner: counted,
            _global: global,
            _open: crate::telemetry::Open::begin(),
        })
    }

    /// Claims `key` for one upload and reserves `size` bytes of the quota.
    pub(super) fn begin_upload(
        &self,
        key: &ObjectKey,
        size: u64,
    ) -> Result<UploadGuard, StoreError> {
        let mut guard = self
            .claim_key(key)
            .ok_or(StoreError::Busy(crate::store::Busy::Upload))?;
        self.reserve(&mut guard, size)?;
        Ok(guard)
    }

    /// `key`'s claim, if no upload holds it; where one does, and `doom`,
    /// that upload is doomed (a delete), and removes what it staged itself
    /// when it ends.
    fn claim_key_or(&self, key: &ObjectKey, doom: bool) -> Option<UploadGuard> {
        let mut keys = self.uploading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = keys.get(key.as_str()) {
            if doom {
                held.doom();
            }
            return None;
        }
        let claim = Arc::new(Claim::default());
        keys.insert(key.as_str().to_owned(), claim.clone());
        Some(UploadGuard {
            key: key.as_str().to_owned(),
            uploading: self.uploading.clone(),
            claim,
            quota: self.quota.clone(),
            reserved: 0,
        })
    }

    /// `key`'s claim, if no upload holds it.
    fn claim_key(&self, key: &ObjectKey) -> Option<UploadGuard> {
        self.claim_key_or(key, false)
    }

    /// A delete of `key`: its claim, taken for the delete, when no upload
    /// holds it; otherwise the upload holding it is doomed (`None`).
    pub(super) fn claim_for_delete(&self, key: &ObjectKey) -> Option<UploadGuard> {
        self.claim_key_or(key, true)
    }

    /// Reserves `size` more bytes of the quota for the upload `guard`
    /// claims.
    pub(super) fn reserve(&self, guard: &mut UploadGuard, size: u64) -> Result<(), StoreError> {
        self.quota.reserve(size)?;
        guard.reserved += size;
        Ok(())
    }
}
