//! Bearer tokens from an external authorization server: RS256 or ES256,
//! verified with the keys of its JWKS document, fetched on first use, cached,
//! and fetched again when a token names a key id the cache lacks (the
//! server rotated its keys) or the cache is older than an hour. When the
//! server cannot be reached, the keys last fetched keep serving for a bounded
//! time ([`MAX_STALE`]), then are dropped: a key the server withdrew while
//! unreachable is not trusted forever.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};

/// A JWKS document, its keys not yet read.
#[derive(serde::Deserialize)]
struct RawSet {
    keys: Vec<serde_json::Value>,
}
use tokio::sync::{Mutex, RwLock};
use url::Url;

use crate::token::TokenError;

/// Keys are refetched at least this often, rotation or not.
const MAX_AGE: Duration = Duration::from_secs(3600);

/// How long keys are kept, since the last successful fetch, while every
/// refresh fails. Each failure is logged with the keys' age; dropping them is
/// logged as an error, and tokens are then refused until a fetch succeeds.
pub const MAX_STALE: Duration = Duration::from_secs(6 * 3600);

/// How long one fetch of the document may take, connection included:
/// below the shortest function timeout (5 s), so a slow authorization
/// server gives a clear 401, not a Lambda timeout.
const FETCH_TIMEOUT: Duration = Duration::from_secs(3);

/// The largest JWKS document read; real ones are a few KiB.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Why the document could not be fetched.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("no answer within {FETCH_TIMEOUT:?}")]
    Timeout,
    #[error("request: {0}")]
    Request(#[from] hyper_util::client::legacy::Error),
    #[error("status {0}")]
    Status(http::StatusCode),
    #[error("body: {0}")]
    Body(Box<dyn std::error::Error + Send + Sync>),
    #[error("not a JWKS document: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Default)]
struct Cache {
    keys: HashMap<String, (DecodingKey, Algorithm)>,
    /// The last fetch tried, successful or not: refetches are spaced by it.
    tried_at: Option<Instant>,
    /// The last fetch that succeeded: the keys' age.
    fetched_at: Option<Instant>,
}

impl Cache {
    /// Whether `kid` can be answered from the cache without a fetch: the keys
    /// are fresh, or a fetch was just tried (and failed) and they are not too
    /// stale. `Err` when the key is known not to be there and a fetch was
    /// just tried.
    fn answer(
        &self,
        kid: &str,
        max_age: Duration,
        max_stale: Duration,
        min_refresh: Duration,
    ) -> Option<Result<(DecodingKey, Algorithm), TokenError>> {
        let age = self.fetched_at.map(|t| t.elapsed());
        let just_tried = self.tried_at.is_some_and(|t| t.elapsed() < min_refresh);
        match self.keys.get(kid) {
            Some(key) if age.is_some_and(|a| a < max_age) => Some(Ok(key.clone())),
            Some(key) if just_tried && age.is_some_and(|a| a < max_stale) => Some(Ok(key.clone())),
            _ if just_tried => Some(Err(TokenError::UnknownKey)),
            _ => None,
        }
    }
}

/// A cached JWKS document.
pub struct Jwks {
    url: Url,
    /// Built on first fetch: loading the system's trust roots takes
    /// milliseconds that a Lambda cold start need not spend.
    client: std::sync::OnceLock<Client<HttpsConnector<HttpConnector>, Empty<Bytes>>>,
    min_refresh: Duration,
    max_age: Duration,
    max_stale: Duration,
    cache: RwLock<Cache>,
    refreshing: Mutex<()>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

/// Whether a JWK may verify signatures: `use`, when given, is `sig`, and
/// `key_ops`, when given, includes `verify`. An encryption key published
/// beside the signing keys is never used to accept a token.
fn usable_for_verifying(jwk: &jsonwebtoken::jwk::Jwk) -> bool {
    use jsonwebtoken::jwk::{KeyOperations, PublicKeyUse};
    let use_ok = jwk
        .common
        .public_key_use
        .as_ref()
        .is_none_or(|u| *u == PublicKeyUse::Signature);
    let ops_ok = jwk
        .common
        .key_operations
        .as_ref()
        .is_none_or(|ops| ops.contains(&KeyOperations::Verify));
    use_ok && ops_ok
}

/// The algorithm a JWK is for: its `alg`, or what its key type implies.
fn algorithm_of(jwk: &jsonwebtoken::jwk::Jwk) -> Option<Algorithm> {
    match (&jwk.common.key_algorithm, &jwk.algorithm) {
        (Some(KeyAlgorithm::RS256), AlgorithmParameters::RSA(_)) => Some(Algorithm::RS256),
        (Some(KeyAlgorithm::ES256), AlgorithmParameters::EllipticCurve(p))
            if p.curve == EllipticCurve::P256 =>
        {
            Some(Algorithm::ES256)
        }
        (None, AlgorithmParameters::RSA(_)) => Some(Algorithm::RS256),
        (None, AlgorithmParameters::EllipticCurve(p)) if p.curve == EllipticCurve::P256 => {
            Some(Algorithm::ES256)
        }
        _ => None,
    }
}

impl Jwks {
    /// A cache for the JWKS at `url`; unknown key ids trigger a refetch at
    /// most once per `min_refresh`.
    pub fn new(url: Url, min_refresh: Duration) -> Self {
        Self {
            url,
            client: std::sync::OnceLock::new(),
            min_refresh,
            max_age: MAX_AGE,
            max_stale: MAX_STALE,
            cache: RwLock::new(Cache::default()),
            refreshing: Mutex::new(()),
        }
    }

    /// Refetches keys older than `max_age`, and drops them once `max_stale`
    /// has passed without a successful fetch (defaults: [`MAX_AGE`], [`MAX_STALE`]).
    pub fn with_ages(mut self, max_age: Duration, max_stale: Duration) -> Self {
        self.max_age = max_age;
        self.max_stale = max_stale.max(max_age);
        self
    }

    /// What the cache can answer for `kid` without a fetch.
    async fn cached(&self, kid: &str) -> Option<Result<(DecodingKey, Algorithm), TokenError>> {
        self.cache
            .read()
            .await
            .answer(kid, self.max_age, self.max_stale, self.min_refresh)
    }

    /// The key `kid` names, fetching the document again if needed.
    pub async fn key(&self, kid: &str) -> Result<(DecodingKey, Algorithm), TokenError> {
        let max_stale = self.max_stale;
        if let Some(answer) = self.cached(kid).await {
            return answer;
        }
        // One refresh at a time; whoever waited re-checks what it brought.
        let _guard = self.refreshing.lock().await;
        if let Some(answer) = self.cached(kid).await {
            return answer;
        }
        let fetched = self.fetch().await;
        let mut cache = self.cache.write().await;
        cache.tried_at = Some(Instant::now());
        match fetched {
            Ok(keys) => {
                tracing::info!(url = %self.url, keys = keys.len(), "JWKS fetched");
                cache.keys = keys;
                cache.fetched_at = cache.tried_at;
            }
            Err(e) => {
                let age = cache.fetched_at.map(|t| t.elapsed());
                if age.is_some_and(|a| a < max_stale) {
                    // Keep serving the keys we had; the next refresh may succeed.
                    tracing::warn!(
                        url = %self.url, error = %e, keys_age_secs = age.map(|a| a.as_secs()),
                        max_stale_secs = max_stale.as_secs(),
                        "JWKS fetch failed; keeping the keys last fetched"
                    );
                } else {
                    if !cache.keys.is_empty() {
                        tracing::error!(
                            url = %self.url, error = %e, keys_age_secs = age.map(|a| a.as_secs()),
                            "JWKS fetch failed and the keys last fetched are too old: dropped; \
                             bearer tokens are refused until a fetch succeeds"
                        );
                    } else {
                        tracing::warn!(url = %self.url, error = %e, "JWKS fetch failed");
                    }
                    cache.keys.clear();
                }
            }
        }
        cache.keys.get(kid).cloned().ok_or(TokenError::UnknownKey)
    }

    async fn fetch(&self) -> Result<HashMap<String, (DecodingKey, Algorithm)>, FetchError> {
        let uri: http::Uri = self.url.as_str().parse().expect("a URL is a URI");
        let get = async {
            let client = self.client.get_or_init(|| {
                Client::builder(TokioExecutor::new()).build(crate::http_client::https_connector())
            });
            let response = client.get(uri).await?;
            if !response.status().is_success() {
                return Err(FetchError::Status(response.status()));
            }
            Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map_err(FetchError::Body)
        };
        let body = tokio::time::timeout(FETCH_TIMEOUT, get)
            .await
            .map_err(|_| FetchError::Timeout)??
            .to_bytes();
        // Each key on its own: one the library cannot read (a new key type,
        // a malformed member) is skipped, not a reason to refuse every token.
        let set: RawSet = serde_json::from_slice(&body)?;
        let jwks: Vec<Jwk> = set
            .keys
            .into_iter()
            .filter_map(|key| serde_json::from_value(key).ok())
            .collect();
        Ok(jwks
            .iter()
            .filter(|jwk| usable_for_verifying(jwk))
            .filter_map(|jwk| {
                let kid = jwk.common.key_id.clone()?;
                let alg = algorithm_of(jwk)?;
                let key = DecodingKey::from_jwk(jwk).ok()?;
                Some((kid, (key, alg)))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    /// A server answering `responses`, one per connection, in order, after
    /// reading each request head; a `None` never answers.
    async fn answering_each(responses: Vec<Option<Vec<u8>>>) -> Url {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for response in responses {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.ends_with(b"\r\n\r\n") {
                    let n = stream.read(&mut buf).await.unwrap();
                    assert!(n > 0, "the request ended early");
                    head.extend_from_slice(&buf[..n]);
                }
                match response {
                    Some(bytes) => {
                        let _ = stream.write_all(&bytes).await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
        });
        Url::parse(&format!("http://{addr}/jwks.json")).unwrap()
    }

    /// A one-connection server answering `response` (or nothing).
    async fn answering(response: Option<Vec<u8>>) -> Url {
        answering_each(vec![response]).await
    }

    fn http(status: &str, body: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }

    async fn fetch(
        response: Option<Vec<u8>>,
    ) -> Result<HashMap<String, (DecodingKey, Algorithm)>, FetchError> {
        Jwks::new(answering(response).await, Duration::ZERO)
            .fetch()
            .await
    }

    #[tokio::test]
    async fn a_document_gives_its_usable_keys_by_id() {
        // One P-256 key (RFC 7517 appendix A.1) and one key of a kind we do not take.
        let doc = br#"{"keys":[
            {"kty":"EC","crv":"P-256","kid":"ec1","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"},
            {"kty":"oct","kid":"sym","k":"c2VjcmV0"}
        ]}"#;
        let keys = fetch(Some(http("200 OK", doc))).await.unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys["ec1"].1, Algorithm::ES256);
    }

    /// One key the library cannot read makes no other key unusable.
    #[tokio::test]
    async fn a_key_that_cannot_be_read_spoils_no_other() {
        let doc = br#"{"keys":[
            {"kty":"OKP","crv":"X448","kid":"future","x":"AAAA"},
            {"kty":"RSA","kid":"broken","n":17,"e":"AQAB"},
            {"kty":"EC","crv":"P-256","kid":"ec1","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}
        ]}"#;
        let keys = fetch(Some(http("200 OK", doc))).await.unwrap();
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["ec1"]);
    }

    /// A key published for encryption, or whose operations exclude
    /// verifying, never verifies a token.
    #[tokio::test]
    async fn keys_not_meant_for_signatures_are_skipped() {
        let key = |kid: &str, extra: &str| {
            format!(
                r#"{{"kty":"EC","crv":"P-256","kid":"{kid}","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"{extra}}}"#
            )
        };
        let doc = format!(
            r#"{{"keys":[{},{},{},{}]}}"#,
            key("sig", r#","use":"sig""#),
            key("enc", r#","use":"enc""#),
            key("ops-verify", r#","key_ops":["verify"]"#),
            key("ops-encrypt", r#","key_ops":["encrypt"]"#),
        );
        let keys = fetch(Some(http("200 OK", doc.as_bytes()))).await.unwrap();
        let mut ids: Vec<&str> = keys.keys().map(String::as_str).collect();
        ids.sort();
        assert_eq!(ids, ["ops-verify", "sig"]);
    }

    #[tokio::test]
    async fn an_error_status_is_a_failed_fetch() {
        let err = fetch(Some(http("503 Service Unavailable", b"{}")))
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Status(s) if s == 503), "{err}");
    }

    #[tokio::test]
    async fn a_body_that_is_not_a_jwks_is_refused() {
        let err = fetch(Some(http("200 OK", b"<html>login</html>")))
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Json(_)), "{err}");
    }

    #[tokio::test]
    async fn an_oversized_document_is_not_read_whole() {
        let big = vec![b' '; MAX_DOCUMENT_BYTES + 1];
        let err = fetch(Some(http("200 OK", &big))).await.unwrap_err();
        assert!(matches!(err, FetchError::Body(_)), "{err}");
    }

    /// Waits the whole timeout (3 s) on the clock: the tests share one
    /// build of tokio with the binaries, without its paused test clock.
    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let err = fetch(None).await.unwrap_err();
        assert!(matches!(err, FetchError::Timeout), "{err}");
    }

    /// While refreshes fail, the keys last fetched serve until they are
    /// `max_stale` old, then are dropped.
    #[tokio::test]
    async fn keys_are_kept_a_bounded_time_when_refreshes_fail() {
        let doc = br#"{"keys":[{"kty":"EC","crv":"P-256","kid":"ec1","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}"#;
        let failing = || http("503 Service Unavailable", b"{}");
        let url = answering_each(vec![
            Some(http("200 OK", doc)),
            Some(failing()),
            Some(failing()),
            Some(failing()),
        ])
        .await;
        let jwks =
            Jwks::new(url, Duration::ZERO).with_ages(Duration::ZERO, Duration::from_millis(400));
        assert!(jwks.key("ec1").await.is_ok(), "first fetch");
        // Every call refetches (max_age 0); the refetch fails, the key stays.
        assert!(jwks.key("ec1").await.is_ok(), "kept after one failure");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            matches!(jwks.key("ec1").await, Err(TokenError::UnknownKey)),
            "dropped once stale"
        );
        assert!(jwks.cache.read().await.keys.is_empty());
    }

    #[tokio::test]
    async fn a_failed_fetch_leaves_the_key_unknown() {
        let jwks = Jwks::new(answering(Some(http("500 Oops", b""))).await, Duration::ZERO);
        assert!(matches!(jwks.key("any").await, Err(TokenError::UnknownKey)));
    }
}
