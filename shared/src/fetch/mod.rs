//! Fetching a URL on a caller's word (an import), in this order: the URL
//! checked by the [`guard`] → the request, with no credential of any kind
//! (no cookie, no `Authorization`, only a `User-Agent` naming sluice and
//! `Accept`) → the host's name resolved once by [`guard::GuardedResolver`],
//! every address checked, the connection made to those addresses → at a
//! redirect (at most [`MAX_REDIRECTS`]), its target checked the same way,
//! and `https` never followed to `http` → a status other than 2xx refused,
//! naming it → the body handed on as a stream, each read under the read
//! timeout. Sizes and digests are the caller's to check.
//!
//! A URL is only ever named by its scheme and host in what this returns or
//! logs: a presigned URL carries its credentials in its query.

pub mod guard;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use http_body_util::{BodyExt as _, Empty};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use url::Url;

use crate::store::{ByteStream, idle_timeout};
use guard::{Guard, GuardedResolver, Refusal, refusal_in};

/// Redirects followed, each checked as the first URL was.
pub const MAX_REDIRECTS: usize = 5;

/// The one header that says who fetches.
pub const USER_AGENT: &str = concat!("sluice/", env!("CARGO_PKG_VERSION"), " (file import)");

/// How long a fetch waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// To connect to one address.
    pub connect: Duration,
    /// For the answer's head, and for each read of its body.
    pub read: Duration,
}

/// Why a fetch failed, naming the host at most.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The guard refused the URL, a redirect's target, or an address.
    #[error("{0}")]
    Refused(#[from] Refusal),
    /// The server answered with another status than 2xx.
    #[error("{host} answered HTTP {status}")]
    Status {
        /// The host.
        host: String,
        /// Its status.
        status: u16,
    },
    /// More redirects than [`MAX_REDIRECTS`].
    #[error("{0} redirected more than {MAX_REDIRECTS} times")]
    Redirects(String),
    /// A redirect from `https` to `http`.
    #[error("{0} redirected from https to plain http, which is not followed")]
    Downgrade(String),
    /// A redirect whose target is not a URL.
    #[error("{0} redirected to something that is not a URL")]
    BadRedirect(String),
    /// No answer in time.
    #[error("{0} did not answer in time")]
    Timeout(String),
    /// The connection failed.
    #[error("could not fetch from {0}: the connection failed")]
    Unreachable(String),
}

/// An answer whose body is on its way.
pub struct Fetched {
    /// The body, each read under the read timeout.
    pub body: ByteStream,
    /// The length the server declared, if it did.
    pub length: Option<u64>,
    /// The name `Content-Disposition` gives, if any (not yet made safe).
    pub disposition_name: Option<String>,
    /// The media type the server declared.
    pub content_type: Option<String>,
    /// The URL the body came from, after redirects.
    pub url: Url,
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("length", &self.length)
            .field("host", &host_of(&self.url))
            .finish_non_exhaustive()
    }
}

type GuardedClient = Client<HttpsConnector<HttpConnector<GuardedResolver>>, Empty<Bytes>>;

/// The import client: one per process, its connections pooled by host.
#[derive(Clone)]
pub struct Fetcher {
    client: GuardedClient,
    guard: Arc<Guard>,
    timeouts: Timeouts,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("guard", &self.guard)
            .field("timeouts", &self.timeouts)
            .finish_non_exhaustive()
    }
}

/// A URL as logs and errors name it: its scheme and host, no more.
pub fn host_of(url: &Url) -> String {
    match url.host_str() {
        Some(host) => format!("{}://{host}", url.scheme()),
        None => url.scheme().to_owned(),
    }
}

impl Fetcher {
    /// A client that fetches only what `guard` admits.
    pub fn new(guard: Guard, timeouts: Timeouts) -> Self {
        let guard = Arc::new(guard);
        let mut http = HttpConnector::new_with_resolver(GuardedResolver(guard.clone()));
        http.set_connect_timeout(Some(timeouts.connect));
        http.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(crate::http_client::https_over(http));
        Self {
            client,
            guard,
            timeouts,
        }
    }

    /// The guard it fetches under.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Fetches `url`, following checked redirects, to the head of a 2xx
    /// answer whose body is then read as it streams.
    pub async fn open(&self, url: &Url) -> Result<Fetched, FetchError> {
        let mut url = url.clone();
        for hop in 0..=MAX_REDIRECTS {
            self.guard.check_url(&url)?;
            let host = host_of(&url);
            let request = http::Request::get(url.as_str())
                .header(http::header::USER_AGENT, USER_AGENT)
                .header(http::header::ACCEPT, "*/*")
                .body(Empty::new())
                .map_err(|_| FetchError::Unreachable(host.clone()))?;
            let answer = match tokio::time::timeout(
                self.timeouts.read,
                self.client.request(request),
            )
            .await
            {
                Err(_) => return Err(FetchError::Timeout(host)),
                Ok(Err(e)) => {
                    if let Some(refusal) = refusal_in(&e) {
                        return Err(FetchError::Refused(refusal));
                    }
                    tracing::info!(%host, error = %e, "import fetch failed");
                    return Err(FetchError::Unreachable(host));
                }
                Ok(Ok(answer)) => answer,
            };
            let status = answer.status();
            if status.is_redirection()
                && let Some(location) = answer.headers().get(http::header::LOCATION)
            {
                if hop == MAX_REDIRECTS {
                    return Err(FetchError::Redirects(host));
                }
                let next = location
                    .to_str()
                    .ok()
                    .and_then(|l| url.join(l).ok())
                    .ok_or_else(|| FetchError::BadRedirect(host.clone()))?;
                if url.scheme() == "https" && next.scheme() == "http" {
                    return Err(FetchError::Downgrade(host));
                }
                tracing::info!(from = %host, to = %host_of(&next), "import redirected");
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status {
                    host,
                    status: status.as_u16(),
                });
            }
            let headers = answer.headers();
            let length = headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            let disposition_name = headers
                .get(http::header::CONTENT_DISPOSITION)
                .and_then(|v| v.to_str().ok())
                .and_then(disposition_filename);
            let content_type = headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body: ByteStream = Box::pin(
                answer
                    .into_body()
                    .into_data_stream()
                    .map_err(std::io::Error::other),
            );
            return Ok(Fetched {
                body: idle_timeout(body, self.timeouts.read),
                length,
                disposition_name,
                content_type,
                url,
            });
        }
        Err(FetchError::Redirects(host_of(&url)))
    }
}

/// The file name a `Content-Disposition` value gives: `filename*` (RFC
/// 6266, UTF-8) before `filename`.
pub fn disposition_filename(value: &str) -> Option<String> {
    let mut plain = None;
    for part in value.split(';').map(str::trim) {
        let Some((key, val)) = part.split_once('=') else {
            continue;
        };
        match key.trim().to_ascii_lowercase().as_str() {
            "filename*" => {
                let val = val.trim();
                let encoded = val
                    .strip_prefix("UTF-8''")
                    .or_else(|| val.strip_prefix("utf-8''"))?;
                return percent_encoding::percent_decode_str(encoded)
                    .decode_utf8()
                    .ok()
                    .map(|s| s.into_owned());
            }
            "filename" => plain = Some(val.trim().trim_matches('"').to_owned()),
            _ => {}
        }
    }
    plain
}

/// The name a URL's path gives: its last segment, decoded.
pub fn url_filename(url: &Url) -> Option<String> {
    let last = url.path_segments()?.rev().find(|s| !s.is_empty())?;
    percent_encoding::percent_decode_str(last)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// A name from elsewhere (a server's header, a URL) made a plain file
/// name: its last path component, no control characters and no invisible
/// ones (bidi controls, zero-width characters: `invoice\u{202E}fdp.exe`
/// would read as `invoiceexe.pdf`; [`crate::filename::is_invisible`], as
/// batch paths and stored names are cleaned), at most 255 bytes; `None` if
/// nothing is left.
pub fn plain_name(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = last
        .chars()
        .filter(|c| !c.is_control() && !crate::filename::is_invisible(*c))
        .collect();
    let mut cleaned = cleaned.trim().trim_start_matches('.').trim().to_owned();
    while cleaned.len() > 255 {
        cleaned.pop();
    }
    (!cleaned.is_empty()).then_some(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_name_loses_its_bidi_and_invisible_characters() {
        assert_eq!(
            plain_name("invoice\u{202E}fdp.exe"),
            Some("invoicefdp.exe".into())
        );
        assert_eq!(
            plain_name("a\u{200B}b\u{2066}c\u{FEFF}.txt"),
            Some("abc.txt".into())
        );
        let disposition = "attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe";
        let named = disposition_filename(disposition).and_then(|n| plain_name(&n));
        assert_eq!(named, Some("invoicefdp.exe".into()));
    }

    #[test]
    fn names_from_headers_and_paths_are_made_plain() {
        assert_eq!(
            disposition_filename("attachment; filename=\"report.pdf\""),
            Some("report.pdf".into())
        );
        assert_eq!(
            disposition_filename("attachment; filename=\"x.pdf\"; filename*=UTF-8''na%C3%AFve.pdf"),
            Some("naïve.pdf".into())
        );
        assert_eq!(disposition_filename("inline"), None);
        let url = Url::parse("https://example.com/a/b/data%20set.csv?sig=secret").unwrap();
        assert_eq!(url_filename(&url), Some("data set.csv".into()));
        assert_eq!(
            url_filename(&Url::parse("https://example.com/").unwrap()),
            None
        );
        assert_eq!(plain_name("../../etc/passwd"), Some("passwd".into()));
        assert_eq!(plain_name("..\\..\\boot.ini"), Some("boot.ini".into()));
        assert_eq!(plain_name(".bashrc"), Some("bashrc".into()));
        assert_eq!(plain_name("a\u{0}b\nc.txt"), Some("abc.txt".into()));
        assert_eq!(plain_name("../"), None);
        assert_eq!(plain_name(&"x".repeat(300)).map(|n| n.len()), Some(255));
    }

    #[test]
    fn a_url_is_named_by_its_scheme_and_host_alone() {
        let url = Url::parse(
            "https://bucket.s3.amazonaws.com/key?X-Amz-Credential=AKIA&X-Amz-Signature=s",
        )
        .unwrap();
        assert_eq!(host_of(&url), "https://bucket.s3.amazonaws.com");
    }
}
