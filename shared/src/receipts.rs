//! Signed receipts of custody: what sluice holds of a file, said so that
//! anyone can check it without asking sluice. A receipt is a compact JWS
//! (ES256, RFC 7515/7518) over [`Claims`]: the file's id, SHA-256, size,
//! owner, declared type, the scan's verdict and its scanner, and the
//! times; its header names the key (`kid`, the key's RFC 7638 thumbprint,
//! which no rotation changes). The public keys are a JWKS ([`JwkSet`]):
//! the current key and every key retired since, so a receipt verifies
//! offline, years later, with any JOSE library.
//!
//! Who signs is a [`Signer`]: a key in the data directory ([`LocalKeys`],
//! where it is kept is [`keys_dir`]), or, on AWS, a KMS key that never
//! leaves KMS (`sluice-aws`), whose answers [`es256_of_der`] and
//! [`jwk_of_spki`] read.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, KeyAlgorithm, ThumbprintHash,
};
pub use jsonwebtoken::jwk::{Jwk, JwkSet};
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
    /// The signing key could not be reached (KMS did not answer, or
    /// refused): nothing is signed, and the receipt is pending; asking
    /// again signs it once the key answers.
    #[error("the receipt is pending: the signing key could not be reached ({0})")]
    Unreachable(String),
}

/// The public keys of a [`Signer`]: the one it signs with now, and those
/// it signed with before.
#[derive(Debug, Clone)]
pub struct KeySet {
    /// Signs every new receipt; its `kid` is set.
    pub current: Jwk,
    /// Public keys of those retired: receipts they signed still verify.
    pub retired: Vec<Jwk>,
}

impl KeySet {
    /// The current key's id.
    pub fn kid(&self) -> &str {
        self.current.common.key_id.as_deref().unwrap_or_default()
    }

    /// The JWKS: the current key, then every one retired.
    pub fn jwks(&self) -> JwkSet {
        JwkSet {
            keys: std::iter::once(self.current.clone())
                .chain(self.retired.iter().cloned())
                .collect(),
        }
    }
}

/// Signs receipts: a key here ([`LocalKeys`]) or one in KMS.
#[async_trait::async_trait]
pub trait Signer: Send + Sync + std::fmt::Debug {
    /// The public keys, current and retired.
    async fn keys(&self) -> Result<KeySet, ReceiptError>;

    /// `input` signed with the current key: ES256's 64 bytes (R ‖ S).
    async fn sign_es256(&self, input: &[u8]) -> Result<Vec<u8>, ReceiptError>;
}

/// `claims` signed by `signer`: (the compact JWS, the `kid` it names).
pub async fn sign(signer: &dyn Signer, claims: &Claims) -> Result<(String, String), ReceiptError> {
    let keys = signer.keys().await?;
    let kid = keys.kid().to_owned();
    let input = signing_input(&kid, claims)?;
    let signature = signer.sign_es256(input.as_bytes()).await?;
    Ok((compact(input, &signature)?, kid))
}

/// A JWS's signing input: its header (ES256, `kid`, the receipt's `typ`)
/// and `claims`, each base64url, joined by a dot.
fn signing_input(kid: &str, claims: &Claims) -> Result<String, ReceiptError> {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    header.typ = Some("sluice-receipt+jwt".to_owned());
    let json = |json: serde_json::Result<Vec<u8>>| {
        json.map(|bytes| B64.encode(bytes))
            .map_err(|e| ReceiptError::Key(e.to_string()))
    };
    Ok(format!(
        "{}.{}",
        json(serde_json::to_vec(&header))?,
        json(serde_json::to_vec(claims))?
    ))
}

/// The compact JWS of `input` and its ES256 `signature`.
fn compact(input: String, signature: &[u8]) -> Result<String, ReceiptError> {
    if signature.len() != 64 {
        return Err(ReceiptError::Key(format!(
            "an ES256 signature is 64 bytes, not {}",
            signature.len()
        )));
    }
    Ok(format!("{input}.{}", B64.encode(signature)))
}

/// An ECDSA signature as KMS and X.509 give it (DER, `SEQUENCE { r
/// INTEGER, s INTEGER }`) as JWS takes it: R ‖ S, 32 bytes each.
pub fn es256_of_der(der: &[u8]) -> Result<Vec<u8>, ReceiptError> {
    use simple_asn1::ASN1Block::{Integer, Sequence};
    let bad = || ReceiptError::Key("not a DER ECDSA P-256 signature".to_owned());
    let blocks = simple_asn1::from_der(der).map_err(|_| bad())?;
    let [Sequence(_, pair)] = blocks.as_slice() else {
        return Err(bad());
    };
    let [Integer(_, r), Integer(_, s)] = pair.as_slice() else {
        return Err(bad());
    };
    let mut out = Vec::with_capacity(64);
    for n in [r, s] {
        if *n < simple_asn1::BigInt::from(0u8) {
            return Err(bad());
        }
        let (_, bytes) = n.to_bytes_be();
        let bytes = bytes.as_slice();
        if bytes.len() > 32 {
            return Err(bad());
        }
        out.extend(std::iter::repeat_n(0, 32 - bytes.len()));
        out.extend_from_slice(bytes);
    }
    Ok(out)
}

/// The public JWK (ES256, its `kid` the RFC 7638 thumbprint) of a P-256
/// key in X.509 `SubjectPublicKeyInfo` DER, as KMS's `GetPublicKey`
/// answers it.
pub fn jwk_of_spki(der: &[u8]) -> Result<Jwk, ReceiptError> {
    use simple_asn1::ASN1Block::{BitString, ObjectIdentifier, Sequence};
    let bad = |what: &str| ReceiptError::Key(format!("not a P-256 public key: {what}"));
    let blocks = simple_asn1::from_der(der).map_err(|_| bad("not DER"))?;
    let [Sequence(_, info)] = blocks.as_slice() else {
        return Err(bad("not a SubjectPublicKeyInfo"));
    };
    let [Sequence(_, algorithm), BitString(_, _, point)] = info.as_slice() else {
        return Err(bad("not a SubjectPublicKeyInfo"));
    };
    let ec = simple_asn1::oid!(1, 2, 840, 10045, 2, 1);
    let p256 = simple_asn1::oid!(1, 2, 840, 10045, 3, 1, 7);
    match algorithm.as_slice() {
        [ObjectIdentifier(_, a), ObjectIdentifier(_, c)] if *a == ec && *c == p256 => {}
        _ => return Err(bad("another algorithm or curve")),
    }
    // Uncompressed: 0x04 ‖ X ‖ Y.
    let [4, xy @ ..] = point.as_slice() else {
        return Err(bad("a compressed point"));
    };
    if xy.len() != 64 {
        return Err(bad("a point of the wrong length"));
    }
    let mut jwk = Jwk {
        common: CommonParameters {
            key_algorithm: Some(KeyAlgorithm::ES256),
            ..Default::default()
        },
        algorithm: AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
            key_type: EllipticCurveKeyType::EC,
            curve: EllipticCurve::P256,
            x: B64.encode(&xy[..32]),
            y: B64.encode(&xy[32..]),
        }),
    };
    jwk.common.key_id = Some(jwk.thumbprint(ThumbprintHash::SHA256));
    Ok(jwk)
}

/// A signing key (ES256, P-256): its PKCS#8 document and its public JWK.
pub struct ReceiptKey {
    pair: aws_lc_rs::signature::EcdsaKeyPair,
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
        let pair = aws_lc_rs::signature::EcdsaKeyPair::from_pkcs8(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8,
        )
        .map_err(|e| ReceiptError::Key(e.to_string()))?;
        Ok(Self { pair, public, kid })
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
        let input = signing_input(&self.kid, claims)?;
        let signature = self.sign_input(input.as_bytes())?;
        compact(input, &signature)
    }

    /// `input` signed: R ‖ S.
    fn sign_input(&self, input: &[u8]) -> Result<Vec<u8>, ReceiptError> {
        let signature = self
            .pair
            .sign(&aws_lc_rs::rand::SystemRandom::new(), input)
            .map_err(|_| ReceiptError::Key("the key did not sign".to_owned()))?;
        Ok(signature.as_ref().to_vec())
    }
}

/// A signing key kept in the data directory, and the public keys of those
/// retired before it.
#[derive(Debug)]
pub struct LocalKeys {
    /// Signs every new receipt.
    pub current: ReceiptKey,
    /// Public keys of those retired: receipts they signed still verify.
    pub retired: Vec<Jwk>,
}

#[async_trait::async_trait]
impl Signer for LocalKeys {
    async fn keys(&self) -> Result<KeySet, ReceiptError> {
        Ok(KeySet {
            current: self.current.public(),
            retired: self.retired.clone(),
        })
    }

    async fn sign_es256(&self, input: &[u8]) -> Result<Vec<u8>, ReceiptError> {
        self.current.sign_input(input)
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

/// The JWKS of `current` and the keys `retired` before it ([`KeySet::jwks`]).
pub fn jwks(current: &ReceiptKey, retired: &[Jwk]) -> JwkSet {
    KeySet {
        current: current.public(),
        retired: retired.to_vec(),
    }
    .jwks()
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
        assert_eq!(verify(&receipt, &jwks(&key, &[])).unwrap(), claims());
        // Retired keys still verify what they signed.
        assert_eq!(
            verify(&receipt, &jwks(&other, &[key.public()])).unwrap(),
            claims()
        );
        assert_eq!(
            verify(&receipt, &jwks(&other, &[])),
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
        let set = jwks(&key, &[]);
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
    fn what_kms_answers_reads_as_jose_takes_it() {
        use aws_lc_rs::encoding::AsDer as _;
        use aws_lc_rs::signature::{
            ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P256_SHA256_FIXED, EcdsaKeyPair, KeyPair as _,
            UnparsedPublicKey,
        };
        let der = ReceiptKey::generate().unwrap();
        let key = ReceiptKey::from_pkcs8(&der).unwrap();
        // KMS's signatures are DER, as this pair makes them.
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &der).unwrap();
        // GetPublicKey's answer (X.509 SubjectPublicKeyInfo): the same
        // JWK, so the same kid, as the key itself gives.
        let spki = pair.public_key().as_der().unwrap();
        assert_eq!(jwk_of_spki(spki.as_ref()).unwrap(), key.public());
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref());
        let rng = aws_lc_rs::rand::SystemRandom::new();
        // Signatures until some R or S is below 2^248 (about one in 128:
        // its DER integer is shorter, and is padded back to 32 bytes): each
        // verifies.
        let mut short = 0;
        for i in 0..20_000u32 {
            let message = i.to_be_bytes();
            let signature = pair.sign(&rng, &message).unwrap();
            let fixed = es256_of_der(signature.as_ref()).unwrap();
            assert_eq!(fixed.len(), 64);
            public.verify(&message, &fixed).unwrap();
            short += usize::from(fixed[0] == 0 || fixed[32] == 0);
            if short >= 2 && i >= 200 {
                break;
            }
        }
        assert!(short >= 2, "no short R or S among 20,000 signatures");
        // Anything else is refused, not misread.
        assert!(es256_of_der(b"\x30\x00").is_err());
        assert!(es256_of_der(spki.as_ref()).is_err());
        assert!(jwk_of_spki(b"not a key").is_err());
        let mut other_curve = spki.as_ref().to_vec();
        let last = other_curve.len() - 70;
        other_curve[last] ^= 1;
        assert!(jwk_of_spki(&other_curve).is_err());
    }

    #[tokio::test]
    async fn a_signer_signs_what_verifies_with_its_keys() {
        let keys = LocalKeys {
            current: ReceiptKey::from_pkcs8(&ReceiptKey::generate().unwrap()).unwrap(),
            retired: Vec::new(),
        };
        let (receipt, kid) = sign(&keys, &claims()).await.unwrap();
        assert_eq!(kid, keys.current.kid());
        let set = keys.keys().await.unwrap().jwks();
        assert_eq!(verify(&receipt, &set).unwrap(), claims());
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
