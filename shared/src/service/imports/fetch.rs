//! One import's work, in the background: a turn among the fetches at once →
//! the guarded fetch ([`crate::fetch::Fetcher::open`]) → with a declared
//! size and digest, the body streamed straight into the store, which checks
//! both and keeps nothing on a mismatch; otherwise the body hashed on its way
//! into a spool file, cut past the import limit, then the file issued under
//! the caller's caps with what arrived and stored from the spool → the file
//! marked ready. All of it under the import's deadline. A failure at any
//! step rejects the import with its reason, and nothing is kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use url::Url;

use super::spool::{Refused, Spool};
use super::{ImportRequest, Imports, Outcome};
use crate::fetch::{Fetched, Fetcher, host_of, plain_name, url_filename};
use crate::file::{FileId, FileMeta};
use crate::service::intake::Intake;
use crate::service::uploads::issue::{Counted, UploadRequest, parse_content_type};
use crate::sha::{Hasher, Sha256};
use crate::store::PartStore;
use crate::store::{ByteStream, StoreError};

/// One import to run.
pub(super) struct Work {
    pub(super) imports: Imports,
    pub(super) fetcher: Arc<Fetcher>,
    pub(super) owner: String,
    pub(super) id: FileId,
    pub(super) url: Url,
    pub(super) req: ImportRequest,
    pub(super) declared: Option<FileMeta>,
    pub(super) received: Arc<AtomicU64>,
    /// The caller's turn among their imports under way, given back at
    /// the end.
    pub(super) turn: Option<u32>,
}

impl Work {
    /// Runs the import to its end.
    pub(super) async fn run(self) -> Outcome {
        let _turn = self.imports.fetches.take(&self.owner).await;
        let deadline = self.imports.settings.deadline;
        let source = host_of(&self.url);
        let result = match tokio::time::timeout(deadline, self.fetch_and_store()).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "the import did not finish within {} s; nothing was kept",
                deadline.as_secs()
            )),
        };
        let outcome = match result {
            Ok(file) => {
                tracing::info!(file_id = %file.id, %source, size = file.size, "import stored");
                crate::telemetry::imported("ready");
                Outcome::Ready(file)
            }
            Err(why) => {
                tracing::info!(file_id = %self.id, %source, reason = %why, "import rejected");
                crate::telemetry::imported("rejected");
                self.forget().await;
                Outcome::Rejected(why)
            }
        };
        self.imports
            .note(&self.id, &self.owner, &source, &outcome)
            .await;
        if let Some(turn) = self.turn {
            self.imports.give_turn(&self.owner, turn, &self.id).await;
        }
        outcome
    }

    async fn fetch_and_store(&self) -> Result<FileMeta, String> {
        let fetched = self
            .fetcher
            .open(&self.url)
            .await
            .map_err(|e| e.to_string())?;
        let source = host_of(&fetched.url);
        match &self.declared {
            Some(file) => {
                if let Some(len) = fetched.length
                    && len != file.size
                {
                    return Err(format!(
                        "{source} sends {len} bytes, not the {} declared; nothing was kept",
                        file.size
                    ));
                }
                let body = self.counted(fetched.body);
                match self.store_as(file, body).await {
                    // Stored by another run of this job (a delivery
                    // repeated): the store keeps only the file declared.
                    Ok(()) | Err(StoreError::AlreadyExists) => {}
                    Err(e) => return Err(refused(&source, e)),
                }
                self.imports
                    .files
                    .gate()
                    .stored_now(file, None)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(file.clone())
            }
            None => self.spooled(fetched, &source).await,
        }
    }

    /// A file whose size or digest was not declared: hashed into a spool
    /// ([`Spool`]: private, counted against the quota as it grows), then
    /// issued as what arrived. The caps are checked before the first byte
    /// (with the length the server declares) and as the body grows: it is
    /// cut as soon as it passes them.
    async fn spooled(&self, fetched: Fetched, source: &str) -> Result<FileMeta, String> {
        let room = self
            .imports
            .limits
            .room(&self.owner)
            .await
            .map_err(|e| e.to_string())?;
        let bound = Bound {
            source,
            max: self.imports.max_bytes(),
            room,
        };
        if let Some(len) = fetched.length {
            bound.allows(len, true)?;
            if let Some(size) = self.req.size
                && size != len
            {
                return Err(format!(
                    "{source} sends {len} bytes, not the {size} declared; nothing was kept"
                ));
            }
        }
        let imports = &self.imports;
        let mut spool = Spool::create(&*imports.store, &imports.settings.spool, &self.id)
            .await
            .map_err(|e| format!("could not keep the bytes: {e}"))?;
        let (filename, content_type) = self.named(&fetched);
        let (size, sha256) = self.spool_body(&mut spool, fetched.body, &bound).await?;
        let request = UploadRequest {
            filename,
            size,
            sha256,
            content_type,
        };
        let (file, _, _) = self
            .imports
            .uploads
            .issue_file_as(&self.owner, request, self.id.clone(), Counted::CapsOnly)
            .await
            .map_err(|e| e.to_string())?;
        let body = spool
            .read()
            .await
            .map_err(|e| format!("could not read the bytes kept: {e}"))?;
        // The spool is removed once the put has read it.
        match self.store_as(&file, body).await {
            Ok(()) | Err(StoreError::AlreadyExists) => {}
            Err(e) => return Err(refused(source, e)),
        }
        self.imports
            .files
            .gate()
            .stored_now(&file, None)
            .await
            .map_err(|e| e.to_string())?;
        Ok(file)
    }

    /// The fetched `body` into `spool`, counted and hashed on the way,
    /// within `bound`: its size and SHA-256, checked against what the
    /// request declared.
    async fn spool_body(
        &self,
        spool: &mut Spool,
        body: ByteStream,
        bound: &Bound<'_>,
    ) -> Result<(u64, Sha256), String> {
        let source = bound.source;
        let mut hash = Hasher::new();
        let mut size = 0u64;
        let mut body = self.counted(body);
        while let Some(chunk) = body.next().await {
            let chunk = chunk
                .map_err(|e| format!("reading from {source} failed: {e}; nothing was kept"))?;
            size += chunk.len() as u64;
            bound.allows(size, false)?;
            hash.update(&chunk);
            spool.write(&chunk).await.map_err(|e| match e {
                Refused::Full => {
                    "the server's store is full: the import was cut, nothing was kept".to_owned()
                }
                Refused::Io(e) => format!("could not keep the bytes: {e}"),
            })?;
        }
        if let Some(declared) = self.req.size
            && declared != size
        {
            return Err(format!(
                "{source} sent {size} bytes, not the {declared} declared; nothing was kept"
            ));
        }
        let sha256 = hash.finish();
        if let Some(declared) = self.req.sha256
            && declared != sha256
        {
            return Err(format!(
                "{source} sent bytes whose sha256 is {sha256}, not the {declared} declared; nothing was kept"
            ));
        }
        Ok((size, sha256))
    }

    /// The name and type of the file an import keeps: the name the request
    /// gives, else the answer's, else the URL's; the type the request
    /// gives, else a well-formed one the answer names.
    fn named(&self, fetched: &Fetched) -> (String, Option<String>) {
        let filename = kept_name([
            self.req.filename.clone(),
            fetched.disposition_name.clone(),
            url_filename(&fetched.url),
            url_filename(&self.url),
        ]);
        let content_type = self.req.content_type.clone().or_else(|| {
            fetched
                .content_type
                .as_deref()
                .filter(|ct| parse_content_type(ct).is_ok())
                .filter(|ct| !ct.starts_with("application/octet-stream"))
                .map(str::to_owned)
        });
        (filename, content_type)
    }

    /// Stores `body` as `file`'s object: in one put where the store takes
    /// it so (it checks size and digest; a direct store holds the body
    /// whole for its one PUT, so only up to the single-PUT size), else in
    /// parts ([`Work::put_in_parts`]).
    async fn store_as(&self, file: &FileMeta, body: ByteStream) -> Result<(), StoreError> {
        let imports = &self.imports;
        match Intake::of(&*imports.store, &imports.transfers, file) {
            Intake::Parts(parts, plan) => self.put_in_parts(parts, file, &plan, body).await,
            Intake::Stream(_) | Intake::Put(_) => {
                imports
                    .store
                    .put(&file.object_key(), file.size, file.sha256, body)
                    .await
            }
        }
    }

    /// `body` into the store's upload in parts (S3), one part at a time:
    /// each part held whole (its SHA-256 goes before it, and the store
    /// checks it), the whole file hashed on the way. A body of another
    /// length or digest is refused before the join, and the upload
    /// discarded; the parts joined are proven by that hash (every byte of
    /// them went through it, each part checked by the store against its
    /// own digest), so the object is recorded proven for its entity tag
    /// without a second read.
    async fn put_in_parts(
        &self,
        parts: &dyn PartStore,
        file: &FileMeta,
        plan: &crate::multipart::Plan,
        mut body: ByteStream,
    ) -> Result<(), StoreError> {
        use crate::sha::Mismatch;
        let proofs = &self.imports.proofs;
        let key = file.object_key();
        parts.begin(&key, &file.content_type).await?;
        let mut whole = Hasher::new();
        let mut carry = bytes::BytesMut::new();
        let mut offset = 0u64;
        let sent = async {
            for n in plan.numbers() {
                let len = plan.len(n).unwrap_or(0) as usize;
                while carry.len() < len {
                    match body.next().await {
                        Some(chunk) => carry.extend_from_slice(&chunk.map_err(StoreError::Body)?),
                        None => {
                            return Err(StoreError::Mismatch(Mismatch::TooShort {
                                expected: file.size,
                                actual: offset + carry.len() as u64,
                            }));
                        }
                    }
                }
                let part = carry.split_to(len).freeze();
                whole.update(&part);
                let digest = crate::sha::Sha256::of(&part);
                let one: ByteStream = Box::pin(futures_util::stream::once(async { Ok(part) }));
                parts
                    .put_part(&key, n, offset, len as u64, digest, one)
                    .await?;
                offset += len as u64;
            }
            while let Some(chunk) = body.next().await {
                if !chunk.map_err(StoreError::Body)?.is_empty() || !carry.is_empty() {
                    return Err(StoreError::Mismatch(Mismatch::TooLong {
                        expected: file.size,
                    }));
                }
            }
            if !carry.is_empty() {
                return Err(StoreError::Mismatch(Mismatch::TooLong {
                    expected: file.size,
                }));
            }
            let actual = whole.finish();
            if actual != file.sha256 {
                return Err(StoreError::Mismatch(Mismatch::Digest {
                    expected: file.sha256,
                    actual,
                }));
            }
            Ok(())
        }
        .await;
        if let Err(e) = sent {
            if let Err(abort) = parts.abort(&key, plan).await {
                tracing::warn!(file_id = %file.id, error = %abort, "an import's parts were not discarded");
            }
            return Err(e);
        }
        let mut held = proofs.hold_proof(file, proofs.budget()).await?;
        let joined = parts.join(&key, plan, file.sha256).await;
        match joined {
            Ok(crate::store::Joined::Proven) => held.proven(None),
            Ok(crate::store::Joined::Unproven { etag }) => held.proven(Some(etag)),
            Err(e) => {
                held.release(proofs).await;
                return Err(e);
            }
        }
        held.release(proofs).await;
        Ok(())
    }

    /// `body`, its bytes counted as they pass, and cut when it arrives
    /// slower than the floor (`SLUICE_IMPORT_MIN_BYTES_PER_SEC`, over each
    /// window of the read timeout): a source that trickles cannot hold one
    /// of the fetches at once until the deadline.
    fn counted(&self, body: ByteStream) -> ByteStream {
        let received = self.received.clone();
        let window = self
            .imports
            .settings
            .timeouts
            .read
            .max(Duration::from_secs(1));
        let floor = self
            .imports
            .settings
            .min_rate
            .saturating_mul(window.as_secs());
        let mut since = (Instant::now(), 0u64);
        Box::pin(body.map(move |chunk| {
            let bytes = chunk.as_ref().map_or(0, |b| b.len() as u64);
            received.fetch_add(bytes, Ordering::Relaxed);
            since.1 += bytes;
            if since.0.elapsed() >= window {
                if since.1 < floor {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "it sent {} bytes in {} s, slower than the least this server takes ({} bytes a second)",
                            since.1,
                            window.as_secs(),
                            floor / window.as_secs()
                        ),
                    ));
                }
                since = (Instant::now(), 0);
            }
            chunk
        }))
    }

    /// A rejected import leaves nothing: a file issued for it is reported
    /// rejected, its record deleted and its bytes purged.
    async fn forget(&self) {
        if let Some(file) = &self.declared {
            self.imports.forget(file).await;
        }
    }
}

/// The name kept for an import: the first of `candidates` that makes a
/// plain file name ([`plain_name`]), else `download`.
pub(super) fn kept_name(candidates: impl IntoIterator<Item = Option<String>>) -> String {
    candidates
        .into_iter()
        .flatten()
        .find_map(|n| plain_name(&n))
        .unwrap_or_else(|| "download".into())
}

/// Why the store refused an import's bytes.
fn refused(source: &str, e: StoreError) -> String {
    match e {
        StoreError::Mismatch(crate::sha::Mismatch::Digest { actual, .. }) => format!(
            "the bytes {source} sent are not the file declared: their sha256 is {actual}; nothing was kept"
        ),
        StoreError::Mismatch(m) => {
            format!("the bytes {source} sent are not the file declared ({m}); nothing was kept")
        }
        other => format!("the bytes could not be stored ({other}); nothing was kept"),
    }
}

/// How many bytes an import may bring: the import limit, and the room the
/// owner's limits leave (pending and stored bytes), said for `source`.
struct Bound<'a> {
    source: &'a str,
    max: u64,
    room: u64,
}

impl Bound<'_> {
    /// `size` bytes from the source (`declared`, or sent so far), within
    /// both bounds, or why not.
    fn allows(&self, size: u64, declared: bool) -> Result<(), String> {
        let Bound { source, max, room } = *self;
        if size > max {
            return Err(if declared {
                format!(
                    "{source} sends {size} bytes, over the import limit of {max}; nothing was fetched"
                )
            } else {
                format!(
                    "{source} sent more than the import limit of {max} bytes: cut, nothing was kept"
                )
            });
        }
        if size > room {
            return Err(format!(
                "{source} sends {size} bytes, more than the {room} your limits leave room for \
                 (pending and stored bytes): nothing was kept"
            ));
        }
        Ok(())
    }
}
