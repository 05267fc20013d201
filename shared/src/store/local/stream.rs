//! Resumable uploads to a directory (tus's one stream per upload): an
//! upload's bytes are appended to `parts/<owner>/<id>/stream` at the offset
//! it stands at, hashed once as they arrive, and the offset and the hash
//! state are checkpointed together in `stream.at` (a [`Midstate`]
//! checkpoint, written aside and renamed over it) once the bytes before it
//! are synced: at the end of each append and every [`STREAM_CHECKPOINT`]
//! bytes within one. So a resume, after a dropped connection, a killed
//! client or a restart, hashes only what it is sent and never reads the
//! stored bytes again; whatever was written after the last checkpoint (a
//! crash between the two) is cut off and sent again.
//!
//! One writer per upload: in this process the upload's claim
//! ([`LocalStore::begin_upload`]), across processes sharing the directory
//! an exclusive lock on the stream file, taken before the checkpoint is
//! read. The last byte decides: the pinned digest links the stream into
//! place as the object (no-clobber, as a whole PUT is) and removes the
//! staging; any other removes it, and nothing is readable.

use std::fs::File;
use std::io::{self, Seek as _, Write as _};
use std::path::{Path, PathBuf};

use super::counted::{CHECKPOINT_FILE, STREAM_FILE, standing};
use super::files::{join_error, refuse_if_there};
use super::pump::{self, Flow};
use super::slots::{Claim, UploadGuard};
use super::{CHUNK, LocalStore};
use crate::file::ObjectKey;
use crate::sha::{Midstate, Mismatch, Sha256};
use crate::store::{Appended, Busy, ByteStream, STREAM_CHECKPOINT, StoreError, StreamStore};

/// Where an upload's stream and its checkpoint live.
#[derive(Debug, Clone)]
pub(super) struct Paths {
    pub(super) dir: PathBuf,
    pub(super) data: PathBuf,
    at: PathBuf,
}

impl LocalStore {
    pub(super) fn stream_paths(&self, key: &ObjectKey) -> Paths {
        let dir = self.objects.join(key.parts_prefix());
        Paths {
            data: dir.join(STREAM_FILE),
            at: dir.join(CHECKPOINT_FILE),
            dir,
        }
    }
}

/// An upload's stream open for appending, under its lock.
struct Open {
    file: io::BufWriter<File>,
    hash: Midstate,
    /// Bytes written.
    at: u64,
    /// Bytes up to the last checkpoint.
    kept: u64,
    /// Bytes whose writeback has been started.
    flushing: u64,
    /// The writeback under way, if any ([`Open::start_writeback`]).
    syncing: Option<std::thread::JoinHandle<io::Result<()>>>,
    paths: Paths,
}

/// How many bytes written start their writeback: so that a checkpoint's
/// sync finds most of its bytes on their way to the disk already, rather
/// than holding the stream while it writes them all.
const WRITEBACK_EVERY: u64 = 8 * 1024 * 1024;

impl Open {
    /// Opens the stream of `paths`, locked, cut back to its last
    /// checkpoint (or to nothing, where there is none).
    fn at_checkpoint(paths: Paths) -> Result<Self, StoreError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::create_dir_all(&paths.dir)?;
        // sluice's alone, as every object is: the stream becomes one.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&paths.data)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(StoreError::Busy(Busy::Upload)),
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
        let len = file.metadata()?.len();
        let (hash, _) = standing(&paths.dir)?;
        let hash = match hash {
            Some(hash) => hash,
            None => {
                if len > 0 {
                    // Bytes a checkpoint counted are gone: start over.
                    tracing::warn!(dir = %paths.dir.display(), "a stream is shorter than its checkpoint: starting it over");
                }
                remove_checkpoint(&paths.at)?;
                Midstate::new()
            }
        };
        let at = hash.offset();
        if len != at {
            file.set_len(at)?;
        }
        let mut file = file;
        file.seek(io::SeekFrom::Start(at))?;
        Ok(Self {
            file: io::BufWriter::with_capacity(CHUNK, file),
            hash,
            at,
            kept: at,
            flushing: at,
            syncing: None,
            paths,
        })
    }

    /// Hashes and writes `data`, a [`CHUNK`] at a time, checkpointing
    /// every [`STREAM_CHECKPOINT`] bytes.
    fn write(&mut self, data: &[u8]) -> Result<(), StoreError> {
        for chunk in data.chunks(CHUNK) {
            self.hash.update(chunk);
            self.file.write_all(chunk)?;
            self.at += chunk.len() as u64;
            if self.at - self.kept >= STREAM_CHECKPOINT {
                self.checkpoint()?;
            } else if self.at - self.flushing >= WRITEBACK_EVERY {
                self.start_writeback()?;
            }
        }
        Ok(())
    }

    /// Starts the writeback of what was written so far and does not wait
    /// for it: a sync of the stream's file on a thread of its own (one at a
    /// time), while the writes go on.
    fn start_writeback(&mut self) -> Result<(), StoreError> {
        if self.syncing.as_ref().is_some_and(|s| !s.is_finished()) {
            return Ok(());
        }
        self.finish_writeback()?;
        self.file.flush()?;
        let file = self.file.get_ref().try_clone()?;
        self.syncing = Some(std::thread::spawn(move || file.sync_data()));
        self.flushing = self.at;
        Ok(())
    }

    /// Waits for the writeback started last, if any.
    fn finish_writeback(&mut self) -> Result<(), StoreError> {
        if let Some(syncing) = self.syncing.take() {
            syncing
                .join()
                .map_err(|_| io::Error::other("the writeback's thread panicked"))??;
        }
        Ok(())
    }

    /// Syncs the bytes written, then records their offset and hash state.
    fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.finish_writeback()?;
        self.file.flush()?;
        self.file.get_ref().sync_data()?;
        use std::os::unix::fs::OpenOptionsExt as _;
        let aside = self.paths.at.with_extension("at.new");
        let mut saved = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&aside)?;
        saved.write_all(self.hash.checkpoint().as_bytes())?;
        saved.sync_all()?;
        std::fs::rename(&aside, &self.paths.at)?;
        File::open(&self.paths.dir)?.sync_all()?;
        self.kept = self.at;
        self.flushing = self.at;
        Ok(())
    }

    /// Cuts off what was written after the last checkpoint (and drops
    /// what the buffer still holds unwritten): what is left is exactly
    /// what the checkpoint holds.
    fn cut_to_checkpoint(self) -> Result<(), StoreError> {
        let (file, _unwritten) = self.file.into_parts();
        file.set_len(self.kept)?;
        Ok(())
    }

    /// The last byte is in: the pinned digest makes the object at `dest`;
    /// any other removes the stream.
    fn finish(mut self, sha256: Sha256, dest: &Path) -> Result<(), StoreError> {
        self.finish_writeback()?;
        self.file.flush()?;
        self.file.get_ref().sync_data()?;
        let actual = self.hash.clone().finish();
        if actual != sha256 {
            remove_staging(&self.paths.dir)?;
            return Err(Mismatch::Digest {
                expected: sha256,
                actual,
            }
            .into());
        }
        let dir = dest.parent().expect("object keys have a directory");
        std::fs::create_dir_all(dir)?;
        let linked = std::fs::hard_link(&self.paths.data, dest);
        remove_staging(&self.paths.dir)?;
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(StoreError::AlreadyExists);
            }
            Err(e) => return Err(e.into()),
        }
        File::open(dir)?.sync_all()?;
        Ok(())
    }
}

/// Removes an upload's staging directory (its stream and checkpoint).
fn remove_staging(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes a checkpoint that no longer stands (the stream is shorter).
fn remove_checkpoint(at: &Path) -> io::Result<()> {
    match std::fs::remove_file(at) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// How one append ended, for [`Writer::settle`].
enum Ending {
    /// The body ended (whole, or broken off: `broke`).
    Ended { broke: Option<io::Error> },
    /// The body went past the upload's length.
    PastEnd,
    /// A delete doomed the upload.
    Doomed,
}

/// One append's stream and the quota it counts, settled once: by
/// [`Writer::settle`] at the append's end, or, where the append is cut off
/// before that (its link's expiry, a dropped connection: its future
/// dropped), when it is dropped: cut back to its last checkpoint, keeping
/// exactly what that holds. Dropped doomed (its file deleted), it removes
/// the stream and gives back all it counted. An RAII guard, so no path
/// that ends an append can skip it.
struct Writer {
    open: Option<Open>,
    guard: UploadGuard,
    /// The offset the append began at: what earlier appends kept, counted
    /// as usage.
    start: u64,
    quota: crate::store::Quota,
}

impl Writer {
    fn open(&mut self) -> &mut Open {
        self.open
            .as_mut()
            .expect("a writer holds its stream until settled")
    }

    /// Writes `batch` (see [`Open::write`]) and hands it back.
    fn write(mut self, batch: Vec<u8>) -> Result<(Self, Vec<u8>), StoreError> {
        self.open().write(&batch)?;
        Ok((self, batch))
    }

    /// The append ended as `ending` says: the stream finished, kept at a
    /// checkpoint, or removed. The bytes kept (the new offset), or why
    /// nothing was.
    fn settle(
        mut self,
        ending: Ending,
        size: u64,
        sha256: Sha256,
        dest: &Path,
    ) -> Result<u64, StoreError> {
        let mut open = self.open.take().expect("settled once");
        match ending {
            Ending::Doomed => {
                let dir = open.paths.dir.clone();
                drop(open);
                self.doomed(&dir)?;
                Err(StoreError::Gone)
            }
            Ending::PastEnd => {
                let kept = open.kept;
                open.cut_to_checkpoint()?;
                self.guard.keep(kept - self.start);
                Err(StoreError::PastEnd { size })
            }
            Ending::Ended { broke: None } if open.at == size => {
                match open.finish(sha256, dest) {
                    Ok(()) => {
                        self.guard.keep(size - self.start);
                        Ok(size)
                    }
                    Err(e) => {
                        // The stream is gone: so is what earlier appends kept.
                        self.quota.release(self.start);
                        Err(e)
                    }
                }
            }
            Ending::Ended { broke } => {
                // What arrived is kept; an empty request changes nothing
                // (no sync, no checkpoint).
                if open.at != open.kept
                    && let Err(e) = open.checkpoint()
                {
                    self.open = Some(open);
                    return Err(e);
                }
                self.guard.keep(open.kept - self.start);
                match broke {
                    Some(e) => Err(StoreError::Body(e)),
                    None => Ok(open.kept),
                }
            }
        }
    }

    /// The upload's file was deleted: its stream goes, and with it all it
    /// counted (what earlier appends kept; this one's reservation goes
    /// back with the guard).
    fn doomed(&self, dir: &Path) -> io::Result<()> {
        remove_staging(dir)?;
        self.quota.release(self.start);
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        if self.guard.claim().is_doomed() {
            let dir = open.paths.dir.clone();
            drop(open);
            if let Err(e) = self.doomed(&dir) {
                tracing::warn!(error = %e, "a deleted upload's stream was not removed");
            }
            return;
        }
        let kept = open.kept;
        match open.cut_to_checkpoint() {
            Ok(()) => self.guard.keep(kept - self.start),
            Err(e) => {
                tracing::warn!(error = %e, "an append cut off was not cut back to its checkpoint")
            }
        }
    }
}

impl LocalStore {
    /// Removes what a resumable upload to `key` kept, if anything, and
    /// gives its bytes back to the quota (the file was stored whole by
    /// other means).
    pub(super) async fn drop_stream(&self, key: &ObjectKey) -> Result<(), StoreError> {
        let (dir, quota) = (self.stream_paths(key).dir, self.quota.clone());
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            if !dir.exists() {
                return Ok(());
            }
            let staged = super::counted::dir_size(&dir)?;
            remove_staging(&dir)?;
            quota.release(staged);
            Ok(())
        })
        .await
        .map_err(join_error)??;
        Ok(())
    }
}

#[async_trait::async_trait]
impl StreamStore for LocalStore {
    async fn offset(&self, key: &ObjectKey, size: u64) -> Result<u64, StoreError> {
        let (object, paths) = (self.path(key), self.stream_paths(key));
        tokio::task::spawn_blocking(move || -> Result<u64, StoreError> {
            if object.exists() {
                return Ok(size);
            }
            Ok(standing(&paths.dir)?.1)
        })
        .await
        .map_err(join_error)?
    }

    async fn append(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        offset: u64,
        body: ByteStream,
    ) -> Result<Appended, StoreError> {
        let dest = self.path(key);
        refuse_if_there(&dest).await?;
        // Refusals decided before any byte is read, in this order: another
        // writer of this upload here, no transfer slot, another writer in
        // another process, another offset, no room for the rest.
        let mut guard = self.begin_upload(key, 0)?;
        let _slot = self.transfer_slot(key)?;
        let paths = self.stream_paths(key);
        let open = tokio::task::spawn_blocking(move || Open::at_checkpoint(paths))
            .await
            .map_err(join_error)??;
        if open.at != offset {
            return Err(StoreError::Offset { at: open.at });
        }
        self.reserve(&mut guard, size - offset)?;
        let claim = guard.claim();
        let writer = Writer {
            open: Some(open),
            guard,
            start: offset,
            quota: self.quota.clone(),
        };

        let (writer, ending) = pump(writer, &claim, body, offset, size).await?;
        let kept = tokio::task::spawn_blocking(move || writer.settle(ending, size, sha256, &dest))
            .await
            .map_err(join_error)??;
        Ok(Appended {
            offset: kept,
            complete: kept == size,
        })
    }
}

/// One append's body, from `offset` of an upload of `size` bytes, written
/// through `writer` as a whole PUT is written (`pump::pump`). A frame past
/// the upload's length stops it, and a delete (the claim doomed) at once.
/// The writer comes back with how the body ended.
async fn pump(
    writer: Writer,
    claim: &Claim,
    body: ByteStream,
    offset: u64,
    size: u64,
) -> Result<(Writer, Ending), StoreError> {
    let mut received = offset;
    let mut past_end = false;
    // Nothing of a frame past the end is written, nor anything after the
    // last checkpoint.
    let admit = |chunk: &[u8]| {
        received += chunk.len() as u64;
        past_end = received > size;
        !past_end
    };
    let (writer, flow) = pump::pump(writer, Writer::write, body, admit, claim.doomed()).await?;
    let ending = match flow {
        _ if claim.is_doomed() => Ending::Doomed,
        Flow::Stopped if past_end => Ending::PastEnd,
        Flow::Stopped => Ending::Doomed,
        Flow::Ended(broke) => Ending::Ended { broke },
    };
    Ok((writer, ending))
}
