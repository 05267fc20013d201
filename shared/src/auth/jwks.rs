//! Bearer tokens from an external authorization server: RS256 or ES256,
//! verified with the keys of its JWKS document, fetched on first use, cached,
//! and fetched again when a token names a key id the cache lacks (the
//! server rotated its keys) or the cache is older than an hour.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};
use tokio::sync::{Mutex, RwLock};
use url::Url;

use crate::token::TokenError;

/// Keys are refetched at least this often, rotation or not.
const MAX_AGE: Duration = Duration::from_secs(3600);

/// How long one fetch of the document may take, connection included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

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
    fetched_at: Option<Instant>,
}

/// A cached JWKS document.
pub struct Jwks {
    url: Url,
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    min_refresh: Duration,
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
            client: Client::builder(TokioExecutor::new()).build(https_connector()),
            min_refresh,
            cache: RwLock::new(Cache::default()),
            refreshing: Mutex::new(()),
        }
    }

    /// The key `kid` names, fetching the document again if needed.
    pub async fn key(&self, kid: &str) -> Result<(DecodingKey, Algorithm), TokenError> {
        {
            let cache = self.cache.read().await;
            let fresh = cache.fetched_at.is_some_and(|t| t.elapsed() < MAX_AGE);
            if let (true, Some(key)) = (fresh, cache.keys.get(kid)) {
                return Ok(key.clone());
            }
        }
        // One refresh at a time; whoever waited re-checks what it brought.
        let _guard = self.refreshing.lock().await;
        {
            let cache = self.cache.read().await;
            let fresh = cache.fetched_at.is_some_and(|t| t.elapsed() < MAX_AGE);
            let recent = cache
                .fetched_at
                .is_some_and(|t| t.elapsed() < self.min_refresh);
            match cache.keys.get(kid) {
                Some(key) if fresh => return Ok(key.clone()),
                None if recent => return Err(TokenError::UnknownKey),
                _ => {}
            }
        }
        let fetched = self.fetch().await;
        let mut cache = self.cache.write().await;
        cache.fetched_at = Some(Instant::now());
        match fetched {
            Ok(keys) => {
                tracing::info!(url = %self.url, keys = keys.len(), "JWKS fetched");
                cache.keys = keys;
            }
            // Keep serving the keys we had; the next refresh may succeed.
            Err(e) => tracing::warn!(url = %self.url, error = %e, "JWKS fetch failed"),
        }
        cache.keys.get(kid).cloned().ok_or(TokenError::UnknownKey)
    }

    async fn fetch(&self) -> Result<HashMap<String, (DecodingKey, Algorithm)>, FetchError> {
        let uri: http::Uri = self.url.as_str().parse().expect("a URL is a URI");
        let get = async {
            let response = self.client.get(uri).await?;
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
        let set: JwkSet = serde_json::from_slice(&body)?;
        Ok(set
            .keys
            .iter()
            .filter_map(|jwk| {
                let kid = jwk.common.key_id.clone()?;
                let alg = algorithm_of(jwk)?;
                let key = DecodingKey::from_jwk(jwk).ok()?;
                Some((kid, (key, alg)))
            })
            .collect())
    }
}

/// HTTPS with the system's trust roots (as the AWS SDK uses), or plain HTTP
/// for a JWKS URL that names it (a local authorization server).
fn https_connector() -> HttpsConnector<HttpConnector> {
    let builder = match hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::aws_lc_rs::default_provider())
    {
        Ok(b) => b,
        // No trust roots on this machine: HTTPS URLs will fail to verify,
        // and say so, but an http:// one still works.
        Err(e) => {
            tracing::warn!(error = %e, "no system trust roots for fetching the JWKS");
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(
                rustls::ClientConfig::builder_with_provider(
                    rustls::crypto::aws_lc_rs::default_provider().into(),
                )
                .with_safe_default_protocol_versions()
                .expect("aws-lc supports the default protocol versions")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
            )
        }
    };
    builder.https_or_http().enable_http1().build()
}
