//! Objects in S3. Uploads are presigned PUTs that sign `Content-Length`,
//! `x-amz-checksum-sha256`, `If-None-Match: *` and `Content-Type`, so S3
//! itself refuses a body of another size or digest, or a second upload.
//! Downloads are presigned GETs pinned to the object's version.
//!
//! Layout: this file is the store's core (head, put, get, ranged reads,
//! delete) and its errors; `parts` uploads in parts (S3's multipart
//! uploads, whose id is kept beside the object); `presign` the presigned
//! requests clients send.

use std::io;

use aws_sdk_s3::config::RequestChecksumCalculation;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_s3::primitives::ByteStream as AwsBody;
use aws_sdk_s3::types::ChecksumMode;
use bytes::Bytes;
use futures_util::{StreamExt as _, TryStreamExt as _};
use sluice::store::{Access, ByteStream, ObjectInfo, ObjectStore, PartStore, StoreError};
use sluice::{ObjectKey, Sha256};

use sluice::config::S3Config;

mod parts;
mod presign;

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
    /// The bucket `s3` names, on AWS or at its S3-compatible endpoint.
    pub fn new(shared: &aws_config::SdkConfig, s3: &S3Config) -> Self {
        let mut config = aws_sdk_s3::config::Builder::from(shared)
            // Only the checksums sluice asks for: otherwise the SDK adds a
            // CRC32 to presigned requests, which no client could match.
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .timeout_config(crate::timeouts());
        if let Some(endpoint) = &s3.endpoint {
            config = config
                .endpoint_url(crate::endpoint(endpoint))
                .force_path_style(true);
        }
        Self {
            client: aws_sdk_s3::Client::from_conf(config.build()),
            bucket: s3.bucket.clone(),
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

    /// The value of the tag `name` on `key`'s object (`Some(None)`: the
    /// object has no such tag), or `None` if there is no object.
    pub async fn tag(
        &self,
        key: &ObjectKey,
        name: &str,
    ) -> Result<Option<Option<String>>, StoreError> {
        match self
            .client
            .get_object_tagging()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await
        {
            Ok(out) => Ok(Some(
                out.tag_set()
                    .iter()
                    .find(|t| t.key() == name)
                    .map(|t| t.value().to_owned()),
            )),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(s3_error(e, key.as_str())),
        }
    }

    /// The SDK client, for tests and setup.
    pub fn client(&self) -> &aws_sdk_s3::Client {
        &self.client
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Deletes `key`, or leaves it, logged, when S3 refuses: everything
    /// under `files/` expires by the bucket's lifecycle rule.
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

    /// Deletes version (or delete marker) `version` of `key`, for good.
    async fn delete_version(&self, key: &ObjectKey, version: String) -> Result<(), StoreError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .version_id(version)
            .send()
            .await
            .map(drop)
            .map_err(|e| s3_error(e, key.as_str()))
    }

    /// The ids of every version and delete marker of exactly `key`.
    async fn versions_of(&self, key: &ObjectKey) -> Result<Vec<String>, StoreError> {
        let (mut ids, mut marker, mut version_marker) = (Vec::new(), None, None);
        loop {
            let out = self
                .client
                .list_object_versions()
                .bucket(&self.bucket)
                .prefix(key.as_str())
                .set_key_marker(marker.take())
                .set_version_id_marker(version_marker.take())
                .send()
                .await
                .map_err(|e| s3_error(e, key.as_str()))?;
            let versions = out
                .versions()
                .iter()
                .map(|v| (v.key(), v.version_id()))
                .chain(
                    out.delete_markers()
                        .iter()
                        .map(|m| (m.key(), m.version_id())),
                );
            for (k, id) in versions {
                if let (Some(k), Some(id)) = (k, id)
                    && k == key.as_str()
                {
                    ids.push(id.to_owned());
                }
            }
            if out.is_truncated() != Some(true) {
                return Ok(ids);
            }
            marker = out.next_key_marker().map(str::to_owned);
            version_marker = out.next_version_id_marker().map(str::to_owned);
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

    /// A PUT of part `n` of multipart upload `id` to `key` that S3 accepts
    /// only with exactly `size` bytes whose digest is `sha256`.
    fn pinned_part(
        &self,
        key: &ObjectKey,
        id: String,
        n: u32,
        size: u64,
        sha256: Sha256,
    ) -> aws_sdk_s3::operation::upload_part::builders::UploadPartFluentBuilder {
        self.client
            .upload_part()
            .bucket(&self.bucket)
            .key(key.as_str())
            .upload_id(id)
            .part_number(i32::try_from(n).unwrap_or(i32::MAX))
            .content_length(size as i64)
            .checksum_sha256(sha256.to_base64())
    }
}

/// `body` gathered whole and checked against `size` and `sha256` before
/// anything is sent (S3 checks it again against the signed checksum). A
/// body already in memory in one chunk (a file in an action's answer, a
/// record) is kept as it is, not copied.
async fn verified_whole(
    mut body: ByteStream,
    size: u64,
    sha256: Sha256,
) -> Result<Bytes, StoreError> {
    let mut verifier = sluice::sha::Verifier::new(size, sha256);
    let mut chunks = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(StoreError::Body)?;
        verifier.update(&chunk)?;
        chunks.push(chunk);
    }
    verifier.finish()?;
    Ok(match <[Bytes; 1]>::try_from(chunks) {
        Ok([one]) => one,
        Err(chunks) => chunks.concat().into(),
    })
}

/// An object's body as a stream of chunks.
fn streamed(body: AwsBody) -> ByteStream {
    futures_util::stream::try_unfold(body, |mut body| async move {
        match body.try_next().await {
            Ok(Some(chunk)) => Ok(Some((chunk, body))),
            Ok(None) => Ok(None),
            Err(e) => Err(io::Error::other(e)),
        }
    })
    .boxed()
}

/// A key as CopyObject's `x-amz-copy-source` takes it: URL-encoded, its
/// slashes kept.
fn copy_source_key(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                char::from(b).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
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
            Err(e) if not_found(&e) => return Ok(None),
            Err(e) => return Err(s3_error(e, key.as_str())),
        };
        // A whole-object SHA-256 is base64 of 32 bytes; a composite
        // (multipart) checksum has a `-N` suffix and is not a digest of the
        // bytes: an object joined from parts has no digest here, and the
        // service proves it by reading it.
        let sha256 = out
            .checksum_sha256()
            .and_then(|c| Sha256::from_base64(c).ok());
        Ok(Some(ObjectInfo {
            size: out.content_length().unwrap_or(0).max(0) as u64,
            sha256,
            version: out.version_id().map(str::to_owned),
            etag: out.e_tag().map(str::to_owned),
        }))
    }

    async fn put(
        &self,
        key: &ObjectKey,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError> {
        let data = verified_whole(body, size, sha256).await?;
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

    /// CopyObject, pinned to the source's ETag, never over an object there
    /// (`If-None-Match: *`; s3s-fs 0.14 ignores it), asking S3 for the copy's
    /// SHA-256 (a copy in one request gets a whole-object checksum, so a
    /// copy of an object joined from parts has a digest of its bytes);
    /// `None` above 5 GiB, the most one CopyObject copies.
    async fn copy(
        &self,
        from: &ObjectKey,
        to: &ObjectKey,
        info: &ObjectInfo,
    ) -> Result<Option<ObjectInfo>, StoreError> {
        const MAX_COPY: u64 = 5 * 1024 * 1024 * 1024;
        if info.size > MAX_COPY {
            return Ok(None);
        }
        let mut copy = self
            .client
            .copy_object()
            .bucket(&self.bucket)
            .key(to.as_str())
            .copy_source(format!(
                "{}/{}",
                self.bucket,
                copy_source_key(from.as_str())
            ))
            .checksum_algorithm(aws_sdk_s3::types::ChecksumAlgorithm::Sha256)
            .if_none_match("*");
        if let Some(etag) = &info.etag {
            copy = copy.copy_source_if_match(etag);
        }
        match copy.send().await {
            Ok(_) => self.head(to).await,
            Err(e) if precondition_failed(&e) => Err(StoreError::Changed),
            Err(e) => Err(s3_error(e, to.as_str())),
        }
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
            Ok(out) => Ok(Some(streamed(out.body))),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => Ok(None),
            Err(e) => Err(s3_error(e, key.as_str())),
        }
    }

    async fn get_range(
        &self,
        key: &ObjectKey,
        range: std::ops::Range<u64>,
        etag: Option<&str>,
    ) -> Result<Option<ByteStream>, StoreError> {
        if range.is_empty() {
            return Ok(Some(futures_util::stream::empty().boxed()));
        }
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .range(format!("bytes={}-{}", range.start, range.end - 1))
            .set_if_match(etag.map(str::to_owned))
            .send()
            .await
        {
            Ok(out) => Ok(Some(streamed(out.body))),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => Ok(None),
            Err(e) if precondition_failed(&e) => Err(StoreError::Changed),
            Err(e) => Err(s3_error(e, key.as_str())),
        }
    }

    async fn delete(&self, key: &ObjectKey) -> Result<(), StoreError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await
            .map_err(|e| s3_error(e, key.as_str()))?;
        Ok(())
    }

    /// The bucket keeps versions, and a download link redirects to a GET
    /// pinned to the version it checked: that version is deleted by its
    /// id, after a plain delete puts a marker over whatever else is there
    /// (a noncurrent version of bytes that failed their proof, which the
    /// bucket's rule expires).
    async fn purge(&self, key: &ObjectKey) -> Result<(), StoreError> {
        // Every version and delete marker of exactly this key, by id: on a
        // versioned bucket a plain delete only hides the bytes behind a
        // marker (an upload in parts aborted, then purged, left its data as
        // a noncurrent version for a day). A store that cannot list
        // versions (an emulator) gives the version its HEAD names, if any.
        let versions = match self.versions_of(key).await {
            Ok(versions) => versions,
            Err(e) => {
                tracing::warn!(key = key.as_str(), error = %e, "could not list the object's versions: deleted by HEAD");
                self.head(key)
                    .await?
                    .and_then(|info| info.version)
                    .into_iter()
                    .collect()
            }
        };
        for version in versions {
            self.delete_version(key, version).await?;
        }
        // Still there (an unversioned store's object, or one a store listed
        // no version of): a plain delete.
        if self.exists(key).await {
            self.delete(key).await?;
        }
        Ok(())
    }

    fn access(&self) -> Access<'_> {
        Access::Direct(self)
    }

    fn parts(&self) -> Option<&dyn PartStore> {
        Some(self)
    }
}

/// S3's answer for a key with no object, where the operation models no
/// `NoSuchKey` error (a HEAD has no body to carry one).
fn not_found<E>(
    e: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> bool {
    e.raw_response().is_some_and(|r| r.status().as_u16() == 404)
}

/// S3's answer to a conditional write whose condition failed
/// (`If-None-Match: *` with something already there).
fn precondition_failed<E: ProvideErrorMetadata>(
    e: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> bool {
    e.raw_response().is_some_and(|r| r.status().as_u16() == 412)
        || e.code() == Some("PreconditionFailed")
}
