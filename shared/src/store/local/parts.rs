//! Uploads in parts to a directory: each part is written in place, at its
//! offset in one staging file per upload, and marked stored (an empty file
//! named by its number, beside it) once verified and synced. Joining is a
//! proof of the whole and a rename, never a copy: this store proves what it
//! joins, as it checks everything it writes.
//!
//! The proof runs while the upload goes on: as parts are stored, the whole
//! file's SHA-256 is carried over every stored part that continues it in
//! order (read back while it is still in the page cache), so that joining
//! reads only what is left, usually nothing. The running hash lives in this
//! process: after a restart, or for parts another process stored, the join
//! reads them as it finds them. Either way the digest is of the bytes in
//! the staging file, which a stored part never changes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::files::{join_error, refuse_if_there, write_verified};
use super::slots::release;
use super::{LocalStore, READ_CHUNK};
use crate::file::ObjectKey;
use crate::multipart::Plan;
use crate::sha::{Hasher, Mismatch, Sha256};
use crate::store::{ByteStream, Joined, PartStore, StoreError};

#[async_trait::async_trait]
impl PartStore for LocalStore {
    async fn begin(&self, _key: &ObjectKey, _content_type: &str) -> Result<(), StoreError> {
        // The staging file is made by the first part that arrives.
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
        let file = TakingTurns {
            file,
            locks: Arc::clone(&self.part_writers),
            at: writer_lock(key),
        };
        let file = write_verified(file, size, sha256, body).await?.file;
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            file.sync_data()?;
            File::create(&marker)?;
            File::open(marker.parent().expect("a marker has a directory"))?.sync_all()
        })
        .await
        .map_err(join_error)??;
        // Queued under the part's claim, which keeps a join out until then:
        // a join never misses a running hash it should take.
        self.queue_part(key, offset, size);
        guard.stored();
        self.carry(key).await;
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

    async fn join(
        &self,
        key: &ObjectKey,
        plan: &Plan,
        sha256: Sha256,
    ) -> Result<Joined, StoreError> {
        // One read of the file on the local disk: proven in one call, by
        // one completion at a time (the others are told it is under way),
        // in a transfer slot like any read of a whole file. A file joined
        // already is not read again.
        let (staging, dest) = (self.staging(key), self.path(key));
        // Joined (and so proven) already: the same answer.
        if refuse_if_there(&dest).await.is_err() {
            return Ok(Joined::Proven);
        }
        let _claim = self.begin_join(key)?;
        let _slot = self.transfer_slot(key)?;
        if refuse_if_there(&dest).await.is_err() {
            return Ok(Joined::Proven);
        }
        let dir = self.objects.join(key.parts_prefix());
        let markers: Vec<PathBuf> = plan.numbers().map(|n| self.path(&key.part(n))).collect();
        let plan = *plan;
        // What the running hash covers, if it is not being carried further
        // right now; the rest is read here.
        let running = self.take_running(key);
        let joined = tokio::task::spawn_blocking(move || -> Result<(), StoreError> {
            // Every part marked stored before anything is read.
            for (n, marker) in plan.numbers().zip(&markers) {
                if !marker.exists() {
                    return Err(StoreError::MissingPart(n));
                }
            }
            prove_file(&staging, running, plan.size, sha256)?;
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
        joined.map(|()| Joined::Proven)
    }

    async fn abort(&self, key: &ObjectKey, _plan: &Plan) -> Result<(), StoreError> {
        let _claim = self.begin_join(key)?;
        drop(self.take_running(key));
        crate::store::ObjectStore::delete(self, key).await
    }
}

/// How many locks the writers of parts share ([`TakingTurns`]).
pub(super) const WRITER_LOCKS: usize = 64;

/// A staging file that one writer at a time writes to. The file system
/// lets one write into a file at a time anyway (ext4 holds the inode's
/// lock for it), but a writer that waits there spins on the CPU: with four
/// parts arriving at once, a tenth of the machine's time went to that
/// spinning. Waiting here, a writer sleeps.
struct TakingTurns {
    file: File,
    locks: Arc<[Mutex<()>]>,
    at: usize,
}

impl TakingTurns {
    fn turn(&self) -> std::sync::MutexGuard<'_, ()> {
        self.locks[self.at]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// The lock of [`LocalStore::part_writers`] for `key`'s staging file.
fn writer_lock(key: &ObjectKey) -> usize {
    use std::hash::{BuildHasher as _, BuildHasherDefault, DefaultHasher};
    let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key.parts_prefix());
    usize::try_from(hash % WRITER_LOCKS as u64).expect("below WRITER_LOCKS")
}

impl io::Write for TakingTurns {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _turn = self.turn();
        (&self.file).write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let _turn = self.turn();
        (&self.file).write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The whole file's SHA-256 of one upload in parts, carried over its
/// stored parts in order.
#[derive(Debug)]
pub(super) struct Running {
    /// Which running hash this is: one taken (by a join, an abort) and
    /// begun again for the same key is another, and a task that carried
    /// the old one never writes into it.
    generation: u64,
    /// The file's bytes before this offset are hashed.
    pub(super) hashed: u64,
    hasher: Hasher,
    /// Parts stored but not hashed yet: their offsets and lengths.
    waiting: BTreeMap<u64, u64>,
    /// A task is hashing the next parts now.
    busy: bool,
}

impl Running {
    fn new() -> Self {
        static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Self {
            generation: GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            hashed: 0,
            hasher: Hasher::new(),
            waiting: BTreeMap::new(),
            busy: false,
        }
    }
}

impl LocalStore {
    /// Takes `key`'s running hash for its join: what it covers and its
    /// state, or nothing while a task is carrying it (the join then reads
    /// the whole file).
    fn take_running(&self, key: &ObjectKey) -> Option<(u64, Hasher)> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let run = running.remove(&key.parts_prefix())?;
        (!run.busy).then_some((run.hashed, run.hasher))
    }

    /// Queues the part just stored at `offset` (`len` bytes) for `key`'s
    /// running hash.
    fn queue_part(&self, key: &ObjectKey, offset: u64, len: u64) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let run = running
            .entry(key.parts_prefix())
            .or_insert_with(Running::new);
        run.waiting.insert(offset, len);
    }

    /// Carries `key`'s running hash over every queued part that continues
    /// it, reading them back from the staging file; one task at a time per
    /// upload. A failed read drops the running hash (the join then reads
    /// everything); a running hash taken meanwhile (by a join, an abort)
    /// is not brought back, nor written into one begun since.
    async fn carry(&self, key: &ObjectKey) {
        let prefix = key.parts_prefix();
        loop {
            let (generation, from, to, hasher) = {
                let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
                let Some(run) = running.get_mut(&prefix) else {
                    return;
                };
                if run.busy {
                    return;
                }
                let (from, mut to) = (run.hashed, run.hashed);
                while let Some(len) = run.waiting.remove(&to) {
                    to += len;
                }
                if to == from {
                    return;
                }
                run.busy = true;
                (run.generation, from, to, std::mem::take(&mut run.hasher))
            };
            let staging = self.staging(key);
            let hashed =
                tokio::task::spawn_blocking(move || hash_range(&staging, hasher, from, to)).await;
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            let Some(run) = running
                .get_mut(&prefix)
                .filter(|r| r.generation == generation)
            else {
                return;
            };
            match hashed {
                Ok(Ok(hasher)) => {
                    run.hasher = hasher;
                    run.hashed = to;
                    run.busy = false;
                }
                _ => {
                    running.remove(&prefix);
                    return;
                }
            }
        }
    }
}

/// Carries `hasher` over at most `at_most` bytes of `file`, stopping at
/// its end; how many it read.
fn hash_from(file: &mut File, hasher: &mut Hasher, at_most: u64) -> io::Result<u64> {
    let mut read_in_all = 0;
    let mut buf = vec![0u8; READ_CHUNK];
    while read_in_all < at_most {
        let want = usize::try_from(at_most - read_in_all)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let read = file.read(&mut buf[..want])?;
        if read == 0 {
            break;
        }
        hasher.update(&buf[..read]);
        read_in_all += read as u64;
    }
    Ok(read_in_all)
}

/// `hasher` carried over bytes `from..to` of the file at `path`.
fn hash_range(path: &Path, mut hasher: Hasher, from: u64, to: u64) -> io::Result<Hasher> {
    let mut file = File::open(path)?;
    file.seek(io::SeekFrom::Start(from))?;
    if hash_from(&mut file, &mut hasher, to - from)? < to - from {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(hasher)
}

/// The proof: the file at `path` is `size` bytes of `sha256`, carrying
/// `running` (what a running hash covers, and its state) over the rest,
/// read to its end.
fn prove_file(
    path: &Path,
    running: Option<(u64, Hasher)>,
    size: u64,
    sha256: Sha256,
) -> Result<(), StoreError> {
    let (hashed, mut hasher) = running
        .filter(|(hashed, _)| *hashed <= size)
        .unwrap_or_default();
    let mut file = File::open(path)?;
    if hashed > 0 {
        file.seek(io::SeekFrom::Start(hashed))?;
    }
    let at = hashed + hash_from(&mut file, &mut hasher, size - hashed)?;
    if at == size && file.read(&mut [0u8; 1])? > 0 {
        return Err(StoreError::Mismatch(Mismatch::TooLong { expected: size }));
    }
    if at < size {
        return Err(StoreError::Mismatch(Mismatch::TooShort {
            expected: size,
            actual: at,
        }));
    }
    let actual = hasher.finish();
    if actual != sha256 {
        return Err(StoreError::Mismatch(Mismatch::Digest {
            expected: sha256,
            actual,
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::{FileId, FileMeta};

    /// A running hash taken while a task carries it (an abort), and begun
    /// again for the same key (a new upload), is not written over by the
    /// old task when it ends. (Before, the old state and offset went into
    /// the new upload's running hash.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_old_carry_never_writes_into_a_new_running_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path(), 1 << 40, 8).unwrap();
        let key = FileMeta {
            id: FileId::random(),
            owner: "alice".into(),
            filename: "a.bin".into(),
            content_type: "application/octet-stream".into(),
            size: 1,
            sha256: crate::sha::Sha256::of(b"a"),
        }
        .object_key();
        let staging = store.staging(&key);
        std::fs::create_dir_all(staging.parent().unwrap()).unwrap();
        let len = 256 * 1024 * 1024;
        File::create(&staging).unwrap().set_len(len).unwrap();
        store.queue_part(&key, 0, len);
        let carrying = {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move { store.carry(&key).await })
        };
        let prefix = key.parts_prefix();
        let busy = || {
            let running = store.running.lock().unwrap();
            running.get(&prefix).is_some_and(|r| r.busy)
        };
        while !busy() {
            tokio::task::yield_now().await;
        }
        // An abort takes it while it is carried; a new upload begins.
        assert!(store.take_running(&key).is_none(), "busy: nothing to take");
        store.queue_part(&key, 0, 10);
        carrying.await.unwrap();
        let running = store.running.lock().unwrap();
        let run = running.get(&prefix).expect("the new running hash");
        assert_eq!(run.hashed, 0, "the old task's offset is not the new one's");
        assert!(!run.busy);
        assert_eq!(run.waiting.get(&0), Some(&10));
    }
}
