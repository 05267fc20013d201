//! Handles and link tokens (short: a kind, a file id and a MAC, see
//! [`short`]); browser page tokens, sealed (encrypted and authenticated,
//! see [`sealed`]) under a per-purpose key; and the HS256 JWTs of local
//! development bearer tokens.
//!
//! Both kinds pin their algorithm, check the token's kind (so one kind of
//! token is never redeemed as another), look the key up by `kid` (current or
//! previous), and allow no clock leeway. Each way a token can be bad is its
//! own [`TokenError`] variant; the HTTP edge folds them into one answer.

mod error;
pub(crate) mod handle;
mod link;
mod page;
mod sealed;
mod short;

pub use error::TokenError;
pub use handle::{BATCH_PREFIX, PREFIX as HANDLE_PREFIX};
pub use link::Method;
pub use page::PageToken;
pub use short::{Short, ShortKind};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::keys::{Keyring, Purpose};

/// Which of our refusals a `jsonwebtoken` decoding error is.
pub(crate) fn classify(e: jsonwebtoken::errors::Error) -> TokenError {
    match e.kind() {
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer
        | ErrorKind::InvalidAudience
        | ErrorKind::MissingRequiredClaim(_) => TokenError::WrongAudience,
        _ => TokenError::Malformed,
    }
}

/// Signs `claims` as a JWT of type `typ` with the current key for `purpose`.
pub(crate) fn sign<C: Serialize>(
    keys: &Keyring,
    purpose: Purpose,
    typ: &str,
    claims: &C,
) -> String {
    let (kid, key) = keys.signing_key(purpose);
    let header = Header {
        typ: Some(typ.to_owned()),
        kid: Some(kid.as_str().to_owned()),
        ..Header::new(Algorithm::HS256)
    };
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(key))
        .expect("HS256 signing of serializable claims cannot fail")
}

/// Verifies a JWT of type `typ` for `purpose` and returns its claims.
/// The claims must carry `exp`.
#[cfg(test)]
pub(crate) fn verify<C: DeserializeOwned>(
    keys: &Keyring,
    purpose: Purpose,
    typ: &str,
    token: &str,
) -> Result<C, TokenError> {
    verify_with(keys, purpose, typ, token, |_| {})
}

/// [`verify`], with further checks (issuer, audience) set on the validation.
pub(crate) fn verify_with<C: DeserializeOwned>(
    keys: &Keyring,
    purpose: Purpose,
    typ: &str,
    token: &str,
    configure: impl FnOnce(&mut Validation),
) -> Result<C, TokenError> {
    if token.is_empty() {
        return Err(TokenError::Empty);
    }
    let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
    if header.alg != Algorithm::HS256 {
        return Err(TokenError::WrongType);
    }
    if header.typ.as_deref() != Some(typ) {
        return Err(TokenError::WrongType);
    }
    let kid = header.kid.ok_or(TokenError::UnknownKey)?;
    let key = keys
        .verifying_key(purpose, &kid)
        .ok_or(TokenError::UnknownKey)?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.validate_aud = false;
    validation.set_required_spec_claims(&["exp"]);
    configure(&mut validation);
    jsonwebtoken::decode::<C>(token, &DecodingKey::from_secret(key), &validation)
        .map(|data| data.claims)
        .map_err(classify)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::keys::{KeyId, MasterSecret};

    pub(crate) fn ring(id: &str, byte: u8) -> Keyring {
        Keyring::new(
            (
                KeyId::new(id).unwrap(),
                MasterSecret::new(vec![byte; 32]).unwrap(),
            ),
            None,
        )
    }

    #[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Claims {
        x: u32,
        exp: i64,
    }

    fn later() -> i64 {
        crate::time::now_unix() + 60
    }

    #[test]
    fn a_signed_token_verifies() {
        let keys = ring("k1", 1);
        let claims = Claims { x: 7, exp: later() };
        let t = sign(&keys, Purpose::DevBearer, "t", &claims);
        assert_eq!(
            verify::<Claims>(&keys, Purpose::DevBearer, "t", &t),
            Ok(claims)
        );
    }

    #[test]
    fn each_defect_has_its_own_error() {
        let keys = ring("k1", 1);
        let t = sign(
            &keys,
            Purpose::DevBearer,
            "t",
            &Claims { x: 7, exp: later() },
        );

        assert_eq!(
            verify::<Claims>(&keys, Purpose::DevBearer, "t", ""),
            Err(TokenError::Empty)
        );
        let cut = &t[..t.len() / 2];
        assert_eq!(
            verify::<Claims>(&keys, Purpose::DevBearer, "t", cut),
            Err(TokenError::Malformed)
        );
        assert_eq!(
            verify::<Claims>(&keys, Purpose::DevBearer, "other", &t),
            Err(TokenError::WrongType)
        );
        assert_eq!(
            verify::<Claims>(&ring("k9", 1), Purpose::DevBearer, "t", &t),
            Err(TokenError::UnknownKey)
        );
        assert_eq!(
            verify::<Claims>(&ring("k1", 2), Purpose::DevBearer, "t", &t),
            Err(TokenError::BadSignature)
        );
        // Same kid and typ, but the key of another purpose.
        assert_eq!(
            verify::<Claims>(&keys, Purpose::Page, "t", &t),
            Err(TokenError::BadSignature)
        );

        let expired = sign(&keys, Purpose::DevBearer, "t", &Claims { x: 7, exp: 1 });
        assert_eq!(
            verify::<Claims>(&keys, Purpose::DevBearer, "t", &expired),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn a_changed_payload_breaks_the_signature() {
        use base64::Engine as _;
        let keys = ring("k1", 1);
        let t = sign(
            &keys,
            Purpose::DevBearer,
            "t",
            &Claims { x: 7, exp: later() },
        );
        let parts: Vec<&str> = t.split('.').collect();
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!(r#"{{"x":8,"exp":{}}}"#, later()));
        let tampered = format!("{}.{}.{}", parts[0], forged, parts[2]);
        assert_eq!(
            verify::<Claims>(&keys, Purpose::DevBearer, "t", &tampered),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn the_none_algorithm_is_refused() {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let t = format!(
            "{}.{}.",
            b64(r#"{"alg":"none","typ":"t","kid":"k1"}"#),
            b64(&format!(r#"{{"x":7,"exp":{}}}"#, later()))
        );
        assert!(verify::<Claims>(&ring("k1", 1), Purpose::DevBearer, "t", &t).is_err());
    }
}
