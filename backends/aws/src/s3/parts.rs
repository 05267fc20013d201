//! Uploads in parts to S3: one multipart upload per file, begun when the
//! file is issued, its id kept beside the object (`.upload-id`: S3 keeps
//! none we could find it by, and this is what lets any replica, and a rerun
//! of the upload line, continue the same upload). Parts arrive at
//! presigned `UploadPart` URLs, each checked by S3 against its signed
//! SHA-256. Joining is S3's `CompleteMultipartUpload`: S3 then keeps only a
//! digest of the parts' digests, so the service proves the whole by
//! reading it (`service::proof`).

use std::io;
use std::time::Duration;

use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::ByteStream as AwsBody;
use aws_sdk_s3::types::{ChecksumAlgorithm, CompletedMultipartUpload, CompletedPart};
use sluice::multipart::Plan;
use sluice::store::{ByteStream, Joined, ObjectStore as _, PartStore, StoreError};
use sluice::{ObjectKey, Sha256};

use super::{S3Store, precondition_failed, s3_error};

/// How long S3 may take to join an upload's parts.
const COMPLETE_TIMEOUT: Duration = Duration::from_secs(600);

impl S3Store {
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

    /// The id of the multipart upload to `key`, kept beside it.
    pub(super) async fn upload_id(&self, key: &ObjectKey) -> Result<Option<String>, StoreError> {
        Ok(self
            .read_whole(&Self::beside(key, "upload-id"))
            .await?
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned()))
    }

    /// Keeps `id` as the upload to `key`'s, once: `false` if one was kept
    /// already.
    async fn keep_upload_id(&self, key: &ObjectKey, id: &str) -> Result<bool, StoreError> {
        let note = Self::beside(key, "upload-id");
        match self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(&note)
            .body(AwsBody::from(id.as_bytes().to_vec()))
            .if_none_match("*")
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if precondition_failed(&e) => Ok(false),
            Err(e) => Err(s3_error(e, &note)),
        }
    }

    /// The upload to `key`'s id, or the refusal of a part sent before it
    /// was begun.
    pub(super) async fn begun(&self, key: &ObjectKey) -> Result<String, StoreError> {
        self.upload_id(key)
            .await?
            .ok_or_else(|| StoreError::Io(io::Error::other("the upload in parts was not begun")))
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
}

#[async_trait::async_trait]
impl PartStore for S3Store {
    async fn begin(&self, key: &ObjectKey, content_type: &str) -> Result<(), StoreError> {
        // Of two begun at once, the first kept wins and the other is aborted.
        if self.upload_id(key).await?.is_some() {
            return Ok(());
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
        if self.keep_upload_id(key, &id).await? {
            tracing::info!(key = %key, "upload in parts begun");
            return Ok(());
        }
        let _ = self.abort_upload(key, &id).await;
        Ok(())
    }

    async fn put_part(
        &self,
        key: &ObjectKey,
        n: u32,
        _offset: u64,
        size: u64,
        sha256: Sha256,
        body: ByteStream,
    ) -> Result<(), StoreError> {
        // Through sluice (clients use presigned URLs): the body is checked
        // whole before it is sent, and S3 checks it again.
        let id = self.begun(key).await?;
        if self.has_part(key, n).await? {
            return Err(StoreError::AlreadyExists);
        }
        let data = super::verified_whole(body, size, sha256).await?;
        self.pinned_part(key, id, n, size, sha256)
            .body(AwsBody::from(data))
            .send()
            .await
            .map_err(|e| s3_error(e, key.as_str()))?;
        Ok(())
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

    async fn join(
        &self,
        key: &ObjectKey,
        plan: &Plan,
        _sha256: Sha256,
    ) -> Result<Joined, StoreError> {
        // Joined already (a proof that broke off): the same object again.
        if let Some(etag) = self.etag(key).await? {
            return Ok(Joined::Unproven { etag });
        }
        let id = self
            .upload_id(key)
            .await?
            .ok_or(StoreError::MissingPart(1))?;
        self.complete(key, plan, &id).await?;
        let etag = self.etag(key).await?.ok_or_else(|| {
            StoreError::Io(io::Error::other("S3 joined an object it does not show"))
        })?;
        Ok(Joined::Unproven { etag })
    }

    async fn abort(&self, key: &ObjectKey, _plan: &Plan) -> Result<(), StoreError> {
        // Not the file declared, and never will be: gone, so nothing can
        // serve it (its version expires with the bucket's rule), with the
        // spent upload's id, so that the link begins a fresh upload.
        // Joined already: S3 keeps no upload to abort.
        if let Some(id) = self.upload_id(key).await?
            && !self.exists(key).await
        {
            self.abort_upload(key, &id).await?;
        }
        self.delete(key).await?;
        self.delete_or_leave(&Self::beside(key, "upload-id"), "a spent upload's id")
            .await;
        Ok(())
    }
}

impl S3Store {
    /// The object's entity tag, or `None` if there is no object.
    async fn etag(&self, key: &ObjectKey) -> Result<Option<String>, StoreError> {
        Ok(self
            .head(key)
            .await?
            .map(|info| info.etag.unwrap_or_default()))
    }

    /// Aborts S3's multipart upload `id` to `key`.
    async fn abort_upload(&self, key: &ObjectKey, id: &str) -> Result<(), StoreError> {
        self.client
            .abort_multipart_upload()
            .bucket(&self.bucket)
            .key(key.as_str())
            .upload_id(id)
            .send()
            .await
            .map_err(|e| s3_error(e, key.as_str()))
            .map(drop)
    }
}
