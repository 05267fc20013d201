//! Objects in a directory: `<root>/objects/<key>`, written through `<root>/tmp`.
//!
//! A body is gathered into chunks of [`CHUNK`] bytes, each hashed and written
//! to a temporary file by one short blocking task, then synced and linked into
//! place with a no-clobber rename: a partial or unverified object is never
//! visible and the first complete upload wins, across processes. No thread
//! waits on a client: a stalled upload or download holds a task, a file and
//! (for a transfer) one of a bounded number of transfer slots, nothing more.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{ByteStream, ObjectInfo, ObjectStore, StoreError};
use crate::file::ObjectKey;
use crate::sha::{Sha256, Verifier};

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

/// A transfer slot: one of the store's, and one of its owner's share.
struct Slot {
    _owner: OwnerCount,
    _global: OwnedSemaphorePermit,
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
struct UploadGuard {
    key: String,
    uploading: Arc<Mutex<HashSet<String>>>,
    used: Arc<AtomicU64>,
    reserved: u64,
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

    /// A transfer slot for `key`'s owner, or the refusal when the owner's
    /// share, or every slot, is taken.
    fn transfer_slot(&self, key: &ObjectKey) -> Result<Slot, StoreError> {
        let owner = key.owner_part().to_owned();
        {
            let mut counts = self.per_owner.lock().unwrap_or_else(|p| p.into_inner());
            let n = counts.entry(owner.clone()).or_insert(0);
            if *n >= self.share {
                return Err(StoreError::Busy(super::Busy::YourTransfers));
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
            .map_err(|_| StoreError::Busy(super::Busy::Transfers))?;
        Ok(Slot {
            _owner: counted,
            _global: global,
        })
    }

    /// Claims `key` for one upload and reserves `size` bytes of the quota.
    /// A part's upload is refused while its file's parts are being joined.
    fn begin_upload(&self, key: &ObjectKey, size: u64) -> Result<UploadGuard, StoreError> {
        {
            let mut keys = self.uploading.lock().unwrap_or_else(|p| p.into_inner());
            if keys.contains(&joining(key.as_str())) {
                return Err(StoreError::Busy(super::Busy::Completing));
            }
            if !keys.insert(key.as_str().to_owned()) {
                return Err(StoreError::Busy(super::Busy::Upload));
            }
        }
        let mut guard = UploadGuard {
            key: key.as_str().to_owned(),
            uploading: self.uploading.clone(),
            used: self.used.clone(),
            reserved: 0,
        };
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used.saturating_add(size) <= self.quota).then_some(used + size)
            })
            .map_err(|used| StoreError::QuotaExceeded {
                used,
                quota: self.quota,
                needed: size,
            })?;
        guard.reserved = size;
        Ok(guard)
    }

    /// Claims the join of `key`'s parts: one at a time, and none while a
    /// part of it is being uploaded (a part written after the proof's read
    /// would change what was proven).
    fn begin_join(&self, key: &ObjectKey) -> Result<UploadGuard, StoreError> {
        let claim = joining(&key.parts_prefix());
        let mut keys = self.uploading.lock().unwrap_or_else(|p| p.into_inner());
        if keys.contains(&claim) {
            return Err(StoreError::Busy(super::Busy::Completing));
        }
        if keys.iter().any(|k| k.starts_with(&key.parts_prefix())) {
            return Err(StoreError::Busy(super::Busy::Upload));
        }
        keys.insert(claim.clone());
        Ok(UploadGuard {
            key: claim,
            uploading: self.uploading.clone(),
            used: self.used.clone(),
            reserved: 0,
        })
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

    /// Deletes objects older than `max_age` and temporary files left by
    /// uploads that died. Returns how many objects were removed.
    pub fn sweep(&self, max_age: Duration) -> Result<usize, StoreError> {
        let older_than = |cutoff: SystemTime| {
            move |entry: &(PathBuf, std::fs::Metadata)| entry.1.modified().is_ok_and(|m| m < cutoff)
        };
        let old: Vec<_> = walk(&self.objects)?
            .into_iter()
            .filter(older_than(SystemTime::now() - max_age))
            .collect();
        let removed = remove_each(&old, |bytes| release(&self.used, bytes));
        let stale: Vec<_> = walk(&self.tmp)?
            .into_iter()
            .filter(older_than(
                SystemTime::now() - Duration::from_secs(24 * 3600),
            ))
            .collect();
        remove_each(&stale, |_| {});
        Ok(removed)
    }
}

/// The claim that the parts under `prefix` (a key's
/// [`ObjectKey::parts_prefix`], or one part's key) are being joined.
fn joining(key_or_prefix: &str) -> String {
    let prefix = key_or_prefix
        .rsplit_once('/')
        .map_or(key_or_prefix, |(dir, _)| dir);
    format!("{prefix}/joining")
}

/// The bytes a file takes that the quota counts: its allocated blocks where
/// it is sparse (a staging file whose parts have not all arrived), and its
/// length otherwise.
fn counted(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    meta.len().min(meta.blocks().saturating_mul(512))
}

/// Takes `bytes` off the running figure `used`, never below zero: another
/// process sharing the directory may have stored what this one sweeps,
/// bytes this process never counted, so the figure may already be lower
/// than a reservation this process still holds.
fn release(used: &AtomicU64, bytes: u64) {
    let _ = used.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
        Some(u.saturating_sub(bytes))
    });
}

/// Deletes each of `entries` (and its now-empty `<file_id>` directory),
/// going on past one that fails (another process removed it first, a
/// permission): logged, and left for the next sweep. Calls `gone` with the
/// size of each file deleted; returns how many were.
fn remove_each(entries: &[(PathBuf, std::fs::Metadata)], mut gone: impl FnMut(u64)) -> usize {
    let mut removed = 0;
    for (path, meta) in entries {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "sweep could not delete a file");
            continue;
        }
        gone(counted(meta));
        // Ignore failure: another process may be writing a sibling.
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        removed += 1;
    }
    removed
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
        let mut guard = guard;
        guard.reserved = 0;
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
        let mut guard = guard;
        guard.reserved = 0;
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

/// What a write hands back: the file and the verifier, for the next.
type WriteResult<W> = Result<(std::io::BufWriter<W>, Verifier), StoreError>;

/// Streams `body` into `file`, which must come out exactly `size` bytes of
/// digest `sha256`; hands the file back, written but not synced.
async fn write_verified<W: Write + Send + 'static>(
    file: W,
    size: u64,
    sha256: Sha256,
    body: ByteStream,
) -> Result<W, StoreError> {
    let buffered = std::io::BufWriter::with_capacity(CHUNK, file);
    let (file, verifier) = stream_into(buffered, Verifier::new(size, sha256), body).await?;
    verifier.finish()?;
    file.into_inner()
        .map_err(|e| StoreError::Io(e.into_error()))
}

/// Streams `body` into `file` through `verifier`, and hands both back once
/// the body ended (the caller finishes the verifier). Chunks are hashed and
/// written by short blocking tasks.
async fn stream_into<W: Write + Send + 'static>(
    file: std::io::BufWriter<W>,
    verifier: Verifier,
    mut body: ByteStream,
) -> WriteResult<W> {
    // The file and the verifier travel to each short blocking write and
    // back; the body is read here, in async code, between writes. Frames
    // are batched as they came (no copy) until a batch holds CHUNK bytes.
    let mut state = Some((file, verifier));
    let mut pending: Option<tokio::task::JoinHandle<WriteResult<W>>> = None;
    let mut batch: Vec<Bytes> = Vec::new();
    let mut batched = 0usize;
    let mut ended = false;
    let mut body_error = None;
    // The body keeps being read while a write runs, up to QUEUED bytes
    // ahead of the disk, so a stall in writeback does not stop the
    // network at once.
    loop {
        if pending.is_none() && (batched >= CHUNK || (ended && batched > 0)) {
            let (file, verifier) = state.take().expect("no write is in flight");
            let chunks = std::mem::take(&mut batch);
            batched = 0;
            pending = Some(tokio::task::spawn_blocking(move || {
                write_chunks(file, verifier, chunks)
            }));
        }
        if ended && pending.is_none() {
            break;
        }
        tokio::select! {
            written = async { pending.as_mut().expect("guarded").await }, if pending.is_some() => {
                pending = None;
                state = Some(written.map_err(join_error)??);
            }
            next = body.next(), if !ended && batched < QUEUED => match next {
                Some(Ok(chunk)) => {
                    batched += chunk.len();
                    batch.push(chunk);
                }
                Some(Err(e)) => {
                    body_error = Some(e);
                    ended = true;
                    batch.clear();
                    batched = 0;
                }
                None => ended = true,
            },
        }
    }
    if let Some(e) = body_error {
        // A temporary file is removed when `state` drops.
        return Err(StoreError::Body(e));
    }
    Ok(state.expect("the last write returned the file"))
}

/// Hashes and writes a batch of chunks (one short blocking task).
fn write_chunks<W: Write>(
    mut file: std::io::BufWriter<W>,
    mut verifier: Verifier,
    chunks: Vec<Bytes>,
) -> WriteResult<W> {
    for chunk in chunks {
        verifier.update(&chunk)?;
        file.write_all(&chunk)?;
    }
    Ok((file, verifier))
}

/// Reads one chunk (a short blocking task); an empty chunk is the end.
fn read_chunk(mut file: File) -> (File, io::Result<Bytes>) {
    let mut buf = BytesMut::zeroed(READ_CHUNK);
    loop {
        match file.read(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return (file, Ok(buf.freeze()));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return (file, Err(e)),
        }
    }
}

/// Streams a file chunk by chunk, each read a short blocking task started
/// as the previous chunk is handed out (one chunk of read-ahead). The
/// transfer slot is held until the stream ends or is dropped.
fn read_stream(file: File, slot: Slot) -> ByteStream {
    let first = tokio::task::spawn_blocking(move || read_chunk(file));
    futures_util::stream::unfold(Some((first, slot)), |state| async move {
        let (reading, slot) = state?;
        let (file, chunk) = match reading.await {
            Ok(done) => done,
            Err(e) => return Some((Err(io::Error::other(e)), None)),
        };
        match chunk {
            Ok(chunk) if chunk.is_empty() => None,
            Ok(chunk) => {
                let next = tokio::task::spawn_blocking(move || read_chunk(file));
                Some((Ok(chunk), Some((next, slot))))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
    .boxed()
}

/// [`StoreError::AlreadyExists`] if something is at `path` (an object, a
/// part's marker): written once. Asked off the runtime's threads.
async fn refuse_if_there(path: &Path) -> Result<(), StoreError> {
    let path = path.to_owned();
    let there = tokio::task::spawn_blocking(move || path.exists())
        .await
        .map_err(join_error)?;
    if there {
        return Err(StoreError::AlreadyExists);
    }
    Ok(())
}

fn join_error(e: tokio::task::JoinError) -> StoreError {
    StoreError::Io(io::Error::other(e))
}

/// Every regular file below `dir`, with its metadata.
fn walk(dir: &Path) -> io::Result<Vec<(PathBuf, std::fs::Metadata)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            // Removed by a concurrent sweep.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                out.push((entry.path(), meta));
            }
        }
    }
    Ok(out)
}

fn dir_size(dir: &Path) -> io::Result<u64> {
    Ok(walk(dir)?.iter().map(|(_, m)| counted(m)).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::{FileId, FileMeta};

    /// A file of `owner`'s: 100 bytes of `n`.
    fn meta(owner: &str, n: u8) -> FileMeta {
        FileMeta {
            id: FileId::random(),
            owner: owner.into(),
            filename: format!("f{n}.bin"),
            content_type: "application/octet-stream".into(),
            size: 100,
            sha256: Sha256::of(&[n; 100]),
        }
    }

    fn file(n: u8) -> (ObjectKey, Bytes, Sha256) {
        let meta = meta("alice", n);
        (meta.object_key(), Bytes::from(vec![n; 100]), meta.sha256)
    }

    async fn put(store: &LocalStore, n: u8) -> ObjectKey {
        let (key, data, sha256) = file(n);
        let body: ByteStream = futures_util::stream::once(async move { Ok(data) }).boxed();
        store.put(&key, 100, sha256, body).await.unwrap();
        key
    }

    /// Two processes on one data directory (two stores here): one sweeps
    /// what the other stored, bytes it never counted. Its figure stays at
    /// zero instead of wrapping round to "full", so it still takes uploads.
    #[tokio::test]
    async fn sweeping_what_another_process_stored_never_wraps_the_usage() {
        let dir = tempfile::tempdir().unwrap();
        let sweeper = LocalStore::open(dir.path(), 1000, 8).unwrap();
        let other = LocalStore::open(dir.path(), 1000, 8).unwrap();
        put(&other, 1).await;
        assert_eq!(sweeper.sweep(Duration::ZERO).unwrap(), 1);
        assert_eq!(sweeper.used.load(Ordering::SeqCst), 0);
        put(&sweeper, 2).await;
    }

    fn key_of(owner: &str) -> ObjectKey {
        meta(owner, 1).object_key()
    }

    /// Uploads whose bodies never come hold their slots; a user with their
    /// share taken is refused, and everyone else is still served.
    #[tokio::test]
    async fn one_user_cannot_take_every_transfer_slot() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path(), 1 << 20, 8)
            .unwrap()
            .with_user_share(2);
        let stalled: Vec<_> = (0..2)
            .map(|_| {
                let (store, key) = (store.clone(), key_of("mallory"));
                tokio::spawn(async move {
                    let body: ByteStream = futures_util::stream::pending().boxed();
                    store.put(&key, 100, Sha256::of(&[1u8; 100]), body).await
                })
            })
            .collect();
        // Until both hold their slots.
        let mallory = key_of("mallory").owner_part().to_owned();
        while store.per_owner.lock().unwrap().get(&mallory) != Some(&2) {
            tokio::task::yield_now().await;
        }
        let body: ByteStream = futures_util::stream::pending().boxed();
        let third = store
            .put(&key_of("mallory"), 100, Sha256::of(&[1u8; 100]), body)
            .await;
        assert!(
            matches!(
                third,
                Err(StoreError::Busy(super::super::Busy::YourTransfers))
            ),
            "{third:?}"
        );
        // Another user uploads and reads back as usual.
        let key = put(&store, 7).await;
        assert!(store.get(&key).await.unwrap().is_some());
        for task in stalled {
            task.abort();
        }
    }

    /// A file that is gone before the sweep reaches it (another process
    /// deleted it) does not stop the sweep: the rest are deleted.
    #[tokio::test]
    async fn one_failing_delete_does_not_stop_the_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path(), 10_000, 8).unwrap();
        for n in 0..4 {
            put(&store, n).await;
        }
        let listed = walk(&store.objects).unwrap();
        assert_eq!(listed.len(), 4);
        std::fs::remove_file(&listed[0].0).unwrap();
        assert_eq!(remove_each(&listed, |_| {}), 3);
        assert!(walk(&store.objects).unwrap().is_empty());
    }
}
