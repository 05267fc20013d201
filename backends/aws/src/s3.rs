//! Objects in S3. Uploads are presigned PUTs that sign `Content-Length`,
//! `x-amz-checksum-sha256`, `If-None-Match: *` and `Content-Type`, so S3
//! itself refuses a body of another size or digest, or a second upload.
//! Downloads are presigned GETs pinned to the object's version.

use std::io;
use std::time::Duration;

use aws_sdk_s3::config::RequestChecksumCalculation;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream as AwsBody;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode, CompletedMultipartUpload, CompletedPart};
use bytes::Bytes;
use futures_util::{StreamExt as _, TryStreamExt as _};
use sluice::sha::Midstate;
use sluice::store::{
    Access, Busy, ByteStream, DownloadAs, Joined, ObjectInfo, ObjectStore, Presigned, Presigner,
    StoreError,
};
use sluice::{ObjectKey, Sha256};

use crate::MAX_GET_TTL;
use sluice::AwsConfig;

/// The most of a joined object the proof reads at once (a ranged GET; a
/// part's size where parts are smaller), keeping its progress after each:
/// a whole number of MiB.
const PROOF_SLICE: u64 = 256 * 1024 * 1024;

/// How long past its proof's budget a completion's lease is held: longer
/// than any request lives (API Gateway ends one at 30 s, Lambda at its
/// timeout), so a lease this old was left by a completion that died.
const LEASE_MARGIN_SECS: i64 = 120;

/// How long S3 may take to join an upload's parts.
const COMPLETE_TIMEOUT: Duration = Duration::from_secs(600);

/// Objects in one S3 bucket.
#[derive(Debug, Clone)]
pub struct S3Store {
    client: aws_sdk_s3::Client,
    bucket: String,
}

/// S3 out of reach, timing out, throttling or failing on its side is "not
/// now" (503): nothing was stored or read, and the same request may succeed
/// later. An unexpected 403 is the deployment's permissions, not the
/// caller's doing: logged with the key, and also answered 503, never 500.
fn s3_error<E>(e: aws_sdk_s3::error::SdkError<E>, key: &str) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static,
{
    use aws_sdk_s3::error::SdkError;
    let status = e.raw_response().map(|r| r.status().as_u16());
    let transient = matches!(
        e,
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_)
    ) || status.is_some_and(|s| s >= 500);
    let text = DisplayErrorContext(e).to_string();
    if status == Some(403) {
        tracing::error!(key, error = %text, "S3 refused access: check the function's IAM policy");
        StoreError::Unavailable(format!("S3 refused access to {key}"))
    } else if transient {
        StoreError::Unavailable(format!("{key}: {text}"))
    } else {
        StoreError::Io(io::Error::other(text))
    }
}

impl S3Store {
    pub(crate) fn new(shared: &aws_config::SdkConfig, aws: &AwsConfig) -> Self {
        let mut config = aws_sdk_s3::config::Builder::from(shared)
            // Only the checksums sluice asks for: otherwise the SDK adds a
            // CRC32 to presigned requests, which no client could match.
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .timeout_config(crate::timeouts());
        if let Some(endpoint) = &aws.s3_endpoint {
            config = config
                .endpoint_url(crate::endpoint(endpoint))
                .force_path_style(true);
        }
        Self {
            client: aws_sdk_s3::Client::from_conf(config.build()),
            bucket: aws.bucket.clone(),
        }
    }

    /// An object of the bucket read whole (the actions catalog, read once
    /// at start), or `None` if absent.
    pub async fn read_whole(&self, key: &str) -> Result<Option<Bytes>, StoreError> {
        let Some(stream) = self.get(&ObjectKey::from_stored(key.to_owned())).await? else {
            return Ok(None);
        };
        let chunks: Vec<Bytes> = stream.try_collect().await.map_err(StoreError::Io)?;
        Ok(Some(chunks.concat().into()))
    }

    /// What is kept beside `key`'s object for an upload in parts: `.<name>`
    /// in the object's own directory (`files/<owner>/<file_id>/`). No safe
    /// name starts with a dot, so it never meets a file; and it is under
    /// `files/`, so the lifecycle rule that expires the file expires it.
    fn beside(key: &ObjectKey, name: &str) -> String {
        let dir = key
            .as_str()
            .rsplit_once('/')
            .map_or(key.as_str(), |(d, _)| d);
        format!("{dir}/.{name}")
    }

    /// A small object kept beside a file's (its upload's id, its proof), as
    /// text, or `None` if absent.
    async fn read_note(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .read_whole(key)
            .await?
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned()))
    }

    /// Keeps `text` beside a file's object, once: `false` if something was
    /// kept there already.
    async fn write_note(&self, key: &str, text: &str) -> Result<bool, StoreError> {
        self.put_note(key, text, true).await
    }

    /// Keeps `text` beside a file's object, replacing what was there.
    async fn replace_note(&self, key: &str, text: &str) -> Result<(), StoreError> {
        self.put_note(key, text, false).await.map(drop)
    }

    /// Puts note `key`; with `once`, only if nothing is there (`false`
    /// then).
    async fn put_note(&self, key: &str, text: &str, once: bool) -> Result<bool, StoreError> {
        match self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(AwsBody::from(text.as_bytes().to_vec()))
            .set_if_none_match(once.then(|| "*".to_owned()))
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if once && precondition_failed(&e) => Ok(false),
            Err(e) => Err(s3_error(e, key)),
        }
    }

    /// Deletes `key`, or leaves it, logged, when S3 refuses: everything
    /// under `files/` expires by the bucket's lifecycle rule, and a lease
    /// left behind is taken over once stale.
    async fn delete_or_leave(&self, key: &str, what: &'static str) {
        if let Err(e) = self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            tracing::warn!(key, what, error = %DisplayErrorContext(e), "could not delete");
        }
    }

    /// The id of the multipart upload to `key`, kept beside it (S3 keeps
    /// none we could find it by: this is what lets any replica, and a rerun
    /// of the upload line, continue the same upload).
    async fn upload_id(&self, key: &ObjectKey) -> Result<Option<String>, StoreError> {
        self.read_note(&Self::beside(key, "upload-id")).await
    }

    /// Begins the multipart upload to `key` and keeps its id beside it, once:
    /// of two begun at once, the first kept wins and the other is aborted.
    async fn begin(&self, key: &ObjectKey, content_type: &str) -> Result<String, StoreError> {
        let note = Self::beside(key, "upload-id");
        if let Some(id) = self.read_note(&note).await? {
            return Ok(id);
        }
        let begun = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(key.as_str())
            .content_type(content_type)
            .checksum_algorithm(ChecksumAlgorithm::Sha256)
            .send()
            .await
            .map_err(|e| s3_error(e, key.as_str()))?;
        let id = begun
            .upload_id()
            .ok_or_else(|| StoreError::Io(io::Error::other("S3 began an upload without an id")))?
            .to_owned();
        if self.write_note(&note, &id).await? {
            tracing::info!(key = %key, "upload in parts begun");
            return Ok(id);
        }
        let _ = self
            .client
            .abort_multipart_upload()
            .bucket(&self.bucket)
            .key(key.as_str())
            .upload_id(&id)
            .send()
            .await;
        self.read_note(&note)
            .await?
            .ok_or_else(|| StoreError::Io(io::Error::other("the upload's id was not kept")))
    }

    /// Every part S3 holds of upload `id` to `key`.
    async fn listed_parts(
        &self,
        key: &ObjectKey,
        id: &str,
    ) -> Result<Vec<aws_sdk_s3::types::Part>, StoreError> {
        let mut parts = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let out = self
                .client
                .list_parts()
                .bucket(&self.bucket)
                .key(key.as_str())
                .upload_id(id)
                .set_part_number_marker(marker.take())
                .send()
                .await
                .map_err(|e| s3_error(e, key.as_str()))?;
            parts.extend(out.parts().iter().cloned());
            match (out.is_truncated(), out.next_part_number_marker()) {
                (Some(true), Some(next)) => marker = Some(next.to_owned()),
                _ => return Ok(parts),
            }
        }
    }

    /// Reads the object at `key`, hashing it: it must be `size` bytes of
    /// digest `sha256`. S3 keeps only a composite checksum of an object
    /// joined from parts (a digest of the parts' digests), so this read is
    /// what proves the file declared. It reads a slice at a time, keeping
    /// its progress beside the object after each (`.proof`: the object's
    /// ETag, the offset and the hash's state, overwritten each time, so
    /// finding it is one read however many slices the file has), and stops
    /// once `budget` is spent: a proof longer than one request (API Gateway
    /// ends one at 30 s) goes on at the next. Every slice is read with
    /// `If-Match` on that ETag, so progress made on one object never counts
    /// for another joined under the same key.
    async fn prove(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        slice: u64,
        budget: Duration,
    ) -> Result<Joined, StoreError> {
        let started = std::time::Instant::now();
        let (mut etag, mut hash) = self.proof_progress(key).await?;
        while hash.offset() < size {
            let from = hash.offset();
            let to = (from + slice).min(size);
            let out = match self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(key.as_str())
                .range(format!("bytes={from}-{}", to - 1))
                .set_if_match(etag.clone())
                .send()
                .await
            {
                Ok(out) => out,
                // Progress kept for an object that is no longer there: start over.
                Err(e) if etag.is_some() && precondition_failed(&e) => {
                    (etag, hash) = (None, Midstate::new());
                    continue;
                }
                Err(e) => return Err(s3_error(e, key.as_str())),
            };
            if etag.is_none() {
                etag = out.e_tag().map(str::to_owned);
            }
            let mut body = out.body;
            while let Some(chunk) = body
                .try_next()
                .await
                .map_err(|e| StoreError::Io(io::Error::other(e)))?
            {
                hash.update(&chunk);
            }
            if hash.offset() != to {
                return Err(StoreError::Mismatch(sluice::sha::Mismatch::TooShort {
                    expected: size,
                    actual: hash.offset(),
                }));
            }
            if to < size {
                let saved = hash.save().expect("slices end on block boundaries");
                let note = format!("{}\n{saved}", etag.as_deref().unwrap_or_default());
                self.replace_note(&Self::beside(key, "proof"), &note)
                    .await?;
                if started.elapsed() >= budget {
                    tracing::info!(key = %key, proven = to, size, "proof goes on at the next completion");
                    return Ok(Joined::Proving { proven: to });
                }
            }
        }
        let actual = hash.finish();
        if actual != sha256 {
            return Err(StoreError::Mismatch(sluice::sha::Mismatch::Digest {
                expected: sha256,
                actual,
            }));
        }
        Ok(Joined::Proven)
    }

    /// The proof's progress kept beside `key`'s object, with the ETag of the
    /// object it was made on, or a fresh hash.
    async fn proof_progress(
        &self,
        key: &ObjectKey,
    ) -> Result<(Option<String>, Midstate), StoreError> {
        let kept = self.read_note(&Self::beside(key, "proof")).await?;
        let progress = kept.as_deref().and_then(|note| {
            let (etag, saved) = note.split_once('\n')?;
            Some((Some(etag.to_owned()), Midstate::load(saved)?))
        });
        Ok(progress.unwrap_or_default())
    }

    /// Takes the lease at `lease` for a completion of `budget`: `false`
    /// if another completion holds it.
    async fn take_lease(&self, lease: &str, budget: Duration) -> Result<bool, StoreError> {
        let until = sluice::time::now_unix() + budget.as_secs() as i64 + LEASE_MARGIN_SECS;
        if self.write_note(lease, &until.to_string()).await? {
            return Ok(true);
        }
        let held_until: i64 = self
            .read_note(lease)
            .await?
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        if held_until >= sluice::time::now_unix() {
            return Ok(false);
        }
        // Its holder died (a request is ended long before): take it over.
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(lease)
            .send()
            .await
            .map_err(|e| s3_error(e, lease))?;
        self.write_note(lease, &until.to_string()).await
    }

    /// Joins the parts if they are not yet, and proves the joined object.
    async fn join_and_prove(
        &self,
        key: &ObjectKey,
        plan: &sluice::multipart::Plan,
        sha256: Sha256,
        budget: Duration,
        proof: &str,
    ) -> Result<Joined, StoreError> {
        // Joined already but not proven (the proof broke off): prove it now.
        if !self.exists(key).await {
            let id = self
                .upload_id(key)
                .await?
                .ok_or(StoreError::MissingPart(1))?;
            self.complete(key, plan, &id).await?;
        }
        let slice = plan.part_size.min(PROOF_SLICE);
        match self.prove(key, plan.size, sha256, slice, budget).await {
            Ok(Joined::Proven) => {
                self.write_note(proof, &sha256.to_hex()).await?;
                Ok(Joined::Proven)
            }
            Ok(proving) => Ok(proving),
            Err(StoreError::Mismatch(m)) => {
                // Not the file declared, and never will be: gone, so nothing
                // can serve it (its version expires with the bucket's rule),
                // with the proof's progress and the spent upload's id, so
                // that the link begins a fresh upload in parts.
                for gone in [
                    key.as_str().to_owned(),
                    Self::beside(key, "proof"),
                    Self::beside(key, "upload-id"),
                ] {
                    self.delete_or_leave(&gone, "what a disproven upload left")
                        .await;
                }
                Err(StoreError::Mismatch(m))
            }
            Err(e) => Err(e),
        }
    }

    /// Joins upload `id`'s parts of `plan` into `key`'s object, once.
    async fn complete(
        &self,
        key: &ObjectKey,
        plan: &sluice::multipart::Plan,
        id: &str,
    ) -> Result<(), StoreError> {
        let listed = self.listed_parts(key, id).await?;
        let mut parts = Vec::new();
        for n in plan.numbers() {
            let part = listed
                .iter()
                .find(|p| p.part_number() == i32::try_from(n).ok())
                .filter(|p| {
                    p.size()
                        .is_none_or(|s| u64::try_from(s).ok() == plan.len(n))
                })
                .ok_or(StoreError::MissingPart(n))?;
            parts.push(
                CompletedPart::builder()
                    .part_number(n as i32)
                    .set_e_tag(part.e_tag().map(str::to_owned))
                    .set_checksum_sha256(part.checksum_sha256().map(str::to_owned))
                    .build(),
            );
        }
        match self
            .client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(key.as_str())
            .upload_id(id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .if_none_match("*")
            // S3 joins the parts before it answers (keeping the connection
            // alive meanwhile): minutes for a large file, not the seconds
            // every other call gets.
            .customize()
            .config_override(
                aws_sdk_s3::config::Config::builder().timeout_config(
                    aws_config::timeout::TimeoutConfig::builder()
                        .operation_attempt_timeout(COMPLETE_TIMEOUT)
                        .operation_timeout(COMPLETE_TIMEOUT)
                        .build(),
                ),
            )
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if precondition_failed(&e) => Err(StoreError::AlreadyExists),
            // A retry of a completion that went through finds no upload
            // any more (S3: NoSuchUpload): the object says what happened.
            Err(e) if self.exists(key).await => {
                tracing::info!(key = %key, error = %DisplayErrorContext(e), "completion answered late; the object is there");
                Ok(())
            }
            Err(e) => Err(s3_error(e, key.as_str())),
        }
    }

    /// Whether an object is stored under `key` (a failed HEAD says no).
    async fn exists(&self, key: &ObjectKey) -> bool {
        self.client
            .head_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await
            .is_ok()
    }

    /// The SDK client, for tests and setup.
    pub fn client(&self) -> &aws_sdk_s3::Client {
        &self.client
    }

    /// A PUT that S3 accepts only with exactly `size` bytes whose digest is
    /// `sha256`, and only if nothing is stored under `key` yet.
    fn pinned_put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
    ) -> aws_sdk_s3::operation::put_object::builders::PutObjectFluentBuilder {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .content_length(size as i64)
            // Only the value: setting the algorithm too would make the SDK
            // compute a checksum of the (empty) presign body.
            .checksum_sha256(sha256.to_base64())
            .if_none_match("*")
    }
}

#[async_trait::async_trait]
impl ObjectStore for S3Store {
    async fn head(&self, key: &ObjectKey) -> Result<Option<ObjectInfo>, StoreError> {
        let out = match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => {
                return Ok(None);
            }
            Err(e) => return Err(s3_error(e, key.as_str())),
        };
        // A whole-object SHA-256 is base64 of 32 bytes; a composite
        // (multipart) checksum has a `-N` suffix and is not a digest of the
        // bytes. For an object joined from parts, the digest is the one
        // sluice proved by reading it, kept beside it; none yet: unproven.
        let composite = out.checksum_sha256().is_some_and(|c| c.contains('-'));
        let sha256 = match out
            .checksum_sha256()
            .and_then(|c| Sha256::from_base64(c).ok())
        {
            Some(sha256) => Some(sha256),
            None => self
                .read_note(&Self::beside(key, "sha256"))
                .await?
                .and_then(|hex| Sha256::from_hex(&hex).ok()),
        };
        // Joined from parts (S3 reports a composite checksum; s3s-fs none,
        // but keeps the upload's id beside it) and not proven yet.
        let proving = sha256.is_none() && (composite || self.upload_id(key).await?.is_some());
        Ok(Some(ObjectInfo {
            size: out.content_length().unwrap_or(0).max(0) as u64,
            sha256,
            version: out.version_id().map(str::to_owned),
            proving,
        }))
    }

    async fn put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        mut body: ByteStream,
    ) -> Result<(), StoreError> {
        // The body is checked whole before anything is sent, and S3 checks
        // it again against the signed checksum.
        let mut verifier = sluice::sha::Verifier::new(size, sha256);
        let mut chunks = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(StoreError::Body)?;
            verifier.update(&chunk)?;
            chunks.push(chunk);
        }
        verifier.finish()?;
        // A body already in memory (a file in an action's answer, a
        // record) in one chunk is sent as it is, not copied.
        let data = match <[bytes::Bytes; 1]>::try_from(chunks) {
            Ok([one]) => one,
            Err(chunks) => chunks.concat().into(),
        };
        match self
            .pinned_put(key, size, sha256)
            .body(AwsBody::from(data))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if precondition_failed(&e) => Err(StoreError::AlreadyExists),
            Err(e) => Err(s3_error(e, key.as_str())),
        }
    }

    async fn begin_parts(&self, key: &ObjectKey, content_type: &str) -> Result<(), StoreError> {
        self.begin(key, content_type).await.map(|_| ())
    }

    async fn stored_parts(&self, key: &ObjectKey) -> Result<Vec<u32>, StoreError> {
        let Some(id) = self.upload_id(key).await? else {
            return Ok(Vec::new());
        };
        let mut parts: Vec<u32> = self
            .listed_parts(key, &id)
            .await?
            .iter()
            .filter_map(|p| u32::try_from(p.part_number()?).ok())
            .collect();
        parts.sort_unstable();
        Ok(parts)
    }

    async fn has_part(&self, key: &ObjectKey, n: u32) -> Result<bool, StoreError> {
        let Some(id) = self.upload_id(key).await? else {
            return Ok(false);
        };
        // The first part after n - 1: one request, however many are stored.
        let listed = self
            .client
            .list_parts()
            .bucket(&self.bucket)
            .key(key.as_str())
            .upload_id(id)
            .part_number_marker(n.saturating_sub(1).to_string())
            .max_parts(1)
            .send()
            .await
            .map_err(|e| s3_error(e, key.as_str()))?;
        Ok(listed
            .parts()
            .first()
            .and_then(|p| p.part_number())
            .is_some_and(|first| u32::try_from(first) == Ok(n)))
    }

    async fn join_parts(
        &self,
        key: &ObjectKey,
        plan: &sluice::multipart::Plan,
        sha256: Sha256,
        budget: Duration,
    ) -> Result<Joined, StoreError> {
        let proof = Self::beside(key, "sha256");
        if self.read_note(&proof).await?.is_some() {
            return Err(StoreError::AlreadyExists);
        }
        // One completion at a time, on every replica: a lease kept beside
        // the object, taken with If-None-Match, given back when this one
        // ends (and taken over once it is older than any request can be).
        let lease = Self::beside(key, "completing");
        if !self.take_lease(&lease, budget).await? {
            return Err(StoreError::Busy(Busy::Completing));
        }
        let joined = self.join_and_prove(key, plan, sha256, budget, &proof).await;
        self.delete_or_leave(&lease, "a completion's lease").await;
        joined
    }

    async fn get(&self, key: &ObjectKey) -> Result<Option<ByteStream>, StoreError> {
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await
        {
            Ok(out) => {
                let stream = futures_util::stream::try_unfold(out.body, |mut body| async move {
                    match body.try_next().await {
                        Ok(Some(chunk)) => Ok(Some((chunk, body))),
                        Ok(None) => Ok(None),
                        Err(e) => Err(io::Error::other(e)),
                    }
                });
                Ok(Some(stream.boxed()))
            }
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => Ok(None),
            Err(e) => Err(s3_error(e, key.as_str())),
        }
    }

    fn access(&self) -> Access<'_> {
        Access::Direct(self)
    }
}

#[async_trait::async_trait]
impl Presigner for S3Store {
    async fn presign_put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        content_type: &str,
        ttl: Duration,
    ) -> Result<Presigned, StoreError> {
        let config =
            PresigningConfig::expires_in(ttl).map_err(|e| StoreError::Io(io::Error::other(e)))?;
        let request = self
            .pinned_put(key, size, sha256)
            .content_type(content_type)
            .presigned(config)
            .await
            .map_err(|e| s3_error(e, key.as_str()))?;
        Ok(presigned(&request))
    }

    async fn presign_part(
        &self,
        key: &ObjectKey,
        n: u32,
        size: u64,
        sha256: Sha256,
        ttl: Duration,
    ) -> Result<Presigned, StoreError> {
        let id = self
            .upload_id(key)
            .await?
            .ok_or_else(|| StoreError::Io(io::Error::other("the upload in parts was not begun")))?;
        let config =
            PresigningConfig::expires_in(ttl).map_err(|e| StoreError::Io(io::Error::other(e)))?;
        let request = self
            .client
            .upload_part()
            .bucket(&self.bucket)
            .key(key.as_str())
            .upload_id(id)
            .part_number(i32::try_from(n).unwrap_or(i32::MAX))
            .content_length(size as i64)
            .checksum_sha256(sha256.to_base64())
            .presigned(config)
            .await
            .map_err(|e| s3_error(e, key.as_str()))?;
        Ok(presigned(&request))
    }

    async fn presign_get(
        &self,
        key: &ObjectKey,
        info: &ObjectInfo,
        download: DownloadAs<'_>,
        ttl: Duration,
    ) -> Result<String, StoreError> {
        let config = PresigningConfig::expires_in(ttl.min(MAX_GET_TTL))
            .map_err(|e| StoreError::Io(io::Error::other(e)))?;
        let mut request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .response_content_disposition(download.content_disposition)
            .response_content_type(download.content_type)
            .response_cache_control("no-store");
        if let Some(version) = &info.version {
            request = request.version_id(version);
        }
        let presigned = request
            .presigned(config)
            .await
            .map_err(|e| s3_error(e, key.as_str()))?;
        Ok(presigned.uri().to_owned())
    }
}

/// A presigned request with exactly the headers its signature covers (less
/// Host, which the URL gives). Inside Lambda the SDK also adds
/// X-Amzn-Trace-Id, which it does not sign: it means nothing to S3 coming
/// from the client, and it would cost the model a hundred characters of
/// every curl line.
fn presigned(request: &aws_sdk_s3::presigning::PresignedRequest) -> Presigned {
    let signed = signed_headers(request.uri());
    let headers = request
        .headers()
        .filter(|(name, _)| !name.eq_ignore_ascii_case("host"))
        .filter(|(name, _)| signed.iter().any(|s| s.eq_ignore_ascii_case(name)))
        .map(|(name, value)| (canonical_header(name), value.to_owned()))
        .collect();
    Presigned {
        url: request.uri().to_owned(),
        headers,
    }
}

/// S3's answer to a conditional write whose condition failed
/// (`If-None-Match: *` with something already there).
fn precondition_failed<E: ProvideErrorMetadata>(
    e: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> bool {
    e.raw_response().is_some_and(|r| r.status().as_u16() == 412)
        || e.code() == Some("PreconditionFailed")
}

/// `content-length` → `Content-Length`, for readable curl lines.
fn canonical_header(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// The header names a presigned URL's `X-Amz-SignedHeaders` lists.
fn signed_headers(uri: &str) -> Vec<String> {
    url::Url::parse(uri)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "X-Amz-SignedHeaders")
                .map(|(_, v)| v.split(';').map(str::to_owned).collect())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_names_are_written_canonically() {
        assert_eq!(super::canonical_header("content-length"), "Content-Length");
        assert_eq!(
            super::canonical_header("x-amz-checksum-sha256"),
            "X-Amz-Checksum-Sha256"
        );
        assert_eq!(super::canonical_header("if-none-match"), "If-None-Match");
    }

    #[test]
    fn the_signed_headers_are_read_from_the_url() {
        let url = "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256\
                   &X-Amz-SignedHeaders=content-length%3Bhost%3Bx-amz-checksum-sha256&X-Amz-Signature=00";
        assert_eq!(
            super::signed_headers(url),
            ["content-length", "host", "x-amz-checksum-sha256"]
        );
        assert!(super::signed_headers("https://b.s3.amazonaws.com/k").is_empty());
    }
}
