//! Bearer tokens from an external authorization server: RS256 or ES256,
//! verified with the keys of its JWKS document, fetched on first use, cached,
//! and fetched again when a token names a key id the cache lacks (the
//! server rotated its keys) or the cache is older than an hour.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};
use tokio::sync::{Mutex, RwLock};
use url::Url;

use crate::token::TokenError;

/// Keys are refetched at least this often, rotation or not.
const MAX_AGE: Duration = Duration::from_secs(3600);

#[derive(Default)]
struct Cache {
    keys: HashMap<String, (DecodingKey, Algorithm)>,
    fetched_at: Option<Instant>,
}

/// A cached JWKS document.
pub struct Jwks {
    url: Url,
    client: reqwest::Client,
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
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("a TLS client can be built"),
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

    async fn fetch(&self) -> Result<HashMap<String, (DecodingKey, Algorithm)>, reqwest::Error> {
        let set: JwkSet = self
            .client
            .get(self.url.clone())
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
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
