//! Objects in a directory: `<root>/objects/<key>`, written through `<root>/tmp`.
//!
//! A body is streamed to a temporary file on a blocking thread (hashing as it
//! goes), synced, and only then linked into place with a no-clobber rename,
//! so a partial or unverified object is never visible and the first complete
//! upload wins, across processes.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;
use tokio::sync::mpsc;

use super::small::SmallObjects;
use super::{ByteStream, ObjectInfo, ObjectStore, StoreError};
use crate::file::ObjectKey;
use crate::sha::{Sha256, Verifier};

/// Chunk size for reads and the write buffer: large enough to keep syscalls
/// few, small enough that memory per transfer stays a small constant.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the network and the disk thread.
const QUEUE: usize = 8;

/// A directory of objects with a quota on the bytes it holds.
#[derive(Debug, Clone)]
pub struct LocalStore {
    objects: PathBuf,
    tmp: PathBuf,
    quota: u64,
    small: SmallObjects,
}

impl LocalStore {
    /// Opens (creating if needed) a store under `root`.
    pub fn open(root: &Path, quota: u64) -> Result<Self, StoreError> {
        let objects = root.join("objects");
        let tmp = root.join("tmp");
        std::fs::create_dir_all(&objects)?;
        std::fs::create_dir_all(&tmp)?;
        Ok(Self {
            small: SmallObjects::open(&root.join("records.sqlite3"))?,
            objects,
            tmp,
            quota,
        })
    }

    fn path(&self, key: &ObjectKey) -> PathBuf {
        // Keys are built by `FileMeta::object_key` from a hash, a parsed file
        // id and a sanitized name, so they are always relative and plain.
        self.objects.join(key.as_str())
    }

    /// Bytes held: stored objects plus uploads in progress.
    pub fn used_bytes(&self) -> io::Result<u64> {
        Ok(dir_size(&self.objects)? + dir_size(&self.tmp)?)
    }

    /// Deletes objects older than `max_age` and temporary files left by
    /// uploads that died. Returns how many objects were removed.
    pub fn sweep(&self, max_age: Duration) -> Result<usize, StoreError> {
        self.small.sweep(max_age.as_secs() as i64)?;
        let cutoff = SystemTime::now() - max_age;
        let mut removed = 0;
        for entry in walk(&self.objects)? {
            if entry.1.modified()? < cutoff {
                std::fs::remove_file(&entry.0)?;
                // Drop the now-empty `<file_id>` directory; ignore failure
                // (another process may be writing a sibling).
                if let Some(dir) = entry.0.parent() {
                    let _ = std::fs::remove_dir(dir);
                }
                removed += 1;
            }
        }
        for entry in walk(&self.tmp)? {
            if entry.1.modified()? < SystemTime::now() - Duration::from_secs(24 * 3600) {
                std::fs::remove_file(&entry.0)?;
            }
        }
        Ok(removed)
    }

    fn check_room(&self, needed: u64) -> Result<(), StoreError> {
        let used = self.used_bytes()?;
        if used.saturating_add(needed) > self.quota {
            return Err(StoreError::QuotaExceeded {
                used,
                quota: self.quota,
                needed,
            });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ObjectStore for LocalStore {
    async fn head(&self, key: &ObjectKey) -> Result<Option<ObjectInfo>, StoreError> {
        match tokio::fs::metadata(self.path(key)).await {
            Ok(m) => Ok(Some(ObjectInfo {
                size: m.len(),
                sha256: None,
                created_at: unix(m.modified()?),
                version: None,
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
        mut body: ByteStream,
    ) -> Result<(), StoreError> {
        let dest = self.path(key);
        {
            let this = self.clone();
            let dest = dest.clone();
            tokio::task::spawn_blocking(move || {
                if dest.exists() {
                    return Err(StoreError::AlreadyExists);
                }
                this.check_room(size)
            })
            .await
            .map_err(join_error)??;
        }

        let tmp = tempfile::NamedTempFile::new_in(&self.tmp)?;
        let (tx, mut rx) = mpsc::channel::<Bytes>(QUEUE);
        let writer = tokio::task::spawn_blocking(move || {
            let mut verifier = Verifier::new(size, sha256);
            let mut out = BufWriter::with_capacity(CHUNK, tmp);
            while let Some(chunk) = rx.blocking_recv() {
                verifier.update(&chunk)?;
                out.write_all(&chunk)?;
            }
            verifier.finish()?;
            let tmp = out.into_inner().map_err(|e| e.into_error())?;
            tmp.as_file().sync_all()?;
            Ok::<_, StoreError>(tmp)
        });

        let mut body_error = None;
        while let Some(chunk) = body.next().await {
            match chunk {
                // A closed channel means the writer stopped on an error,
                // which joining it below reports.
                Ok(chunk) => {
                    if tx.send(chunk).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    body_error = Some(e);
                    break;
                }
            }
        }
        drop(tx);
        let written = writer.await.map_err(join_error)?;
        if let Some(e) = body_error {
            // The temporary file is removed when `written` drops.
            return Err(StoreError::Body(e));
        }
        let tmp = written?;

        tokio::task::spawn_blocking(move || {
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
        .map_err(join_error)?
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
        Ok(Some(read_stream(file)))
    }

    async fn put_small(&self, key: &ObjectKey, bytes: Bytes) -> Result<(), StoreError> {
        self.small.put(key, bytes).await
    }

    async fn get_small(&self, key: &ObjectKey) -> Result<Option<Bytes>, StoreError> {
        self.small.get(key).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectKey>, StoreError> {
        self.small.list(prefix).await
    }
}

/// Streams a file from a blocking thread, a bounded number of chunks ahead.
fn read_stream(mut file: File) -> ByteStream {
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(QUEUE);
    tokio::task::spawn_blocking(move || {
        loop {
            let mut buf = BytesMut::zeroed(CHUNK);
            let chunk = match file.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    Ok(buf.freeze())
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let stop = chunk.is_err();
            // The reader went away: stop reading.
            if tx.blocking_send(chunk).is_err() || stop {
                return;
            }
        }
    });
    tokio_stream(rx)
}

fn tokio_stream<T: Send + 'static>(
    rx: mpsc::Receiver<T>,
) -> futures_util::stream::BoxStream<'static, T> {
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
        .boxed()
}

fn join_error(e: tokio::task::JoinError) -> StoreError {
    StoreError::Io(io::Error::other(e))
}

fn unix(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
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
    Ok(walk(dir)?.iter().map(|(_, m)| m.len()).sum())
}
