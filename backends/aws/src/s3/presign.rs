//! The requests clients send straight to S3, presigned: a PUT of the whole
//! file or of one part, pinned to its size and SHA-256, and a GET pinned to
//! the object's version.

use std::io;
use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use sluice::store::{DownloadAs, ObjectInfo, Presigned, Presigner, StoreError};
use sluice::{ObjectKey, Sha256};

use super::{S3Store, s3_error};
use crate::MAX_GET_TTL;

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
        let id = self.begun(key).await?;
        let config =
            PresigningConfig::expires_in(ttl).map_err(|e| StoreError::Io(io::Error::other(e)))?;
        let request = self
            .pinned_part(key, id, n, size, sha256)
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
