//! Objects in a directory: `<root>/objects/<key>`, written through `<root>/tmp`.
//!
//! A body is gathered into batches (`pump.rs`), each hashed and written
//! to a temporary file by one short blocking task, then synced and linked into
//! place with a no-clobber rename: a partial or unverified object is never
//! visible and the first complete upload wins, across processes. No thread
//! waits on a client: a stalled upload or download holds a task, a file and
//! (for a transfer) one of a bounded number of transfer slots, nothing more.
//!
//! Layout: this file is the store and its `ObjectStore` methods (whole
//! objects); `stream` resumable uploads, one stream each, appended at
//! their offset and checkpointed with their hash state (this store
//! receives every byte, so it takes no parts: DESIGN.md, "Files of any
//! size"); `slots` the transfer slots, the per-link claims and the quota's
//! running figure; `files` bodies to files and back, hashed and verified
//! in chunks; `sweep` what expires; `counted` how the quota counts what
//! is on disk and where a stream stands (a leaf the others read: the
//! stream and the sweep no longer import each other).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use super::{ByteStream, ObjectInfo, ObjectStore, StoreError};
use crate::file::ObjectKey;
use crate::sha::Sha256;

mod counted;
mod files;
mod pump;
mod slots;
mod stream;
mod sweep;
#[cfg(test)]
mod tests;

use counted::dir_size;
use files::{join_error, read_stream, refuse_if_there, write_verified};

/// Chunk size for writes: what a stream hashes and writes at a time
/// between its checkpoints, and a quarter of an upload's batch
/// (`pump::BATCH`; a transfer holds two batches).
const CHUNK: usize = 256 * 1024;

/// Chunk size for reads: each is one short blocking task, so larger chunks
/// than for writes (whose size the network sets) keep those tasks few; a
/// download holds at most two (one read ahead).
const READ_CHUNK: usize = 1024 * 1024;

/// A directory of objects with a quota on the bytes it holds.
#[derive(Debug, Clone)]
pub struct LocalStore {
    objects: PathBuf,
    tmp: PathBuf,
    /// The quota, with its running figure (bytes stored plus bytes
    /// reserved by uploads in progress), so a PUT never walks the store.
    quota: crate::store::Quota,
    /// Keys with an upload in progress (one per link at a time), each with
    /// its claim, which a delete dooms.
    uploading: slots::Claims,
    /// Transfer slots.
    transfers: Arc<Semaphore>,
    /// Transfers in progress per owner (by the owner hash of an object's
    /// key), and the most one owner may have: a few users cannot take
    /// every slot from everyone else.
    per_owner: Arc<Mutex<std::collections::HashMap<String, usize>>>,
    share: usize,
}

impl LocalStore {
    /// Opens (creating if needed) a store under `root`, with at most
    /// `max_transfers` uploads and downloads at once.
    pub fn open(root: &Path, quota: u64, max_transfers: usize) -> Result<Self, StoreError> {
        let objects = root.join("objects");
        let tmp = root.join("tmp");
        super::private_dir(root)?;
        std::fs::create_dir_all(&objects)?;
        std::fs::create_dir_all(&tmp)?;
        // What is stored now; uploads and the sweep keep the figure after.
        let used = dir_size(&objects)?;
        Ok(Self {
            objects,
            tmp,
            quota: crate::store::Quota::new(quota, used),
            uploading: slots::Claims::default(),
            transfers: Arc::new(Semaphore::new(max_transfers.max(1))),
            per_owner: Arc::new(Mutex::new(std::collections::HashMap::new())),
            share: max_transfers.max(1),
        })
    }

    /// Limits one owner to `share` of the transfer slots (by default all).
    pub fn with_user_share(mut self, share: usize) -> Self {
        self.share = share.max(1);
        self
    }

    fn path(&self, key: &ObjectKey) -> PathBuf {
        // Keys are built by `FileMeta::object_key` from a hash, a parsed file
        // id and a sanitized name, so they are always relative and plain.
        self.objects.join(key.as_str())
    }
}

#[async_trait::async_trait]
impl ObjectStore for LocalStore {
    async fn head(&self, key: &ObjectKey) -> Result<Option<ObjectInfo>, StoreError> {
        match tokio::fs::metadata(self.path(key)).await {
            Ok(m) => Ok(Some(ObjectInfo {
                size: m.len(),
                sha256: None,
                version: None,
                etag: None,
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError> {
        let dest = self.path(key);
        refuse_if_there(&dest).await?;
        // Refusals decided before any byte is read, in this order: another
        // upload of this link in progress, no transfer slot, no room.
        let guard = self.begin_upload(key, size)?;
        let _slot = self.transfer_slot(key)?;

        let tmp = {
            let dir = self.tmp.clone();
            tokio::task::spawn_blocking(move || tempfile::NamedTempFile::new_in(dir))
                .await
                .map_err(join_error)??
        };
        let tmp = write_verified(tmp, size, sha256, body).await?;
        let claim = guard.claim();
        if claim.is_doomed() {
            return Err(StoreError::Gone);
        }
        let placed = dest.clone();
        tokio::task::spawn_blocking(move || {
            tmp.as_file().sync_all()?;
            let dir = dest.parent().expect("object keys have a directory");
            std::fs::create_dir_all(dir)?;
            match tmp.persist_noclobber(&dest) {
                Ok(_) => {}
                Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(StoreError::AlreadyExists);
                }
                Err(e) => return Err(StoreError::Io(e.error)),
            }
            // Make the new directory entry durable too.
            File::open(dir)?.sync_all()?;
            Ok(())
        })
        .await
        .map_err(join_error)??;
        // Stored: the reservation becomes usage.
        guard.stored();
        // Deleted meanwhile: the delete found the claim taken, and this
        // upload takes away what it stored (whoever removes it gives its
        // bytes back).
        if claim.is_doomed() {
            self.remove_object(&placed).await?;
            return Err(StoreError::Gone);
        }
        // Part of the file sent as a resumable stream before is of no use
        // now that the whole is stored.
        self.drop_stream(key).await?;
        Ok(())
    }

    async fn get(&self, key: &ObjectKey) -> Result<Option<ByteStream>, StoreError> {
        self.get_range(key, 0..u64::MAX, None).await
    }

    /// A hard link: the same bytes under a second name, each name removed
    /// on its own. Counted against the quota as a file of its own (the
    /// quota counts what the records declare, not blocks on disk).
    async fn copy(
        &self,
        from: &ObjectKey,
        to: &ObjectKey,
        info: &ObjectInfo,
    ) -> Result<Option<ObjectInfo>, StoreError> {
        let (src, dest) = (self.path(from), self.path(to));
        refuse_if_there(&dest).await?;
        let guard = self.begin_upload(to, info.size)?;
        tokio::task::spawn_blocking(move || -> Result<(), StoreError> {
            let dir = dest.parent().expect("object keys have a directory");
            std::fs::create_dir_all(dir)?;
            match std::fs::hard_link(&src, &dest) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(StoreError::AlreadyExists);
                }
                Err(e) => return Err(StoreError::Io(e)),
            }
            File::open(dir)?.sync_all()?;
            Ok(())
        })
        .await
        .map_err(join_error)??;
        guard.stored();
        self.head(to).await
    }

    async fn get_range(
        &self,
        key: &ObjectKey,
        range: std::ops::Range<u64>,
        _etag: Option<&str>,
    ) -> Result<Option<ByteStream>, StoreError> {
        // An object here is never replaced: no entity tag to check. Opening
        // can block (a slow disk, a network mount): off the runtime's
        // threads, so a caller's timeout can still fire. A read from the
        // start does not seek (a FIFO, in the tests' stalled reads, cannot).
        let path = self.path(key);
        let opened = tokio::task::spawn_blocking(move || -> io::Result<_> {
            use std::io::Seek as _;
            let mut file = File::open(path)?;
            if range.start > 0 {
                file.seek(io::SeekFrom::Start(range.start))?;
            }
            Ok(file.take(range.end.saturating_sub(range.start)))
        })
        .await
        .map_err(join_error)?;
        let file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let slot = self.transfer_slot(key)?;
        Ok(Some(read_stream(file, slot)))
    }

    /// Wins over an upload under way: one holding the key is doomed, and
    /// removes its own staging when it ends, giving back all it counted
    /// ([`LocalStore::claim_for_delete`]); with none, the delete holds the
    /// key while it removes the staging, so none begins meanwhile.
    async fn delete(&self, key: &ObjectKey) -> Result<(), StoreError> {
        let own = self.claim_for_delete(key);
        self.remove_object(&self.path(key)).await?;
        if own.is_none() {
            return Ok(());
        }
        let (parts, quota) = (self.objects.join(key.parts_prefix()), self.quota.clone());
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            let staged = walk_size(&parts);
            match std::fs::remove_dir_all(&parts) {
                Ok(()) => quota.release(staged),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            Ok(())
        })
        .await
        .map_err(join_error)??;
        drop(own);
        Ok(())
    }

    fn access(&self) -> super::Access<'_> {
        super::Access::Proxied
    }

    fn stream(&self) -> Option<&dyn super::StreamStore> {
        Some(self)
    }

    fn scratch(&self) -> Option<super::Scratch> {
        Some(super::Scratch {
            dir: self.tmp.clone(),
            quota: self.quota.clone(),
        })
    }
}

/// What the files below `dir` count against the quota (0 if none).
fn walk_size(dir: &Path) -> u64 {
    dir_size(dir).unwrap_or(0)
}

impl LocalStore {
    /// Removes the object at `path`, if it is there, giving its bytes back
    /// to the quota (once: only the call that removed it does).
    async fn remove_object(&self, path: &Path) -> Result<(), StoreError> {
        let (path, quota) = (path.to_path_buf(), self.quota.clone());
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            match std::fs::metadata(&path) {
                Ok(meta) => match std::fs::remove_file(&path) {
                    Ok(()) => quota.release(counted::counted(&meta)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            Ok(())
        })
        .await
        .map_err(join_error)??;
        Ok(())
    }
}
