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
use aws_sdk_s3::types::ChecksumMode;
use bytes::Bytes;
use futures_util::{StreamExt as _, TryStreamExt as _};
use sluice::store::{
    Access, ByteStream, DownloadAs, ObjectInfo, ObjectStore, Presigned, Presigner, StoreError,
};
use sluice::{ObjectKey, Sha256};

use crate::MAX_GET_TTL;
use sluice::AwsConfig;

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
        Ok(Some(ObjectInfo {
            size: out.content_length().unwrap_or(0).max(0) as u64,
            // A whole-object SHA-256 is base64 of 32 bytes; a composite
            // (multipart) checksum has a `-N` suffix and is not a digest of
            // the bytes, so it is not reported.
            sha256: out
                .checksum_sha256()
                .and_then(|c| Sha256::from_base64(c).ok()),
            version: out.version_id().map(str::to_owned),
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
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 412) => {
                Err(StoreError::AlreadyExists)
            }
            Err(e) if e.code() == Some("PreconditionFailed") => Err(StoreError::AlreadyExists),
            Err(e) => Err(s3_error(e, key.as_str())),
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
        // Exactly the headers the signature covers (less Host, which the URL
        // gives). Inside Lambda the SDK also adds X-Amzn-Trace-Id, which it
        // does not sign: it means nothing to S3 coming from the client, and
        // it would cost the model a hundred characters of every curl line.
        let signed = signed_headers(request.uri());
        let headers = request
            .headers()
            .filter(|(name, _)| !name.eq_ignore_ascii_case("host"))
            .filter(|(name, _)| signed.iter().any(|s| s.eq_ignore_ascii_case(name)))
            .map(|(name, value)| (canonical_header(name), value.to_owned()))
            .collect();
        Ok(Presigned {
            url: request.uri().to_owned(),
            headers,
        })
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
