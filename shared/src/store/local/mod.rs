//! Objects in a directory: `<root>/objects/<key>`, written through `<root>/tmp`.
//!
//! A body is gathered into chunks of [`CHUNK`] bytes, each hashed and written
//! to a temporary file by one short blocking task, then synced and linked into
//! place with a no-clobber rename: a partial or unverified object is never
//! visible and the first complete upload wins, across processes. No thread
//! waits on a client: a stalled upload or download holds a task, a file and
//! (for a transfer) one of a bounded number of transfer slots, nothing more.
//!
//! Layout: this file is the store and its `ObjectStore` methods (whole
//! objects, parts staged in one file per upload and joined by a proving read
//! and a rename); `slots` the transfer slots, the per-link and per-file
//! claims and the quota's running figure; `files` bodies to files and back,
//! hashed and verified in chunks; `sweep` what expires, and how the quota
//! counts what is on disk.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{ByteStream, ObjectInfo, ObjectStore, StoreError};
use crate::file::ObjectKey;
use crate::sha::{Sha256, Verifier};

mod files;
mod slots;
mod sweep;
#[cfg(test)]
mod tests;

use files::{join_error, read_stream, refuse_if_there, write_verified};
use slots::release;
use sweep::dir_size;

/// Chunk size for reads and writes: large enough to keep syscalls and
/// blocking tasks few, small enough that memory per transfer stays a small
/// constant (about two chunks).
const CHUNK: usize = 256 * 1024;

/// How far the body is read ahead of the disk during an upload.
const QUEUED: usize = 8 * CHUNK;

/// Chunk size for reads: each is one short blocking task, so larger chunks
/// than for writes (whose size the network sets) keep those tasks few; a
/// download holds at most two (one read ahead).
const READ_CHUNK: usize = 1024 * 1024;

/// A directory of objects with a quota on the bytes it holds.
#[derive(Debug, Clone)]
pub struct LocalStore {
    objects: PathBuf,
    tmp: PathBuf,
    quota: u64,
    /// Bytes stored plus bytes reserved by uploads in progress: a running
    /// figure, so a PUT never walks the store.
    used: Arc<AtomicU64>,
    /// Keys with an upload in progress: one per link at a time.
    uploading: Arc<Mutex<HashSet<String>>>,
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
            quota,
            used: Arc::new(AtomicU64::new(used)),
            uploading: Arc::new(Mutex::new(HashSet::new())),
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

    /// The file the parts of an upload to `key` are written into, each at
    /// its offset (beside their markers, [`ObjectKey::part`]).
    fn staging(&self, key: &ObjectKey) -> PathBuf {
        self.objects.join(key.parts_prefix()).join("data")
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
                // Joined only once proven.
                proving: false,
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
        Ok(())
    }

    async fn put_part(
        &self,
        key: &ObjectKey,
        n: u32,
        offset: u64,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError> {
        // Each part is written in place, at its offset in one staging file,
        // and marked stored (an empty file named by its number) once it is
        // verified and synced: joining is then a read to prove the whole
        // and a rename, never a copy.
        let (staging, marker) = (self.staging(key), self.path(&key.part(n)));
        // One upload of a part at a time; its bytes count against the quota.
        // Stored already is decided under that claim, so two uploads of one
        // part never both write; and a joined file takes no more parts.
        let guard = self.begin_upload(&key.part(n), size)?;
        refuse_if_there(&marker).await?;
        refuse_if_there(&self.path(key)).await?;
        let _slot = self.transfer_slot(key)?;
        let file = tokio::task::spawn_blocking(move || -> io::Result<File> {
            use std::io::Seek as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::create_dir_all(staging.parent().expect("a staging file has a directory"))?;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&staging)?;
            file.seek(io::SeekFrom::Start(offset))?;
            Ok(file)
        })
        .await
        .map_err(join_error)??;
        let file = write_verified(file, size, sha256, body).await?;
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            file.sync_data()?;
            File::create(&marker)?;
            File::open(marker.parent().expect("a marker has a directory"))?.sync_all()
        })
        .await
        .map_err(join_error)??;
        guard.stored();
        Ok(())
    }

    async fn stored_parts(&self, key: &ObjectKey) -> Result<Vec<u32>, StoreError> {
        let dir = self.objects.join(key.parts_prefix());
        tokio::task::spawn_blocking(move || {
            let mut parts = Vec::new();
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(parts),
                Err(e) => return Err(StoreError::Io(e)),
            };
            for entry in entries {
                if let Some(n) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
                    parts.push(n);
                }
            }
            parts.sort_unstable();
            Ok(parts)
        })
        .await
        .map_err(join_error)?
    }

    async fn join_parts(
        &self,
        key: &ObjectKey,
        plan: &crate::multipart::Plan,
        sha256: Sha256,
        _budget: Duration,
    ) -> Result<super::Joined, StoreError> {
        // One read of the file on the local disk: proven in one call, by
        // one completion at a time (the others are told it is under way),
        // in a transfer slot like any read of a whole file. A file joined
        // already is not read again.
        let (staging, dest) = (self.staging(key), self.path(key));
        refuse_if_there(&dest).await?;
        let _claim = self.begin_join(key)?;
        let _slot = self.transfer_slot(key)?;
        refuse_if_there(&dest).await?;
        let dir = self.objects.join(key.parts_prefix());
        let markers: Vec<PathBuf> = plan.numbers().map(|n| self.path(&key.part(n))).collect();
        let plan = *plan;
        let joined = tokio::task::spawn_blocking(move || -> Result<(), StoreError> {
            // Every part marked stored before anything is read.
            for (n, marker) in plan.numbers().zip(&markers) {
                if !marker.exists() {
                    return Err(StoreError::MissingPart(n));
                }
            }
            // The proof: the whole file, read once, is what was declared.
            let mut verifier = Verifier::new(plan.size, sha256);
            let mut file = File::open(&staging)?;
            let mut buf = vec![0u8; READ_CHUNK];
            loop {
                let read = file.read(&mut buf)?;
                if read == 0 {
                    break;
                }
                verifier.update(&buf[..read])?;
            }
            verifier.finish()?;
            let parent = dest.parent().expect("object keys have a directory");
            std::fs::create_dir_all(parent)?;
            // Moved, not linked: the staging name is gone with the proof,
            // so no later write to it can reach the object. Under the
            // claim, with the object checked absent, nothing is clobbered.
            std::fs::rename(&staging, &dest)?;
            File::open(parent)?.sync_all()?;
            Ok(())
        })
        .await
        .map_err(join_error)?;
        // Joined, or not the file declared: the parts go either way (no
        // upload of them can ever match). Their bytes were counted as they
        // arrived; the object keeps them counted, a mismatch frees them,
        // once: under the claim, and the next completion finds no part.
        if matches!(joined, Ok(()) | Err(StoreError::Mismatch(_))) {
            if joined.is_err() {
                release(&self.used, plan.size);
            }
            tokio::task::spawn_blocking(move || {
                let _ = std::fs::remove_dir_all(dir);
            })
            .await
            .map_err(join_error)?;
        }
        joined.map(|()| super::Joined::Proven)
    }

    async fn get(&self, key: &ObjectKey) -> Result<Option<ByteStream>, StoreError> {
        // Opening can block (a slow disk, a network mount): off the runtime's
        // threads, so a caller's timeout can still fire.
        let path = self.path(key);
        let opened = tokio::task::spawn_blocking(move || File::open(path))
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
}
