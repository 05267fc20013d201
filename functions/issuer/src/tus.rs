//! The upload link as a tus 1.0 upload URL (core protocol, and the
//! `expiration` extension), where sluice receives the bytes
//! (`sluice::service::uploads::stream`): `HEAD` says where the upload stands,
//! `PATCH` appends from there, `OPTIONS` says what this server speaks. The
//! upload already exists (`request_upload` made it, pinned to its size and
//! SHA-256), so a client resumes it by its "upload URL": there is no
//! creation step. This translates tus's headers and status codes to and
//! from the service; every decision is the service's.
//!
//! A file whose digest is to come (a person's page that sends while it
//! hashes) declares it in `Repr-Digest` (RFC 9530: the digest of the whole
//! representation, here the file; `sha-256` the only algorithm read) on a
//! `PATCH`, at the latest the one that sends its last bytes.
//!
//! Not offered: `checksum` (a per-request `Upload-Checksum`). Every byte
//! is already proven against the file's pinned SHA-256 at the last byte;
//! a second digest of each request would double the hashing of every byte
//! sluice receives, where one pass is the design.

use std::io;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt as _, TryStreamExt as _};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use sluice::Sluice;
use sluice::http::HttpError;
use sluice::service::uploads::stream::StreamAt;

/// The protocol's version, the only one spoken.
pub const VERSION: &str = "1.0.0";

/// The content type of a `PATCH`'s body.
const OFFSET_OCTET_STREAM: &str = "application/offset+octet-stream";

/// The extensions offered.
const EXTENSIONS: &str = "expiration";

pub const TUS_RESUMABLE: HeaderName = HeaderName::from_static("tus-resumable");
pub const TUS_VERSION: HeaderName = HeaderName::from_static("tus-version");
pub const TUS_MAX_SIZE: HeaderName = HeaderName::from_static("tus-max-size");
pub const TUS_EXTENSION: HeaderName = HeaderName::from_static("tus-extension");
pub const UPLOAD_OFFSET: HeaderName = HeaderName::from_static("upload-offset");
pub const UPLOAD_LENGTH: HeaderName = HeaderName::from_static("upload-length");
pub const UPLOAD_EXPIRES: HeaderName = HeaderName::from_static("upload-expires");
pub const REPR_DIGEST: HeaderName = HeaderName::from_static("repr-digest");

/// The headers a widget on another origin sends to the link, and those it
/// reads from the answers (none of them is CORS-safelisted).
pub const REQUEST_HEADERS: [HeaderName; 4] =
    [TUS_RESUMABLE, UPLOAD_OFFSET, UPLOAD_LENGTH, REPR_DIGEST];
pub const ANSWER_HEADERS: [HeaderName; 6] = [
    TUS_RESUMABLE,
    TUS_VERSION,
    UPLOAD_OFFSET,
    UPLOAD_LENGTH,
    UPLOAD_EXPIRES,
    TUS_MAX_SIZE,
];

/// `HEAD <link>`: where the upload stands.
pub async fn head(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    // A client need not say its version to ask (curl -I does not); one
    // that says another is refused as tus says.
    if headers.contains_key(TUS_RESUMABLE)
        && let Some(refused) = not_this_version(&headers)
    {
        return refused;
    }
    match sluice.uploads().upload_offset(&token).await {
        Ok(at) => standing(StatusCode::OK, at),
        Err(e) => tus_error(HttpError::from(e).into_response()),
    }
}

/// `PATCH <link>`: appends the body at its `Upload-Offset`.
pub async fn patch(
    State(sluice): State<Sluice>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(refused) = not_this_version(&headers) {
        return refused;
    }
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    if media.as_deref() != Some(OFFSET_OCTET_STREAM) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "a PATCH's body is sent as Content-Type: {OFFSET_OCTET_STREAM}; nothing was written"
            ),
        );
    }
    let Some(offset) = headers
        .get(UPLOAD_OFFSET)
        .and_then(|v| v.to_str().ok())
        .and_then(plain_number)
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "a PATCH says where its bytes go in Upload-Offset (plain digits; HEAD the link for it); nothing was written".into(),
        );
    };
    let declared = match crate::content_length(&headers) {
        Ok(len) => len,
        Err(e) => return tus_error(e.into_response()),
    };
    let digest = match headers.get(REPR_DIGEST).map(repr_sha256) {
        None => None,
        Some(Some(d)) => Some(d),
        Some(None) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "Repr-Digest declares the file's SHA-256 as sha-256=:<its base64>:; nothing was written".into(),
            );
        }
    };
    let stream = body.into_data_stream().map_err(io::Error::other).boxed();
    match sluice
        .uploads()
        .append_upload(&token, offset, declared, digest, stream)
        .await
    {
        Ok(at) => standing(StatusCode::NO_CONTENT, at),
        Err(sluice::Error::OffsetConflict(at)) => {
            let mut answer =
                tus_error(HttpError::from(sluice::Error::OffsetConflict(at)).into_response());
            answer
                .headers_mut()
                .insert(UPLOAD_OFFSET, HeaderValue::from(at));
            answer
        }
        Err(e) => tus_error(HttpError::from(e).into_response()),
    }
}

/// Answers a tus `OPTIONS` (one that is not a CORS preflight) to the
/// upload link: what this server speaks. Sits outside the CORS layer,
/// which takes every `OPTIONS` for a preflight.
pub async fn options(max_size: u64, request: Request, next: Next) -> Response {
    let is_link = request
        .uri()
        .path()
        .strip_prefix("/u/")
        .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'));
    let preflight = request
        .headers()
        .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if request.method() != http::Method::OPTIONS || !is_link || preflight {
        return next.run(request).await;
    }
    let mut answer = StatusCode::NO_CONTENT.into_response();
    let h = answer.headers_mut();
    h.insert(TUS_RESUMABLE, HeaderValue::from_static(VERSION));
    h.insert(TUS_VERSION, HeaderValue::from_static(VERSION));
    h.insert(TUS_MAX_SIZE, HeaderValue::from(max_size));
    h.insert(TUS_EXTENSION, HeaderValue::from_static(EXTENSIONS));
    answer
}

/// A number as tus sends one: plain digits.
fn plain_number(v: &str) -> Option<u64> {
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .then(|| v.parse().ok())
        .flatten()
}

/// The `sha-256` member of a `Repr-Digest` (a structured-field dictionary
/// of byte sequences, `sha-256=:<base64>:`, other algorithms beside it
/// skipped); `None` for a header without one, or one that is not 32 bytes.
fn repr_sha256(v: &HeaderValue) -> Option<sluice::Sha256> {
    let v = v.to_str().ok()?;
    let (_, value) = v
        .split(',')
        .filter_map(|member| member.trim().split_once('='))
        .find(|(key, _)| *key == "sha-256")?;
    // Its parameters, if any, say nothing here.
    let value = value.split(';').next()?.trim();
    let b64 = value.strip_prefix(':')?.strip_suffix(':')?;
    (b64.len() == 44)
        .then(|| sluice::Sha256::parse(b64).ok())
        .flatten()
}

/// The tus refusal of a request of another version (or none); `None` for
/// one of this version.
fn not_this_version(headers: &HeaderMap) -> Option<Response> {
    if headers.get(TUS_RESUMABLE).is_some_and(|v| v == VERSION) {
        return None;
    }
    let mut refused = refuse(
        StatusCode::PRECONDITION_FAILED,
        format!(
            "this link speaks tus {VERSION}: send Tus-Resumable: {VERSION}; nothing was written"
        ),
    );
    refused
        .headers_mut()
        .insert(TUS_VERSION, HeaderValue::from_static(VERSION));
    Some(refused)
}

/// Where the upload stands, as tus answers it.
fn standing(status: StatusCode, at: StreamAt) -> Response {
    let mut answer = status.into_response();
    let h = answer.headers_mut();
    h.insert(TUS_RESUMABLE, HeaderValue::from_static(VERSION));
    h.insert(UPLOAD_OFFSET, HeaderValue::from(at.offset));
    h.insert(UPLOAD_LENGTH, HeaderValue::from(at.size));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    let expires = std::time::UNIX_EPOCH
        + std::time::Duration::from_secs(u64::try_from(at.expires_at).unwrap_or(0));
    if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(expires)) {
        h.insert(UPLOAD_EXPIRES, v);
    }
    answer
}

/// A refusal in the words of the service's errors (a JSON `error`).
fn refuse(status: StatusCode, message: String) -> Response {
    tus_error(HttpError::Body { status, message }.into_response())
}

/// Any answer of the link's tus routes says the version.
fn tus_error(mut answer: Response) -> Response {
    answer
        .headers_mut()
        .insert(TUS_RESUMABLE, HeaderValue::from_static(VERSION));
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_digest_gives_its_sha256_member_and_nothing_else() {
        let sha = sluice::Sha256::of(b"the file");
        let b64 = sha.to_base64();
        let read = |v: &str| repr_sha256(&HeaderValue::from_str(v).unwrap());
        assert_eq!(read(&format!("sha-256=:{b64}:")), Some(sha));
        assert_eq!(
            read(&format!("sha-512=:AAAA:, sha-256=:{b64}:;p=1")),
            Some(sha)
        );
        for refused in [
            "sha-512=:AAAA:".to_owned(),
            format!("sha-256={b64}"),
            format!("sha-256=:{}:", sha.to_hex()),
            "sha-256=:AAAA:".to_owned(),
            String::new(),
        ] {
            assert_eq!(read(&refused), None, "{refused}");
        }
    }
}
