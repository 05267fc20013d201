//! Bearer authentication: who is calling, and with which scopes.
//!
//! Tokens are JWTs validated for issuer, audience and expiry. Locally minted
//! development tokens are HS256 under a key derived for that purpose alone,
//! so a handle or link token can never pass as a bearer token.

mod jwks;

pub use jwks::Jwks;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::keys::{Keyring, Purpose};
use crate::token::{self, TokenError};

const TYP: &str = "at+jwt";

/// A permission a bearer token can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Download the caller's own files.
    FilesRead,
    /// Upload files.
    FilesWrite,
    /// Run upstream actions.
    ActionsExecute,
    /// Resolve any user's handle: for backends that receive handles raw.
    FilesResolve,
    /// Delete, by its handle, a file of another user's: a scope of its own,
    /// apart from `files:resolve` (a backend that reads the files it is
    /// handed need not be able to destroy them).
    FilesDelete,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 5] = [
        Scope::FilesRead,
        Scope::FilesWrite,
        Scope::ActionsExecute,
        Scope::FilesResolve,
        Scope::FilesDelete,
    ];

    /// The scope's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::FilesRead => "files:read",
            Scope::FilesWrite => "files:write",
            Scope::ActionsExecute => "actions:execute",
            Scope::FilesResolve => "files:resolve",
            Scope::FilesDelete => "files:delete",
        }
    }

    /// Parses a scope name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scope| scope.as_str() == s)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's subject, as its issuer wrote it: what an upstream action
    /// is told the user is.
    pub sub: String,
    /// Who owns the files this caller creates: the subject, qualified by its
    /// issuer when tokens come from an external authorization server, so that
    /// the same `sub` from another issuer (a changed or second server) can
    /// never reach these files.
    pub owner: String,
    /// Scopes granted; unknown scope names are dropped.
    pub scopes: BTreeSet<Scope>,
}

impl Caller {
    /// Whether the caller was granted `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// Whether the caller may use what `owner` owns by its handle: its
    /// owner, or a service granted `files:resolve`.
    pub fn may_resolve(&self, owner: &str) -> bool {
        self.owner == owner || self.has(Scope::FilesResolve)
    }
}

#[derive(Serialize, Deserialize)]
struct Claims {
    iss: String,
    aud: String,
    sub: String,
    #[serde(default)]
    scope: String,
    iat: i64,
    exp: i64,
}

/// Where bearer tokens' keys come from.
#[derive(Debug, Clone)]
enum Keys {
    /// HS256 under the key derived for development tokens.
    Local(Box<Keyring>),
    /// RS256 / ES256 under an authorization server's published keys.
    Jwks(Arc<Jwks>),
}

/// The longest subject accepted: files are owned by it.
pub const MAX_SUBJECT_BYTES: usize = 255;

/// A subject names the owner of files: it is never empty, never huge, and
/// has no control characters.
fn check_subject(sub: &str) -> Result<(), TokenError> {
    if sub.is_empty() || sub.len() > MAX_SUBJECT_BYTES || sub.chars().any(char::is_control) {
        return Err(TokenError::Malformed);
    }
    Ok(())
}

/// The owner of an external issuer's subject: `<issuer> <sub>`. An issuer is
/// a URL, which holds no space, so no two pairs give one owner.
fn external_owner(issuer: &str, sub: &str) -> String {
    format!("{issuer} {sub}")
}

/// The clock skew allowed for tokens from another machine's clock.
const JWKS_LEEWAY_SECS: u64 = 30;

/// Validates bearer tokens, and mints them for local development.
#[derive(Debug, Clone)]
pub struct AccessVerifier {
    keys: Keys,
    issuer: String,
    /// The `aud` required; `None` only where client ids are checked instead.
    audience: Option<String>,
    client_ids: Vec<String>,
    scope_prefix: Option<String>,
}

#[derive(Deserialize)]
struct ExternalClaims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    /// Some servers send scopes as an array (`scp`).
    #[serde(default)]
    scp: Option<Vec<String>>,
    /// Cognito names the client instead of an audience.
    #[serde(default)]
    client_id: Option<String>,
    /// Cognito says which kind of token this is: `access` or `id`.
    #[serde(default)]
    token_use: Option<String>,
    /// When it was issued: one from the future is refused.
    #[serde(default)]
    iat: Option<i64>,
}

impl AccessVerifier {
    /// A verifier for locally minted HS256 tokens from `issuer` for `audience`.
    pub fn new(keys: Keyring, issuer: String, audience: String) -> Self {
        Self {
            keys: Keys::Local(Box::new(keys)),
            issuer,
            audience: Some(audience),
            client_ids: Vec::new(),
            scope_prefix: None,
        }
    }

    /// A verifier for an authorization server's RS256/ES256 tokens for
    /// `audience` (RFC 8707: the MCP URL).
    pub fn with_jwks(jwks: Jwks, issuer: String, audience: String) -> Self {
        Self {
            keys: Keys::Jwks(Arc::new(jwks)),
            issuer,
            audience: Some(audience),
            client_ids: Vec::new(),
            scope_prefix: None,
        }
    }

    /// A verifier for an authorization server that names the client in
    /// access tokens instead of an audience (Cognito): `client_id` must be
    /// one of `client_ids`, and `aud` is checked only if `audience` is given.
    pub fn with_jwks_for_clients(
        jwks: Jwks,
        issuer: String,
        client_ids: Vec<String>,
        audience: Option<String>,
    ) -> Self {
        Self {
            keys: Keys::Jwks(Arc::new(jwks)),
            issuer,
            audience,
            client_ids,
            scope_prefix: None,
        }
    }

    /// Reads scopes that carry `prefix` at the authorization server
    /// (Cognito's `<resource server>/files:read`) without it.
    pub fn with_scope_prefix(mut self, prefix: Option<String>) -> Self {
        self.scope_prefix = prefix;
        self
    }

    /// Validates a bearer token.
    pub async fn verify(&self, token: &str) -> Result<Caller, TokenError> {
        match &self.keys {
            Keys::Local(keys) => {
                let audience = self.audience.as_deref().unwrap_or_default();
                let claims: Claims =
                    token::verify_with(keys, Purpose::DevBearer, TYP, token, |v| {
                        v.set_issuer(&[&self.issuer]);
                        v.set_audience(&[audience]);
                        v.validate_aud = true;
                        v.validate_nbf = true;
                        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
                    })?;
                if claims.iat > crate::time::now_unix() {
                    return Err(TokenError::NotYetValid);
                }
                check_subject(&claims.sub)?;
                Ok(Caller {
                    owner: claims.sub.clone(),
                    sub: claims.sub,
                    scopes: claims
                        .scope
                        .split_whitespace()
                        .filter_map(Scope::parse)
                        .collect(),
                })
            }
            Keys::Jwks(jwks) => self.verify_external(jwks, token).await,
        }
    }

    async fn verify_external(&self, jwks: &Jwks, token: &str) -> Result<Caller, TokenError> {
        use jsonwebtoken::{Algorithm, Validation};
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Err(TokenError::WrongType);
        }
        // RFC 9068 access tokens say `at+jwt`; many servers say `JWT` or nothing.
        if let Some(typ) = header.typ.as_deref()
            && !["at+jwt", "jwt", "application/at+jwt"]
                .iter()
                .any(|t| typ.eq_ignore_ascii_case(t))
        {
            return Err(TokenError::WrongType);
        }
        let kid = header.kid.ok_or(TokenError::UnknownKey)?;
        let (key, alg) = jwks.key(&kid).await?;
        if alg != header.alg {
            return Err(TokenError::WrongType);
        }
        let mut v = Validation::new(alg);
        v.leeway = JWKS_LEEWAY_SECS;
        v.validate_nbf = true;
        v.set_issuer(&[&self.issuer]);
        match &self.audience {
            Some(audience) => {
                v.set_audience(&[audience]);
                v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            }
            None => {
                v.validate_aud = false;
                v.set_required_spec_claims(&["exp", "iss", "sub"]);
            }
        }
        let claims = jsonwebtoken::decode::<ExternalClaims>(token, &key, &v)
            .map_err(token::classify)?
            .claims;
        // An ID token (Cognito: `token_use: id`) is never an access token.
        if claims.token_use.as_deref().is_some_and(|u| u != "access") {
            return Err(TokenError::WrongType);
        }
        if claims
            .iat
            .is_some_and(|iat| iat > crate::time::now_unix() + JWKS_LEEWAY_SECS as i64)
        {
            return Err(TokenError::NotYetValid);
        }
        check_subject(&claims.sub)?;
        if !self.client_ids.is_empty()
            && !claims
                .client_id
                .as_ref()
                .is_some_and(|id| self.client_ids.contains(id))
        {
            return Err(TokenError::WrongAudience);
        }
        let names: Vec<String> = match (claims.scope, claims.scp) {
            (Some(s), _) => s.split_whitespace().map(str::to_owned).collect(),
            (None, Some(list)) => list,
            (None, None) => Vec::new(),
        };
        // With a prefix configured, only prefixed names are ours: another
        // resource server's `files:write` is not this one's.
        let ours = |n: &String| match &self.scope_prefix {
            Some(prefix) => n.strip_prefix(prefix.as_str()).and_then(Scope::parse),
            None => Scope::parse(n),
        };
        Ok(Caller {
            owner: external_owner(&self.issuer, &claims.sub),
            sub: claims.sub,
            scopes: names.iter().filter_map(ours).collect(),
        })
    }

    /// Mints a development bearer token for `sub` with `scopes`; `None`
    /// when tokens come from an external authorization server.
    pub fn mint(&self, sub: &str, scopes: &[Scope], ttl: std::time::Duration) -> Option<String> {
        let Keys::Local(keys) = &self.keys else {
            return None;
        };
        let now = crate::time::now_unix();
        let claims = Claims {
            iss: self.issuer.clone(),
            aud: self.audience.clone().unwrap_or_default(),
            sub: sub.to_owned(),
            scope: scopes
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            iat: now,
            exp: now + ttl.as_secs() as i64,
        };
        Some(token::sign(keys, Purpose::DevBearer, TYP, &claims))
    }
}

/// Why a request carries no usable bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BearerError {
    /// No `Authorization` header.
    Missing,
    /// An `Authorization` header that is not `Bearer <token>`.
    Malformed,
}

impl fmt::Display for BearerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for BearerError {}

impl BearerError {
    /// The message, as a static string.
    pub fn message(self) -> &'static str {
        match self {
            BearerError::Missing => "a bearer token is required",
            BearerError::Malformed => "the Authorization header must be 'Bearer <token>'",
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer(headers: &http::HeaderMap) -> Result<&str, BearerError> {
    let header = headers
        .get(http::header::AUTHORIZATION)
        .ok_or(BearerError::Missing)?;
    header
        .to_str()
        .ok()
        .and_then(|h| {
            let (scheme, rest) = h.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
        .ok_or(BearerError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tests::ring;

    fn verifier() -> AccessVerifier {
        AccessVerifier::new(ring("k1", 1), "iss".into(), "aud".into())
    }

    #[tokio::test]
    async fn a_minted_token_verifies_with_its_scopes() {
        let v = verifier();
        let t = v
            .mint(
                "alice",
                &[Scope::FilesRead, Scope::FilesWrite],
                std::time::Duration::from_secs(60),
            )
            .unwrap();
        let caller = v.verify(&t).await.unwrap();
        assert_eq!(caller.sub, "alice");
        assert!(caller.has(Scope::FilesWrite));
        assert!(!caller.has(Scope::ActionsExecute));
    }

    #[tokio::test]
    async fn another_issuer_or_audience_is_refused() {
        let t = verifier()
            .mint("alice", &[], std::time::Duration::from_secs(60))
            .unwrap();
        let other_aud = AccessVerifier::new(ring("k1", 1), "iss".into(), "other".into());
        assert_eq!(other_aud.verify(&t).await, Err(TokenError::WrongAudience));
        let other_iss = AccessVerifier::new(ring("k1", 1), "other".into(), "aud".into());
        assert_eq!(other_iss.verify(&t).await, Err(TokenError::WrongAudience));
    }

    #[tokio::test]
    async fn a_handle_is_not_a_bearer_token() {
        use crate::token::{Short, ShortKind};
        let keys = ring("k1", 1);
        let handle = Short::handle(crate::file::FileId::random()).encode(&keys);
        // A handle is not even a JWT; and a bearer token is no handle.
        assert_eq!(verifier().verify(&handle).await, Err(TokenError::Malformed));
        let bearer = verifier()
            .mint(
                "alice",
                &[Scope::FilesRead],
                std::time::Duration::from_secs(60),
            )
            .unwrap();
        let now = crate::time::now_unix();
        assert_eq!(
            Short::decode(&keys, &bearer, ShortKind::Handle, now),
            Err(TokenError::WrongType)
        );
    }
}
