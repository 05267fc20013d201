//! The object store: where file bytes live.
//!
//! Two implementations: [`LocalStore`] (a directory) and, in aws mode, S3.
//! Both guarantee what the service relies on: an object becomes visible only
//! complete and verified, a key is written at most once, and reads stream.
//! A store says once how clients reach its bytes ([`Access`]): directly,
//! through presigned URLs, or proxied through sluice's own routes.
//!
//! Nothing here knows of the service: this module sits below it.

#[cfg(feature = "local")]
mod local;

#[cfg(feature = "local")]
pub use local::LocalStore;

use std::fmt;
use std::io;

use bytes::Bytes;
use futures_util::stream::BoxStream;

use crate::file::ObjectKey;
use crate::sha::{Mismatch, Sha256};

/// A stream of chunks: an upload body, or an object being read.
pub type ByteStream = BoxStream<'static, io::Result<Bytes>>;

/// What the store knows about an object without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Size in bytes.
    pub size: u64,
    /// The digest, where the store recorded one it checked (S3's
    /// whole-object checksum); `None` where only reading the bytes can tell.
    pub sha256: Option<Sha256>,
    /// The object's version, where the store keeps versions (S3).
    pub version: Option<String>,
    /// The object's entity tag, where the store gives one: a ranged read
    /// pinned to it ([`ObjectStore::get_range`]) never mixes two objects.
    pub etag: Option<String>,
}

/// What the store can tell, without reading, of an object against the
/// size and sha256 a file pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// The size matches and the store recorded the same digest.
    Matches,
    /// The size matches; the store records no digest, so only reading the
    /// bytes can tell.
    Unverified,
    /// Another size, or a recorded digest that differs.
    Differs,
}

impl ObjectInfo {
    /// How this object stands against what `file` pins.
    pub fn pin(&self, file: &crate::file::FileMeta) -> Pin {
        match self.sha256 {
            _ if self.size != file.size => Pin::Differs,
            Some(d) if d == file.sha256 => Pin::Matches,
            Some(_) => Pin::Differs,
            None => Pin::Unverified,
        }
    }
}

/// A presigned request: the URL and exactly the headers the client must send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presigned {
    /// The URL, with its signature.
    pub url: String,
    /// Headers the signature covers (and the client must therefore send).
    pub headers: Vec<(String, String)>,
}

/// What a presigned download serves the object as.
#[derive(Debug, Clone, Copy)]
pub struct DownloadAs<'a> {
    /// `Content-Disposition` of the response.
    pub content_disposition: &'a str,
    /// `Content-Type` of the response.
    pub content_type: &'a str,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Storing `needed` more bytes would pass the quota.
    #[error("the store is full: {used} of {quota} bytes used, {needed} more requested")]
    QuotaExceeded {
        /// Bytes already stored.
        used: u64,
        /// The configured quota.
        quota: u64,
        /// The size of the refused object.
        needed: u64,
    },
    /// An object is already stored under this key.
    #[error("an object is already stored under this key")]
    AlreadyExists,
    /// A part of an upload in parts is not stored (or not of its planned
    /// size) yet.
    #[error("part {0} has not been uploaded")]
    MissingPart(u32),
    /// The object is no longer the one a read was pinned to (its entity
    /// tag changed): nothing was read.
    #[error("the object changed")]
    Changed,
    /// Refused for now; the same request may succeed later.
    #[error("{0}")]
    Busy(Busy),
    /// An append to a resumable upload at another offset than the one it
    /// stands at: nothing was written.
    #[error("this upload stands at byte {at}")]
    Offset {
        /// Where the upload stands.
        at: u64,
    },
    /// A body that went past the upload's pinned length: nothing of this
    /// request past the last checkpoint was kept.
    #[error("the body goes past the upload's {size} bytes")]
    PastEnd {
        /// The upload's pinned length.
        size: u64,
    },
    /// The object was deleted while its upload was under way: nothing of
    /// the upload was kept.
    #[error("the file was deleted while it was being uploaded")]
    Gone,
    /// The body did not match its pinned size or digest; nothing was stored.
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    /// Reading the request body failed (the client went away); nothing was stored.
    #[error("the upload body could not be read: {0}")]
    Body(#[source] io::Error),
    /// The storage cannot answer right now (out of reach, throttling,
    /// refusing access); nothing was stored or read.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The storage itself failed. A full disk is `ErrorKind::StorageFull`.
    #[error("storage failed: {0}")]
    Io(#[from] io::Error),
}

/// Why a transfer was refused for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Busy {
    /// Another upload of the same link is in progress.
    #[error("an upload to this link is already in progress")]
    Upload,
    /// The parts of this upload are being joined and proven.
    #[error("this upload's parts are already being joined and proven")]
    Completing,
    /// Every transfer slot is taken.
    #[error("too many transfers are in progress")]
    Transfers,
    /// The owner's share of the transfer slots is taken.
    #[error("too many of your transfers are in progress")]
    YourTransfers,
    /// Another batch of the owner's is being admitted now.
    #[error("another batch of your files is being issued now")]
    Admitting,
    /// The zip asked for is still being written into the store.
    #[error("this zip is still being built")]
    Zipping,
    /// The receipt keys (in KMS) did not answer.
    #[error("the receipt keys cannot be read right now")]
    Keys,
}

/// Where file bytes live: the core every store has. Keys are written
/// once; readers stream. What a store can do beyond this it declares:
/// how clients reach its bytes ([`ObjectStore::access`]: presigned URLs
/// through a [`Presigner`], or sluice's own routes) and whether it takes
/// uploads in parts ([`ObjectStore::parts`]).
#[async_trait::async_trait]
pub trait ObjectStore: Send + Sync + fmt::Debug {
    /// Size (and digest, if recorded) of the object, or `None` if absent.
    async fn head(&self, key: &ObjectKey) -> Result<Option<ObjectInfo>, StoreError>;

    /// Stores `body` under `key` if it is exactly `size` bytes with digest
    /// `sha256` and nothing is stored there yet. Room is checked before the
    /// body is read; on any failure nothing is left behind.
    async fn put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError>;

    /// The object's bytes as a stream, or `None` if absent.
    async fn get(&self, key: &ObjectKey) -> Result<Option<ByteStream>, StoreError>;

    /// Bytes `range` of the object, or `None` if absent; where `etag` is
    /// given, only while the object is still the one it names
    /// ([`StoreError::Changed`] otherwise).
    async fn get_range(
        &self,
        key: &ObjectKey,
        range: std::ops::Range<u64>,
        etag: Option<&str>,
    ) -> Result<Option<ByteStream>, StoreError>;

    /// Removes the object (and any upload in parts to it); nothing there
    /// is not an error.
    async fn delete(&self, key: &ObjectKey) -> Result<(), StoreError>;

    /// Removes the object at `key` for good (a file deleted): on a store
    /// that keeps versions, the version a download link could have been
    /// given as well. By default [`ObjectStore::delete`].
    async fn purge(&self, key: &ObjectKey) -> Result<(), StoreError> {
        self.delete(key).await
    }

    /// Copies the object at `from`, described by `info` (and only while it
    /// is still the object `info.etag` names, where there is one), to the
    /// new key `to`, inside the store: no byte passes through sluice. What
    /// is stored at `to` then, or `None` where this store cannot copy that
    /// object (the caller has its bytes sent again). By default `None`.
    async fn copy(
        &self,
        from: &ObjectKey,
        to: &ObjectKey,
        info: &ObjectInfo,
    ) -> Result<Option<ObjectInfo>, StoreError> {
        let _ = (from, to, info);
        Ok(None)
    }

    /// How clients reach this store's bytes.
    fn access(&self) -> Access<'_>;

    /// Uploads in parts, where the store takes them.
    fn parts(&self) -> Option<&dyn PartStore> {
        None
    }

    /// One resumable stream per upload, where sluice receives the bytes
    /// and the store can append them.
    /// Where bytes may wait before they are stored, counted against this
    /// store's quota ([`Scratch`]); `None` for a store without a quota (the
    /// caller keeps them in a private directory of its own).
    fn scratch(&self) -> Option<Scratch> {
        None
    }

    fn stream(&self) -> Option<&dyn StreamStore> {
        None
    }
}

/// A store's resumable uploads, where sluice receives the bytes: each
/// upload one stream, appended at the offset it stands at and hashed once
/// as it arrives, its hash state checkpointed with the bytes (at the end
/// of each append and every [`STREAM_CHECKPOINT`] bytes within one), so a
/// resume hashes only the bytes it sends and never reads the stored ones.
/// The last byte decides: the pinned digest makes the object, any other
/// frees the bytes.
#[async_trait::async_trait]
pub trait StreamStore: Send + Sync {
    /// The bytes of the upload to `key` kept so far: `size` once the
    /// object is stored.
    async fn offset(&self, key: &ObjectKey, size: u64) -> Result<u64, StoreError>;

    /// Appends `body` at `offset` to the upload to `key`, of exactly
    /// `size` bytes of digest `sha256`. Another offset is
    /// [`StoreError::Offset`] with nothing written; another writer of the
    /// same upload [`Busy::Upload`]; bytes past `size`
    /// [`StoreError::PastEnd`]; a whole whose digest is not `sha256`
    /// [`StoreError::Mismatch`], its bytes freed. A body that breaks off
    /// keeps what arrived up to then.
    async fn append(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        offset: u64,
        body: ByteStream,
    ) -> Result<Appended, StoreError>;
}

/// How often, at least, a long append is checkpointed.
pub const STREAM_CHECKPOINT: u64 = 64 * 1024 * 1024;

/// Where an append left its upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The bytes kept now.
    pub offset: u64,
    /// Whether they are the whole file, proven and stored.
    pub complete: bool,
}

/// A store's uploads in parts: each part stored once and checked against
/// its own digest, listed, and joined into the object.
#[async_trait::async_trait]
pub trait PartStore: Send + Sync {
    /// Begins the upload in parts to `key`, of an object of
    /// `content_type`, once: a second call finds the same upload (so that
    /// parts asked for concurrently all join it).
    async fn begin(&self, key: &ObjectKey, content_type: &str) -> Result<(), StoreError>;

    /// Stores part `n` of the upload to `key`, the file's bytes from
    /// `offset`: exactly `size` bytes of digest `sha256`, once.
    #[allow(clippy::too_many_arguments)]
    async fn put_part(
        &self,
        key: &ObjectKey,
        n: u32,
        offset: u64,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError>;

    /// The parts of the upload to `key` stored so far, in order.
    async fn stored_parts(&self, key: &ObjectKey) -> Result<Vec<u32>, StoreError>;

    /// Whether part `n` of the upload to `key` is stored.
    async fn has_part(&self, key: &ObjectKey, n: u32) -> Result<bool, StoreError> {
        Ok(self.stored_parts(key).await?.contains(&n))
    }

    /// Joins the parts of `plan` into the object `key`, declared `sha256`.
    /// A missing part is [`StoreError::MissingPart`], and nothing changes.
    /// A store that proves the whole while joining answers
    /// [`Joined::Proven`], or [`StoreError::Mismatch`] with the parts
    /// discarded; one that does not answers [`Joined::Unproven`], and the
    /// service proves it. Joined already: the same answer again.
    async fn join(
        &self,
        key: &ObjectKey,
        plan: &crate::multipart::Plan,
        sha256: Sha256,
    ) -> Result<Joined, StoreError>;

    /// Discards the upload in parts to `key` and anything joined from it
    /// (no upload of these parts can ever match); the same upload may then
    /// begin again. Nothing there is not an error.
    async fn abort(&self, key: &ObjectKey, plan: &crate::multipart::Plan)
    -> Result<(), StoreError>;
}

/// What joining an upload's parts gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joined {
    /// Joined, and proven by the store while it joined: the object is the
    /// file declared.
    Proven,
    /// Joined; the store did not read the whole (S3 keeps a digest of the
    /// parts' digests only), so the service proves it, reading the object
    /// pinned to its entity tag.
    Unproven {
        /// The joined object's entity tag.
        etag: String,
    },
}

/// How clients move a store's bytes.
#[derive(Clone, Copy)]
pub enum Access<'a> {
    /// Straight to and from the store (S3), through presigned URLs:
    /// sluice never streams the bytes.
    Direct(&'a dyn Presigner),
    /// Through sluice's own `PUT /u/{token}` and streamed
    /// `GET /l/{token}`, which verify every byte.
    Proxied,
}

impl fmt::Debug for Access<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Direct(_) => "Direct",
            Access::Proxied => "Proxied",
        })
    }
}

/// A store that clients reach directly: it signs requests for them.
#[async_trait::async_trait]
pub trait Presigner: Send + Sync {
    /// Whether the store itself refuses a presigned PUT (or part) whose
    /// body is not the signed size and SHA-256 (S3's checksum headers).
    /// A store that signs only MD5 or CRC cannot: the service then proves
    /// each object once by reading it before it counts as uploaded.
    fn checks_sha256(&self) -> bool {
        true
    }

    /// A presigned PUT of exactly `size` bytes of digest `sha256` (checked
    /// by the store where [`Presigner::checks_sha256`]), accepted once.
    async fn presign_put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        content_type: &str,
        ttl: std::time::Duration,
    ) -> Result<Presigned, StoreError>;

    /// A presigned PUT of part `n` of the upload in parts to `key`
    /// ([`PartStore::begin`]): exactly `size` bytes of digest `sha256`.
    async fn presign_part(
        &self,
        key: &ObjectKey,
        n: u32,
        size: u64,
        sha256: Sha256,
        ttl: std::time::Duration,
    ) -> Result<Presigned, StoreError>;

    /// A presigned GET of the object as `info` describes it (pinned to its
    /// version where there is one).
    async fn presign_get(
        &self,
        key: &ObjectKey,
        info: &ObjectInfo,
        download: DownloadAs<'_>,
        ttl: std::time::Duration,
    ) -> Result<String, StoreError>;
}

/// Passes `stream` through, checking it against `size` and `sha256`, and
/// holding the latest chunk back: the final chunk is released only once the
/// whole stream verified, otherwise the stream ends in an error (which cuts
/// an HTTP response short, so the client never holds a complete wrong file).
pub fn verified(stream: ByteStream, size: u64, sha256: Sha256) -> ByteStream {
    use futures_util::StreamExt as _;
    let state = Some((stream, crate::sha::HoldBack::new(size, sha256)));
    futures_util::stream::unfold(state, |state| async move {
        let (mut stream, mut hold) = state?;
        loop {
            match stream.next().await {
                Some(Ok(chunk)) => match hold.push(chunk) {
                    Ok(Some(release)) => return Some((Ok(release), Some((stream, hold)))),
                    Ok(None) => continue,
                    Err(m) => return Some((Err(io::Error::other(m)), None)),
                },
                Some(Err(e)) => return Some((Err(e), None)),
                None => {
                    return match hold.finish() {
                        Ok(Some(last)) => Some((Ok(last), None)),
                        Ok(None) => None,
                        Err(m) => {
                            tracing::warn!(error = %m, "object failed verification while streaming");
                            Some((Err(io::Error::other(m)), None))
                        }
                    };
                }
            }
        }
    })
    .boxed()
}

/// Passes `stream` through without its first `n` bytes.
pub fn skip(stream: ByteStream, n: u64) -> ByteStream {
    use futures_util::StreamExt as _;
    if n == 0 {
        return stream;
    }
    let mut left = n;
    stream
        .filter_map(move |item| {
            let out = match item {
                Ok(mut chunk) if left > 0 => {
                    let cut = left.min(chunk.len() as u64);
                    left -= cut;
                    let rest = chunk.split_off(cut as usize);
                    (!rest.is_empty()).then_some(Ok(rest))
                }
                other => Some(other),
            };
            std::future::ready(out)
        })
        .boxed()
}

/// Passes the first `n` bytes of `stream` through, then ends (dropping
/// `stream`, and whatever it holds, at once).
pub fn take(stream: ByteStream, n: u64) -> ByteStream {
    use futures_util::StreamExt as _;
    futures_util::stream::unfold((stream, n), |(mut stream, left)| async move {
        if left == 0 {
            return None;
        }
        match stream.next().await? {
            Ok(mut chunk) => {
                if chunk.len() as u64 > left {
                    chunk.truncate(left as usize);
                }
                let left = left - chunk.len() as u64;
                Some((Ok(chunk), (stream, left)))
            }
            Err(e) => Some((Err(e), (stream, 0))),
        }
    })
    .boxed()
}

/// Creates `dir` if needed, and makes it its owner's alone (0700): a data
/// directory holds every user's files, the ledger and the master secret.
pub fn private_dir(dir: &std::path::Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// A store's quota on the bytes it holds, and its running figure: the
/// bytes stored plus the bytes reserved by what is on its way in (an
/// upload, an import's spool). The one place that reserves against the
/// quota; clones share the figure.
#[derive(Debug, Clone)]
pub struct Quota {
    limit: u64,
    used: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Quota {
    /// A quota of `limit` bytes, `used` of them taken now.
    pub fn new(limit: u64, used: u64) -> Self {
        Self {
            limit,
            used: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(used)),
        }
    }

    /// Reserves `bytes` more, or refuses (nothing reserved) when they do
    /// not fit.
    pub fn reserve(&self, bytes: u64) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used.saturating_add(bytes) <= self.limit).then_some(used + bytes)
            })
            .map(drop)
            .map_err(|used| StoreError::QuotaExceeded {
                used,
                quota: self.limit,
                needed: bytes,
            })
    }

    /// Gives `bytes` back, never below zero: another process sharing the
    /// directory may have stored what this one sweeps, bytes this process
    /// never counted, so the figure may already be lower than a
    /// reservation this process still holds.
    pub fn release(&self, bytes: u64) {
        use std::sync::atomic::Ordering;
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                Some(u.saturating_sub(bytes))
            });
    }

    /// The bytes counted now.
    pub fn used(&self) -> u64 {
        self.used.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Where bytes may wait before they are stored (an import's spool): a
/// private directory of the store's, and the quota they count against as
/// they grow.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// The directory (the store's own, private: 0700).
    pub dir: std::path::PathBuf,
    /// The store's quota.
    pub quota: Quota,
}

/// Passes `stream` through, failing with `TimedOut` when it yields nothing
/// for `limit`: a stalled client or object read ends instead of waiting.
pub fn idle_timeout(stream: ByteStream, limit: std::time::Duration) -> ByteStream {
    use futures_util::StreamExt as _;
    futures_util::stream::unfold(Some(stream), move |state| async move {
        let mut stream = state?;
        match tokio::time::timeout(limit, stream.next()).await {
            Ok(Some(item)) => {
                let done = item.is_err();
                Some((item, (!done).then_some(stream)))
            }
            Ok(None) => None,
            Err(_) => Some((
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no data within the time limit",
                )),
                None,
            )),
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt as _;

    #[tokio::test]
    async fn skipping_cuts_across_chunks() {
        let chunks = || ["ab", "cde", "", "f"].map(|c| Ok(Bytes::from(c)));
        for (n, want) in [(0, "abcdef"), (1, "bcdef"), (4, "ef"), (6, ""), (9, "")] {
            let stream = futures_util::stream::iter(chunks()).boxed();
            let got: Vec<u8> = skip(stream, n).map(|c| c.unwrap().to_vec()).concat().await;
            assert_eq!(String::from_utf8(got).unwrap(), want, "skip {n}");
        }
    }

    #[tokio::test]
    async fn taking_cuts_across_chunks_and_stops_reading() {
        let chunks = || ["ab", "cde", "", "f"].map(|c| Ok(Bytes::from(c)));
        for (n, want) in [(0, ""), (1, "a"), (4, "abcd"), (6, "abcdef"), (9, "abcdef")] {
            let stream = futures_util::stream::iter(chunks()).boxed();
            let got: Vec<u8> = take(stream, n).map(|c| c.unwrap().to_vec()).concat().await;
            assert_eq!(String::from_utf8(got).unwrap(), want, "take {n}");
        }
        // Never asks past what it takes: the rest may be an error.
        let failing = futures_util::stream::iter([
            Ok(Bytes::from("abc")),
            Err(io::Error::other("not to be read")),
        ])
        .boxed();
        let got: Vec<_> = take(failing, 3).collect().await;
        assert_eq!(got.len(), 1);
        assert!(got[0].is_ok());
    }

    #[tokio::test]
    async fn a_stalled_stream_times_out() {
        let stalled = futures_util::stream::pending::<io::Result<Bytes>>().boxed();
        let got = idle_timeout(stalled, std::time::Duration::from_millis(50))
            .next()
            .await
            .unwrap();
        assert_eq!(got.unwrap_err().kind(), io::ErrorKind::TimedOut);
    }
}
