//! Signed receipts of custody: what sluice holds of a file, said so that
//! anyone can check it without asking sluice. A receipt is a compact JWS
//! (ES256, RFC 7515/7518) over [`Claims`]: the file's id, SHA-256, size,
//! owner, declared type, the scan's verdict and its scanner, and the
//! times; its header names the key (`kid`, the key's RFC 7638 thumbprint,
//! which no rotation changes). The public keys are a JWKS ([`JwkSet`]):
//! the current key and every key retired since, so a receipt verifies
//! offline, years later, with any JOSE library.
//!
//! Codecs only: the key's bytes come from the caller ([`ReceiptKey`]);
//! where they are kept is the data directory's ([`keys_dir`]).

use jsonwebtoken::jwk::{Jwk, JwkSet, ThumbprintHash};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::sha::Sha256;

/// What a receipt says of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who signed it: the deployment's public URL.
    pub iss: String,
    /// The file's owner, as the deployment names its users (the token's
    /// `sub`).
    pub sub: String,
    /// When it was signed (seconds since the epoch).
    pub iat: i64,
    /// What it attests: `ready` (the file is held, proven and, with
    /// scanning on, clean); on an event, the change (`ready`,
    /// `downloaded`, `deleted`, `expired`).
    pub event: String,
    /// The file.
    pub file: FileClaims,
    /// The malware scan's verdict, where files are scanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<ScanClaims>,
    /// Where its bytes came from; absent from an event's receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceClaims>,
}

/// Where a file's bytes came from, in a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum SourceClaims {
    /// Sent to its upload link (a line, a page, a client of its own).
    Upload,
    /// Fetched by sluice from a URL (`import_file`): the URL's scheme and
    /// host, never more.
    Url {
        /// `https://host`.
        origin: String,
    },
    /// A copy of a file its owner had stored already (a batch's file of
    /// the same size and SHA-256): no byte was sent again.
    Copy,
}

/// The file a receipt is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileClaims {
    /// Its id.
    pub id: String,
    /// The SHA-256 of its bytes, hex.
    pub sha256: Sha256,
    /// Its size in bytes.
    pub size: u64,
    /// The media type its uploader declared.
    pub declared_type: String,
    /// The type its first bytes show (`SLUICE_TYPE_CHECK`), where one was
    /// told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_type: Option<String>,
    /// When it was issued (RFC 3339); absent from an event's receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When sluice lets it go (RFC 3339); absent from an event's receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// A scan's verdict in a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanClaims {
    /// `clean`.
    pub verdict: String,
    /// The scanner and its version.
    pub scanner: String,
}

/// Why a receipt does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// Not a compact JWS, or not ES256, or without a `kid`.
    #[error("not a receipt: {0}")]
    Malformed(String),
    /// Signed by a key the JWKS does not hold.
    #[error("signed by an unknown key {0:?}: not in the JWKS")]
    UnknownKey(String),
    /// The signature does not match the header and claims: altered, or
    /// signed by another key under that `kid`.
    #[error("the signature does not match: the receipt was altered or not signed by key {0:?}")]
    BadSignature(String),
    /// A key that cannot sign or be read.
    #[error("receipt key: {0}")]
    Key(String),
}

/// A signing key (ES256, P-256): its PKCS#8 document and its public JWK.
pub struct ReceiptKey {
    encoding: EncodingKey,
    public: Jwk,
    kid: String,
}

impl std::fmt::Debug for ReceiptKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiptKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl ReceiptKey {
    /// A new key's PKCS#8 document (DER), for the caller to keep.
    pub fn generate() -> Result<Vec<u8>, ReceiptError> {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let doc = EcdsaKeyPair::generate_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &aws_lc_rs::rand::SystemRandom::new(),
        )
        .map_err(|_| ReceiptError::Key("the key could not be made".to_owned()))?;
        Ok(doc.as_ref().to_vec())
    }

    /// The key whose PKCS#8 document (DER) is `pkcs8`.
    pub fn from_pkcs8(pkcs8: &[u8]) -> Result<Self, ReceiptError> {
        let encoding = EncodingKey::from_ec_der(pkcs8);
        let mut public = Jwk::from_encoding_key(&encoding, Algorithm::ES256)
            .map_err(|e| ReceiptError::Key(e.to_string()))?;
        let kid = public.thumbprint(ThumbprintHash::SHA256);
        public.common.key_id = Some(kid.clone());
        Ok(Self {
            encoding,
            public,
            kid,
        })
    }

    /// Its key id: the RFC 7638 thumbprint (SHA-256) of its public key.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Its public key, with its `kid`, `alg` and `use`.
    pub fn public(&self) -> Jwk {
        self.public.clone()
    }

    /// `claims` signed: a compact JWS.
    pub fn sign(&self, claims: &Claims) -> Result<String, ReceiptError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        header.typ = Some("sluice-receipt+jwt".to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding)
            .map_err(|e| ReceiptError::Key(e.to_string()))
    }
}

/// Verifies `receipt` against the public keys `jwks`: its claims, if the
/// key its header names is there and signed exactly these bytes.
pub fn verify(receipt: &str, jwks: &JwkSet) -> Result<Claims, ReceiptError> {
    let header =
        jsonwebtoken::decode_header(receipt).map_err(|e| ReceiptError::Malformed(e.to_string()))?;
    if header.alg != Algorithm::ES256 {
        return Err(ReceiptError::Malformed(format!(
            "alg {:?}, not ES256",
            header.alg
        )));
    }
    let kid = header
        .kid
        .ok_or_else(|| ReceiptError::Malformed("no kid".to_owned()))?;
    let jwk = jwks
        .find(&kid)
        .ok_or_else(|| ReceiptError::UnknownKey(kid.clone()))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|e| ReceiptError::Key(e.to_string()))?;
    let mut validation = Validation::new(Algorithm::ES256);
    // A receipt attests a moment: it does not expire, and names no audience.
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    jsonwebtoken::decode::<Claims>(receipt, &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => ReceiptError::BadSignature(kid),
            _ => ReceiptError::Malformed(e.to_string()),
        })
}

/// The JWKS of `current` and the keys `retired` before it.
pub fn jwks(current: Option<&ReceiptKey>, retired: &[Jwk]) -> JwkSet {
    JwkSet {
        keys: current
            .map(ReceiptKey::public)
            .into_iter()
            .chain(retired.iter().cloned())
            .collect(),
    }
}

/// Where the receipt keys live in a data directory: `key.p8` (the current
/// key, PKCS#8, 0600) and `retired.json` (the public keys of those retired,
/// a JWKS).
pub fn keys_dir(data_dir: &std::path::Path) -> std::path::PathBuf {
    data_dir.join("receipts")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            iss: "https://files.example.com".to_owned(),
            sub: "alice".to_owned(),
            iat: 1_800_000_000,
            event: "ready".to_owned(),
            file: FileClaims {
                id: "AaJPHzCDFejQi1aJ8OMCkg".to_owned(),
                sha256: Sha256::of(b"x"),
                size: 1,
                declared_type: "text/plain".to_owned(),
                detected_type: None,
                created_at: Some("2026-12-07T06:00:00Z".to_owned()),
                expires_at: Some("2026-12-07T07:00:00Z".to_owned()),
            },
            scan: Some(ScanClaims {
                verdict: "clean".to_owned(),
                scanner: "ClamAV 1.4.6".to_owned(),
            }),
            source: Some(SourceClaims::Url {
                origin: "https://example.com".to_owned(),
            }),
        }
    }

    #[test]
    fn a_receipt_verifies_with_its_key_and_no_other() {
        let key = ReceiptKey::from_pkcs8(&ReceiptKey::generate().unwrap()).unwrap();
        let other = ReceiptKey::from_pkcs8(&ReceiptKey::generate().unwrap()).unwrap();
        assert_ne!(key.kid(), other.kid());
        let receipt = key.sign(&claims()).unwrap();
        assert_eq!(verify(&receipt, &jwks(Some(&key), &[])).unwrap(), claims());
        // Retired keys still verify what they signed.
        assert_eq!(
            verify(&receipt, &jwks(Some(&other), &[key.public()])).unwrap(),
            claims()
        );
        assert_eq!(
            verify(&receipt, &jwks(Some(&other), &[])),
            Err(ReceiptError::UnknownKey(key.kid().to_owned()))
        );
        // Another key under this kid: the signature does not match.
        let mut impostor = other.public();
        impostor.common.key_id = Some(key.kid().to_owned());
        let set = JwkSet {
            keys: vec![impostor],
        };
        assert!(matches!(
            verify(&receipt, &set),
            Err(ReceiptError::BadSignature(_))
        ));
    }

    #[test]
    fn one_byte_altered_fails_and_says_why() {
        let key = ReceiptKey::from_pkcs8(&ReceiptKey::generate().unwrap()).unwrap();
        let receipt = key.sign(&claims()).unwrap();
        let set = jwks(Some(&key), &[]);
        let (head, rest) = receipt.split_once('.').unwrap();
        let (payload, signature) = rest.split_once('.').unwrap();
        // The payload with one character changed: another claim.
        let mut altered = payload.as_bytes().to_vec();
        altered[10] = if altered[10] == b'A' { b'B' } else { b'A' };
        let forged = format!("{head}.{}.{signature}", String::from_utf8(altered).unwrap());
        let e = verify(&forged, &set).unwrap_err();
        assert!(
            matches!(
                e,
                ReceiptError::BadSignature(_) | ReceiptError::Malformed(_)
            ),
            "{e}"
        );
        assert!(matches!(
            verify("not.a.receipt", &set),
            Err(ReceiptError::Malformed(_))
        ));
    }

    #[test]
    fn a_key_is_named_by_its_thumbprint_whatever_reads_it() {
        let der = ReceiptKey::generate().unwrap();
        let (a, b) = (
            ReceiptKey::from_pkcs8(&der).unwrap(),
            ReceiptKey::from_pkcs8(&der).unwrap(),
        );
        assert_eq!(a.kid(), b.kid());
        assert_eq!(a.public().common.key_id.as_deref(), Some(a.kid()));
        assert_eq!(a.kid().len(), 43, "base64url of a SHA-256");
    }
}
