//! Transfer slots (the store's, and each owner's share of them), the
//! claims that keep one upload per link, and the running figure of the
//! quota.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedSemaphorePermit;

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

/// Releases an upload's key and its unused reservation when it ends.
pub(super) struct UploadGuard {
    key: String,
    uploading: Arc<Mutex<HashSet<String>>>,
    used: Arc<AtomicU64>,
    reserved: u64,
}

impl UploadGuard {
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
        release(&self.used, self.reserved);
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
        {
            let mut keys = self.uploading.lock().unwrap_or_else(|p| p.into_inner());
            if !keys.insert(key.as_str().to_owned()) {
                return Err(StoreError::Busy(crate::store::Busy::Upload));
            }
        }
        let mut guard = UploadGuard {
            key: key.as_str().to_owned(),
            uploading: self.uploading.clone(),
            used: self.used.clone(),
            reserved: 0,
        };
        self.reserve(&mut guard, size)?;
        Ok(guard)
    }

    /// Reserves `size` more bytes of the quota for the upload `guard`
    /// claims.
    pub(super) fn reserve(&self, guard: &mut UploadGuard, size: u64) -> Result<(), StoreError> {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used.saturating_add(size) <= self.quota).then_some(used + size)
            })
            .map_err(|used| StoreError::QuotaExceeded {
                used,
                quota: self.quota,
                needed: size,
            })?;
        guard.reserved += size;
        Ok(())
    }
}

/// Takes `bytes` off the running figure `used`, never below zero: another
/// process sharing the directory may have stored what this one sweeps,
/// bytes this process never counted, so the figure may already be lower
/// than a reservation this process still holds.
pub(super) fn release(used: &AtomicU64, bytes: u64) {
    let _ = used.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
        Some(u.saturating_sub(bytes))
    });
}
