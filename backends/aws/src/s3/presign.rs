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
        pinned(&request)
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
        pinned(&request)
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

/// [`presigned`] `request`, if S3 will check the bytes against its SHA-256:
/// `x-amz-checksum-sha256` is a signed header (in the query string S3
/// signs it and does not check it), no checksum rides in the query, and
/// no CRC32 is asked for anywhere (no client could match one it was not
/// told). An SDK that changed how it presigns would otherwise drop the
/// check silently: this refuses to mint such a URL at all.
fn pinned(request: &aws_sdk_s3::presigning::PresignedRequest) -> Result<Presigned, StoreError> {
    let signed = signed_headers(request.uri());
    let query: Vec<(String, String)> = url::Url::parse(request.uri())
        .map(|u| {
            u.query_pairs()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.to_ascii_lowercase()))
                .collect()
        })
        .unwrap_or_default();
    let crc = |s: &str| s.to_ascii_lowercase().contains("crc32");
    let unpinned = !signed.iter().any(|h| h == "x-amz-checksum-sha256")
        || query
            .iter()
            .any(|(k, _)| k.starts_with("x-amz-checksum") || k == "x-amz-sdk-checksum-algorithm")
        || query.iter().any(|(k, v)| crc(k) || crc(v))
        || request.headers().any(|(k, v)| crc(k) || crc(v));
    if unpinned {
        tracing::error!("the SDK presigned a PUT without a signed SHA-256 header: refused");
        return Err(StoreError::Io(io::Error::other(
            "a presigned PUT would not pin its SHA-256",
        )));
    }
    Ok(presigned(request))
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
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// An S3 store with fixed credentials, built as the backend builds it:
    /// presigning is offline (no request is sent).
    fn offline() -> S3Store {
        let shared = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("eu-west-1"))
            .credentials_provider(aws_sdk_s3::config::SharedCredentialsProvider::new(
                aws_sdk_s3::config::Credentials::new("AKIDEXAMPLE", "secret", None, None, "test"),
            ))
            .build();
        let s3 = sluice::config::S3Config {
            bucket: "bucket".into(),
            endpoint: None,
        };
        S3Store::new(&shared, &s3)
    }

    /// A presigned PUT and part (fixed credentials and time) sign
    /// `x-amz-checksum-sha256` as a header, carry no checksum in the query
    /// and no CRC32 anywhere; the guard passes them, and refuses the same
    /// request presigned with the checksum hoisted into the query.
    #[tokio::test]
    async fn a_presigned_put_signs_its_sha256_as_a_header() {
        let store = offline();
        let key = ObjectKey::from_stored("files/o/f/a.bin".to_owned());
        let sha = Sha256::of(b"hello");
        let config = || {
            PresigningConfig::builder()
                .start_time(UNIX_EPOCH + Duration::from_secs(1_800_000_000))
                .expires_in(Duration::from_secs(300))
                .build()
                .unwrap()
        };
        let put = store
            .pinned_put(&key, 5, sha)
            .content_type("text/plain")
            .presigned(config())
            .await
            .unwrap();
        let part = store
            .pinned_part(&key, "upload-id".into(), 1, 5, sha)
            .presigned(config())
            .await
            .unwrap();
        for request in [&put, &part] {
            let uri = request.uri().to_ascii_lowercase();
            let signed = signed_headers(request.uri());
            assert!(
                signed.iter().any(|h| h == "x-amz-checksum-sha256"),
                "{signed:?}"
            );
            let keys: Vec<String> = url::Url::parse(&uri)
                .unwrap()
                .query_pairs()
                .map(|(k, _)| k.into_owned())
                .collect();
            assert!(
                keys.iter().all(
                    |k| !k.starts_with("x-amz-checksum") && k != "x-amz-sdk-checksum-algorithm"
                ),
                "{uri}"
            );
            assert!(!uri.contains("crc32"), "{uri}");
            assert!(
                request
                    .headers()
                    .all(|(k, v)| !k.contains("crc32") && !v.contains("CRC32"))
            );
            let minted = pinned(request).unwrap();
            assert!(
                minted
                    .headers
                    .iter()
                    .any(|(k, v)| k == "X-Amz-Checksum-Sha256" && *v == sha.to_base64()),
                "{:?}",
                minted.headers
            );
        }
        // The checksum in the query (as a presigner that hoists it does):
        // S3 would sign it and never check it. Refused.
        let hoisted = store
            .client
            .put_object()
            .bucket("bucket")
            .key(key.as_str())
            .content_length(5)
            .checksum_algorithm(aws_sdk_s3::types::ChecksumAlgorithm::Crc32)
            .presigned(config())
            .await
            .unwrap();
        assert!(pinned(&hoisted).is_err(), "{}", hoisted.uri());
    }

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
